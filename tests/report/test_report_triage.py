"""The triage notebook through the batch runner, on labelled synthetic logs and on the embedded sample."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT
from nbrun import assert_readable

from playbook.labs import synthetic
from playbook.readers import read_paths
from playbook.report import catalog, triage, verdict_rule
from playbook.report.runner import Job, run_batch

TRIAGE = ROOT / "notebooks" / f"{catalog.TRIAGE}.ipynb"


@functools.cache
def sample_report() -> tuple[Path, subprocess.CompletedProcess]:
    """`playbook report --out DIR` on the embedded sample, run once per test session (shared with the browser
    test)."""
    out = Path(tempfile.mkdtemp(prefix="playbook-report-")) / "sample"
    atexit.register(shutil.rmtree, out.parent, True)
    res = subprocess.run([sys.executable, "-m", "playbook", "report", "--out", str(out), "--no-progress"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    return out, res


@pytest.fixture(scope="module")
def synthetic_batch(tmp_path_factory):
    """Triage on two LABELED SYNTHETIC nvidia-smi logs (simulate's straggler and healthy scenarios)."""
    logs = tmp_path_factory.mktemp("logs")
    truths = {}
    for scenario in ("straggler", "healthy"):
        tel, truths[scenario] = synthetic.simulate_telemetry(scenario, hosts=2, gpus_per_host=4, duration_s=600,
                                                            interval_s=2.0, seed=3)
        synthetic.write_nvidia_smi_csv(tel, logs / scenario)
    # the straggler's input as one string, as `papermill -p inputs PATH` passes it: one path, not its letters
    jobs = [Job(str(TRIAGE), {"inputs": str(logs / s) if s == "straggler" else [str(logs / s)]}, f"triage_{s}")
            for s in truths]
    out = tmp_path_factory.mktemp("report")
    run_batch(jobs, out, progress=False)
    return json.loads((out / "summary.json").read_text()), truths, out


def test_triage_names_the_straggler_and_clears_the_healthy_run(synthetic_batch):
    summary, truths, out = synthetic_batch
    entries = {e["notebook"]: e for e in summary["notebooks"]}
    straggler, healthy = entries["triage_straggler"], entries["triage_healthy"]
    assert straggler["status"] == "ok" and healthy["status"] == "ok", (straggler["error"], healthy["error"])
    truth = truths["straggler"]
    figures = straggler["verdict"]["figures"]
    # the straggler is rank 0's own periodic checkpoint: periodic_stall scores within 0.2 of it, so the rule says
    # inconclusive and names both (confirmed needs the next cause 0.2 behind)
    assert straggler["verdict"]["status"] == "inconclusive" and "periodic_stall" in straggler["verdict"]["summary"]
    assert figures["top_hypothesis"] == truth.hypothesis == "collective_straggler"
    assert figures["gpus"] == 8 and figures["gpus_not_ok"] >= 1
    assert figures["period_s"] == pytest.approx(truth.period_s, rel=0.1)
    assert straggler["records"]["key_figures"] == figures
    assert healthy["verdict"]["status"] == "refuted"
    assert healthy["verdict"]["figures"]["top_hypothesis"] == "healthy"
    assert summary["counts"] == {"ok": 2, "error": 0, "confirmed": 0, "refuted": 1, "inconclusive": 1}
    # per-cell durations from papermill, and the figures in the HTML export
    assert sum(c["duration_s"] for c in straggler["cells"]) <= straggler["duration_s"]
    page = (out / "triage_straggler.html").read_text()
    assert page.count("<img") >= 5 and "collective_straggler" in page
    assert "20_collective_stragglers.ipynb" in page  # points to the lab for the top hypothesis
    for name in ("triage_straggler", "triage_healthy"):
        assert_readable(out / f"{name}.ipynb")


def test_report_command_on_the_embedded_sample():
    out, res = sample_report()
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"report: {out / 'index.html'}" in res.stdout
    summary = json.loads((out / "summary.json").read_text())
    synthetic, dflash = summary["notebooks"]  # the strongest sample first, then the real poll
    names = [f"{catalog.TRIAGE}-synthetic-64gpu", f"{catalog.TRIAGE}-dflash-8gpu"]
    assert [synthetic["notebook"], dflash["notebook"]] == names
    assert synthetic["status"] == dflash["status"] == "ok"
    assert synthetic["verdict"]["status"] == "inconclusive" and synthetic["verdict"]["figures"]["gpus"] == 64
    assert synthetic["verdict"]["figures"]["top_hypothesis"] == "periodic_stall"
    head = synthetic["records"]["headline"]
    assert head["next_command"] == "playbook report --labs 12" and 0.1 < head["lost_share"] < 0.3
    assert (out / head["figure"]).is_file() and "figure_png" not in head  # the key figure is a file, not JSON
    assert dflash["verdict"]["figures"]["gpus"] == 8  # the real sample polls one 8-GPU node
    assert dflash["parameters"]["interval_s"] == 2.0
    assert summary["parameters"]["notebooks"] == names and summary["parameters"]["paths"] == []
    assert (out / "index.html").is_file() and all((out / f"{n}.html").is_file() for n in names)
    for name in names:
        assert_readable(out / f"{name}.ipynb")  # text and tables, never a raw dict or list


def _diag(*scored, warnings=()):
    return {"hypotheses": [{"id": i, "score": s, "evidence": [f"{i} evidence"], "next_step": f"measure {i}",
                            "notebook": f"notebooks/{i}.ipynb"} for i, s in scored], "warnings": list(warnings)}


@pytest.mark.parametrize("scored, status", [
    ((("healthy", 0.9), ("gc_pause", 0.1)), "refuted"),
    ((("healthy", 0.5), ("gc_pause", 0.1)), "inconclusive"),  # too little data to rule a problem out
    ((("periodic_stall", 0.8), ("data_starvation", 0.3), ("healthy", 0.2)), "confirmed"),
    ((("periodic_stall", 0.92), ("data_starvation", 0.85), ("healthy", 0.08)), "inconclusive"),  # two causes
    ((("gc_pause", 0.45),), "inconclusive"),  # below the bar
    ((), "inconclusive"),  # nothing scored
])
def test_verdict_rule(scored, status):
    got, summary = verdict_rule.triage_verdict(_diag(*scored))
    assert got == status
    if status == "confirmed":
        assert summary.startswith("periodic_stall (score 0.80)") and "periodic_stall evidence" in summary
    if scored and status == "inconclusive" and len(scored) > 1 and scored[0][0] != "healthy":
        assert "data_starvation (0.85)" in summary and "measure periodic_stall" in summary
    if scored and scored[0][0] == "healthy" and status == "inconclusive":
        assert "too little data" in summary


def test_lab_pointer_links_an_existing_lab_or_says_it_is_missing(tmp_path):
    (tmp_path / "periodic_stall.ipynb").write_text("{}")
    assert "[periodic_stall.ipynb](periodic_stall.ipynb)" in triage.lab_pointer(
        _diag(("periodic_stall", 0.8)), tmp_path)
    assert f"(not in {tmp_path})" in triage.lab_pointer(_diag(("gc_pause", 0.8)), tmp_path)
    assert "healthy" in triage.lab_pointer(_diag(("healthy", 0.9)), tmp_path)
    close = triage.lab_pointer(_diag(("periodic_stall", 0.92), ("data_starvation", 0.85)), tmp_path)
    assert "Close behind: **Next: the lab for `data_starvation`**" in close


def test_headline_from_a_straggler_diagnosis_names_the_gpu_the_loss_and_the_lab():
    from playbook.report import headline

    tel, truth = synthetic.simulate_telemetry("straggler", hosts=2, gpus_per_host=4, duration_s=600,
                                             interval_s=2.0, seed=3)
    diag = {"gpus": [{"id": f"{h}:{g}", "host": h, "index": g, "status": "ok"} for h, g in
                     tel.groupby(["host", "gpu"]).size().index],
            "oscillation": {"detected": True, "high_pct": 98.0, "low_pct": 20.0, "period_s": 60.0},
            "hypotheses": [{"id": "collective_straggler", "score": 0.9, "evidence": ["node00:0 drops"],
                            "notebook": "notebooks/20_collective_stragglers.ipynb"}]}
    slow = truth.groups[0][0] if truth.groups else f"{tel['host'].iloc[0]}:0"
    next(g for g in diag["gpus"] if g["id"] == slow)["status"] = "underutilized"
    h = headline.from_diagnosis(diag, tel, "util_pct")
    assert h["status"] == "confirmed" and h["next_command"] == "playbook report --labs 20"
    assert h["guilty"]["gpus"] == [f"{slow} (underutilized)"]
    assert 0.1 < h["lost_share"] < 0.4  # the fleet waits for its slowest GPU, not its mean shortfall
    assert h["gpu_hours_per_day"] == pytest.approx(h["lost_share"] * 8 * 24)
    assert "1 of 8 GPUs" in h["sentence"] and h["confidence"] == "high"


def test_the_card_and_the_warnings_escape_what_comes_from_inputs():
    from playbook.report import headline

    evil = '"><img src=x onerror=alert(9)>'
    card = headline.card_html({"status": "confirmed", "sentence": evil, "confidence": evil,
                               "guilty": {"gpus": ["gen<svg onload=alert(3)>:0 (lost)"]}, "lost_share": 0.2,
                               "gpus": 1, "next_command": evil, "next_why": evil})
    assert "<img src=x" not in card and "<svg onload" not in card and "&lt;img src=x" in card
    listed = triage.warnings_html([f"{evil}: skipped"] * 3)
    assert "<img src=x" not in listed and "(×3)" in listed
    from playbook.report.scrapbook import md_escape, md_inline

    assert "<img" not in md_escape(evil) and "\\>" not in md_escape("a>b")
    import mistune

    shown = mistune.html(md_inline(f"run `{evil}` and {evil}"))  # as a Markdown renderer shows it
    assert "<img" not in shown and "<code>&quot;&gt;&lt;img src=x onerror=alert(9)&gt;</code>" in shown, shown
    coded = headline.card_html({"status": "refuted", "sentence": f"keep it for `playbook compare` {evil}"})
    assert "<code>playbook compare</code>" in coded and "`" not in coded and "<img src=x" not in coded


def test_info_reports_unrelated_samples_per_input():
    res = subprocess.run([sys.executable, "-m", "playbook", "info", "data/samples"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.startswith("2 unrelated inputs")
    assert out.index("== data/samples/synthetic-64gpu") < out.index("== data/samples/dflash-8gpu")
    assert "72 GPUs" not in out and "64 GPUs" in out and "8 GPUs" in out


def test_inputs_resolve_against_the_repository_root_wherever_the_kernel_starts(monkeypatch):
    monkeypatch.chdir(ROOT / "notebooks")  # where `make lab` starts the kernel
    (p,) = triage.resolve_inputs(["data/samples/synthetic-64gpu"])
    assert Path(p) == ROOT / "data" / "samples" / "synthetic-64gpu"


def test_stderr_and_long_output_are_folded_and_escaped():
    import nbformat

    from playbook.report.html import _fold_streams

    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text="UserWarning: <b>careful</b>\n"),
                    nbformat.v4.new_output("stream", name="stdout", text="".join(f"repeat {i}/20\n" for i in range(20))),
                    nbformat.v4.new_output("stream", name="stdout", text="short\n")]
    nb = nbformat.v4.new_notebook(cells=[cell])
    _fold_streams(nb)
    warn, wall = nb.cells[0].outputs  # consecutive prints of one stream are one block
    assert warn["output_type"] == "display_data" and "1 warning line from the run" in warn["data"]["text/html"]
    assert "&lt;b&gt;careful" in warn["data"]["text/html"] and "<b>careful" not in warn["data"]["text/html"]
    assert "21 lines of output" in wall["data"]["text/html"]
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="short\n")]
    _fold_streams(nb)
    assert nb.cells[0].outputs[0]["output_type"] == "stream"  # a short print stays as it is


