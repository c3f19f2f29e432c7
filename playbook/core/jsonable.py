"""Plain JSON values from numpy / pandas results: the one place that turns NaN and infinity into null.

    json_float(x, nd)   x rounded to nd decimals, None for None, NaN, ±inf or a non-number
    to_jsonable(value, digits)  dicts, lists, Series, numpy scalars and timestamps as plain JSON values (non-finite
                        and NaT -> None; floats rounded to `digits` decimals when given)
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def json_float(x: Any, nd: int = 3) -> float | None:
    """`x` as a float rounded to `nd` decimals for a JSON contract; None when missing, NaN, ±inf or not a number."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return round(f, nd) if math.isfinite(f) else None


def to_jsonable(value: Any, digits: int | None = None) -> Any:
    """`value` as plain JSON values: dict keys as str, numpy/pandas scalars and containers as Python, NaN, ±inf and
    NaT as None, timestamps as ISO text, floats rounded to `digits` decimals when given, anything else as str()."""
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if hasattr(value, "to_dict") and not isinstance(value, dict):
        value = value.to_dict()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, digits) for v in value]
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return round(value, digits) if digits is not None else value
    if isinstance(value, (str, int, bool)):
        return value
    return str(value)
