"""Execute a notebook through papermill with small parameters and return what it recorded; and the check that
an executed notebook shows a person text and tables, never a raw Python dict, list or object repr."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from playbook.report.scrapbook import collect

ROOT = Path(__file__).resolve().parents[1]

# what a person must not see: a dict or list repr, an object's default repr, a table cell holding a list or dict
RAW_REPR = re.compile(r"""\{'|\['|\{"[^"\n]+":|\bobject at 0x[0-9a-f]+|<td\b[^>]*>\s*[\[{]""")
_RICH = ("text/html", "text/markdown", "image/png", "image/svg+xml")


def raw_reprs(notebook: str | Path | dict) -> list[str]:
    """Each output of an executed notebook that shows a raw repr, as "cell N (mime): …excerpt…". Per output, what
    a front end shows is checked: its HTML or Markdown when it has one (text/plain is then a fallback nobody
    sees), else its text; printed streams always."""
    nb = notebook if isinstance(notebook, dict) else json.loads(Path(notebook).read_text(encoding="utf-8"))
    found = []
    for index, cell in enumerate(nb.get("cells", [])):
        for out in cell.get("outputs", []) or []:
            shown: list[tuple[str, object]] = []
            if out.get("output_type") == "stream":
                shown.append((f"stream {out.get('name')}", out.get("text", "")))
            data = out.get("data") or {}
            rich = any(m in data for m in _RICH)
            shown += [(m, v) for m, v in data.items()
                      if m in ("text/html", "text/markdown") or (m == "text/plain" and not rich)]
            for mime, text in shown:
                text = "".join(text) if isinstance(text, list) else str(text)
                m = RAW_REPR.search(text)
                if m:
                    found.append(f"cell {index} ({mime}): …{text[max(0, m.start() - 60):m.end() + 60]}…")
    return found


def assert_readable(notebook: str | Path | dict) -> None:
    """Fail naming every output of `notebook` that shows a raw repr (see raw_reprs)."""
    found = raw_reprs(notebook)
    name = Path(notebook).name if not isinstance(notebook, dict) else "notebook"
    assert not found, f"{name} shows raw Python reprs:\n" + "\n".join(found)


def run_notebook(name: str, tmp_path: Path, timeout_s: int = 240, **parameters) -> dict:
    """Run notebooks/<name> headlessly (cwd = repo root), check that its outputs are readable (assert_readable)
    and return collect() of the executed copy."""
    import papermill as pm

    out = tmp_path / Path(name).name
    pm.execute_notebook(
        str(ROOT / "notebooks" / name), str(out), parameters=parameters, cwd=str(ROOT),
        kernel_name="python3", progress_bar=False, execution_timeout=timeout_s,
        request_save_on_cell_execute=False,
    )
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    assert_readable(out)
    return collect(out)
