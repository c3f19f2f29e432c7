"""Write the LABELED SYNTHETIC files of round steplogs13 and expected.json (the truth for every file, the real
excerpts included). Run from this folder: python make_steplogs13.py. Deterministic (fixed seed).

Synthetic files (formats from the trainers' own print statements, figures from the threads named in SOURCES.md):
- tianshou_1285_gradual_slowdown.log: tianshou's training bar (tqdm(total=step_per_epoch, desc=f"Epoch #{epoch}",
  ascii=True) with set_postfix(env_step=..., len=..., n/ep=..., n/st=..., rew=...)) written to a file: redraws
  separated by carriage returns (one redraw kept per 2,000 steps), the bar closed with a newline, then
  `Epoch #N: test_reward: ... ± ..., best_reward: ... in #M`. Figures from thu-ml/tianshou#1285: fast at the start
  of epoch 1, slower as the steps increase, ~2.6 it/s in the end and for every later epoch (~11 h per epoch of
  100,000 steps), test_reward -21.000000 ± 0.000000 throughout. The start rate (30 it/s) and the place where the
  decline ends (step 60,000) are not stated in the thread: chosen here.
- tflearn_termlogger_snapshot_evals.log: tflearn callbacks.TermLogger as it is today (termlogs(): `Training Step: N `
  + ` | total loss: \\033[1m\\033[32m%.5f\\033[0m\\033[0m` + ` | time: %.3fs`, then `\\x1b[2K\\r| Adam | epoch: %03d
  | loss: ... - acc: ... -- iter: %0Nd/%d`; print_termlogs moves the cursor up two lines (`\\033[A` x2) after every
  step, snapshot_termlogs adds `--` instead; the time is step_time_total, reset on_epoch_begin: seconds since the
  epoch began). Figures from tflearn/tflearn#486 (0.19-0.33 s per step; the step that runs the validation
  8.4-8.9 s): 2 epochs of 430 steps (55,000 samples, batch 128), validation on every 100th step and at each
  epoch's end (snapshot_step=100, snapshot_epoch=True)."""
from __future__ import annotations

import json
import random
from pathlib import Path

random.seed(13)
HERE = Path(__file__).resolve().parent


