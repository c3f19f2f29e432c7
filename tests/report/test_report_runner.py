"""The batch runner: papermill execution, summary.json, HTML without inputs, index.html, failures kept."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest
from nbrun import assert_readable

from playbook.core.errors import InputError, PlaybookError
from playbook.report import catalog
from playbook.report.runner import SUMMARY_SCHEMA_VERSION, Job, plan, run_batch, run_id

PARAMS = "n: int = 50  # points on the ramp [quick: 10]\nfail: bool = False  # raise in the middle, on purpose"


def _notebook(path: Path, title: str, params: str = PARAMS) -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(params)
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"# {title}\n\n**Summary**: a ramp of n points.\n"),
        cell,
        nbformat.v4.new_markdown_cell("## 1 Measurement"),
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nfrom playbook.report.scrapbook import record, "
                                  "verdict\nrecord('n_points', n);"),
        nbformat.v4.new_code_cell("fig, ax = plt.subplots(); ax.plot(range(n)); ax.set_title('ramp');"),
        nbformat.v4.new_code_cell("import os\nos.write(2, b'C-level noise from the kernel\\n');"),
        nbformat.v4.new_code_cell("if fail:\n    raise ValueError(f'failed on purpose with n={n}')"),
        nbformat.v4.new_markdown_cell("## 2 Verdict"),
        nbformat.v4.new_code_cell("verdict('confirmed', 'the ramp rises', slope=1.0, n=n);"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    src = tmp_path_factory.mktemp("nbs")
    ramp = _notebook(src / "ramp.ipynb", "Ramp")
    out = tmp_path_factory.mktemp("report")
    jobs = [Job(str(ramp), {"n": 20}, "good", "Ramp"), Job(str(ramp), {"fail": True}, "bad", "Ramp (fails)")]
    # two kernels at once (the --jobs path); the triage tests cover one at a time
    summary = run_batch(jobs, out, parameters={"why": "test"}, run_name="test-run", progress=False, workers=2)
    return out, summary


def test_summary_json_records_verdicts_figures_cells_and_errors(batch):
    out, summary = batch
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary, default=str))
    assert on_disk["schema_version"] == SUMMARY_SCHEMA_VERSION
    assert on_disk["run_id"] == "test-run" and on_disk["parameters"] == {"why": "test"}
    assert on_disk["counts"]["ok"] == 1 and on_disk["counts"]["error"] == 1
    good, bad = on_disk["notebooks"]
    assert good["status"] == "ok" and good["error"] is None
    assert good["verdict"]["status"] == "confirmed" and good["verdict"]["figures"] == {"slope": 1.0, "n": 20}
    assert good["records"] == {"n_points": 20}
    durations = [c["duration_s"] for c in good["cells"]]
    assert len(durations) >= 5 and all(isinstance(d, float) and d >= 0 for d in durations)
    assert any("ax.plot" in c["first_line"] for c in good["cells"])
    # the failure stops only its own notebook; what ran before it is kept
    assert bad["status"] == "error" and bad["verdict"] is None
    assert bad["error"]["name"] == "ValueError" and "failed on purpose with n=50" in bad["error"]["message"]
    assert bad["records"] == {"n_points": 50}
    assert [c["status"] for c in bad["cells"]].count("failed") == 1


def test_every_notebook_is_kept_executed_and_exported_without_inputs(batch):
    out, _ = batch
    for name in ("good", "bad"):
        assert (out / f"{name}.ipynb").is_file()
        page = (out / f"{name}.html").read_text()
        assert "<img" in page and "data:image/png;base64" in page  # the ramp figure, embedded
        assert "ax.plot(range(n))" not in page  # input cells left out
        assert "report index" in page and 'href="index.html"' in page
        assert not re.search(r"<script[^>]*src=\"https?://", page)  # opens offline
    bad = (out / "bad.html").read_text()
    assert "failed on purpose with n=50" in bad and "ValueError" in bad
    assert_readable(out / "good.ipynb")  # the verdict shows as text, not as the recorded dict


def test_kernel_stderr_goes_to_the_report_log_not_the_terminal(batch):
    out, _ = batch
    assert (out / "kernels.log").read_text().count("C-level noise from the kernel") == 2


def test_index_links_every_notebook_with_badges_and_errors(batch):
    out, _ = batch
    index = (out / "index.html").read_text()
    assert 'href="good.html"' in index and 'href="bad.html"' in index
    assert 'href="good.ipynb"' in index
    assert "badge-confirmed" in index and "badge-error" in index
    assert "ValueError: failed on purpose with n=50" in index
    assert "slope = 1" in index


def test_catalog_reads_parameters_comments_and_quick_tags(tmp_path):
    spec = catalog.load(_notebook(tmp_path / "10_ramp.ipynb", "Ramp lab"))
    assert spec.title == "Ramp lab" and spec.summary == "a ramp of n points."
    assert [(p.name, p.annotation, p.default) for p in spec.parameters] == [("n", "int", 50), ("fail", "bool", False)]
    assert spec.parameters[0].comment == "points on the ramp"
    assert spec.quick_parameters() == {"n": 10}
    assert catalog.find([spec], "10") is spec and catalog.find([spec], "ramp") is spec
    assert catalog.find([spec], "10_ramp") is spec and catalog.find([spec], "11") is None


@pytest.mark.parametrize("source, problem", [
    ("n = 5  # no annotation", "only `name: type = literal"),
    ("n: int = 5", "no trailing comment"),
    ("n: int = len('ab')  # a call", "not a literal"),
    ("import os  # nope", "only `name: type = literal"),
    ("n: int = 5  # x [quick: oops]", "[quick: ...] value is not a literal"),
    ('s: str = ""  # headerless ("" = read the header)', "comment holds '='"),
])
def test_parameter_cell_rejects_anything_but_commented_literals(source, problem):
    with pytest.raises(catalog.ParameterCellError, match=re.escape(problem)):
        catalog.parse_parameters(source)


def test_quick_flag_parameter_and_overrides(tmp_path, monkeypatch):
    spec = catalog.load(_notebook(tmp_path / "12_x.ipynb", "X", "quick: bool = False  # smaller everything"))
    assert spec.quick_parameters() == {"quick": True}
    monkeypatch.setitem(catalog.QUICK_OVERRIDES, "12_x", {"steps": 3})
    assert spec.quick_parameters() == {"quick": True, "steps": 3}


def test_plan_runs_triage_on_paths_and_adds_named_labs(tmp_path):
    specs = [catalog.load(_notebook(tmp_path / f"{n}.ipynb", n)) for n in
             ("00_onboarding", "01_triage", "10_ramp", "11_other")]
    assert [j.name for j in plan(specs=specs)] == ["01_triage"]  # the notebook's own default input
    only = plan(specs=specs, demo=True)  # `playbook report`: each embedded sample, the strongest first
    assert [j.name for j in only] == ["01_triage-synthetic-64gpu", "01_triage-dflash-8gpu"]
    assert only[0].parameters == {"inputs": ["data/samples/synthetic-64gpu"]}
    assert only[1].parameters["interval_s"] == 2.0
    data = tmp_path / "logs.csv"
    data.write_text("x")
    jobs = plan(paths=[str(data)], labs=["ramp"], quick=True, specs=specs)
    assert [j.name for j in jobs] == ["01_triage", "10_ramp"]
    assert jobs[0].parameters == {"n": 10, "inputs": [str(data.resolve())], "fields": "", "interval_s": 0.0,
                                  "tz": "UTC"}
    assert jobs[1].parameters == {"n": 10}
    local = plan(paths=[str(data)], specs=specs, tz="Asia/Tokyo")
    assert local[0].parameters["tz"] == "Asia/Tokyo"
    with pytest.raises(InputError, match="unknown time zone 'Tokyo'"):
        plan(paths=[str(data)], specs=specs, tz="Tokyo")
    assert [j.name for j in plan(labs=["all"], specs=specs)] == ["00_onboarding", "01_triage", "10_ramp", "11_other"]
    with pytest.raises(PlaybookError, match="no notebook called 'nope'"):
        plan(labs=["nope"], specs=specs)
    with pytest.raises(InputError, match="missing.csv"):
        plan(paths=[str(tmp_path / "missing.csv")], specs=specs)


def test_run_id_is_utc_timestamp_and_short_name():
    now = datetime(2025, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
    assert run_id("dflash 8gpu!", now) == "20250304T050607Z-dflash-8gpu"
    assert run_id("", now) == "20250304T050607Z-report"


def test_links_between_notebooks_point_at_pages_in_the_report(tmp_path):
    from playbook.report.html import link_siblings

    page = ('<a href="index.html">index</a> <a href="01_triage.ipynb">executed notebook</a> '
            '<a href="10_data_starvation.ipynb">the lab</a> <a href="../notebooks/12_stalls.ipynb">stalls</a>')
    (tmp_path / "01_triage.html").write_text(page)
    (tmp_path / "10_data_starvation.html").write_text('<a href="01_triage.ipynb">triage</a>')
    link_siblings(tmp_path, ["01_triage", "10_data_starvation"])
    triage_page = (tmp_path / "01_triage.html").read_text()
    assert '<a href="01_triage.ipynb">executed notebook</a>' in triage_page  # its own notebook stays
    assert '<a href="10_data_starvation.html">the lab</a>' in triage_page
    assert "stalls <small>(not in this report)</small>" in triage_page
    assert (tmp_path / "10_data_starvation.html").read_text() == '<a href="01_triage.html">triage</a>'


def test_progress_off_a_terminal_is_one_plain_line_per_notebook(capsys):
    from playbook.report.runner import _progress

    bar = _progress(2, enabled=True)  # pytest's captured stderr is not a terminal
    for name in ("01_triage", "12_lab"):
        bar.set_postfix_str(name)
        bar.update(1)
    bar.close()
    err = capsys.readouterr().err
    assert err.splitlines() == ["notebooks: 1/2 done (01_triage)", "notebooks: 2/2 done (12_lab)"]
    assert "\r" not in err and "|" not in err  # no progress-bar frames
    quiet = _progress(2, enabled=False)
    quiet.update(1)
    assert capsys.readouterr().err == ""
