"""Write expected.json for round steplogs14: the truth for every file, computed from the excerpts' own printed
figures (stamps, durations, counters) by the rules SOURCES.md states. Every file of this round is a REAL excerpt;
nothing here writes a log. Run from this folder: python make_steplogs14.py."""
from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent


def lines(name: str) -> list[str]:
    return (HERE / name).read_text().splitlines()


def stamp(line: str) -> float:
    """Seconds of a `YYYY-MM-DD HH:MM:SS,mmm` / `[YYYY-MM-DD HH:MM:SS,mmm]` stamp."""
    m = re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)[,.](\d{3})", line)
    return datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp() + int(m.group(2)) / 1000


def numbers(name: str, pattern: str) -> list[float]:
    return [float(m.group(1)) for ln in lines(name) if (m := re.search(pattern, ln))]


def diffs(values: list[float]) -> list[float]:
    return [round(b - a, 3) for a, b in zip(values[:-1], values[1:], strict=True)]


def trax() -> dict:
    ran = [(int(m.group(1)), int(m.group(2)), float(m.group(3))) for ln in lines("trax_readme_loop.log")
           if (m := re.search(r"Step\s+(\d+): Ran (\d+) train steps in ([\d.]+) secs", ln))]
    return {"printed_steps": [s for s, _, _ in ran], "step_s_each": [round(t / n, 5) for _, n, t in ran],
            "alt_steps": [s for s, _, _ in ran[1:]], "alt_step_s_each": [round(t / n, 5) for _, n, t in ran[1:]],
            "slowdown": "none: step 1 (0.78 s) is the first call (compilation); then 9.6-11.6 ms per step",
            "verdict_ok": ["healthy", "insufficient_data"]}


def rlgames() -> dict:
    epochs = [int(x) for x in numbers("rlgames_170_brax_fps.log", r"epoch: (\d+)/")]
    total = numbers("rlgames_170_brax_fps.log", r"fps total: ([\d.]+)")
    return {"printed_steps": epochs, "step_s_each": [None] * len(epochs),
            "per_frame_s_if_timed": [round(1 / f, 9) for f in total],
            "slowdown": "none stated: frames per epoch are not printed; the rates are frames over a time counted in "
                        "coarse ticks (2^20 = 1048576 = one tick's frames), so 299,590 -> 209,712 is 3.5 -> 5 ticks",
            "verdict_ok": ["healthy", "insufficient_data"]}


def rllib() -> dict:
    its = [int(x) for x in numbers("rllib_3908_ppo_results.log", r"^training_iteration: (\d+)")]
    secs = numbers("rllib_3908_ppo_results.log", r"^time_this_iter_s: ([\d.]+)")
    ts = [int(x) for x in numbers("rllib_3908_ppo_results.log", r"^timesteps_total: (\d+)")]
    per = numbers("rllib_3908_ppo_results.log", r"^timesteps_this_iter: (\d+)")
    return {"printed_steps": its, "step_s_each": [round(s, 3) for s in secs],
            "alt_steps": ts, "alt_step_s_each": [round(s / p, 6) for s, p in zip(secs, per, strict=True)],
            "slowdown": "none (2.78 s and 2.88 s per iteration of 4,000 timesteps)",
            "verdict_ok": ["healthy", "insufficient_data"]}


def paddleseg() -> dict:
    its = [int(x) for x in numbers("paddleseg_928_fp32.log", r"iter: (\d+)/")]
    cost = numbers("paddleseg_928_fp32.log", r"batch_cost: ([\d.]+)")
    return {"printed_steps": its, "step_s_each": cost,
            "data_s_each": numbers("paddleseg_928_fp32.log", r"reader_cost: ([\d.]+)"),
            "slowdown": "none: the first 20 iterations (0.534 s each, reader 0.073 s) are the warm-up; "
                        "then 0.348-0.375 s, reader <= 2 ms",
            "verdict_ok": ["healthy", "insufficient_data"]}


