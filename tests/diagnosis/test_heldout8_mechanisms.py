"""The mechanisms the eighth held-out round (tests/data/eval/heldout8/SOURCES.md) asked for, each on inputs written
here (LABELED SYNTHETIC), apart from the round's own files."""

from __future__ import annotations

import numpy as np

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def test_a_step_that_took_a_duration_is_a_step_time(tmp_path):
    # `<step word> took <duration>` without a counter (openmmtools' `Iteration took 32.709 s.`): the next step of
    # its rank; a step time that doubles half-way is a loss, not a healthy run
    took = [1.2 if i < 60 else 2.4 for i in range(120)]
    ends = np.cumsum(took).astype(int)  # stamped when each step ends (a step cannot outlast its lines' clock)
    lines = [f"[2024-03-02 10:{e // 60:02d}:{e % 60:02d}] INFO Step took {t:.3f} s" for e, t in zip(ends, took, strict=True)]
    (tmp_path / "run.log").write_text("\n".join(lines) + "\n")
    bundle = read_paths([str(tmp_path / "run.log")])
    assert len(bundle.steps) == 120
    assert abs(float(bundle.steps["duration_s"].iloc[-1]) - 2.4) < 1e-9
    d = diagnose(bundle)
    assert d.verdict["id"] != ids.HEALTHY, d.verdict


def _steady_with(tmp_path, line: str | None):
    """A steady step log (every step alike: its own pace shows no loss), `line` before the first step."""
    steps = [f"2025-05-01 09:{s // 60:02d}:{s % 60:02d} | step {s:4d} | loss 1.2500 | step_time 0.500 s"
             for s in range(1, 201)]
    (tmp_path / "train.log").write_text("\n".join(([line] if line else []) + steps) + "\n")
    return diagnose(read_paths([str(tmp_path / "train.log")]))


def test_a_debug_mode_that_syncs_every_step_outranks_a_steady_pace(tmp_path):
    # the run's pace cannot show what every step pays; the framework's own statement that the mode is on can
    for line in ("/opt/train.py:88: UserWarning: Anomaly Detection has been enabled. This mode will increase the "
                 "runtime and should only be enabled for debugging.",
                 "INFO: You have turned on `Trainer(detect_anomaly=True)`. This will significantly slow down compute "
                 "speed and is recommended only for model debugging.",
                 "+ export CUDA_LAUNCH_BLOCKING=1"):
        d = _steady_with(tmp_path, line)
        assert d.verdict["id"] == ids.HOST_SYNC, (line, d.verdict)


def test_the_hint_to_set_cuda_launch_blocking_is_not_the_setting(tmp_path):
    assert _steady_with(tmp_path, None).verdict["id"] == ids.HEALTHY
    hint = ("RuntimeError: CUDA error: device-side assert triggered. CUDA kernel errors might be asynchronously "
            "reported at some other API call, so the stacktrace below might be incorrect. For debugging consider "
            "passing CUDA_LAUNCH_BLOCKING=1")
    assert _steady_with(tmp_path, hint).verdict["id"] != ids.HOST_SYNC


def test_a_loss_goes_to_a_cause_only_on_evidence_of_its_own():
    # LABELED SYNTHETIC: two supported candidates citing one observation (a level shift) differ by their priors only:
    # the loss stays unexplained; a line of its own (clocks measured low) makes the first one the cause
    from playbook.analysis.accounting import Accounting, Bucket
    from playbook.diagnosis import attribution

    shift = "step time jumps +105% at step 60 and stays there"
    def attributed(throttling_lines):
        acc = Accounting("wall", 100.0, [Bucket("slow_stretches", 30.0, steps=list(range(60, 100)))], 0.01, "")
        ranked = [{"id": ids.THROTTLING, "score": 0.40, "evidence": throttling_lines},
                  {"id": ids.COLLECTIVE_STRAGGLER, "score": 0.35, "evidence": [shift]}]
        attribution.attribute(acc, None, ranked, {})
        return acc.buckets[0].cause

    assert attributed([shift]) == attribution.UNEXPLAINED
    assert attributed([shift, "SM clock 1005 MHz at work against 1980 MHz before"]) == ids.THROTTLING


def test_one_observation_read_two_ways_is_no_evidence_of_its_own():
    # LABELED SYNTHETIC: two drops read "if scheduled, a checkpoint" for one cause and "if unscheduled, the input
    # pipeline" for another, at the same score (0.4 each): the texts differ, the observation is one — the loss stays
    # unexplained
    from playbook.analysis.accounting import Accounting, Bucket
    from playbook.diagnosis import attribution, ranking
    from playbook.diagnosis.findings import Finding

    seen = "the only GPU drops from 97% to 0% 2 times: too few drops to tell a schedule from chance"
    finding = Finding("synchronized_untimed", f"{seen}; if scheduled, a checkpoint", 1.0, 1.0,
                              readings={ids.DATA_STARVATION: (f"{seen}; if unscheduled, the input pipeline", None)})
    ranked = [h for h in ranking.rank([finding]) if h["id"] in (ids.PERIODIC_STALL, ids.DATA_STARVATION)]
    assert len(ranked) == 2 and ranked[0]["evidence"] != ranked[1]["evidence"]

    def attributed(observed):
        acc = Accounting("gpu", 300.0, [Bucket("fleet_drops", 38.0, names=["gpu0"])], 0.01, "")
        attribution.attribute(acc, None, ranked, {}, observed=observed)
        return acc.buckets[0].cause

    assert attributed(ranking.observations([finding])) == attribution.UNEXPLAINED
    assert attributed(None) in (ids.PERIODIC_STALL, ids.DATA_STARVATION)  # the texts alone: picked by the order


def test_observation_keys_missing_for_a_candidate_compare_texts_for_all():
    # LABELED SYNTHETIC: two causes cite the very same evidence text at the same score; `observed` names keys for
    # one only. Keys against the other's texts never overlap, so the first read as evidence of its own (review1);
    # compared in one namespace (the texts) they share it and the loss stays unexplained
    from playbook.diagnosis import attribution

    text = "the GPUs drop from 97% to 0% twice"
    best = {"id": ids.PERIODIC_STALL, "score": 0.4, "evidence": [text]}
    rival = {"id": ids.DATA_STARVATION, "score": 0.4, "evidence": [text]}
    assert not attribution._own_evidence(best, [best, rival], {ids.PERIODIC_STALL: {"drops"}})
    assert not attribution._own_evidence(best, [best, rival], None)


def test_a_total_that_does_not_accumulate_is_the_time_since_the_previous_line(tmp_path):
    # LABELED SYNTHETIC, DeePMD-kit's line (`batch %7d training time %.2f s, testing time %.2f s`, the time of the
    # disp_freq batches since the last line) without time stamps: 1000 batches per line at 30 ms each, not 30 s each
    lines = [f"DEEPMD INFO    batch {1000 * i:7d} training time {30.0 + 0.1 * (i % 3):.2f} s, testing time 0.02 s"
             for i in range(1, 31)]
    (tmp_path / "lcurve.log").write_text("\n".join(lines) + "\n")
    steps = read_paths([str(tmp_path / "lcurve.log")]).steps
    per_step = steps.loc[steps["phase"] == "step", "duration_s"]
    assert len(per_step) >= 29 and abs(float(per_step.median()) - 0.030) < 0.001
