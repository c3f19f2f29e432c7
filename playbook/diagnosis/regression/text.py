"""Numbers for regression reports: seconds, p-values, counts, short texts."""

from __future__ import annotations

import numpy as np


def fmt_seconds(s: float | None) -> str:
    """Seconds in readable units: "1.23 s", "45.6 ms", "789 µs", "0"; "?" for None/NaN."""
    if s is None or not np.isfinite(s):
        return "?"
    a = abs(s)
    if a >= 1:
        return f"{s:.3g} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if a == 0:
        return "0"
    return f"{s * 1e6:.3g} µs"


def fmt_p(p: float | None) -> str:
    """A p-value for a report: "p = 0.012", "p < 1e-16", "untested"."""
    if p is None or not np.isfinite(p):
        return "untested"
    return f"p = {p:.2g}" if p >= 1e-16 else "p < 1e-16"


def short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def num(x: float) -> str:
    if x is None or not np.isfinite(x):
        return "?"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"