def sovits() -> dict:
    ep = [int(x) for x in numbers("sovits_563_epoch_stall.log", r"Epoch: (\d+),")]
    cost = numbers("sovits_563_epoch_stall.log", r"cost ([\d.]+) s")
    pace = sorted(cost)[len(cost) // 2]
    return {"printed_steps": ep, "step_s_each": cost,
            "slowdown": f"one stall: epoch 6019 took {cost[0]} s against ~{pace} s (cause not stated)",
            "verdict_ok": ["unexplained_slowdown"], "lost_s": round(cost[0] - pace, 1)}


def soundspaces() -> dict:
    name = "soundspaces_7_env_time.log"
    rows = [ln for ln in lines(name) if "env-time" in ln]
    t = [stamp(lines(name)[0])] + [stamp(ln) for ln in rows]
    upd = [int(re.search(r"update: (\d+)", ln).group(1)) for ln in rows]
    env = [0.0] + [float(re.search(r"env-time: ([\d.]+)s", ln).group(1)) for ln in rows]
    pth = [0.0] + [float(re.search(r"pth-time: ([\d.]+)s", ln).group(1)) for ln in rows]
    frames = [int(re.search(r"frames: (\d+)", ln).group(1)) for ln in rows]
    wall = diffs(t)
    return {"printed_steps": upd, "step_s_each": [round(w / 10, 3) for w in wall],
            "alt_steps": frames[1:], "alt_step_s_each": [round(w / (b - a), 5) for w, a, b in
                                                         zip(wall[1:], frames[:-1], frames[1:], strict=True)],
            "env_share_each": [round(e / w, 2) for e, w in zip(diffs(env), wall, strict=True)],
            "pth_share_each": [round(p / w, 2) for p, w in zip(diffs(pth), wall, strict=True)],
            "slowdown": "the simulator (env-time) takes 47-66% of every update, the GPU work (pth-time) the rest: "
                        "the learner waits on the environment for about half the time",
            "verdict_ok": ["data_starvation"]}


def samplefactory() -> dict:
    name = "samplefactory_128_fps.log"
    rows = [ln for ln in lines(name) if "Total num frames" in ln]
    t = [stamp(ln) for ln in rows]
    fr = [int(re.search(r"Total num frames: (\d+)", ln).group(1)) for ln in rows]
    return {"printed_steps": fr[1:], "step_s_each": [round((b - a) / (f - e), 8) for a, b, e, f in
                                                     zip(t[:-1], t[1:], fr[:-1], fr[1:], strict=True)],
            "tolerance": 0.1, "slowdown": "none (~20,000 frames/s throughout; the thread is about policy lag)",
            "verdict_ok": ["healthy", "insufficient_data"]}


def mlagents() -> dict:
    name = "mlagents_3004_find_target.log"
    steps = [int(x) for x in numbers(name, r"Step: (\d+)\.")]
    el = numbers(name, r"Time Elapsed: ([\d.]+) s")
    each = [round(d / 1000, 6) for d in diffs(el)]
    return {"printed_steps": steps, "step_s_each": [None] + each,
            "slowdown": "none: 5.07-5.16 s per 1,000 steps, one window of 6.18 s (21,000; +1.1 s, cause not stated)",
            "verdict_ok": ["healthy", "insufficient_data", "unexplained_slowdown"], "lost_s_if_slowdown": 1.1}


def vits() -> dict:
    name = "vits_197_epochs.log"
    rows = [ln for ln in lines(name) if "====> Epoch:" in ln]
    ep = [int(re.search(r"Epoch: (\d+)", ln).group(1)) for ln in rows]
    return {"printed_steps": ep, "step_s_each": [None] + diffs([stamp(ln) for ln in rows]), "align": "end",
            "slowdown": "none: 97.3-99.0 s per epoch", "verdict_ok": ["healthy", "insufficient_data"],
            "note": "`====> Epoch: N` closes epoch N; the unnamed 7th number of a loss list is the global step"}


def minimind() -> dict:
    name = "minimind_480_eta_rising.log"
    n = 850049
    steps = [int(x) for x in numbers(name, r"\((\d+)/850049\)")]
    eta = numbers(name, r"epoch_Time:([\d.]+)min")
    spent = [(e + 0.5) / (n / (s + 1) - 1) * 60 for s, e in zip(steps, eta, strict=True)]  # s since epoch start
    k = len(steps)
    ms, mt = sum(steps) / k, sum(spent) / k
    slope = sum((s - ms) * (t - mt) for s, t in zip(steps, spent, strict=True)) / sum((s - ms) ** 2 for s in steps)
    avg = spent[0] / steps[0]
    return {"printed_steps": steps, "step_s_each": [None] * k, "derived_step_s": round(slope, 3),
            "epoch_average_step_s": round(avg, 3),
            "slowdown": f"epoch_Time is minimind's remaining-time estimate (spend/(step+1)*N//60 - spend//60): "
                        f"it implies ~{slope:.2f} s per step now against {avg:.3f} s on average since the epoch began",
            "verdict_ok": ["unexplained_slowdown", "insufficient_data"],
            "lost_s_if_slowdown": round((slope - avg) * (steps[-1] - steps[0]), 0)}


def main() -> None:
    truth = {"trax_readme_loop.log": trax(), "rlgames_170_brax_fps.log": rlgames(),
             "rllib_3908_ppo_results.log": rllib(), "paddleseg_928_fp32.log": paddleseg(),
             "sovits_563_epoch_stall.log": sovits(), "soundspaces_7_env_time.log": soundspaces(),
             "samplefactory_128_fps.log": samplefactory(), "mlagents_3004_find_target.log": mlagents(),
             "vits_197_epochs.log": vits(), "minimind_480_eta_rising.log": minimind()}
    (HERE / "expected.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
