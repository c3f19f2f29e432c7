"""Write the LABELED SYNTHETIC files of round steplogs12 and expected.json (the truth for every file, real excerpts
included). Run from this folder: python make_steplogs12.py. Deterministic (no randomness beyond a fixed seed).

Synthetic files (formats from the trainers' own print statements, figures from the threads named in SOURCES.md):
- insightface_1570_periodic_slow_disk.log: arcface_torch CallBackLogging lines (format as pasted in
  deepinsight/insightface#1996); every 400 steps the 50-step window runs at ~90 samples/s instead of ~500 (#1570:
  "every 400 steps the rate drops from 500+ to 90+ samples/sec", GPU at 0% meanwhile; fixed by moving to an SSD).
- nerfstudio_viewer_slowdown.log: nerfstudio LocalWriter with max_log_size=0 (nerfstudio/utils/writer.py: header
  `Step (% Done)` + `{name:<20} ` once, then `{step} ({pct:.02f}%)` padded to 20 and each stat `{v:<20} `;
  times by _format_time, rays by human_format); 45 ms/iter, from step 3000 95 ms/iter (nerfstudio#223: eval for the
  viewer is often the bottleneck; a lower viewer resolution sped training up "dramatically")."""
from __future__ import annotations

import datetime as dt
import json
import random

random.seed(12)


def arcface() -> tuple[str, dict]:
    batch, every, window, n_steps, per_epoch = 512, 400, 50, 2400, 600
    fast, slow = batch / 500.0, batch / 90.0  # s/step: 1.024 and 5.689
    t = dt.datetime(2021, 6, 8, 9, 0, 0)
    lines, lost = [], 0.0
    for step in range(window, n_steps + 1, window):
        per = slow if step % every == 0 else fast
        per *= 1 + random.uniform(-0.01, 0.01)
        if step % every == 0:
            lost += window * (per - fast)
        t += dt.timedelta(seconds=window * per)
        left_h = (n_steps * 10 - step) * fast / 3600  # the run's total is 10x this excerpt
        lines.append(f"Training: {t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}-Speed {batch / per:.2f} samples/sec"
                     f"   Loss {45 - step / 200:.4f}   LearningRate 0.1000   Epoch: {(step - 1) // per_epoch}"
                     f"   Global Step: {step}   Fp16 Grad Scale: 65536   Required: {left_h:.0f} hours")
    truth = {"printed_steps": list(range(window, n_steps + 1, window)), "step_s": round(fast, 4),
             "stall_every": every, "stall_step_s": round(slow, 4), "slowdown": "periodic stall (slow disk)",
             "lost_s": round(lost, 1), "verdict_ok": ["periodic_stall", "data_starvation"], "synthetic": True}
    return "\n".join(lines) + "\n", truth


def fmt_time(seconds: float) -> str:
    """nerfstudio's _format_time."""
    ms = (seconds % 1) * 1e3
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d > 0:
        return f"{d} d, {h} h, {m} m, {s} s"
    if h > 0:
        return f"{h} h, {m} m, {s} s"
    if m > 0:
        return f"{m} m, {s} s"
    if s > 0:
        return f"{s} s, {ms:0.3f} ms"
    return f"{ms:0.3f} ms"


def human(num: float) -> str:
    """nerfstudio's human_format."""
    units = ["", "K", "M", "B", "T", "P"]
    k = 0
    while abs(num) >= 1000 and k < len(units) - 1:
        num /= 1000.0
        k += 1
    return f"{num:.2f} {units[k]}"


def nerfstudio() -> tuple[str, dict]:
    max_iter, per_log, last, rays = 30000, 10, 6000, 4096
    names = ["Train Iter (time)", "ETA (time)", "Train Rays / Sec"]
    head = f"{'Step (% Done)':<20}" + "".join(f"{n:<20} " for n in names)
    lines = [head, "-" * len(head)]
    lost = 0.0
    for step in range(per_log, last + 1, per_log):
        it = (0.095 if step > 3000 else 0.045) * (1 + random.uniform(-0.02, 0.02))
        if step > 3000:
            lost += per_log * (it - 0.045)
        row = f"{f'{step} ({step / max_iter * 100:.02f}%)':<20}"
        row += "".join(f"{v:<20} " for v in (fmt_time(it), fmt_time((max_iter - step) * it), human(rays / it)))
        lines.append(row)
    truth = {"printed_steps": list(range(per_log, last + 1, per_log)), "step_s": 0.045, "slow_from": 3001,
             "step_s_after": 0.095, "slowdown": "level shift from step 3001 (viewer eval)", "lost_s": round(lost, 1),
             "verdict_ok": ["unexplained_slowdown"], "synthetic": True}
    return "\n".join(lines) + "\n", truth


REAL = {
    "tfod_v2_6_absl_doubled.log": {
        "printed_steps": list(range(100, 1000, 100)),
        "step_s_each": [0.813, 0.831, 0.844, 0.771, 0.701, 0.827, 0.736, 0.748, 0.813],
        "slowdown": "none", "verdict_ok": ["healthy", "insufficient_data"]},
    "tf_slim_2980_global_step.log": {
        "printed_steps": list(range(1, 9)),
        "step_s_each": [57.126, 17.053, 16.534, 16.926, 20.205, 17.060, 16.456, 16.765],
        "slowdown": "none (step 1 is start-up)", "verdict_ok": ["healthy", "insufficient_data"]},
    "insightface_1624_speed_drop.log": {
        "printed_steps": list(range(100, 600, 50)),
        "step_s_each": [0.689, 0.661, 0.679, 0.675, 0.665, 0.669, 0.667, 1.132, 2.111, 2.100],
        "slowdown": "level shift from ~step 430 (no cause in the file)", "lost_s": 167.0,
        "verdict_ok": ["unexplained_slowdown"]},
    "nerfstudio_in2n_40_slow.log": {
        "printed_steps": list(range(44530, 44580, 10)),
        "step_s_each": [0.618377, 0.603640, 0.623457, 0.638317, 0.656085],
        "slowdown": "none", "verdict_ok": ["healthy", "insufficient_data"]},
    "nerfstudio_dn_splatter_110_rich.log": {
        "printed_steps": [4090, 4210, 4310], "step_s_each": [0.043140, 0.046225, 0.044431],
        "slowdown": "none", "verdict_ok": ["healthy", "insufficient_data"]},
    "speechbrain_2216_tqdm.log": {
        "printed_steps": [190, 380], "step_s_each": [188 / 190, 182 / 190],
        "eval_s": [103, 137], "slowdown": "none in training (the second validation took 34 s longer)",
        "verdict_ok": ["healthy", "insufficient_data"]},
    "wenet_941_multirank.log": {
        "printed_steps": [203700, 203800], "step_s_each": [None, 1.25], "step_s_rel": 0.08,
        "ranks": 3, "slowdown": "none", "verdict_ok": ["healthy", "insufficient_data"]},
}


def main() -> None:
    expected = {}
    for name, make in (("insightface_1570_periodic_slow_disk.log", arcface), ("nerfstudio_viewer_slowdown.log", nerfstudio)):
        text, truth = make()
        with open(name, "w") as f:
            f.write(text)
        expected[name] = truth
    expected.update(REAL)
    with open("expected.json", "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