def test_the_index_leads_with_the_lab_asked_for(tmp_path):
    from playbook.report.html import write_index

    lab = {"notebook": "12_checkpoint_eval_stalls", "title": "12 · Stalls", "status": "ok", "html": "12.html",
           "verdict": {"status": "inconclusive", "summary": "fault runs at 75% <of> no-fault",
                       "figures": {"fault_ratio": 0.75}}, "records": {}}
    tri = {"notebook": "01_triage", "title": "Triage", "status": "ok", "html": "01.html",
           "verdict": {"status": "confirmed", "summary": "s"},
           "records": {"headline": {"status": "confirmed", "sentence": "Most likely a periodic stall"}}}
    summary = {"notebooks": [tri, lab], "parameters": {"labs": ["12"], "paths": []}}
    page = write_index(summary, tmp_path).read_text()
    card = page[page.index('id="verdict"'):page.index("</section>")]
    assert "INCONCLUSIVE: fault runs at 75% &lt;of&gt; no-fault" in card
    summary["parameters"] = {"labs": [], "paths": ["logs/"]}
    page = write_index(summary, tmp_path).read_text()
    assert "CONFIRMED: Most likely a periodic stall" in page[page.index('id="verdict"'):]


def test_card_labels_name_the_unit_of_each_figure():
    from playbook.report.headline import figure_label

    assert figure_label("fault_samples_s") == "fault samples/s"
    assert figure_label("step_s") == "step (s)" and figure_label("power_w") == "power (W)"
    assert figure_label("stall_period_steps") == "stall period steps" and figure_label("noise_cv") == "noise cv"


