"""TensorRT trtexec's output as an input: recognised by its summary heading, a trace line or two of its labelled
figures, and read as a log by every line scanner (readers/lines.py), where readers/trtexec_summary.py reads the
figures (through readers/serving_metrics.py)."""

from __future__ import annotations

from pathlib import Path

from playbook.model import schema
from playbook.readers.trtexec_summary import SUMMARY, TRACE

LABELS = ("GPU Compute Time:", "H2D Latency:", "D2H Latency:", "Enqueue Time:", "Total Host Walltime:",
          "Total GPU Compute Time:")


def sniff(head: str) -> bool:
    """trtexec's output: its summary heading, a trace line, or two of its labelled figures."""
    if SUMMARY in head or TRACE.search(head):
        return True
    return sum(1 for w in LABELS if w in head) >= 2


def read(path: str | Path, tz: str = "UTC", **_opts) -> schema.Bundle:
    """The file read by every line scanner (its figures by readers/trtexec_summary.BenchLines)."""
    from playbook.readers import lines

    return lines.scan(path, tz)
