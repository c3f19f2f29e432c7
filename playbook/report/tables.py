"""Tables a person reads in a notebook or report: every cell as text (a list or dict as its items, never a Python
repr), left-aligned, escaped, with `code` spans of the text rendered as code rather than shown with backticks.

    readable(pd.DataFrame(diag.hypotheses)[["id", "score", "evidence"]].head(3))
    readable({"run_dir": "runs/a", "steps": 9})        # a dict: one row per key
    readable([{"rank": 2, "level": "high"}, ...])      # records: one row each
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from playbook.report.scrapbook import as_text, html_inline


def inline_markdown(value: Any) -> str:
    """A cell as escaped HTML text (as_text: lists and dicts as their items) with `code` spans as <code>."""
    return html_inline(as_text(value))


def as_frame(value: Any) -> pd.DataFrame:
    """A DataFrame from a DataFrame, a Series or dict (key → value rows), or a list of records or values."""
    if isinstance(value, pd.DataFrame):
        return value
    if isinstance(value, pd.Series):
        return value.to_frame(value.name if value.name is not None else "value")
    if isinstance(value, dict):
        return pd.DataFrame({"value": list(value.values())}, index=[str(k) for k in value])
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, dict) for v in value):
        return pd.DataFrame(list(value))
    return pd.DataFrame({"value": list(value) if isinstance(value, (list, tuple)) else [value]})


def readable(value: Any, formats: dict[str, str] | None = None, index: bool | None = None):
    """`value` (see as_frame) as a pandas Styler: text cells escaped with `code` rendered, lists and dicts as
    their items, floats by `formats` (column → format string) or 3 significant digits, text left-aligned and
    wrapping. The index is shown when it names rows (a dict's keys), else hidden; `index` overrides."""
    frame = as_frame(value)
    named = not isinstance(frame.index, pd.RangeIndex)
    styler = frame.style
    if not (named if index is None else index):
        styler = styler.hide(axis="index")
    else:
        styler = styler.format_index(lambda k: html.escape(str(k).replace("_", " ")), axis=0)
    formats = formats or {}
    for column in frame.columns:
        if column in formats:
            styler = styler.format(formats[column], subset=[column], na_rep="n/a")
        else:
            styler = styler.format(inline_markdown, subset=[column])
    styler = styler.format_index(lambda c: html.escape(str(c)), axis=1)
    return styler.set_properties(**{"text-align": "left", "white-space": "normal", "overflow-wrap": "break-word"}) \
        .set_table_styles([{"selector": "th", "props": [("text-align", "left")]}])