def test_a_cause_without_a_lab_points_at_its_measurement_and_the_card_names_the_verdicts_culprits():
    from playbook.report import headline

    top = {"id": "unused_gpus", "score": 0.8, "notebook": "notebooks/01_triage.ipynb",
           "next_step": "watch each GPU during a step (`nvidia-smi --query-gpu=index,utilization.gpu --format=csv -l 1`)"}
    command, why = headline.next_command("confirmed", top)
    assert command == "" and why == top["next_step"]
    diag = {"hypotheses": [top, {"id": "healthy", "score": 0.2}],
            "verdict": {"id": "unused_gpus", "score": 0.8, "names": ["n1:1"], "lost_share": 0.5,
                        "sentence": "GPUs held but not used on n1:1"},
            "gpus": [{"id": "n1:0", "host": "n1", "status": "saturated"},
                     {"id": "n1:1", "host": "n1", "status": "underutilized"}]}
    h = headline.from_diagnosis(diag, None)
    assert h["guilty"]["gpus"] == ["n1:1 (underutilized)"]  # the saturated peer is not the verdict's culprit
    card = headline.card_html(h)
    assert "<code>nvidia-smi --query-gpu" in card and "playbook record" not in card


def test_next_never_points_at_the_page_you_are_on(tmp_path):
    from playbook.model.run_layout import init_run
    from playbook.report import headline

    own = {"id": "insufficient_data", "score": 0.6, "notebook": "notebooks/01_triage.ipynb", "next_step": "record"}
    command, _ = headline.next_command("inconclusive", own)
    assert "--labs 01" not in command and command.startswith("playbook record")
    run = init_run(tmp_path / "run", command=["python", "train.py"])
    (run / "h-rank0").mkdir()
    inputs = [str(run / "h-rank0" / "steps.parquet")]
    assert headline.recorded_run(inputs) == str(run)
    assert headline.next_command("inconclusive", own, str(run))[0] == "playbook report --labs 02"
    assert headline.next_command("refuted", {"id": "healthy"}, str(run))[0] == f"playbook compare RUN_BEFORE {run}"
    diag = _diag(("periodic_stall", 0.45))
    diag["hypotheses"].append(own | {"score": 0.44})
    pointer = triage.lab_pointer(diag, tmp_path)
    assert "01_triage" not in pointer and "`insufficient_data` has no lab" in pointer
    # a lab page points forward: more repeats when inconclusive, one's own run when settled
    entry = {"notebook": "12_checkpoint_eval_stalls", "source": "notebooks/12_checkpoint_eval_stalls.ipynb",
             "parameters": {"repeats": 2}, "verdict": {"status": "inconclusive", "summary": "s"}}
    assert headline.lab_next(entry)[0] == ("papermill notebooks/12_checkpoint_eval_stalls.ipynb "
                                           "12_checkpoint_eval_stalls-more.ipynb -p repeats 4")
    settled = headline.lab_headline({**entry, "verdict": {"status": "confirmed", "summary": "s"}})
    assert settled["next_command"] == "playbook compare runs/before runs/after"


