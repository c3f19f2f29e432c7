"""HTML for reports: each executed notebook exported without its input cells, and an index.html linking them.

The pages are self-contained (figures embedded as data URIs, no external scripts), so a report folder can be
copied off the cluster and opened anywhere, offline.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import Any

from playbook.report.scrapbook import html_inline

# Pages need no script at all (widgets are dropped, figures are PNGs), so every <script> block is removed (no
# mermaid or MathJax from a CDN) and the policy forbids scripts, inline event handlers and any network fetch.
_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script\s*>\s*", re.IGNORECASE | re.DOTALL)
_BODY_OPEN = re.compile(r"<body[^>]*>", re.IGNORECASE)
_HEAD_OPEN = re.compile(r"<head[^>]*>", re.IGNORECASE)
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; script-src 'none'; "
       "base-uri 'none'; form-action 'none'")
CSP_META = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
_HREF = re.compile(r'href="(?P<href>[^"#:]+\.[A-Za-z0-9]+)(?P<frag>#[^"]*)?"')

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

# exported notebook pages: tables fit the page (text wraps, a wide table scrolls inside its own box)
_PAGE_CSS = (".jp-OutputArea-output{overflow-x:auto;max-width:100%}"
             ".jp-RenderedHTMLCommon td,.jp-RenderedHTMLCommon th{white-space:normal;overflow-wrap:break-word;"
             "max-width:40em}")

_NAV_CSS = ("position:sticky;top:0;z-index:10;background:#f8f9fa;border-bottom:1px solid #dee2e6;"
            "padding:.5rem 1rem;font-family:system-ui,sans-serif;font-size:.9rem")


def badge(label: str, kind: str | None = None) -> str:
    """An HTML badge for a status or verdict (colour from BADGE_COLORS)."""
    color = BADGE_COLORS.get(kind or label, BADGE_COLORS["none"])
    style = (f"background:{color};display:inline-block;padding:.15em .55em;border-radius:.8em;color:white;"
             "font-size:.8rem;font-weight:600;text-transform:uppercase;letter-spacing:.03em;white-space:nowrap")
    return f'<span class="badge badge-{html.escape(kind or label)}" style="{style}">{html.escape(label)}</span>'


def export_html(ipynb: str | Path, out: str | Path, index_href: str = "index.html",
                entry: dict[str, Any] | None = None, source_dir: str | Path | None = None) -> Path:
    """Write `ipynb` as HTML without input cells to `out`, with a bar linking back to the index.

    `entry` (the notebook's summary.json entry) adds its status, verdict and error to the bar, and a verdict card
    on top when the notebook did not draw its own. `source_dir` (default: the folder of `ipynb`; the runner passes
    the source notebook's) is where the notebook's relative links point from; they are rewritten to work from
    `out`'s folder.
    """
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(ipynb), as_version=4)
    nb.metadata.pop("widgets", None)  # headless runs carry no widget state; never load the widget renderer
    _drop_record_payloads(nb)
    _fold_streams(nb)
    key_png = key_figure(nb)
    # code cells without output (imports, parameters) would leave empty bands between the blocks
    nb.cells = [c for c in nb.cells if c.cell_type != "code" or c.get("outputs")]
    exporter = HTMLExporter(template_name="lab", exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True, embed_images=True)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": Path(ipynb).stem}})
    out = Path(out)
    body = secure(body).replace("</head>", f"<style>{_PAGE_CSS}</style></head>", 1)
    body = relink(body, Path(source_dir) if source_dir else Path(ipynb).parent, out.parent)
    has_card = 'id="verdict"' in body
    bar = _nav_bar(Path(ipynb).name, index_href, entry, with_verdict=False)
    if entry and not has_card:
        from playbook.report import headline

        h = headline.lab_headline(entry)
        if h is not None:
            bar += headline.card_html(h, key_png, "the lab's key figure: throughput of the fault, the fix and no fault")
    m = _BODY_OPEN.search(body)
    body = body[: m.end()] + bar + body[m.end():] if m else bar + body
    out.write_text(body, encoding="utf-8")
    return out


KEY_FIGURE_TAG = "key-figure"  # the lab notebook cell whose figure the verdict card shows


def key_figure(nb) -> str | None:
    """The base64 PNG of the first output image of the notebook's cell tagged KEY_FIGURE_TAG, if it drew one."""
    for cell in nb.cells:
        if cell.cell_type != "code" or KEY_FIGURE_TAG not in (cell.get("metadata", {}).get("tags") or []):
            continue
        for output in cell.get("outputs", []):
            png = (output.get("data") or {}).get("image/png")
            if png:
                return "".join(png).replace("\n", "") if isinstance(png, list) else str(png).replace("\n", "")
    return None


def secure(page: str) -> str:
    """Remove every <script> block and put the Content-Security-Policy meta first in <head>."""
    page = _SCRIPT.sub("", page)
    m = _HEAD_OPEN.search(page)
    return page[: m.end()] + CSP_META + page[m.end():] if m else CSP_META + page


def relink(page: str, source_dir: Path, out_dir: Path) -> str:
    """Relative links written from `source_dir` (notebooks/, e.g. ../docs/field-guide.md) rewritten for a page
    in `out_dir`: to the report's own copy of a doc (guide/field-guide.html) when it holds one, else relative to
    `out_dir`; links to notebooks are left to link_siblings; a target that does not exist becomes plain text."""
    def repl(m: re.Match) -> str:
        href = html.unescape(m.group("href"))
        if href.endswith((".ipynb", ".html", ".json", ".log")) and "/" not in href.lstrip("./"):
            return m.group(0)  # the report's own files
        target = (source_dir / href).resolve()
        if _NOTEBOOK_FILE.fullmatch(target.name):
            return m.group(0)
        bundled = guide_href(target, source_dir.parent, out_dir)
        if bundled:  # the docs travel with the report (guide_pages.bundle_docs)
            return f'href="{html.escape(bundled)}{m.group("frag") or ""}"'
        if not target.exists():
            return 'href="#" title="not available from this report"'
        rel = os.path.relpath(target, out_dir.resolve())
        return f'href="{html.escape(Path(rel).as_posix())}{m.group("frag") or ""}"'

    return _HREF.sub(repl, page)


_NOTEBOOK_FILE = re.compile(r"\d\d_[A-Za-z0-9_]+\.ipynb")
GUIDE_DIR = "guide"  # the report sub-folder holding the docs as HTML (guide_pages.bundle_docs)


def guide_href(target: Path, root: Path, out_dir: Path) -> str | None:
    """The report-relative page of a link to docs/<x>.md of `root`, when the report holds it; else None."""
    try:
        rel = target.resolve().relative_to((root / "docs").resolve())
    except ValueError:
        return None
    page = out_dir / GUIDE_DIR / f"{rel.stem}.html"
    return f"{GUIDE_DIR}/{rel.stem}.html" if rel.suffix == ".md" and len(rel.parts) == 1 and page.is_file() else None


STREAM_LINES = 8  # a printed stream longer than this (or than STREAM_CHARS) is folded into a <details> block
STREAM_CHARS = 800  # about eight lines of a page's width


def _fold_streams(nb) -> None:
    """stderr outputs (expected warnings) become a one-line summary that opens to the text; long stdout is
    folded the same way, so a page is not a wall of progress lines. Text is escaped; <details> needs no script."""
    for cell in nb.cells:
        merged: list = []
        for out in cell.get("outputs", []):  # consecutive prints of one stream are one block
            if (out.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream"
                    and merged[-1].get("name") == out.get("name")):
                prev, text = merged[-1], out.get("text", "")
                prev["text"] = ("".join(prev["text"]) if isinstance(prev["text"], list) else prev["text"]) + (
                    "".join(text) if isinstance(text, list) else text)
            else:
                merged.append(out)
        outs = []
        for out in merged:
            if out.get("output_type") != "stream":
                outs.append(out)
                continue
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else str(text)
            lines = [ln for ln in text.splitlines() if ln.strip()]
            if out.get("name") != "stderr" and len(lines) <= STREAM_LINES and len(text) <= STREAM_CHARS:
                outs.append(out)
                continue
            what = (f"{len(lines)} warning line{'s' * (len(lines) != 1)} from the run" if out.get("name") == "stderr"
                    else f"{len(lines)} lines of output")
            first = html.escape(_first_line(lines[0] if lines else "", 160))
            body = html.escape("\n".join(lines[:200]) + ("\n…" if len(lines) > 200 else ""))
            outs.append({"output_type": "display_data", "metadata": {}, "data": {
                "text/html": f'<details style="text-align:left"><summary>{what}: <code>{first}</code></summary>'
                             f'<pre style="white-space:pre-wrap">{body}</pre></details>'}})
        if "outputs" in cell:
            cell["outputs"] = outs


def _drop_record_payloads(nb) -> None:
    """Remove record() outputs: their payload is a MIME type no browser renders and their text/plain is a raw
    `name = {json}` line (the values are in summary.json and in the page's own tables)."""
    from playbook.report.scrapbook import MIME

    for cell in nb.cells:
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data is not None and MIME in data:
                continue
            kept.append(out)
        if "outputs" in cell:
            cell["outputs"] = kept


def _nav_bar(ipynb_name: str, index_href: str, entry: dict[str, Any] | None, with_verdict: bool = True) -> str:
    parts = [f'<a href="{html.escape(index_href)}">&larr; report index</a>',
             f'<a href="{html.escape(ipynb_name)}">executed notebook (.ipynb)</a>']
    if entry:
        parts.append(badge(entry.get("status", "ok")))
        v = entry.get("verdict") or {}
        if v.get("status") and with_verdict:
            parts.append(badge(v["status"]) + " " + html_inline(v.get("summary", "")))
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
    """A key figure as short text (record.as_text: 3 significant digits, lists and dicts as their items, never a
    Python or JSON repr), cut to 80 characters."""
    from playbook.report.scrapbook import as_text

    text = as_text(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _inputs_of(nb: dict[str, Any], root: Path | None = None) -> str:
    """The inputs a run read, as escaped text (file names relative to the repository `root` where they are in it)."""
    inputs = (nb.get("parameters") or {}).get("inputs") or []
    names = []
    for p in inputs:
        try:
            names.append(str(Path(p).resolve().relative_to(root.resolve())) if root else str(p))
        except (ValueError, OSError):
            names.append(str(p))
    shown = ", ".join(html.escape(n) for n in names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"<br><small>inputs: {shown}</small>" if shown else ""


def _lead_card(summary: dict[str, Any], out_dir: Path, root: Path | None = None) -> str:
    """The first screen of the index: a verdict card with its key figure when the run saved one — the first lab's
    when labs were asked for without inputs of one's own (`playbook report --labs 12`), else the first triage's."""
    import base64

    from playbook.report import headline

    params = summary.get("parameters") or {}
    notebooks = summary.get("notebooks", [])
    if params.get("labs") and not params.get("paths"):
        for nb in notebooks:
            head = headline.lab_headline(nb) if not (nb.get("records") or {}).get("headline") else None
            if head:
                return headline.card_html(head) + _from_line(nb, root)
    for nb in notebooks:
        head = (nb.get("records") or {}).get("headline")
        if isinstance(head, dict) and head.get("sentence"):
            png = out_dir / str(head.get("figure") or "")
            b64 = base64.b64encode(png.read_bytes()).decode("ascii") if head.get("figure") and png.is_file() else None
            alt = str(head.get("figure_alt") or "heatmap of every GPU over time, the ones not ok first")
            return (headline.card_html(head, b64, alt)
                    + _from_line(nb, root))
    for nb in notebooks:
        head = headline.lab_headline(nb)
        if head:
            return headline.card_html(head) + _from_line(nb, root)
    return ""


def _from_line(nb: dict[str, Any], root: Path | None = None) -> str:
    return (f'<p class="meta">from <a href="{html.escape(nb.get("html") or "")}">'
            f'{html.escape(nb.get("title") or nb["notebook"])}</a>{_inputs_of(nb, root)}</p>')


def _guide_line(out_dir: Path) -> str:
    pages = [(name, title) for name, title in (("runbook", "runbook"), ("field-guide", "field guide"))
             if (out_dir / GUIDE_DIR / f"{name}.html").is_file()]
    links = " and the ".join(f'<a href="{GUIDE_DIR}/{name}.html">{title}</a>' for name, title in pages)
    return f'<p class="meta">How to read this report: the {links} (copies in this folder).</p>' if pages else ""


def _figures_html(head: dict[str, Any], verdict: dict[str, Any]) -> str:
    """An index row's figures line (escaped): the time lost and the next command from the row's card (measured, a
    finding's own estimate, or not measured), else the lab verdict's own figures; "" when there are none."""
    from playbook.report.headline import format_value, pct

    command = (f" · next: <code>{html.escape(str(head.get('next_command')))}</code></div>" if head.get("next_command")
               else f" · next: {html_inline(str(head.get('next_why') or ''))}</div>")  # a measurement, not a command
    if head.get("lost_share") is not None:
        what = "Wall time lost" if head.get("basis") == "wall" else "GPU time lost"
        per_day = (f" ({head['gpu_hours_per_day']:.1f} GPU-hours/day)" if head.get("gpu_hours_per_day") is not None
                   else "")
        return f"<div class=figures>{what} {pct(head['lost_share'])}{per_day}{command}"
    if head.get("unpriced"):  # stated, not priced (answer._unpriced)
        return f"<div class=figures>Time lost {html.escape(str(head['unpriced']))}{command}"
    if head.get("estimated_share"):  # a finding's own share, no time axis to count every second on
        return (f"<div class=figures>GPU time lost ~{pct(head['estimated_share'])} by the leading finding (no "
                f"utilization or step times){command}")
    if head.get("measured") is False:  # a verdict from stated faults or log facts: no time axis to count
        return f"<div class=figures>GPU time not measured (no utilization or step times){command}"
    if verdict.get("figures"):
        figs = [(k, v) for k, v in verdict["figures"].items() if not isinstance(v, (dict, list))]
        return "<div class=figures>" + ", ".join(
            f"{html.escape(str(k))} = {html.escape(format_value(v))}" for k, v in figs[:8]) + "</div>"
    return ""


def write_index(summary: dict[str, Any], out_dir: str | Path, root: str | Path | None = None) -> Path:
    """index.html for a report folder: the lead run's verdict card, then one row per notebook with its inputs
    (named relative to the repository `root` when they lie in it), badges and links, then the run parameters."""
    root = Path(root) if root is not None else None
    out_dir = Path(out_dir)
    rows = []
    for i, nb in enumerate(summary.get("notebooks", []), start=1):
        verdict = nb.get("verdict") or {}
        status = nb.get("status", "ok")
        head = (nb.get("records") or {}).get("headline") or {}
        if not head.get("sentence") or (verdict and head.get("status") != verdict.get("status")):
            head = {}  # a card that is not the row's verdict (onboarding's card is its sample's) does not speak for it
        text = html_inline(head.get("sentence") or verdict.get("summary", ""))  # escaped, `code` as code
        text += _figures_html(head, verdict)
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
            f"<tr><td>{i}</td><td>{link}{_inputs_of(nb, root)}</td>"
            f"<td>{badge(status)}</td>"
            f"<td>{badge(verdict.get('status', 'none'))}</td>"
            f"<td>{text}</td>"
            f"<td>{nb.get('duration_s', 0):.1f}&nbsp;s</td><td>{' · '.join(links)}</td></tr>"
        )
    counts = summary.get("counts", {})
    totals = " ".join(badge(f"{n} {k}", k) for k, n in counts.items() if n)
    params = summary.get("parameters", {})
    param_text = "; ".join(f"{html.escape(str(k))} = {html.escape(format_figure(v))}" for k, v in params.items()
                           if v not in (None, "", [], {}))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{CSP_META}<title>Playbook report {html.escape(summary.get('run_id', ''))}</title>
<style>{_CSS}</style></head>
<body>
<h1>GPU utilization playbook: report</h1>
{_lead_card(summary, out_dir, root)}
<div class="totals">{totals}</div>
<table>
<thead><tr><th>#</th><th>Run and its inputs</th><th>Run</th><th>Verdict</th><th>Verdict in one sentence</th>
<th>Time</th><th>Files</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
<p class="meta">run <code>{html.escape(summary.get('run_id', ''))}</code> ·
created {html.escape(summary.get('created', ''))} · {summary.get('duration_s', 0):.1f} s ·
playbook {html.escape(str(summary.get('playbook_version', '')))}<br>{param_text}</p>
{_guide_line(out_dir)}
<p class="meta"><a href="summary.json">summary.json</a> holds every recorded value and per-cell durations;
<a href="kernels.log">kernels.log</a> what the kernels wrote outside their notebooks.
Badges: run <b>ok</b>/<b>error</b>; verdict <b>confirmed</b> / <b>refuted</b> / <b>inconclusive</b>
(the notebook's own hypothesis).</p>
</body></html>
"""
    path = out_dir / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
