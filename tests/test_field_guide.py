"""The field guide (docs/field-guide.md) names only things that exist, its generated regions are filled, and
playbook.guide writes its tables and regions correctly from a summary.json (a fake one here: no lab runs)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from playbook import guide
from playbook.cli import COMMANDS
from playbook.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "field-guide.md"
FIGURES = ROOT / "docs" / "figures"
TEXT = GUIDE.read_text(encoding="utf-8")

FENCED = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
INLINE = re.compile(r"`([^`]+)`")
REQUIRED_REGIONS = ("machine", "lab-results", "signatures", *guide.SAMPLE_COMMANDS,
                    *(f"lab-{nb}" for nb in guide.EXPECTED_NOTEBOOKS))


def code_texts(text: str = TEXT) -> list[str]:
    """Every fenced block and inline code span of the guide."""
    fenced = FENCED.findall(text)
    rest = FENCED.sub("", text)
    return fenced + INLINE.findall(rest)


def test_playbook_subcommands_are_registered():
    named = {m.group(1) for code in code_texts() for m in re.finditer(r"(?:^|[\s$(])playbook\s+([a-z][a-z-]*)", code)}
    assert {"diagnose", "record", "report", "compare", "info", "labs"} <= named
    assert named <= set(COMMANDS), f"not registered in playbook/cli.py COMMANDS: {named - set(COMMANDS)}"


def test_python_modules_exist():
    modules = {m.group(1).rstrip(".") for code in code_texts() for m in re.finditer(r"-m\s+([A-Za-z_][\w.]*)", code)}
    assert "playbook.guide" in modules and "playbook.simulate" in modules
    missing = sorted(m for m in modules if importlib.util.find_spec(m) is None)
    assert not missing, f"python -m modules that do not exist: {missing}"


def test_make_targets_exist():
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    named = {m.group(1) for code in code_texts() for m in re.finditer(r"(?:^|\s)make\s+([a-z][a-z-]*)", code)}
    named |= set(re.findall(r"`make ([a-z][a-z-]*)`", TEXT))
    assert "guide-figures" in named
    assert named <= targets, f"make targets not in the Makefile: {named - targets}"


def test_notebooks_exist():
    named = set(re.findall(r"notebooks/(\d\d_[a-z0-9_]+)\.ipynb", TEXT))
    assert len(named) >= 14
    missing = sorted(n for n in named if not (ROOT / "notebooks" / f"{n}.ipynb").is_file())
    assert not missing, f"notebooks named in the guide but missing: {missing}"


def _resolve(dotted: str) -> bool:
    """True when `dotted` is an importable module, or a module followed by existing attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:  # not a module (an attribute path), or a module that fails: a shorter prefix decides
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_import_paths_exist():
    named = set(re.findall(r"\bplaybook(?:\.[A-Za-z_]\w*)+", TEXT))
    for m in re.finditer(r"from (playbook[\w.]*) import ([\w, ]+)", TEXT):
        named |= {f"{m.group(1)}.{n.strip()}" for n in m.group(2).split(",") if n.strip()}
    assert any(n.startswith("playbook.fixes.") for n in named)
    missing = sorted(n for n in named if not _resolve(n))
    assert not missing, f"import paths named in the guide that do not resolve: {missing}"


def test_file_paths_exist():
    paths = set(re.findall(r"(?<![\w/.<-])((?:playbook|notebooks|data|docs|benchmarks|tests)/[\w./-]*\w)", TEXT))
    paths = {p for p in paths if "*" not in p}
    assert "data/samples/synthetic-64gpu" in paths
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"paths named in the guide that do not exist: {missing}"


def test_relative_links_and_anchors_resolve():
    links = re.findall(r"\]\(([^)\s]+)\)", TEXT)
    headings = re.findall(r"^#{1,4} (.+)$", FENCED.sub("", TEXT), re.MULTILINE)
    slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
    for link in links:
        if link.startswith(("http://", "https://")):
            continue
        target, _, anchor = link.partition("#")
        if target:
            assert (GUIDE.parent / target).exists(), f"broken link {link}"
        elif anchor:
            assert anchor in slugs, f"broken anchor #{anchor}"


def test_every_section_has_a_one_line_summary():
    body = FENCED.sub("", TEXT)
    sections = re.split(r"^#{1,3} .+$", body, flags=re.MULTILINE)[1:]
    headings = re.findall(r"^#{1,3} (.+)$", body, re.MULTILINE)
    assert len(headings) >= 30
    for heading, section in zip(headings, sections, strict=True):
        first = next((ln for ln in section.splitlines() if ln.strip()), "")
        assert first.startswith("> **Summary:**"), f"section {heading!r} does not start with a summary line"


