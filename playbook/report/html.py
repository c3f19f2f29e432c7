"""HTML for reports: each executed notebook exported without its input cells, and an index.html linking them.

The pages are self-contained (figures embedded as data URIs, no external scripts), so a report folder can be
copied off the cluster and opened anywhere, offline.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

_EXTERNAL_SCRIPT = re.compile(r"<script[^>]*\ssrc=\"https?://[^\"]*\"[^>]*>\s*</script>\s*", re.IGNORECASE)
_BODY_OPEN = re.compile(r"<body[^>]*>", re.IGNORECASE)

BADGE_COLORS = {
    "ok": "#2a9d8f",
    "error": "#d62828",
    "confirmed": "#264653",
    "refuted": "#6c757d",
    "inconclusive": "#e9a23b",
    "none": "#adb5bd",
}

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto; max-width: 1100px;
       color: #212529; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
.meta { color: #495057; font-size: .9rem; margin-bottom: 1.5rem; }
.meta code { background: #f1f3f5; padding: 0 .3em; border-radius: 3px; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { text-align: left; vertical-align: top; padding: .5rem .6rem; border-bottom: 1px solid #dee2e6; }
th { background: #f8f9fa; }
.figures { color: #495057; font-size: .85rem; }
.error { color: #d62828; font-family: ui-monospace, monospace; font-size: .85rem; white-space: pre-wrap; }
.totals { margin: 1rem 0; }
"""

_NAV_CSS = ("position:sticky;top:0;z-index:10;background:#f8f9fa;border-bottom:1px solid #dee2e6;"
            "padding:.5rem 1rem;font-family:system-ui,sans-serif;font-size:.9rem")


def badge(label: str, kind: str | None = None) -> str:
    """An HTML badge for a status or verdict (colour from BADGE_COLORS)."""
    color = BADGE_COLORS.get(kind or label, BADGE_COLORS["none"])
    style = (f"background:{color};display:inline-block;padding:.15em .55em;border-radius:.8em;color:white;"
             "font-size:.8rem;font-weight:600;text-transform:uppercase;letter-spacing:.03em;white-space:nowrap")
    return f'<span class="badge badge-{html.escape(kind or label)}" style="{style}">{html.escape(label)}</span>'


def export_html(ipynb: str | Path, out: str | Path, index_href: str = "index.html",
                entry: dict[str, Any] | None = None) -> Path:
    """Write `ipynb` as HTML without input cells to `out`, with a bar linking back to the index.

    `entry` (the notebook's summary.json entry) adds its status, verdict and error to the bar.
    """
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(ipynb), as_version=4)
    nb.metadata.pop("widgets", None)  # headless runs carry no widget state; never load the widget renderer
    _drop_record_payloads(nb)
    exporter = HTMLExporter(template_name="lab", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True, embed_images=True)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": Path(ipynb).stem}})
    body = _EXTERNAL_SCRIPT.sub("", body)
    bar = _nav_bar(Path(ipynb).name, index_href, entry)
    m = _BODY_OPEN.search(body)
    body = body[: m.end()] + bar + body[m.end():] if m else bar + body
    out = Path(out)
    out.write_text(body, encoding="utf-8")
    return out


def _drop_record_payloads(nb) -> None:
    """Remove record() payloads (a MIME type no browser renders); outputs left empty are dropped."""
    from playbook.report.record import MIME

    for cell in nb.cells:
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data is not None and MIME in data:
                data.pop(MIME)
                if not data:
                    continue
            kept.append(out)
        if "outputs" in cell:
            cell["outputs"] = kept


def _nav_bar(ipynb_name: str, index_href: str, entry: dict[str, Any] | None) -> str:
    parts = [f'<a href="{html.escape(index_href)}">&larr; report index</a>',
             f'<a href="{html.escape(ipynb_name)}">executed notebook (.ipynb)</a>']
    if entry:
        parts.append(badge(entry.get("status", "ok")))
        v = entry.get("verdict") or {}
        if v.get("status"):
            parts.append(badge(v["status"]) + " " + html.escape(str(v.get("summary", ""))))
        err = entry.get("error")
        if err:
            parts.append(f'<span class="error" style="color:#d62828">{html.escape(err["name"])}: '
                         f'{html.escape(_first_line(err.get("message", "")))} (cell {err.get("cell", "?")})</span>')
    return f'<div class="playbook-nav" style="{_NAV_CSS}">' + " &middot; ".join(parts) + "</div>\n"


