"""Plain JSON values from numpy / pandas results: the one place that turns NaN and infinity into null.

    json_float(x, nd)   x rounded to nd decimals, None for None, NaN, ±inf or a non-number
    to_jsonable(value)  dicts, lists, Series and numpy scalars as plain JSON values (non-finite -> None)
"""

from __future__ import annotations

import math
from typing import Any


def json_float(x: Any, nd: int = 3) -> float | None:
    """`x` as a float rounded to `nd` decimals for a JSON contract; None when missing, NaN, ±inf or not a number."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return round(f, nd) if math.isfinite(f) else None


def to_jsonable(value: Any) -> Any:
    """Turn numpy/pandas scalars and containers into plain JSON values (NaN and ±inf -> None, others -> str)."""
    if hasattr(value, "to_dict") and not isinstance(value, dict):
        value = value.to_dict()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
