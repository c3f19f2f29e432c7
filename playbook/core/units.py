"""Unit parsing shared by the command line and the live sources (a low layer: imports nothing of playbook)."""

from __future__ import annotations

import argparse
import math
import re

DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}  # seconds per unit


def duration_s(text: str) -> float:
    """A duration such as '500ms', '20s', '5m', '6h', '1d' or a bare number of seconds, in seconds (argparse type:
    a bad value raises argparse.ArgumentTypeError with its own one-line message)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d|w)?\s*", str(text))
    if not m or not math.isfinite(float(m.group(1))) or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"not a positive duration: {text!r} (e.g. 500ms, 20s, 5m, 6h, 1d)")
    return float(m.group(1)) * DURATION_UNITS[m.group(2) or "s"]
