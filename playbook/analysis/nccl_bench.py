"""nccl-tests result tables (readers/nccl_tests.py, summarised in bundle.meta["nccl_tests:<file>"]) for
`playbook diagnose`: what each table measured, stated as read. A table alone names no cause: its busbw is judged
against the rate of the links it crossed (NCCL's rule of thumb: ~24 GB/s busbw per 200 Gb/s NIC between nodes,
NVIDIA/nccl-tests issues), which the table does not state. Pure functions: no printing, no I/O."""

from __future__ import annotations

from typing import Any

from playbook.model.schema import meta_sections
from playbook.readers.nccl_tests import META_PREFIX, describe


def tables(meta: dict[str, Any] | None) -> list[tuple[str, dict]]:
    """(file, summary) of every nccl-tests summary in the bundle's meta, in file order."""
    return sorted(meta_sections(meta, META_PREFIX))


def summarize(bundle: Any) -> dict | None:
    """{tables: [{file, line (describe()), peak_busbw_gb_s, ...}], findings: []}; None without a table."""
    found = tables(getattr(bundle, "meta", None))
    if not found:
        return None
    return {"tables": [{"file": f, "line": describe(s), **s} for f, s in found], "findings": []}