def test_the_card_labels_synthetic_inputs_and_counts_in_words(tmp_path):
    from playbook.report import headline

    sample = ROOT / "data" / "samples"
    assert headline.synthetic_inputs([str(sample / "synthetic-64gpu" / "node00.csv")])
    assert not headline.synthetic_inputs([str(sample / "dflash-8gpu" / "nvidia-smi-poll.txt")])
    assert not headline.synthetic_inputs([])
    card = headline.card_html({"status": "confirmed", "sentence": "s", "synthetic": True, "lost_share": 0.2,
                               "gpus": 1})
    assert "<b>SYNTHETIC</b> — generated, not a measurement" in card and "20% of 1 GPU<" in card
    bundle = read_paths([str(sample / "dflash-8gpu")], fields="index,utilization.gpu,memory.used")
    assert triage.inputs_table(bundle).loc[0, "covers"].startswith("8 GPUs on 1 host")
    import pandas as pd

    from playbook.model import schema

    host = schema.host_frame({"time": pd.to_datetime(["2026-01-01 00:00", "2026-01-01 00:05"], utc=True),
                              "host": ["node1", "node1"], "cpu_pct": [10.0, 20.0]})
    table = triage.inputs_table(schema.Bundle(host=host)).set_index("table")
    assert table.loc["host", "covers"] == "1 host, 5.0 min"  # a host log says what it covers too


