"""What a person sees of recorded values, verdicts and tables: text and tables, never a raw Python repr; and the
check (tests/nbrun.py raw_reprs) that every executed notebook of the suite passes."""

from __future__ import annotations

import nbformat
import pandas as pd
import pytest
from nbrun import raw_reprs

from playbook.report.scrapbook import as_text, verdict
from playbook.report.tables import readable


def _shell_outputs(shell, source: str) -> list[dict]:
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        shell.run_cell(source, store_history=True)
    return [dict(o.data) for o in cap.outputs]


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    return InteractiveShell.instance()


def test_a_cell_ending_with_verdict_shows_it_once_as_escaped_html_and_text(shell):
    outs = _shell_outputs(shell, "from playbook.report.scrapbook import verdict\n"
                                 "v = verdict('confirmed', 'host <b>n1</b> wins', events={'checkpoint': 4},"
                                 " ranks=[1, 2], ratio=0.8312)\nv")
    shown = [o for o in outs if "text/html" in o]
    assert len(shown) == 1, outs  # the call shows it; ending the cell with it adds no second copy
    page, text = shown[0]["text/html"], shown[0]["text/plain"]
    assert "Verdict: CONFIRMED" in page and "&lt;b&gt;n1&lt;/b&gt;" in page and "<b>n1" not in page
    assert "checkpoint 4" in page and "1, 2" in page and "0.831" in page
    assert text.startswith("Verdict: CONFIRMED — host <b>n1</b> wins") and "events: checkpoint 4" in text
    assert not any(s in page + text for s in ("{'", "['", "{\"status"))
    later = _shell_outputs(shell, "v")  # shown again when asked for in a later cell
    assert len(later) == 1 and "Verdict: CONFIRMED" in later[0]["text/html"]
    assert "**Verdict: CONFIRMED**" in later[0]["text/markdown"] and "&lt;b&gt;" in later[0]["text/markdown"]


def test_verdict_is_still_the_recorded_dict_and_refuses_an_unknown_status():
    v = verdict("refuted", "nothing", n=3)
    assert v == {"status": "refuted", "summary": "nothing", "figures": {"n": 3}}
    with pytest.raises(ValueError, match="confirmed"):
        verdict("maybe", "x")


def test_record_shows_containers_as_text(shell):
    outs = _shell_outputs(shell, "from playbook.report.scrapbook import record\n"
                                 "record('events_at_stalls', {'checkpoint': 4, 'eval': 2});")
    assert outs[-1]["text/plain"] == "events at stalls: checkpoint 4, eval 2"


@pytest.mark.parametrize("value, text", [
    ({"checkpoint": 4, "eval": 2}, "checkpoint 4, eval 2"),
    ({"fault": {"n": 3, "ratio": 0.51234}}, "fault (n 3, ratio 0.512)"),
    ([29, 23, 0], "29, 23, 0"),
    (["rank 1 is slow, always", "rank 2 waits"], "rank 1 is slow, always; rank 2 waits"),
    ([], "none"),
    (float("nan"), "n/a"),
    (list(range(20)), "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 8 more"),
])
def test_as_text(value, text):
    assert as_text(value) == text


def test_readable_tables_show_lists_and_dicts_as_text_and_render_code():
    frame = pd.DataFrame({"cause": ["gc<pause>"], "score": [0.4321],
                          "evidence": [["4 of 8 slow steps", "run `playbook record`"]], "state": [{"epoch": 1}]})
    page = readable(frame, {"score": "{:.2f}"}).to_html()
    assert "gc&lt;pause&gt;" in page and ">0.43<" in page and "epoch 1" in page
    assert "4 of 8 slow steps; run <code>playbook record</code>" in page and "`" not in page
    assert not raw_reprs({"cells": [{"outputs": [{"output_type": "display_data", "data": {"text/html": page}}]}]})
    keyed = readable({"run_dir": "runs/a", "profiled_steps": [2, 3]}).to_html()
    assert "run dir" in keyed and ">2, 3<" in keyed


def test_raw_repr_check_catches_each_kind_and_ignores_fallback_text():
    def nb(*outputs):
        return {"cells": [{"cell_type": "code", "outputs": list(outputs)}]}

    def shown(data):
        return {"output_type": "display_data", "data": data}

    assert raw_reprs(nb(shown({"text/plain": "{'status': 'confirmed'}"})))
    assert raw_reprs(nb({"output_type": "stream", "name": "stdout", "text": "events at them: {'checkpoint': 4}"}))
    assert raw_reprs(nb(shown({"text/html": "<table><tr><td>[waiting for input takes 69%</td></tr></table>"})))
    assert raw_reprs(nb(shown({"text/plain": "<pandas.io.formats.style.Styler object at 0x7f3a>"})))
    assert raw_reprs(nb(shown({"text/plain": 'summary = {"n": {"fault": 2}}'})))
    clean = nb(shown({"text/html": "<p>Verdict</p>", "text/plain": "<IPython.core.display.HTML object>"}),
               shown({"text/plain": "events at stalls: checkpoint 4, eval 2"}))
    assert raw_reprs(clean) == []


def test_an_executed_notebook_with_a_bare_dict_fails_the_check(tmp_path):
    """The check runs on what papermill wrote (the helper every notebook test uses), not only on hand-made
    outputs: a notebook ending a cell with a dict fails it."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("{'status': 'confirmed', 'n': 3}"),
                nbformat.v4.new_code_cell("from playbook.report.scrapbook import verdict\n"
                                          "verdict('confirmed', 'fine', n=3)")]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    found = raw_reprs(nb)
    assert len(found) == 1 and found[0].startswith("cell 0 "), found
