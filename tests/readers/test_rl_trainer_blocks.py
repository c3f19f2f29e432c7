"""RL trainers' per-iteration blocks and tables, written apart from the held-out round 67 files (tests/data/eval/
heldout67) from the tools' print statements: rsl_rl's `OnPolicyRunner.log` block (5.x: `Total steps:`, `Steps per
second:`, `Collection time:`, `Learning time:`, `Iteration time:`; before 5: `Computation: N steps/s (collection: Xs,
learning Ys)`, `Total timesteps:`), and Stable-Baselines3's off-policy table stream, whose `train/` rows (and
`n_updates`) only start once learning does."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.readers import read_file
from playbook.readers.step_log.vocab import continues

WIDTH, PAD = 80, 35


def _rsl_rl5(iterations, last_untimed=False) -> str:
    """rsl_rl 5.x blocks for (iteration, collection s, learning s); the last block cut before its `Iteration time`
    when `last_untimed` (a paste that ends mid-block)."""
    out, total = [], 0
    for k, (it, col, lrn) in enumerate(iterations):
        total += 24 * 256
        out += ["#" * WIDTH, f" Learning iteration {it}/1500 ".center(WIDTH, " "), "",
                f"{'Total steps:':>{PAD}} {total} ", f"{'Steps per second:':>{PAD}} {int(24 * 256 / (col + lrn))} ",
                f"{'Collection time:':>{PAD}} {col:.3f}s ", f"{'Learning time:':>{PAD}} {lrn:.3f}s ",
                f"{'Mean value loss:':>{PAD}} 0.5123", f"{'Mean reward:':>{PAD}} 12.40"]
        if last_untimed and k == len(iterations) - 1:
            break
        out += ["-" * WIDTH, f"{'Iteration time:':>{PAD}} {col + lrn:.2f}s", f"{'Time elapsed:':>{PAD}} 00:01:{k:02d}",
                f"{'ETA:':>{PAD}} 00:40:00", ""]
    return "\n".join(out) + "\n"


def _rsl_rl_old(iterations) -> str:
    """rsl_rl before 5: `Computation: N steps/s (collection: Xs, learning Ys)` and the totals under the rule."""
    out, total = [], 0
    for it, col, lrn in iterations:
        total += 4096 * 24
        out += ["#" * WIDTH, f" \033[1m Learning iteration {it}/500 \033[0m ".center(WIDTH, " "), "",
                f"{'Computation:':>{PAD}} {4096 * 24 / (col + lrn):.0f} steps/s (collection: {col:.3f}s, learning "
                f"{lrn:.3f}s)", f"{'Mean reward:':>{PAD}} 5.16", "-" * WIDTH,
                f"{'Total timesteps:':>{PAD}} {total}", f"{'Iteration time:':>{PAD}} {col + lrn:.2f}s",
                f"{'Total time:':>{PAD}} {100 + it:.2f}s", f"{'ETA:':>{PAD}} 900.0s", ""]
    return "\n".join(out) + "\n"


def _steps(tmp_path, text, name="train.log"):
    path = tmp_path / name
    path.write_text(text)
    s = read_file(path).steps
    s = s[s["phase"] == "step"]
    return s["step"].tolist(), s["duration_s"].tolist()


ITERS = [(40, 0.61, 0.21), (41, 0.60, 0.22), (42, 0.62, 0.21), (43, 0.95, 0.21), (44, 0.61, 0.20), (45, 0.60, 0.21)]


def test_rsl_rl5_blocks_count_by_their_iteration_and_time_it_by_iteration_time(tmp_path):
    steps, seconds = _steps(tmp_path, _rsl_rl5(ITERS))
    assert steps == [40, 41, 42, 43, 44, 45]  # `Total steps: 6144` is the run's count, a field of the block
    assert seconds == pytest.approx([c + lr for _, c, lr in ITERS], abs=0.006)


def test_an_untimed_last_block_gets_no_time_from_the_env_steps_rate(tmp_path):
    steps, seconds = _steps(tmp_path, _rsl_rl5(ITERS, last_untimed=True))
    # `Steps per second: 7400` counts env steps (0.14 ms each), not iterations: it stands in for no iteration time
    assert all(s > 0.5 for s in seconds)
    assert 45 not in steps or seconds[steps.index(45)] > 0.5


def test_rsl_rl_before_5_times_an_iteration_by_iteration_time_not_the_env_steps_rate(tmp_path):
    steps, seconds = _steps(tmp_path, _rsl_rl_old(ITERS))
    assert steps == [40, 41, 42, 43, 44, 45]
    assert seconds == pytest.approx([c + lr for _, c, lr in ITERS], abs=0.006)


def test_a_per_step_field_stands_in_only_where_it_agrees_with_the_chosen_one():
    from playbook.readers.step_log.duration_field import agrees

    chosen = np.array([0.15, 0.16, np.nan])
    assert not agrees(chosen, np.array([1 / 1702, 1 / 1655, 1 / 1600]))  # another unit's rate
    assert agrees(chosen, np.array([0.16, 0.15, 0.17]))
    assert agrees(np.array([0.15, np.nan]), np.array([np.nan, 0.2]))  # never stated together: nothing against it


def test_a_run_count_in_an_indented_block_continues_it_and_a_counter_does_not():
    assert continues("                            Total steps: 2304 ")
    assert not continues("  iteration 30/ 500 | elapsed time per iteration (ms): 812.3")


def _sb3_block(rows: list[tuple[str, str]]) -> str:
    width = 34
    lines = ["-" * width]
    for key, value in rows:
        lines.append(f"| {key:<19}| {value:<9}|")
    return "\n".join(lines + ["-" * width])


def test_sb3_off_policy_tables_count_by_total_timesteps_before_and_after_updates_start(tmp_path):
    blocks, t, n = [], 0, 0
    for k, (steps, seconds) in enumerate([(4000, 8), (4000, 160), (4000, 170), (4000, 165), (4000, 168),
                                          (4000, 172)]):
        n += steps
        t += seconds
        rows = [("rollout/", ""), ("    ep_len_mean", "200"), ("time/", ""), ("    episodes", str(20 * (k + 1))),
                ("    fps", str(n // t)), ("    time_elapsed", str(t)), ("    total_timesteps", str(n))]
        if k:  # learning_starts passed: the updates begin
            rows += [("train/", ""), ("    learning_rate", "0.0003"), ("    n_updates", str(1000 * k))]
        blocks.append(_sb3_block(rows))
    steps, seconds = _steps(tmp_path, "\n".join(blocks) + "\n")
    assert steps == [8000, 12000, 16000, 20000, 24000]  # the first block has no previous reading to difference
    assert seconds == pytest.approx([0.040, 0.0425, 0.04125, 0.042, 0.043])