def test_a_lab_card_leads_with_the_ratios_its_sentence_states():
    from playbook.report import headline

    entry = {"notebook": "12_x", "verdict": {"status": "confirmed", "summary": "the fault's throughput is 40%",
                                             "figures": {"ckpt_every": 20, "fault_ratio": 0.4, "fix_ratio": 0.97}}}
    assert list(headline.lab_headline(entry)["figures"]) == ["fault_ratio", "fix_ratio", "ckpt_every"]


@pytest.fixture(scope="module")
def step_only(tmp_path_factory):
    """Triage of a step log alone (nanoGPT's `iter N: loss X, time Yms` lines, a stall every 25 steps)."""
    logs = tmp_path_factory.mktemp("steps")
    times = [120.0 + (900.0 if i % 25 == 24 else 0.0) + (i % 7) for i in range(200)]
    (logs / "train.log").write_text("".join(f"iter {i}: loss {3 - i / 200:.4f}, time {t:.2f}ms, mfu 38.12%\n"
                                            for i, t in enumerate(times)))
    out = tmp_path_factory.mktemp("step-report")
    run_batch([Job(str(TRIAGE), {"inputs": [str(logs / "train.log")]}, "triage_steps")], out, progress=False)
    return out


def test_a_step_only_run_shows_its_step_times_and_stalls_not_empty_gpu_views(step_only):
    import re

    entry = json.loads((step_only / "summary.json").read_text())["notebooks"][0]
    assert entry["status"] == "ok", entry["error"]
    head = entry["records"]["headline"]
    assert head["figure_alt"] == "step time per step, the stalls in red" and (step_only / head["figure"]).is_file()
    page = (step_only / "triage_steps.html").read_text()
    card = re.search(r'<section class="pb-card" id="verdict".*?</section>', page, re.DOTALL).group(0)
    assert '<img alt="step time per step, the stalls in red" src="data:image/png' in card
    assert "No GPU status: the inputs hold no GPU telemetry" in page
    assert "GPU (host:index)" not in page  # no empty GPU table header
    assert page.count("<img") >= 2  # the card's figure and the timeline section's (no empty utilization axis)
    assert_readable(step_only / "triage_steps.ipynb")
    index = (step_only / "index.html").read_text()
    assert 'alt="step time per step, the stalls in red"' in index


