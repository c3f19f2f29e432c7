"""Every command answers --help with an example, and user errors are one line, not a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

from playbook import cli


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "playbook", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_top_level_help_lists_commands_and_examples():
    res = _run("--help")
    assert res.returncode == 0, res.stderr
    assert "examples:" in res.stdout
    for name in cli.COMMANDS:
        if cli._load(name) is not None:
            assert name in res.stdout


def test_no_command_is_misuse_with_the_usage_on_stderr():
    res = _run()
    assert res.returncode == 2 and res.stdout == "" and "usage: playbook" in res.stderr


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_each_command_has_help_with_an_example(name):
    if cli._load(name) is None:
        pytest.skip(f"command {name} not implemented yet")
    res = _run(name, "--help")
    assert res.returncode == 0, res.stderr
    assert "example" in res.stdout and f"playbook {name}" in res.stdout


def test_all_registered_commands_exist():
    missing = [name for name in cli.COMMANDS if cli._load(name) is None]
    assert not missing, f"registered but not implemented: {missing}"


def test_tz_reads_local_timestamps_and_names_a_bad_zone(tmp_path):
    import json

    poll = tmp_path / "poll.csv"
    poll.write_text("timestamp, index, utilization.gpu [%], memory.used [MiB]\n"
                    "2024/07/15 10:00:00.000, 0, 90 %, 1000 MiB\n2024/07/15 10:00:02.000, 0, 91 %, 1000 MiB\n")
    utc = json.loads(_run("info", str(poll), "--json").stdout)["tables"]["telemetry"]
    chicago = json.loads(_run("info", str(poll), "--json", "--tz", "America/Chicago").stdout)["tables"]["telemetry"]
    assert utc["start"] == "2024-07-15T10:00:00Z" and chicago["start"] == "2024-07-15T15:00:00Z"  # CDT = UTC-5
    bad = _run("diagnose", str(poll), "--tz", "Mars/Base")
    assert bad.returncode != 0 and "unknown time zone 'Mars/Base'" in bad.stderr and "Traceback" not in bad.stderr


def test_info_counts_nsys_summary_reports_as_read():
    # a pasted `nsys stats` output holds summary reports only (no table rows): it was "no rows read", exit 1
    pasted = "tests/data/nsys/pasted/vllm_offload_memops.txt"
    done = _run("info", pasted)
    assert done.returncode == 0, done.stderr
    assert "nsys       2 summary reports: cuda_gpu_mem_time_sum 4 rows, cuda_gpu_mem_size_sum 4 rows" in done.stdout
    assert "no rows read" not in done.stdout
    # a ROCm profile's summaries are named by the tool that wrote them, not "nsys"
    rocm = _run("info", "tests/data/profiler_outputs/rocprofv3_jacobi")
    assert rocm.returncode == 0 and "rocprof    1 summary report: cuda_gpu_kern_sum 4 rows" in rocm.stdout


def test_info_shows_a_text_logs_ranks_phases_sections_and_events(tmp_path):
    from playbook.commands import info
    from playbook.readers import read_paths

    for r in (0, 1):
        (tmp_path / f"train_rank{r}.log").write_text(
            "[2024-03-01 10:00:00] step 1 | timing_s/gen: 3.0 | timing_s/update: 1.0 | timing_s/step: 4.5\n"
            "[2024-03-01 10:00:05] Running evaluation\n"
            "[2024-03-01 10:00:35] evaluation done\n"
            "[2024-03-01 10:00:40] step 2 | timing_s/gen: 3.0 | timing_s/update: 1.0 | timing_s/step: 4.5\n"
            "[2024-03-01 10:00:41] RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
            "[2024-03-01 10:00:42] [WARNING] something unexplained\n")
    text = info.render(info.summarize(read_paths(tmp_path)))
    assert "ranks 0 (from path); phases gen, update" in text and "ranks 1 (from path)" in text
    assert "sections: eval 1 (30 s in all)" in text
    assert "events: eval 1, ecc 1" in text
    assert "ERROR/WARNING lines not understood: 1" in text


def test_control_characters_from_the_inputs_are_shown_not_obeyed(tmp_path, capsys):
    """An ESC sequence in a file name or a line reaches the terminal as `\\x1b`, never as ESC (it would retitle or
    clear the user's terminal)."""
    from playbook.core.terminal import visible

    assert visible("a\x1b]0;pwned\x07b\tc\nd\x9b") == "a\\x1b]0;pwned\\x07b\tc\nd\\x9b"
    bad = tmp_path / "run\x1b[2J.log"
    assert cli.main(["diagnose", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b[2J" in err
    log = tmp_path / "steps.log"
    log.write_text("".join(f"step {i} loss 2.0 time 1.0s \x1b[31mred\x1b[0m\n" for i in range(1, 40)) + "\x1b[2J\n")
    assert cli.main(["info", str(log)]) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err