def test_generated_regions_present_and_filled():
    regions = {m.group("name"): m.group("body") for m in guide.REGION.finditer(TEXT)}
    missing = [r for r in REQUIRED_REGIONS if r not in regions]
    assert not missing, f"generated regions missing from the guide: {missing}"
    known = set(REQUIRED_REGIONS)
    assert set(regions) <= known, f"regions playbook.guide never generates: {set(regions) - known}"
    for name, body in regions.items():
        assert body.strip(), f"generated region {name} is empty: run `make guide-figures`"
        assert "Generated by `python -m playbook.guide docs/figures`" in body, f"region {name} has no stamp"
    assert "| Notebook | Ran | Verdict |" in regions["lab-results"]
    # the case-study prose reads the diagnosis as a pipeline imbalance: the generated output must agree
    assert "1. pipeline_imbalance" in regions["dflash-diagnosis"]


def test_embedded_figures_exist_and_are_small():
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", TEXT)
    assert images, "the guide embeds no generated plot"
    for image in images:
        path = GUIDE.parent / image
        assert path.is_file() and path.parent == FIGURES, f"embedded figure {image} is not in docs/figures"
    total = sum(p.stat().st_size for p in FIGURES.iterdir() if p.is_file())
    assert total < 600_000, f"docs/figures holds {total} bytes: keep it to a few hundred KB"
    assert (FIGURES / "lab-results.md").is_file() and (FIGURES / "lab-results.json").is_file()


# ---------------------------------------------------------------- playbook.guide on a fake summary