def test_a_card_from_log_facts_alone_does_not_claim_a_measured_loss():
    # NVIDIA/nccl#1814's paste: IB transport errors on one host, no utilization or step times. The card said "0% of
    # ? GPUs" lost, "no single GPU: every GPU behaves alike" and "low" confidence beside a "likely" verdict
    from playbook.report import headline

    diag = {"verdict": {"id": "link_degradation", "confidence": "likely", "names": ["hostname-test"],
                        "lost_share": 0.0, "sentence": "Degraded interconnect on hostname-test"},
            "hypotheses": [{"id": "link_degradation", "score": 0.63, "evidence": ["2 network_error events"],
                            "notebook": "notebooks/20_collective_stragglers.ipynb"}]}
    h = headline.from_diagnosis(diag, None)
    assert h["lost_share"] is None and h["measured"] is False and h["gpu_hours_per_day"] is None
    assert h["confidence"].startswith("moderate: likely")
    card = headline.card_html(h)
    assert "not measured: no GPU utilization or step times" in card and "hostname-test" in card
    assert "every GPU behaves alike" not in card and "? GPUs" not in card


def test_the_card_s_confidence_is_the_verdict_s_own_word():
    # a paired GPU + vmstat run read "CONFIRMED ... (data_starvation, confirmed, score 0.85)" above a card saying
    # "moderate: ... an alternative is not ruled out": the card asked a 0.3 lead of the runner-up (0.57), the
    # diagnosis 0.2 — one rule now, the diagnosis's
    from playbook.report import headline

    diag = {"verdict": {"id": "data_starvation", "confidence": "confirmed", "names": ["node1-gpu:0"],
                        "lost_share": 0.21, "sentence": "Loses 21% of GPU time: input pipeline starvation"},
            "hypotheses": [{"id": "data_starvation", "score": 0.85, "evidence": ["CPU iowait rise 19.0×"],
                            "notebook": "notebooks/10_dataloader_starvation.ipynb"},
                           {"id": "periodic_stall", "score": 0.57, "evidence": ["drops every 60 s"],
                            "notebook": "notebooks/12_checkpoint_eval_stalls.ipynb"}]}
    assert headline.from_diagnosis(diag, None)["confidence"] == "high"
    diag["verdict"]["confidence"] = "likely"
    assert headline.from_diagnosis(diag, None)["confidence"].startswith("moderate")


def test_a_card_shows_a_finding_share_as_the_finding_s_not_as_not_measured():
    # nsys totals bounding the GPU's busy share (launch calls costlier than their kernels): the verdict said "it
    # costs ~27% of GPU time" above a card reading "GPU time lost: not measured"
    from playbook.report import headline

    diag = {"verdict": {"id": "launch_bound", "confidence": "confirmed", "names": [], "lost_share": 0.27,
                        "sentence": "Kernel-launch bound (many tiny kernels) — it costs ~27% of GPU time"},
            "hypotheses": [{"id": "launch_bound", "score": 0.85, "evidence": ["nsys profile rank0: 96 launches"],
                            "notebook": "notebooks/02_observability.ipynb"}]}
    h = headline.from_diagnosis(diag, None)
    assert h["lost_share"] is None and h["measured"] is False and h["estimated_share"] == 0.27
    card = headline.card_html(h)
    assert "~27% by the leading finding" in card and "not measured" not in card


