"""Real fixtures wrapped the way log collectors and pastes wrap them read to the same diagnosis as the file itself:
terminal colours, one `kubectl logs --prefix` / `srun -l` label on every line, a blank line after every line
(`\\r\\r\\n`), trailing blanks, a setup progress bar before the run, every line indented (a paste as a code
block). The wrapping changes nothing the run did, so it
may change nothing the engine says: each case compares the wrapped file's verdict and names with the plain one's
(no verdict is written down here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = (  # one of each layout the wrappings broke (session 50's sweep over every text fixture)
    "eval/heldout27/torchrun_slow_loader_rank.log",  # torchrun [rankN]: tags, mmengine lines
    "eval/heldout4/megengine_2_watch_smi.txt",  # the default nvidia-smi table, looped
    "heldout_telemetry/smi_q_util_loop.txt",  # nvidia-smi -q sections
    "heldout_telemetry/dmon_pucvmet.txt",  # dmon columns
    "nsys/pasted/timemachine_kernsum.txt",  # an nsys stats table
    "heldout_vendors/rocm_smi_concise_mi300x.txt",  # rocm-smi's concise table
    "eval/heldout17/curc_seff_l40_gpu_metrics.txt",  # seff's GPU section
    "zoo/llmc_stall.log",  # llm.c step lines with a stall
    # the indented pastes session 51's sweep moved (24 of 496 verdicts before files.read_file's dedent)
    "heldout_vendors/amd_smi_monitor_q.txt",  # amd-smi monitor's table
    "eval/heldout43/pytorch110803_dynamo_profiler_report_train_eval.txt",  # a CompileProfiler report
    "host_telemetry/iostat_g_groups.txt",  # iostat -g
)
WRAPS = {
    "ansi": lambda lines: [f"\x1b[32m{ln}\x1b[0m" if ln.strip() else ln for ln in lines],
    "kubectl": lambda lines: [f"[pod/trainer-0/pytorch] {ln}" if ln.strip() else ln for ln in lines],
    "srun": lambda lines: [f"0: {ln}" if ln.strip() else ln for ln in lines],
    "blank": lambda lines: [x for ln in lines for x in (ln, "")],
    "trailing": lambda lines: [ln + " \t" for ln in lines],
    "indent": lambda lines: [f"    {ln}" if ln.strip() else ln for ln in lines],
    "tab": lambda lines: [f"\t{ln}" if ln.strip() else ln for ln in lines],
}


def _verdict(path: Path) -> tuple[str, list]:
    d = diagnose(read_paths([str(path)]))
    return d.verdict.get("id"), list((d.hypotheses[0] if d.hypotheses else {}).get("names", []) or [])


@pytest.mark.parametrize("name", FILES)
def test_a_wrapped_fixture_reads_to_the_same_diagnosis(tmp_path, name):
    src = DATA / name
    want = _verdict(src)
    lines = src.read_text(encoding="utf-8").split("\n")
    for wrap, fn in WRAPS.items():
        out = tmp_path / wrap / src.name
        out.parent.mkdir()
        out.write_text("\n".join(fn(lines)), encoding="utf-8")
        assert _verdict(out) == want, f"{name} wrapped {wrap}"


def test_a_setup_bar_before_the_trainers_bar_changes_nothing(tmp_path):
    src = DATA / "formats/hf_trainer.log"
    out = tmp_path / src.name
    out.write_text("Loading checkpoint shards: 100%|##########| 2/2 [00:03<00:00,  1.52s/it]\n" + src.read_text())
    plain, wrapped = (read_paths([str(p)]).steps for p in (src, out))
    assert wrapped["step"].tolist() == plain["step"].tolist()
    assert wrapped["duration_s"].tolist() == pytest.approx(plain["duration_s"].tolist())