def tqdm_interval(t: float) -> str:
    """tqdm.format_interval."""
    m, s = divmod(int(t), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def tianshou() -> tuple[str, dict]:
    per_epoch, every, epochs = 100_000, 2_000, 2
    fast, slow, settle = 1 / 30.0, 1 / 2.6, 60_000  # s per step; the decline ends at step 60,000 of epoch 1

    def per_step(global_step: int) -> float:
        return fast + (slow - fast) * min(1.0, global_step / settle)

    out, steps, each, total = [], [], [], 0.0
    for epoch in range(1, epochs + 1):
        elapsed, redraws = 0.0, [f"Epoch #{epoch}:   0%|          | 0/{per_epoch} [00:00<?, ?it/s]"]
        for n in range(every, per_epoch + 1, every):
            g = (epoch - 1) * per_epoch + n
            window = sum(per_step(g - every + k + 0.5) for k in range(0, every, 100)) * 100 / every * every
            elapsed += window
            rate = every / window
            left = (per_epoch - n) / rate
            pct = 100 * n // per_epoch
            bar = "#" * (pct // 10) + (str(pct % 10) if pct < 100 else "")
            redraws.append(f"Epoch #{epoch}: {pct:3d}%|{bar:<10}| {n}/{per_epoch} [{tqdm_interval(elapsed)}<"
                           f"{tqdm_interval(left)}, {rate:.2f}it/s, env_step={g}, len=0, n/ep=0, n/st=10, rew=0.00]")
            steps.append(g)
            each.append(round(window / every, 5))
        total += elapsed
        out.append("\r".join(redraws) + "\n")
        out.append(f"Epoch #{epoch}: test_reward: -21.000000 ± 0.000000, best_reward: -21.000000 ± 0.000000 in #0\n")
    lost = total - len(steps) * every * fast
    truth = {"printed_steps": steps, "step_s_each": each, "slowdown": "gradual from the start of epoch 1 to 2.6 it/s",
             "lost_s": round(lost, 0), "verdict_ok": ["unexplained_slowdown", "memory_pressure"], "synthetic": True,
             "note": "per env step (the bar's unit); the counter is env_step (global), the bar's n restarts"}
    return "".join(out), truth


def tflearn() -> tuple[str, dict]:
    per_epoch, batch, n_data, snap = 430, 128, 55_000, 100
    out = ["---------------------------------\n", "Run id: 6DZ3KQ\n", "Log directory: /tmp/tflearn_logs/\n",
           "---------------------------------\n", f"Training samples: {n_data}\n", "Validation samples: 10000\n",
           "--\n"]
    steps, each, lost = [], [], 0.0
    for epoch in (1, 2):
        since_start = 0.0
        for k in range(1, per_epoch + 1):
            step = (epoch - 1) * per_epoch + k
            dur = random.uniform(0.19, 0.33)
            evaluating = step % snap == 0 or k == per_epoch
            if evaluating:
                extra = random.uniform(8.1, 8.6)
                dur += extra
                lost += extra
            since_start += dur
            loss = 2.3 * 0.997 ** step + 0.05
            line = (f"Training Step: {step}  | total loss: \033[1m\033[32m{loss:.5f}\033[0m\033[0m"
                    f" | time: {since_start:.3f}s\n")
            it = min(k * batch, n_data)
            acc = min(0.99, 0.3 + step / 1200)
            val = f" | val_loss: {loss * 0.8:.5f} - val_acc: {acc + 0.01:.4f}" if evaluating else ""
            line += (f"\x1b[2K\r| Adam | epoch: {epoch:03d} | loss: {loss:.5f} - acc: {acc:.4f}{val}"
                     f" -- iter: {it:05d}/{n_data}\n")
            line += "--\n" if evaluating else "\033[A\033[A"
            out.append(line)
            steps.append(step)
            each.append(round(dur, 4))
    truth = {"printed_steps": steps, "step_s_each": each,
             "slowdown": "periodic: validation on every 100th step and at each epoch's end (~8.4 s each)",
             "lost_s": round(lost, 1), "verdict_ok": ["periodic_stall"], "synthetic": True,
             "note": "`time:` is seconds since the epoch began (cumulative, reset at each epoch)"}
    return "".join(out), truth


def stamps(text: str) -> list[float]:
    import datetime as dt
    return [dt.datetime.strptime(ln[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp() for ln in text.splitlines()]


def by_next_stamp(name: str, keep=lambda ln: True) -> list[float | None]:
    """Kaldi prints `Iter: N` when iteration N starts: its time is the next such line's stamp minus its own."""
    lines = [ln for ln in (HERE / name).read_text().splitlines() if keep(ln)]
    t = stamps("\n".join(lines))
    return [round(b - a, 3) for a, b in zip(t, t[1:], strict=False)] + [None]


def real() -> dict:
    healthy = ["healthy", "insufficient_data"]
    rates = [1244.54, 1237.34, 1248.02, 1181.84, 1228.67]
    return {
        "kaldi_vosk898_chain_iters.log": {
            "printed_steps": list(range(20, 28)), "step_s_each": by_next_stamp("kaldi_vosk898_chain_iters.log"),
            "align": "either", "slowdown": "none (iteration 20 took 17.9 s, the others 13.9 s)",
            "verdict_ok": healthy},
        "kaldi_vosk966_chain_iters.log": {
            "printed_steps": list(range(78, 86)), "step_s_each": by_next_stamp("kaldi_vosk966_chain_iters.log"),
            "align": "either", "slowdown": "one slow iteration (80: 25.8 s against 20.6 s; 5.2 s), cause not stated",
            "verdict_ok": healthy + ["unexplained_slowdown"], "lost_s_if_slowdown": 5.2},
        "kaldi_1880_old_passes.log": {
            "printed_steps": [219, 220, 221],
            "step_s_each": by_next_stamp("kaldi_1880_old_passes.log", lambda ln: "Training neural net" in ln),
            "align": "either", "slowdown": "none", "verdict_ok": healthy,
            "note": "two lines per iteration (pass N, then `On iteration N, learning rate is ...`): one step"},
        "tianshou_449_epochs.log": {
            "printed_steps": [50000, 100000, 150000, 200000, 250000], "alt_steps": [1, 2, 3, 4, 5],
            "step_s_each": [round(1 / r, 7) for r in rates], "alt_step_s_each": [round(50001 / r, 2) for r in rates],
            "slowdown": "none", "verdict_ok": healthy,
            "note": "one bar end per epoch (50,001 env steps); the test_reward lines are evaluations"},
        "acme_269_impala_starved_learner.log": {
            "learner_steps": [2, 9], "learner_wall_s_per_step": round((65610.970637 - 65526.416487) / 7, 2),
            "learner_busy_s_per_step": round((11.579 - 10.830) / 7, 3),
            "slowdown": "the learner waits for data: ~0.1 s of work per learner step in ~12 s of wall (one actor at"
                        " ~95 env steps/s); the thread's title: low SPS",
            "verdict_ok": ["data_starvation", "between_steps"],
            "note": "two stretches of one paste (lines cut mid-way left out); [Actor] and [Evaluator] lines are"
                    " other roles, not learner steps"},
        "tflearn_486_snapshot_eval.log": {
            "printed_steps": [8, 9, 10, 11, 12, 13], "step_s_each": [0.275, 0.186, 8.900, 0.326, 0.291, 0.245],
            "slowdown": "step 10 runs the validation (snapshot_step=10): ~8.6 s of 10.2 s",
            "lost_s": 8.6, "verdict_ok": ["periodic_stall", "unexplained_slowdown", "insufficient_data"],
            "note": "PR #486's TermLogger: `time:` is that step's own time"},
        "kerasrl_80_sarsa_episodes.log": {
            "printed_steps": [39160, 39497, 39943, 40336],
            "step_s_each": [round(d / n, 5) for d, n in ((0.073, 13), (1.759, 337), (2.289, 446), (2.014, 393))],
            "slowdown": "none", "verdict_ok": healthy,
            "note": "one line per episode: the counter is the env step at its end, duration the episode's"},
        "maddpg_tf2marl_5_windows.log": {
            "printed_steps": [24999 + 25000 * k for k in range(8)],
            "step_s_each": [round(t / 25000, 6) for t in (54.804, 83.288, 73.766, 94.275, 78.481, 58.537, 64.239,
                                                           62.505)],
            "slowdown": "none stated (windows of 25,000 steps take 55-94 s, no trend; the thread is about reward)",
            "verdict_ok": healthy + ["unexplained_slowdown"],
            "note": "openai/maddpg train.py: `time` is the seconds since the previous print (t_start reset)"},
    }


def main() -> None:
    truth = real()
    for name, make in (("tianshou_1285_gradual_slowdown.log", tianshou),
                       ("tflearn_termlogger_snapshot_evals.log", tflearn)):
        text, want = make()
        (HERE / name).write_text(text)
        truth[name] = want
    (HERE / "expected.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