def test_index_rows_state_the_loss_as_their_card_does(tmp_path):
    # one row per way a card states the loss: measured, a finding's own share, not measured; a lab's own figures
    from playbook.report.html import write_index

    heads = [{"lost_share": 0.4, "gpu_hours_per_day": 9.6, "next_command": "playbook diagnose <a>"},
             {"lost_share": None, "measured": False, "estimated_share": 0.27, "next_command": "nsys"},
             {"lost_share": None, "measured": False, "next_command": "dmesg"}]
    rows = [{"notebook": f"n{i}", "status": "ok", "verdict": {"status": "likely", "summary": "s"},
             "records": {"headline": {"status": "likely", "sentence": f"row {i}", **h}}} for i, h in enumerate(heads)]
    rows.append({"notebook": "lab", "status": "ok", "verdict": {"status": "confirmed", "summary": "lab",
                                                                "figures": {"ratio <x>": 0.75}}, "records": {}})
    page = write_index({"notebooks": rows, "parameters": {}}, tmp_path).read_text()
    table = page[page.index("<tbody>"):]
    assert "GPU time lost 40% (9.6 GPU-hours/day) · next: <code>playbook diagnose &lt;a&gt;</code>" in table
    assert "GPU time lost ~27% by the leading finding (no utilization or step times) · next: <code>nsys" in table
    assert "GPU time not measured (no utilization or step times) · next: <code>dmesg</code>" in table
    assert "ratio &lt;x&gt; = 0.75" in table


def test_inputs_without_table_rows_show_what_they_hold(tmp_path):
    """A py-spy dump fills no table: the inputs section says what was read (was an empty `table / rows` header),
    escaped (the file's own name among it)."""
    from playbook.readers import read_file

    p = tmp_path / "dump<b>.txt"
    p.write_text('Process 7: python train.py\nPython v3.10.12 (/usr/bin/python3)\n\nThread 7 (idle): "MainThread"\n'
                 "    _try_get_data (torch/utils/data/dataloader.py:1133)\n    __next__ (torch/utils/data/dataloader.py:631)"
                 "\n    <module> (train.py:9)\n")
    bundle = read_file(p)
    assert not len(triage.inputs_table(bundle))
    page = triage.summaries_html(bundle)
    assert "py-spy dump: 1 thread; main threads in: loader 1" in page
    assert "dump&lt;b&gt;.txt" in page and "<b>" not in page


def test_the_inputs_summary_leaves_the_warnings_to_their_counted_list(tmp_path):
    """review1: the summary's <pre> listed every reader warning again, uncapped, above warnings_html's counted list."""
    from playbook.readers import read_file

    p = tmp_path / "dump.txt"
    p.write_text('Thread 7 (idle): "MainThread"\n    <module> (train.py:9)\n')
    bundle = read_file(p)
    bundle.warnings.extend(f"{p}: skipped row {i}" for i in range(40))
    page = triage.summaries_html(bundle)
    assert "py-spy dump" in page and "skipped row" not in page


def test_the_verdict_card_of_a_throttled_run_shows_the_sm_clock(tmp_path):
    """A throttling verdict's card draws the SM clock of every GPU (the fall a person wants to see; utilization reads
    ~97% throughout), on its own scale, not from 0; any other verdict draws utilization."""
    import math

    import numpy as np

    from playbook.diagnosis import diagnose

    rng = np.random.default_rng(5)
    lines = ["timestamp, index, utilization.gpu [%], clocks.current.sm [MHz], power.draw [W], power.limit [W], "
             "temperature.gpu"]
    for k in range(72):  # LABELED SYNTHETIC: two GPUs warming to ~88 °C, the clock a bin lower per °C
        for g in range(2):
            temp = int(60 + 28 * (1 - math.exp(-k / 25)) + rng.integers(0, 2))
            lines.append(f"2026/03/02 09:{k * 5 // 60:02d}:{k * 5 % 60:02d}.{g:03d}, {g}, {int(rng.integers(94, 101))} "
                         f"%, {1950 - 15 * (temp - 60) + 15 * int(rng.integers(-1, 2))} MHz, "
                         f"{rng.uniform(290, 320):.2f} W, 350.00 W, {temp}")
    warm = tmp_path / "warm.csv"
    warm.write_text("\n".join(lines) + "\n", encoding="utf-8")
    steady = tmp_path / "steady.csv"
    steady.write_text("\n".join(lines[:1] + [ln.replace(ln.split(", ")[3], "1950 MHz") for ln in lines[1:]]) + "\n",
                      encoding="utf-8")
    alts = {}
    for path in (warm, steady):
        bundle = read_paths([path])
        report = triage.as_dict(diagnose(bundle))
        frame, metric = triage.timeline_frame(bundle)
        alts[path.name] = (report["verdict"]["id"], triage.show_headline(report, frame, metric)["figure_alt"])
    assert alts["warm.csv"] == ("throttling", "SM clock of every GPU over time, the throttled ones first")
    assert alts["steady.csv"][0] != "throttling" and "heatmap" in alts["steady.csv"][1]


