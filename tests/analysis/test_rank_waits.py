"""Waits for a straggler that the ranks' own step timers leave out (playbook.analysis.rank_waits), LABELED SYNTHETIC
per-rank logs with a known truth."""

from __future__ import annotations

import numpy as np

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def _ranks(tmp_path, pace, include_wait: bool, steps: int = 300, seed: int = 1):
    """One log per rank, `pace[r]` s of work per step with 2% jitter; with `include_wait` each rank's timer covers
    the step up to the collective's end (the slowest rank's time on that step, as a synchronous step reads)."""
    rng = np.random.default_rng(seed)
    work = np.array(pace)[None, :] * rng.normal(1.0, 0.02, (steps, len(pace)))
    shown = np.repeat(work.max(axis=1, keepdims=True), len(pace), axis=1) if include_wait else work
    for r in range(len(pace)):
        (tmp_path / f"rank{r}.log").write_text("".join(
            f"[rank{r}] step {s + 1} loss 2.31 compute_time {shown[s, r]:.3f}s\n" for s in range(steps)))
    return diagnose(read_paths([str(tmp_path)])), work


def test_a_persistent_straggler_the_timers_leave_out_is_the_others_wait(tmp_path):
    # rank 2 works 1.35 s a step, the others 1.0 s, each timing its own work: the three others wait ~0.35 s a step
    # (19% of the ranks' wall time) and rank 2 itself takes 0.35 s more than the same work takes its peers (6%):
    # against every rank at the median rank's pace, 26% (its first try: "Healthy (likely)", 0% lost)
    d, work = _ranks(tmp_path, [1.0, 1.0, 1.35, 1.0], include_wait=False)
    truth = 1.0 - float(np.median(work, axis=1).sum() / work.max(axis=1).sum())
    assert d.verdict["id"] == ids.COLLECTIVE_STRAGGLER, d.verdict
    assert abs(d.accounting["lost_share"] - truth) < 0.02, (d.accounting["lost_share"], truth)
    assert d.verdict["names"] == ["rank 2"]  # the late rank, not the three that wait for it
    kinds = {b["kind"]: b["names"] for b in d.accounting["buckets"]}
    assert kinds == {"phase:collective": ["rank 2"], "slow_rank": ["rank 2"]}, kinds


def test_timers_that_include_the_wait_or_ranks_within_their_jitter_add_nothing(tmp_path):
    # the same straggler with timers up to the collective's end: every rank reads the same, no wait is inferred
    d, _ = _ranks(tmp_path, [1.0, 1.0, 1.35, 1.0], include_wait=True)
    assert not any(b["kind"] == "phase:collective" for b in d.accounting["buckets"])
    # equal ranks: who is slowest rotates with the jitter, nothing persistent
    d, _ = _ranks(tmp_path, [1.0, 1.0, 1.0, 1.0], include_wait=False, seed=2)
    assert d.verdict["id"] == ids.HEALTHY, d.verdict
    assert not any(b["kind"] == "phase:collective" for b in d.accounting["buckets"])


def test_steps_printed_as_zero_seconds_are_no_pace_to_compare(tmp_path):
    # LABELED SYNTHETIC: one rank's times below the log's resolution (0.000 s): no wait inferred, no division by zero
    import warnings

    for r, secs in enumerate((0.0, 1.4)):
        (tmp_path / f"rank{r}.log").write_text("".join(
            f"[rank{r}] step {s} loss 2.31 compute_time {secs:.3f}s\n" for s in range(1, 101)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        d = diagnose(read_paths([str(tmp_path)]))
    assert not any("accounting skipped" in w for w in d.warnings), d.warnings
    assert not any(b["kind"] in ("phase:collective", "slow_rank") for b in d.accounting.get("buckets", []))


def test_the_verdict_names_the_straggler_once_with_both_parts_of_its_loss(tmp_path):
    # the peers' wait and the straggler's own extra time are one culprit's loss: "... (19%) and ... (6%) on rank 2"
    d, _ = _ranks(tmp_path, [1.0, 1.0, 1.35, 1.0], include_wait=False)
    text = d.verdict["sentence"]
    assert text.count("on rank 2") == 2 and "%) and " in text, text  # once for the loss, once for the cause


def test_timed_collectives_of_equal_ranks_have_no_late_rank_excess():
    """Ranks drawn alike (LABELED SYNTHETIC, collectives timed): the rank that happens to wait least is chance, not a
    straggler, so no `slow_rank` time is counted (a sign test on its work against its peers' median)."""
    from playbook.labs import synthetic
    from playbook.model.schema import Bundle

    steps, events, _ = synthetic.simulate_steps(stall_every=None)
    d = diagnose(Bundle(steps=steps, events=events))
    assert d.verdict["id"] == ids.HEALTHY
    assert "slow_rank" not in {b["kind"] for b in d.accounting["buckets"]}

