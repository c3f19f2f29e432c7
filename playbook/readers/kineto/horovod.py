"""Horovod timelines (`HOROVOD_TIMELINE=file.json` / `horovodrun --timeline-filename`) read by their own vocabulary.

Horovod's writer (horovod/common/timeline.cc; docs/timeline.rst "Analyze Performance") gives each tensor a "process"
named after it and, on that process, opens a "B" span `NEGOTIATE_<TYPE>` (ALLREDUCE, ALLGATHER, BROADCAST,
ALLTOALL, REDUCESCATTER ...) while rank 0 waits for every rank to submit the tensor — each rank's readiness is a
zero-length "X" named by the rank ("0", "1", ...) — then a span named by the operation with its activities nested
(`WAIT_FOR_DATA`, `MEMCPY_IN_FUSION_BUFFER`, `NCCL_ALLREDUCE`, `MPI_ALLREDUCE`, `QUEUE` ...), and `CYCLE_START`
instants. Events carry no category. The file is written on rank 0 only, by Horovod's background thread: it holds no
device lane, so nothing in it measures GPU busy or idle time; the reader says so (a counted warning) rather than let
"no GPU kernels" read as a CPU-only profile.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from playbook.readers.kineto.roles import GPU_CATEGORIES

NEGOTIATE_PREFIX = "NEGOTIATE_"  # timeline.cc NegotiateStart: "NEGOTIATE_" + Request::RequestType_Name(type)
_RANK_TICK_RE = re.compile(r"\d{1,6}")  # NegotiateRankReady: an "X" named by the rank (rank_strings_[rank])


def horovod_roles(cols: dict) -> dict | None:
    """When `cols` (frame_columns' output) is a Horovod timeline — rows without a category, some of them
    `NEGOTIATE_*` spans, none of a GPU category — mark its rows `user_annotation` (host-side phases of the
    collectives) and return the rank's metadata with a `no_device_lane` reason and a `warning`; else None."""
    cat, names = cols["cat"], cols["name"].astype(str)
    if len(cat) == 0 or cat.isin(GPU_CATEGORIES).any():
        return None
    uncategorised = (cat.fillna("") == "").to_numpy()
    negotiations = names.str.startswith(NEGOTIATE_PREFIX).to_numpy() & uncategorised
    if not negotiations.any():
        return None
    ticks = uncategorised & names.str.fullmatch(_RANK_TICK_RE).to_numpy() & (np.asarray(cols["dur"]) == 0)
    ranks = sorted({int(n) for n in names[ticks].unique()})
    tensors = len(np.unique(np.asarray(cols["pid"])[uncategorised]))
    role = np.where(uncategorised, "user_annotation", cat.astype(object).to_numpy())
    cols["cat"] = pd.Series(pd.array(role, dtype=cat.dtype))
    n = int(negotiations.sum())
    reason = "a Horovod timeline holds only Horovod's own collective phases (from its background thread)"
    return {
        "roles_from": "Horovod timeline vocabulary",
        "horovod": {"negotiations": n, "tensors": tensors, "ranks_ready": ranks},
        "no_device_lane": reason,
        "warning": f"{reason}: {n} negotiations on {tensors} tensors, ranks {_span(ranks)} reporting ready; no "
                   "device lane, so GPU busy and idle time cannot be measured from it",
    }


def _span(ranks: list[int]) -> str:
    """"0-3" for a contiguous list, else the ranks comma-separated (at most 8 named)."""
    if not ranks:
        return "none"
    if ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks[:8])) + (f" (+{len(ranks) - 8})" if len(ranks) > 8 else "")