def test_the_diagnosis_notes_reach_the_page_escaped_and_not_twice(capsys):
    """The page said "No reader warnings" and, in its figures, "warnings 1": the diagnosis's own warning (one GPU:
    nothing to compare against) was counted but never shown. Reader warnings stay with the inputs, not repeated."""
    from types import SimpleNamespace

    evil = "<img src=x onerror=alert(1)>"
    shown = []
    import IPython.display as ipd

    real = ipd.display
    ipd.display = lambda obj: shown.append(obj.data)
    try:
        triage.show_analysis_notes({"warnings": ["one GPU only: no peers", f"{evil}: read", f"{evil}: read"]},
                                   SimpleNamespace(warnings=[]))
        triage.show_analysis_notes({"warnings": ["x.csv line 3: skipped"]}, SimpleNamespace(warnings=["x.csv line 3: skipped"]))
    finally:
        ipd.display = real
    assert "3 analysis notes" in shown[0] and "one GPU only: no peers" in shown[0] and "(×2)" in shown[0]
    assert "<img" not in shown[0] and "&lt;img" in shown[0]
    assert shown[1] == "<p><em>No analysis notes.</em></p>"


def test_the_gpu_table_shows_the_mean_without_rounding_it_twice():
    """The JSON holds 72.5 (from 72.54); the table showed it whole as 72 beside the evidence's "mean 73%"."""
    report = {"gpus": [{"id": "h:0", "host": "h", "index": 0, "mean_util_pct": 72.5, "status": "ok",
                        "evidence": "mean 73% (peers 55%)"}]}
    html_table = triage.gpu_status_view(report).to_html()
    assert ">72.5<" in html_table and ">72<" not in html_table, html_table


def test_a_trace_alone_is_drawn_over_time():
    """A profiler trace has a time axis: the page said "No figure: the inputs hold no utilization samples or step
    times" for one; its ranks' GPU busy share per bin is drawn instead (analysis.kineto.hta.busy_timeline)."""
    import numpy as np

    from playbook.model import schema

    trace = schema.trace_frame({"rank": [0, 0, 1], "cat": ["kernel", "kernel", "kernel"], "name": ["k", "k", "k"],
                                "ts_us": [0.0, 600.0, 0.0], "dur_us": [400.0, 400.0, 1000.0], "pid": [0] * 3,
                                "tid": [7] * 3, "stream": [7] * 3, "correlation": [-1] * 3, "bytes": [np.nan] * 3,
                                "source": ["t.json"] * 3})
    bundle = schema.Bundle(trace=trace)
    frame, metric = triage.timeline_frame(bundle)
    assert metric == "kernel_busy_pct"
    assert set(zip(frame["host"], frame["gpu"], strict=True)) == {("rank", 0), ("rank", 1)}
    rank0 = frame.loc[frame["gpu"] == 0, metric].to_numpy()
    assert np.isclose(rank0.max(), 100.0) and rank0.min() == 0.0  # the 200 µs gap between its kernels
    assert np.allclose(frame.loc[frame["gpu"] == 1, metric], 100.0)


def test_a_loss_priced_without_a_gpu_count_is_a_share_of_gpu_time_not_of_unknown_gpus():
    """A benchmark's totals (trtexec: GPU compute of walltime) price the loss with no GPU count to name."""
    from playbook.report.headline import card_html

    card = card_html({"status": "inconclusive", "confidence": "low", "lost_share": 0.04, "gpus": 0})
    assert "4% of GPU time" in card and "?" not in card