def _fake_report(tmp_path: Path) -> Path:
    report = tmp_path / "reports" / "20260101T000000Z-guide"
    report.mkdir(parents=True)
    notebooks = [
        {"notebook": "10_data_starvation", "title": "Data starvation", "status": "ok", "duration_s": 41.5,
         "error": None, "records": {},
         "verdict": {"status": "confirmed", "summary": "threads recover 98% | of the no-fault throughput",
                     "figures": {"fault_ratio": 0.25, "fix_ratio": 0.98, "noise_cv": 0.021,
                                 "fault_data_share": 0.74, "buffer_period_steps": 8, "extra": {"a": 1.0}}}},
        {"notebook": "12_checkpoint_eval_stalls", "title": "Checkpoints", "status": "error", "duration_s": 3.0,
         "verdict": None, "records": {},
         "error": {"name": "RuntimeError", "message": "boom\nsecond line", "cell": 3}},
        {"notebook": "02_observability", "title": "Observability", "status": "ok", "duration_s": 20.0,
         "error": None, "records": {"step_time_ratios": {"none": 1.0, "timer": 1.004, "probes_100hz": 1.08}},
         "verdict": {"status": "inconclusive", "summary": "noisy", "figures": {"step_time_ratio": 1.01}}},
        {"notebook": "01_triage", "title": "Triage", "status": "ok", "duration_s": 5.0, "error": None,
         "records": {}, "verdict": None},
    ]
    summary = {"schema_version": 1, "run_id": report.name, "created": "2026-01-01T00:00:00Z",
               "duration_s": 70.0, "notebooks": notebooks}
    (report / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    machine = {"date": "2026-01-01T00:00:00Z", "cpus": 2, "torch": "2.13.0+cpu", "gpu": None, "gpu_checked": True}
    (report / guide.MACHINE_FILE).write_text(json.dumps(machine), encoding="utf-8")
    return report


def _fake_guide(tmp_path: Path) -> Path:
    path = tmp_path / "docs" / "guide.md"
    path.parent.mkdir()
    path.write_text("# Guide\n\n<!-- generated:machine -->\nold\n<!-- /generated -->\n\nprose\n\n"
                    "<!-- generated:lab-results -->\n<!-- /generated -->\n\n"
                    "<!-- generated:lab-10_data_starvation -->\nstale numbers\n<!-- /generated -->\n\n"
                    "<!-- generated:dflash-diagnosis -->\n<!-- /generated -->\n\n"
                    "<!-- generated:something-else -->\n<!-- /generated -->\nend\n", encoding="utf-8")
    return path


def test_guide_writes_tables_and_regions_from_a_summary(tmp_path):
    summary = guide.load_summary(_fake_report(tmp_path))
    assert summary["machine"]["cpus"] == 2
    doc = _fake_guide(tmp_path)
    out = tmp_path / "docs" / "figures"
    signatures = [{"case": "telemetry: throttled", "what": "one GPU slow", "truth": "throttling", "top": "throttling",
                   "score": 0.9, "detected": False, "period_s": None, "duty_cycle": None, "synchrony": None,
                   "gpus_not_ok": ["node00:0 throttled"], "evidence": "HW slowdown bits"}]
    result = guide.write_outputs(summary, out, doc, signatures, {"dflash-diagnosis": "1. pipeline_imbalance"},
                                 present=["01_triage", "02_observability", "10_data_starvation",
                                          "12_checkpoint_eval_stalls", "13_host_sync_gc"])
    assert result["failed"] == ["12_checkpoint_eval_stalls"]
    assert result["missed_regions"] == ["something-else"]

    table = (out / "lab-results.md").read_text(encoding="utf-8")
    rows = {ln.split("|")[1].strip(): ln for ln in table.splitlines() if ln.startswith("| [")}
    assert "**confirmed**" in rows["[10_data_starvation](../notebooks/10_data_starvation.ipynb)"]
    assert "fault_ratio 0.25 · fix_ratio 0.98" in table
    assert "**failed** — RuntimeError: boom (cell 3)" in table
    assert "not run in this batch" in rows["[13_host_sync_gc](../notebooks/13_host_sync_gc.ipynb)"]
    assert "**missing**" in rows["[31_sharded_blob_loader](../notebooks/31_sharded_blob_loader.ipynb)"]
    assert "no verdict recorded" in rows["[01_triage](../notebooks/01_triage.ipynb)"]
    assert len(rows) == len(guide.EXPECTED_NOTEBOOKS)

    text = doc.read_text(encoding="utf-8")
    assert "stale numbers" not in text and "old\n" not in text
    assert "2 CPUs, torch 2.13.0+cpu, no GPU (CPU figures; GPU figures not yet measured)" in text
    assert "threads recover 98% \\| of the no-fault throughput" in text  # pipes escaped inside tables
    assert "| `fault_ratio` | 0.25 |" in text
    assert "```\n$ playbook diagnose data/samples/dflash-8gpu --interval 2\n1. pipeline_imbalance\n```" in text
    assert "Nothing was generated for this region" in text
    assert text.count("<!-- /generated -->") == 5 and text.endswith("end\n")

    again = guide.write_outputs(summary, out, doc, signatures, {"dflash-diagnosis": "1. pipeline_imbalance"},
                                present=["10_data_starvation"])
    assert doc.read_text(encoding="utf-8").count("Generated by") == text.count("Generated by")  # replaced, not appended
    assert again["files"]

    extract = json.loads((out / "lab-results.json").read_text(encoding="utf-8"))
    by_name = {lab["notebook"]: lab for lab in extract["labs"]}
    assert by_name["10_data_starvation"]["speedup"] == pytest.approx(0.98 / 0.25)
    assert by_name["12_checkpoint_eval_stalls"]["speedup"] is None
    for png in ("speedups.png", "overheads.png"):
        assert 1_000 < (out / png).stat().st_size < 150_000
    assert "✓" in (out / "signatures.md").read_text(encoding="utf-8")
    assert not (out / "serving.png").exists()  # no serving figures in this summary: no empty plot
    (out / "serving.png").write_bytes(b"stale")
    summary["notebooks"][2]["status"] = "error"  # a failed observability notebook: its partial records are not drawn
    guide.write_outputs(summary, out, None, None, {}, plots=True, present=[])
    assert not (out / "serving.png").exists() and not (out / "overheads.png").exists()
    assert not (out / "signatures.md").exists() and (out / "speedups.png").exists()


def test_load_summary_rejects_bad_input(tmp_path):
    with pytest.raises(InputError, match="no such summary.json"):
        guide.load_summary(tmp_path / "nowhere")
    bad = tmp_path / "summary.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="not a JSON summary"):
        guide.load_summary(bad)
    bad.write_text('{"notebooks": 3}', encoding="utf-8")
    with pytest.raises(InputError, match="no 'notebooks' list"):
        guide.load_summary(tmp_path)


def test_fmt_and_machine_text():
    assert guide.fmt_value(0.123456) == "0.123" and guide.fmt_value(None) == "–" and guide.fmt_value(True) == "yes"
    assert guide.fmt_value(float("nan")) == "–" and guide.fmt_value({"a": 2.0}) == "{a: 2}"
    assert guide.machine_text({"cpus": 16, "torch": "2.5", "gpu": "1 x NVIDIA H200", "gpu_checked": True}) == \
        "16 CPUs, torch 2.5, 1 x NVIDIA H200"
    assert guide.machine_text({"cpus": 2, "torch": "2.5"}).endswith("GPU not checked")


def test_cli_help_has_an_example():
    proc = subprocess.run([sys.executable, "-m", "playbook.guide", "--help"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0
    assert "python -m playbook.guide docs/figures" in proc.stdout and "--summary" in proc.stdout


def test_cli_reports_a_missing_summary_as_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "playbook.guide", str(tmp_path / "f"), "--summary",
                           str(tmp_path / "none"), "--guide", str(tmp_path / "g.md"), "--no-signatures"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("playbook.guide: error:")
    assert "Traceback" not in proc.stderr


def test_every_labelled_synthetic_signature_is_named_first():
    """The guide's signature catalog, recomputed: diagnose names each known answer first (no ✗ rows)."""
    rows = guide.signature_rows()
    assert len(rows) == len(guide.TELEMETRY_CASES) + 1 + len(guide.STEP_CASES)
    misses = [line for line in guide.signatures_table(rows).splitlines() if "✗" in line]
    assert not misses, misses
