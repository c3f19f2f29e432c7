"""The sixty-seventh held-out round (tests/data/eval/heldout67/SOURCES.md): RL training runs whose time is in the
environment or in the learner — habitat's env-time / pth-time running totals (the environments take 86%), a
Stable-Baselines (SB2) SAC table on a Jetson (the gradient updates are the bottleneck), an SB3 DQN stream whose updates
start at `learning_starts`, a steady SB3 PPO run on CPU, an rsl_rl 5 smoke test. Each file's verdict (one of the
accepted ids); the fixes are tested apart in tests/readers/test_rl_trainer_blocks.py."""

from __future__ import annotations

from pathlib import Path

from heldout_rounds import verdict_tests

from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout67"

ACCEPTED = {
    "home_robot324_habitat_env_bound.log": ("data_starvation", "pipeline_imbalance"),
    "airc23_sb2_sac_jetson_learner_bound.log": ("pipeline_imbalance", "healthy", "insufficient_data"),
    "capstone_sb3_dqn_learning_starts.log": ("workload_change", "healthy"),
    "capstone_sb3_ppo_cpu_steady.log": ("healthy", "insufficient_data"),
    "isaaclab5084_rsl_rl5_smoke.log": ("healthy", "insufficient_data"),
}
NOT_YET = {
    "airc23_sb2_sac_jetson_learner_bound.log": "one SB2 table: its time_elapsed is a running total with no second "
    "reading to difference (reading it as a mean since step 0 would assume the count began at 0, which SB3's "
    "reset_num_timesteps=False breaks): refused",
}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


def test_the_dqn_stream_counts_environment_steps_before_and_after_learning_starts():
    steps = read_paths([str(HERE / "capstone_sb3_dqn_learning_starts.log")]).steps
    steps = steps[steps["phase"] == "step"]
    assert steps["step"].tolist() == [16539, 24728, 33324, 41905, 50676]  # total_timesteps, not train/n_updates
    assert steps["duration_s"].between(0.09, 0.12).all()  # ~8.6-10.7 steps/s once updates run


def test_the_rsl_rl_blocks_are_counted_by_their_iteration():
    steps = read_paths([str(HERE / "isaaclab5084_rsl_rl5_smoke.log")]).steps
    steps = steps[steps["phase"] == "step"]
    assert steps["step"].tolist() == [1, 7]  # iteration 0's head and iteration 8's time are cut from the paste
    assert steps["duration_s"].tolist() == [0.16, 0.15]
