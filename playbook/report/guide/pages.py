"""The field guide, runbook and other docs/*.md as HTML pages inside a report folder (`guide/`), so a report that
is copied off the cluster keeps them: Markdown rendered (mistune, raw HTML escaped), headings with GitHub's
anchors, figures embedded as data URIs, links between the pages and to the report's own notebook pages relative,
and anything outside the report (the checkout's files) plain text.

    pages = bundle_docs("reports/r1", root=".", notebooks=["01_triage", "12_checkpoint_eval_stalls"])
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from playbook.report.html import CSP_META, GUIDE_DIR

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HEADING = re.compile(r"<h([1-6])>(.*?)</h\1>", re.DOTALL)
_LINK = re.compile(r'<a href="(?P<href>[^"]*)">(?P<text>.*?)</a>', re.DOTALL)
_IMG = re.compile(r'<img src="(?P<src>[^"]*)" alt="(?P<alt>[^"]*)"\s*/?>')
_NOTEBOOK = re.compile(r"(?:\.\./)?notebooks/(?P<name>\d\d_[A-Za-z0-9_]+)\.ipynb")

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto; max-width: 1100px;
       color: #212529; padding: 0 1rem; line-height: 1.5; }
table { border-collapse: collapse; display: block; overflow-x: auto; max-width: 100%; font-size: .92rem; }
th, td { text-align: left; vertical-align: top; padding: .35rem .6rem; border-bottom: 1px solid #dee2e6;
         overflow-wrap: break-word; }
th { background: #f8f9fa; }
pre { background: #f8f9fa; padding: .6rem; overflow-x: auto; font-size: .85rem; }
code { background: #f1f3f5; padding: 0 .25em; border-radius: 3px; font-size: .9em; }
pre code { background: none; padding: 0; }
img { max-width: 100%; }
.pb-guide-nav { position: sticky; top: 0; background: #f8f9fa; border-bottom: 1px solid #dee2e6; padding: .4rem 1rem;
                font-size: .9rem; }
"""


def slug(text: str, seen: dict[str, int]) -> str:
    """GitHub's anchor for a heading's text: lower case, punctuation but '-' and '_' dropped, spaces to '-', and
    '-1', '-2', ... for repeats (`seen` counts them per page)."""
    base = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}-{n}"


def render(markdown_text: str) -> str:
    """Markdown as HTML body: tables, raw HTML escaped, HTML comments (generated-region markers) dropped,
    headings carrying GitHub's anchors as ids."""
    import mistune

    md = mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])
    body = md(_COMMENT.sub("", markdown_text))
    seen: dict[str, int] = {}

    def heading(m: re.Match) -> str:
        text = html.unescape(re.sub(r"<[^>]+>", "", m.group(2)))
        return f'<h{m.group(1)} id="{html.escape(slug(text, seen))}">{m.group(2)}</h{m.group(1)}>'

    return _HEADING.sub(heading, body)


def relink(body: str, page_dir: Path, pages: set[str], notebooks: set[str]) -> str:
    """Links of a rendered page (written from `page_dir`, docs/): other bundled pages (`pages`, file stems) and
    notebook pages of the report (`notebooks`) relative; figures embedded; the rest plain text."""
    def link(m: re.Match) -> str:
        href, text = html.unescape(m.group("href")), m.group("text")
        target, _, frag = href.partition("#")
        if not target or re.match(r"[a-z][a-z0-9+.-]*:", target):  # an anchor on this page, or a web link
            return m.group(0)
        nb = _NOTEBOOK.fullmatch(target)
        if nb:
            name = nb.group("name")
            return (f'<a href="../{html.escape(name)}.html">{text}</a>' if name in notebooks
                    else f"{text} <small>(not in this report)</small>")
        stem = Path(target).stem
        if target.endswith(".md") and (page_dir / target).resolve().parent == page_dir.resolve() and stem in pages:
            return f'<a href="{html.escape(stem)}.html{"#" + html.escape(frag) if frag else ""}">{text}</a>'
        return text

    def image(m: re.Match) -> str:
        path = (page_dir / html.unescape(m.group("src"))).resolve()
        if path.suffix.lower() != ".png" or not path.is_file():
            return f"<em>[figure: {m.group('alt')}]</em>"
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f'<img src="data:image/png;base64,{data}" alt="{m.group("alt")}">'

    return _IMG.sub(image, _LINK.sub(link, body))


def bundle_docs(out_dir: str | Path, root: str | Path, notebooks: list[str] | None = None) -> list[Path]:
    """Write every docs/*.md of the repository `root` as `out_dir`/guide/<stem>.html; returns the pages."""
    docs = Path(root) / "docs"
    sources = sorted(docs.glob("*.md")) if docs.is_dir() else []
    if not sources:
        return []
    folder = Path(out_dir) / GUIDE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    stems = {p.stem for p in sources}
    written = []
    for src in sources:
        body = relink(render(src.read_text(encoding="utf-8")), docs, stems, set(notebooks or []))
        title = html.escape(src.stem.replace("-", " "))
        nav = ('<div class="pb-guide-nav"><a href="../index.html">&larr; report index</a> &middot; '
               + " &middot; ".join(f'<a href="{html.escape(s)}.html">{html.escape(s.replace("-", " "))}</a>'
                                   for s in sorted(stems)) + "</div>")
        page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{CSP_META}<title>{title}</title>'
                f"<style>{_CSS}</style></head><body>{nav}\n{body}</body></html>\n")
        path = folder / f"{src.stem}.html"
        path.write_text(page, encoding="utf-8")
        written.append(path)
    return written
