"""Record named values in a notebook's outputs (the scrapbook idea) and collect them back from the .ipynb.

Inside a notebook:   record("throughput_fix", 812.4)   or   verdict("confirmed", "fix recovers 98% ...", gap=0.31)
From a batch runner: collect("executed.ipynb") -> {"throughput_fix": 812.4, "verdict": {...}, ...}

Values travel as a custom MIME type in display_data outputs, so they survive papermill and nbconvert and never
depend on the notebook's text output.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path
from typing import Any

from playbook.core.jsonable import to_jsonable

MIME = "application/x.playbook.record+json"
VERDICTS = ("confirmed", "refuted", "inconclusive")


def record(name: str, value: Any, show: bool = True) -> Any:
    """Store `value` under `name` in the notebook's outputs (and show it as a line of text); returns `value`."""
    payload = {"name": name, "value": to_jsonable(value)}
    try:
        from IPython.display import display
    except ImportError:  # outside IPython: nothing to record into
        return value
    data = {MIME: payload}
    if show:
        data["text/plain"] = f"{name.replace('_', ' ')}: {as_text(payload['value'])}"
    display(data, raw=True)
    return value


class Verdict(dict):
    """A recorded verdict ({"status", "summary", "figures"}) that shows itself as the verdict line and a table of
    its figures (HTML, Markdown or plain text; input text escaped), never as a raw dict."""

    def __init__(self, status: str, summary: str, figures: dict[str, Any]):
        super().__init__(status=status, summary=summary, figures=figures)
        self._shown_in = _execution_count()  # verdict() shows it once; ending a cell with it adds no second copy

    def _repr_html_(self) -> str:
        return verdict_html(self["status"], self["summary"], self["figures"])

    def _repr_markdown_(self) -> str:
        rows = "".join(f"\n| {md_escape(str(k).replace('_', ' '))} | {md_escape(as_text(v))} |"
                       for k, v in self["figures"].items())
        table = f"\n\n| figure | value |\n|---|---|{rows}" if rows else ""
        return f"**Verdict: {self['status'].upper()}** — {md_inline(self['summary'])}{table}"

    def __repr__(self) -> str:
        figures = "".join(f"\n  {str(k).replace('_', ' ')}: {as_text(v)}" for k, v in self["figures"].items())
        return f"Verdict: {self['status'].upper()} — {self['summary']}{figures}"

    def _ipython_display_(self) -> None:
        if self._shown_in is not None and self._shown_in == _execution_count():
            return  # the cell that called verdict() already shows it
        from IPython.display import display

        display({"text/html": self._repr_html_(), "text/markdown": self._repr_markdown_(),
                 "text/plain": repr(self)}, raw=True)


def _execution_count() -> int | None:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return getattr(shell, "execution_count", None) if shell is not None else None


def verdict(status: str, summary: str, **figures: Any) -> Verdict:
    """Record the notebook's verdict (status is confirmed / refuted / inconclusive, with its key figures) and show
    it; the returned Verdict is a dict that displays as the verdict, so a cell may end with the call."""
    if status not in VERDICTS:
        raise ValueError(f"verdict status must be one of {VERDICTS}, not {status!r}")
    value = Verdict(status, str(summary), to_jsonable(figures))
    record("verdict", dict(value), show=False)
    try:
        from IPython.display import display

        display({"text/html": value._repr_html_(), "text/plain": repr(value)}, raw=True)
    except ImportError:
        pass
    return value


def verdict_html(status: str, summary: str, figures: dict[str, Any]) -> str:
    """The verdict line and its key figures as escaped HTML (summaries quote input: host names, file names)."""
    td = '<td style="text-align:left">'
    rows = "".join(f"<tr>{td}{html.escape(str(k).replace('_', ' '))}</td>{td}{html.escape(as_text(v))}</td></tr>"
                   for k, v in figures.items())
    table = f'<table style="width:auto;text-align:left">{rows}</table>' if rows else ""
    return (f'<div style="text-align:left"><p><b>Verdict: {html.escape(status.upper())}</b> — '
            f"{html_inline(summary)}</p>{table}</div>")


def format_value(v: Any) -> str:
    """A key figure as short text: 3 significant digits for floats, thousands separated, booleans as yes/no."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and not math.isfinite(v):
        return "n/a" if math.isnan(v) else str(v)
    if isinstance(v, float) and abs(v) >= 1000:
        return f"{v:,.0f}"
    if isinstance(v, float):
        return f"{v:.3g}"
    return "n/a" if v is None else str(v)


def as_text(v: Any, limit: int = 12) -> str:
    """Any recorded value as readable text, never a Python repr: scalars by format_value, a list as its items
    joined by commas, a dict as "key value" pairs (a nested one in parentheses); at most `limit` items each. Items
    that are phrases (evidence sentences) are joined by semicolons."""
    if isinstance(v, dict):
        keys, values = [str(k).replace("_", " ") + " " for k in v], list(v.values())
    elif isinstance(v, (list, tuple, set)):
        values = list(v)
        keys = [""] * len(values)
    else:
        return format_value(v)
    texts = [_nested(x, limit) for x in values[:limit]]
    sep = "; " if any(" " in t for t in texts) else ", "
    more = f" and {len(values) - limit} more" if len(values) > limit else ""
    return sep.join(k + t for k, t in zip(keys, texts, strict=False)) + more if texts else "none"


def count(n: int, noun: str) -> str:
    """"1 host", "8 hosts": a number and its noun, plural when n is not 1."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _nested(v: Any, limit: int) -> str:
    return f"({as_text(v, limit)})" if isinstance(v, (dict, list, tuple, set)) and v else as_text(v, limit)


def md_escape(text: Any) -> str:
    """Text from inputs made safe inside Markdown: HTML escaped and Markdown's own markup neutralised."""
    return re.sub(r"([\\`*_{}\[\]()#+!|~>-])", r"\\\1", html.escape(str(text), quote=True))


def html_inline(text: Any) -> str:
    """Text as escaped HTML whose `code` spans are <code> elements (the only Markdown the playbook's own
    sentences use), so a command reads as a command and not as backticks."""
    return re.sub(r"`([^`\n]+)`", r"<code>\1</code>", html.escape(str(text), quote=True))


def md_inline(text: Any) -> str:
    """Text from inputs made safe inside Markdown (md_escape) while its own `code` spans stay Markdown code spans
    (whose content every renderer shows literally, escaped): commands read as commands, not as backticks."""
    parts = re.split(r"`([^`\n]+)`", str(text))
    return "".join(md_escape(part) if i % 2 == 0 else f"`{part}`" for i, part in enumerate(parts))


def collect(notebook: str | Path | dict) -> dict[str, Any]:
    """All values recorded in an executed notebook (path or nbformat dict), later records winning."""
    nb = notebook if isinstance(notebook, dict) else json.loads(Path(notebook).read_text())
    values: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) or []:
            payload = (out.get("data") or {}).get(MIME)
            if isinstance(payload, str):
                payload = json.loads(payload)
            if isinstance(payload, dict) and "name" in payload:
                values[payload["name"]] = payload.get("value")
    return values
