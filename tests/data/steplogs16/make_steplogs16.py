"""Write expected.json for round steplogs16: the truth for every file, computed from the excerpts' own printed
figures (stamps, durations, counters) by the rules SOURCES.md states. Every file of this round is a REAL excerpt;
nothing here writes a log. Run from this folder: python make_steplogs16.py."""
from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent


def numbers(name: str, pattern: str) -> list[float]:
    """Each match of `pattern` (group 1, a number, thousands commas dropped) in the file, in order."""
    return [float(m.group(1).replace(",", "")) for m in re.finditer(pattern, (HERE / name).read_text(), re.M)]


def stamps(name: str, pattern: str, fmt: str) -> list[float]:
    """Seconds of each stamp matched by `pattern` (group 1) and parsed with `fmt`."""
    return [datetime.strptime(m.group(1), fmt).timestamp()
            for m in re.finditer(pattern, (HERE / name).read_text(), re.M)]


def per_step(values: list[float], steps: list[int]) -> list[float]:
    """Seconds per step between consecutive stamps, each over the steps between their counters."""
    return [round((b - a) / (sb - sa), 4) for a, b, sa, sb in zip(values[:-1], values[1:], steps[:-1], steps[1:],
                                                                 strict=True)]


def megatron(name: str) -> tuple[list[int], list[float]]:
    return ([int(x) for x in numbers(name, r"iteration +(\d+)/")],
            [round(x / 1000, 4) for x in numbers(name, r"elapsed time per iteration \(ms\): ([\d.]+)")])


def truth() -> dict:
    out = {}
    steps, secs = megatron("megatronllm_11_iteration.log")
    out["megatronllm_11_iteration.log"] = {
        "printed_steps": steps, "step_s_each": secs,
        "slowdown": "none within the excerpt: 125.6-130.6 s per iteration (the thread compares against other "
                    "frameworks' speed, which the log cannot show)",
        "verdict_ok": ["healthy"]}
    steps, secs = megatron("megatronllm_22_rising.log")
    lost = round((secs[1] - secs[0]) * (steps[1] - steps[0]), 1)
    out["megatronllm_22_rising.log"] = {
        "printed_steps": steps, "step_s_each": secs,
        "slowdown": f"the mean of iterations 6-10 is {secs[1] - secs[0]:.2f} s above that of 1-5 (the thread: "
                    f"'elapsed time per iteration increases linearly'): at least {lost} s lost of "
                    f"{sum(secs) * 5:.1f} s",
        "verdict_ok": ["unexplained_slowdown", "insufficient_data"], "lost_s": lost}
    name = "hf_deepspeed_1825_notebook.log"
    steps = [int(x) for x in numbers(name, r"\[Rank 0\] step=(\d+)")]
    st = stamps(name, r"^\[([\d-]+ [\d:]+,\d+)\].*\[Rank 0\] step=", "%Y-%m-%d %H:%M:%S,%f")
    out[name] = {"printed_steps": steps[1:], "step_s_each": per_step(st, steps),
                 "samples_per_s_running": numbers(name, r"SamplesPerSec=([\d.]+)"),
                 "slowdown": "none: 15.14 s per 10 steps both times; step 40 untimed",
                 "verdict_ok": ["healthy"]}
    name = "neox_deepspeed_3742_breakdown.log"
    out[name] = {"printed_steps": [34], "step_s_each": [4.1031],
                 "phases_s": {"forward": 0.65242, "backward": 2.16453, "backward_allreduce": 0.1626,
                              "optimizer": 1.17213, "batch_generator": 0.00083},
                 "slowdown": "none visible: one timed iteration (4.10 s); the batch generator 0.83 ms of it",
                 "verdict_ok": ["healthy", "insufficient_data"]}
    name = "litgpt_519_tpu_pairs.log"
    secs = [round(x / 1000, 5) for x in numbers(name, r"iter time: ([\d.]+)ms")]
    out[name] = {"printed_steps": [int(x) for x in numbers(name, r"iter (\d+) step")],
                 "printed_steps_alt": [int(x) for x in numbers(name, r"step (\d+):")], "step_s_each": secs,
                 "slowdown": "none: 3.37 s per iteration; the pairs 44+45 and 47+48 (0.95 s + 5.79 s) each sum to "
                             "two normal iterations (6.742 s), time moved between neighbours, none lost",
                 "verdict_ok": ["healthy"]}
    name = "torchtitan_1287_profiler.log"
    steps = [int(x) for x in numbers(name, r"step: +(\d+) ")]
    st = stamps(name, r"\[titan\] ([\d-]+ [\d:]+,\d+) .*step: ", "%Y-%m-%d %H:%M:%S,%f")
    out[name] = {"printed_steps": steps[1:], "step_s_each": per_step(st, steps),
                 "tps": numbers(name, r"tps: ([\d,]+)"),
                 "slowdown": "none: 1.40 s per step; the window after step 200 carries the profiler dump "
                             "(0.22 s) and is 1.46 s per step",
                 "verdict_ok": ["healthy"]}
    name = "axolotl_592_hang.log"
    out[name] = {"printed_steps": [258, 260], "step_s_each": [4.24, 4.21], "step_s_alt": [None, 4.5],
                 "slowdown": "none visible: 4.2 s per step by the bar's rate (the elapsed field: 9 s for 2 steps); "
                             "the thread says the run then hung 30 minutes until the timeout, but the excerpt has "
                             "no later line, so the hang is not in the file",
                 "verdict_ok": ["healthy", "insufficient_data"]}
    name = "nanogpt_178_checkpoint.log"
    out[name] = {"printed_steps": [int(x) for x in numbers(name, r"^iter (\d+):")],
                 "step_s_each": [round(x / 1000, 5) for x in numbers(name, r"time ([\d.]+)ms")],
                 "events": {"eval": 250},
                 "slowdown": "none: iteration 0 9.37 s (compilation), then 0.893-0.930 s (each the one iteration "
                             "printed every 10)",
                 "verdict_ok": ["healthy"]}
    name = "maxtext_4847_first_step.log"
    st = stamps(name, r"^I\d{4} ([\d:.]+) \d+ metric_logger.py:226", "%H:%M:%S.%f")
    out[name] = {"printed_steps": [2, 3], "step_s_each": numbers(name, r"seconds: ([\d.]+)")[1:],
                 "stamp_s_each": [round(b - a, 3) for a, b in zip(st[:-1], st[1:], strict=True)],
                 "slowdown": "none: 10.23 and 10.34 s (the stamps 10.59 s apart); step 1's 0.631 s is not scored",
                 "verdict_ok": ["healthy", "insufficient_data"]}
    name = "openr1_161_grpo_first_step.log"
    out[name] = {"printed_steps": [1], "step_s_each": [281.24],
                 "slowdown": "one step (281 s; the thread: generation on one GPU dominates, not in the log)",
                 "verdict_ok": ["insufficient_data", "healthy"]}
    return out


if __name__ == "__main__":
    (HERE / "expected.json").write_text(json.dumps(truth(), indent=1) + "\n")
