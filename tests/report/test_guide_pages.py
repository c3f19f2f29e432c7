"""The docs bundled into a report folder (guide_pages.bundle_docs): rendered, self-contained, linked inside it."""

from __future__ import annotations

import re

from conftest import ROOT

from playbook.report.guide.pages import bundle_docs, render


def test_the_repositorys_docs_become_pages_whose_links_stay_in_the_report(tmp_path):
    pages = {p.name: p for p in bundle_docs(tmp_path, ROOT, notebooks=["01_triage"])}
    assert {"field-guide.html", "runbook.html"} <= set(pages)
    for name, page in pages.items():
        text = page.read_text(encoding="utf-8")
        assert "<script" not in text and "script-src 'none'" in text
        ids = set(re.findall(r'id="([^"]+)"', text))
        for href in re.findall(r'href="([^"]+)"', text):
            target, _, anchor = href.partition("#")
            assert not target.endswith(".md") and "docs/" not in target, f"{name}: {href} points into the checkout"
            if not target:
                assert anchor in ids, f"{name}: #{anchor} names no heading"
                continue
            dest = (page.parent / target).resolve()
            assert dest.is_relative_to(tmp_path.resolve()), f"{name}: {href} leaves the report"
            if dest.parent != page.parent.parent.resolve():  # the index and notebook pages are written later
                assert dest.is_file(), f"{name}: broken link {href}"
            if anchor and dest.suffix == ".html" and dest.parent == page.parent:
                assert f'id="{anchor}"' in dest.read_text(encoding="utf-8"), f"{name}: {href} names no heading"
        assert all(src.startswith("data:image/png;base64,") for src in re.findall(r'<img src="([^"]+)"', text))
        prose = re.sub(r"<pre>.*?</pre>", "", text, flags=re.DOTALL)
        assert "`" not in prose and "&lt;!--" not in prose, f"{name}: Markdown shown, not rendered"
    guide = pages["field-guide.html"].read_text(encoding="utf-8")
    assert 'href="../01_triage.html"' in guide  # a notebook in the report: its page
    assert "(not in this report)" in guide  # one that is not: plain text
    assert '<img src="data:image/png' in guide  # the guide's figures travel inside the page


def test_markup_in_a_doc_is_text_and_headings_get_githubs_anchors():
    body = render("# Read `this`\n\n<script>x</script>\n\n## Read this\n\n<!-- generated:x -->\n| a |\n|---|\n| 1 |\n")
    assert '<h1 id="read-this">' in body and '<h2 id="read-this-1">' in body
    assert "<script>" not in body and "&lt;script&gt;" in body and "generated:x" not in body
    assert "<table>" in body and "<code>this</code>" in body
