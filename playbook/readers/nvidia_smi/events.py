"""Events an nvidia-smi --query-gpu log carries besides its rows: its own error lines and a restarted log."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.readers import event_lexicon
from playbook.readers.nvidia_smi.convert import Special


def segment_events(errors: list[Special], header: Special | None, lines: np.ndarray, time_ns: np.ndarray,
                   gpu: np.ndarray, host: str, src: str) -> list[dict]:
    """Events for a segment's nvidia-smi error lines `errors` (at the nearest earlier row's time; `lines`, `time_ns`,
    `gpu`: the segment's rows), and a restart event for a repeated `header`. An error line's kind is the one the
    event lexicon reads from it ("Unable to determine the device handle ...: GPU is lost" → gpu_lost), else
    gpu_error — and a loss only while the log agrees: when every GPU seen before the line reports again after it,
    no GPU was lost (a transient error)."""
    out: list[dict] = []

    def time_near(line: int):
        if not len(lines):
            return pd.NaT
        k = int(np.searchsorted(lines, line))
        k = k - 1 if k > 0 else 0
        return pd.Timestamp(int(time_ns[k]), tz="UTC")

    first = last = None  # each GPU's first and last row, found at the first "GPU is lost" line (O(n log n))
    for sp in errors:
        hit = event_lexicon.match(sp.text)
        kind = hit.kind if hit else "gpu_error"
        if kind == "gpu_lost":  # transient when every GPU seen before the line reports after it
            if first is None:
                _, first = np.unique(gpu, return_index=True)
                last = len(gpu) - 1 - np.unique(gpu[::-1], return_index=True)[1]
            k = int(np.searchsorted(lines, sp.line))
            if (last[first < k] >= k).all():
                kind = "gpu_error"
        out.append({"time": time_near(sp.line), "host": host, "kind": kind,
                    "detail": f"line {sp.line}: {sp.text}", "source": src})
    if header is not None and header.line > 1 and len(lines):
        out.append({"time": pd.Timestamp(int(time_ns[0]), tz="UTC"), "host": host, "kind": "restart",
                    "detail": f"line {header.line}: nvidia-smi logging restarted (repeated header)",
                    "source": src})
    return out