def _first_line(text: str, limit: int = 300) -> str:
    line = next((ln for ln in str(text).splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


_NOTEBOOK_LINK = re.compile(r'<a href="(?:\.\./notebooks/|notebooks/)?(?P<name>\d\d_[A-Za-z0-9_]+)\.ipynb">(?P<text>.*?)</a>',
                            re.DOTALL)


def link_siblings(out_dir: str | Path, names: list[str]) -> None:
    """In every exported page of a report, point links to other notebooks at their pages when they are in the
    report (`names`); links to notebooks not in it become plain text marked as such."""
    present = set(names)

    def repl(m: re.Match, own: str) -> str:
        if m.group("name") == own:  # the page's own executed notebook
            return m.group(0)
        if m.group("name") in present:
            return f'<a href="{m.group("name")}.html">{m.group("text")}</a>'
        return f'{m.group("text")} <small>(not in this report)</small>'

    for name in names:
        page = Path(out_dir) / f"{name}.html"
        if page.is_file():
            text = page.read_text(encoding="utf-8")
            new = _NOTEBOOK_LINK.sub(lambda m, own=name: repl(m, own), text)
            if new != text:
                page.write_text(new, encoding="utf-8")


def format_figure(value: Any) -> str:
    """A key figure as short text: 3 significant digits for floats, JSON for containers."""
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, (dict, list)):
        text = json.dumps(value)
        return text if len(text) <= 80 else text[:79] + "…"
    return str(value)


def write_index(summary: dict[str, Any], out_dir: str | Path) -> Path:
    """index.html for a report folder: run parameters, then one row per notebook with badges and links."""
    out_dir = Path(out_dir)
    rows = []
    for i, nb in enumerate(summary.get("notebooks", []), start=1):
        verdict = nb.get("verdict") or {}
        status = nb.get("status", "ok")
        figures = verdict.get("figures") or {}
        fig_text = ", ".join(f"{html.escape(k)} = {html.escape(format_figure(v))}" for k, v in figures.items())
        text = html.escape(str(verdict.get("summary", "")))
        if nb.get("error"):
            err = nb["error"]
            text += (f'<div class="error">{html.escape(err["name"])}: {html.escape(_first_line(err["message"]))}'
                     f' (cell {err.get("cell", "?")}; partial output kept)</div>')
        links = []
        if nb.get("html"):
            links.append(f'<a href="{html.escape(nb["html"])}">report</a>')
        if nb.get("ipynb"):
            links.append(f'<a href="{html.escape(nb["ipynb"])}">.ipynb</a>')
        name = html.escape(nb.get("title") or nb["notebook"])
        link = f'<a href="{html.escape(nb["html"])}">{name}</a>' if nb.get("html") else name
        rows.append(
            f"<tr><td>{i}</td><td>{link}<br><small>{html.escape(nb['notebook'])}</small></td>"
            f"<td>{badge(status)}</td>"
            f"<td>{badge(verdict.get('status', 'none'))}</td>"
            f"<td>{text}{'<div class=figures>' + fig_text + '</div>' if fig_text else ''}</td>"
            f"<td>{nb.get('duration_s', 0):.1f}&nbsp;s</td><td>{' · '.join(links)}</td></tr>"
        )
    counts = summary.get("counts", {})
    totals = " ".join(badge(f"{n} {k}", k) for k, n in counts.items() if n)
    params = html.escape(json.dumps(summary.get("parameters", {})))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Playbook report {html.escape(summary.get('run_id', ''))}</title>
<style>{_CSS}</style></head>
<body>
<h1>GPU utilization playbook: report</h1>
<div class="meta">run <code>{html.escape(summary.get('run_id', ''))}</code> ·
created {html.escape(summary.get('created', ''))} · {summary.get('duration_s', 0):.1f} s ·
playbook {html.escape(str(summary.get('playbook_version', '')))}<br>parameters <code>{params}</code></div>
<div class="totals">{totals}</div>
<table>
<thead><tr><th>#</th><th>Notebook</th><th>Run</th><th>Verdict</th><th>Summary and key figures</th>
<th>Time</th><th>Files</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
<p class="meta"><a href="summary.json">summary.json</a> holds every recorded value and per-cell durations;
<a href="kernels.log">kernels.log</a> what the kernels wrote outside their notebooks.
Badges: run <b>ok</b>/<b>error</b>; verdict <b>confirmed</b> / <b>refuted</b> / <b>inconclusive</b>
(the notebook's own hypothesis).</p>
</body></html>
"""
    path = out_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
