"""Record named values in a notebook's outputs (the scrapbook idea) and collect them back from the .ipynb.

Inside a notebook:   record("throughput_fix", 812.4)   or   verdict("confirmed", "fix recovers 98% ...", gap=0.31)
From a batch runner: collect("executed.ipynb") -> {"throughput_fix": 812.4, "verdict": {...}, ...}

Values travel as a custom MIME type in display_data outputs, so they survive papermill and nbconvert and never
depend on the notebook's text output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playbook.jsonable import to_jsonable

MIME = "application/x.playbook.record+json"
VERDICTS = ("confirmed", "refuted", "inconclusive")


def record(name: str, value: Any, show: bool = True) -> Any:
    """Store `value` under `name` in the notebook's outputs (and show it as text); returns `value`."""
    payload = {"name": name, "value": to_jsonable(value)}
    try:
        from IPython.display import display
    except ImportError:  # outside IPython: nothing to record into
        return value
    data = {MIME: payload}
    if show:
        data["text/plain"] = f"{name} = {json.dumps(payload['value'])}"
    display(data, raw=True)
    return value


def verdict(status: str, summary: str, **figures: Any) -> dict:
    """Record the notebook's verdict: status is confirmed / refuted / inconclusive, with its key figures."""
    if status not in VERDICTS:
        raise ValueError(f"verdict status must be one of {VERDICTS}, not {status!r}")
    value = {"status": status, "summary": summary, "figures": to_jsonable(figures)}
    record("verdict", value, show=False)
    try:
        from IPython.display import HTML, display

        display(HTML(verdict_html(status, summary, figures)))
    except ImportError:
        pass
    return value


def verdict_html(status: str, summary: str, figures: dict[str, Any]) -> str:
    """The verdict line and its key figures as escaped HTML (summaries quote input: host names, file names)."""
    import html

    td = '<td style="text-align:left">'
    rows = "".join(f"<tr>{td}{html.escape(str(k).replace('_', ' '))}</td>{td}{html.escape(format_value(v))}</td></tr>"
                   for k, v in figures.items() if not isinstance(v, (dict, list)))
    table = f'<table style="width:auto;text-align:left">{rows}</table>' if rows else ""
    return (f'<div style="text-align:left"><p><b>Verdict: {html.escape(status.upper())}</b> — '
            f"{html.escape(str(summary))}</p>{table}</div>")


def format_value(v: Any) -> str:
    """A key figure as short text: 3 significant digits for floats, thousands separated, booleans as yes/no."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and abs(v) >= 1000:
        return f"{v:,.0f}"
    if isinstance(v, float):
        return f"{v:.3g}"
    return "n/a" if v is None else str(v)


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
