"""Hypothesis ranking: scoring rules, the fixed vocabulary, and the cause named for each LABELED SYNTHETIC case."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose, evidence, ranking
from playbook.diagnosis.evidence import from_traces as traces
from playbook.knowledge.causes import CAUSES, DIAGNOSIS_IDS
from playbook.labs.synthetic import SCENARIOS, simulate_steps, simulate_telemetry
from playbook.model.schema import Bundle

VOCABULARY = {"healthy", "data_starvation", "h2d_copy", "host_sync", "launch_bound", "collective_straggler",
              "padding_imbalance", "periodic_stall", "pipeline_imbalance", "recompilation", "gc_pause",
              "throttling", "link_degradation", "memory_pressure", "hardware_fault", "insufficient_data",
              "unexplained_slowdown", "between_steps", "restart_loss", "slower_compute", "unused_gpus"}


def test_vocabulary_and_notebooks():
    assert set(DIAGNOSIS_IDS) == VOCABULARY
    assert all(CAUSES[c].fix and CAUSES[c].next_step for c in VOCABULARY)
    assert CAUSES["periodic_stall"].notebook == "notebooks/12_checkpoint_eval_stalls.ipynb"
    assert CAUSES["gc_pause"].notebook == CAUSES["host_sync"].notebook == "notebooks/13_host_sync_gc.ipynb"
    for h in ("collective_straggler", "hardware_fault", "throttling", "link_degradation"):
        assert CAUSES[h].notebook == "notebooks/20_collective_stragglers.ipynb"
    assert CAUSES["launch_bound"].notebook == "notebooks/02_observability.ipynb"
    assert CAUSES["memory_pressure"].notebook == CAUSES["healthy"].notebook == "notebooks/01_triage.ipynb"
    for sig in ranking.SPECIFICITY.values():
        assert set(sig) <= VOCABULARY and all(0 < v <= 1 for v in sig.values())


def test_noisy_or_and_healthy():
    ev = [ranking.Evidence("gc_pause", 0.5, "a", anomaly=0.5), ranking.Evidence("gc_pause", 0.5, "b", anomaly=0.5),
          ranking.Evidence("throttling", 0.2, "c", anomaly=0.4)]
    ranked = ranking.rank(ev)
    scores = {h["id"]: h["score"] for h in ranked}
    assert scores["gc_pause"] == pytest.approx(0.75)
    assert scores["throttling"] == pytest.approx(0.2)
    assert scores["healthy"] == pytest.approx(0.5 * 0.5 * 0.6)  # 1 - P(something is wrong)
    assert [h["id"] for h in ranked] == ["gc_pause", "throttling", "healthy"]
    assert ranked[0]["evidence"] == ["a", "b"]
    assert all(0 <= h["score"] <= 1 for h in ranked)


def test_nothing_found_is_healthy_first():
    ranked = ranking.rank([], ["no GPU swings"])
    assert ranked[0]["id"] == "healthy" and ranked[0]["score"] == 1.0
    weak = ranking.rank(ranking.support("memory_swings", 1.0, 0.2, "memory swings a little"))
    assert weak[0]["id"] == "healthy"


def test_impact_scale():
    assert ranking.impact(0.0) == 0.0
    assert ranking.impact(0.05) == pytest.approx(0.632, abs=1e-3)
    assert ranking.impact(0.01) < 0.2 < 0.85 < ranking.impact(0.10)


def test_findings_levels_and_nature():
    ev = traces.from_findings([
        {"hypothesis": "data_starvation", "level": "high", "rank": 0, "evidence": "rank 0 waits 31%"},
        {"hypothesis": "collective_straggler", "level": "moderate", "rank": 3, "evidence": "rank 3 late",
         "nature": "hardware-like"},
        {"hypothesis": "link_degradation", "level": "high", "hosts": ["node7"], "evidence": "Socket"},
        {"hypothesis": "not_a_cause", "level": "high", "evidence": "ignored"},
    ], "trace")
    by = {}
    for e in ev:
        by.setdefault(e.hypothesis, []).append(e)
    assert by["data_starvation"][0].strength == evidence.LEVEL_CONFIDENCE["high"]
    assert by["collective_straggler"][0].strength == evidence.LEVEL_CONFIDENCE["moderate"]
    assert "hardware_fault" in by and "not_a_cause" not in by
    assert "node7" in by["link_degradation"][0].next_step


def _top(bundle):
    return diagnose(bundle).hypotheses


@pytest.mark.parametrize("noise", [{}, {"jitter": 0.3, "nan_frac": 0.05, "gaps": 2, "noise_pct": 8.0},
                                   {"interval_s": 10.0, "duration_s": 3600.0, "hosts": 4}],
                         ids=["clean", "noisy", "10s-polls"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_telemetry_scenarios_name_their_cause(scenario, noise):
    frame, truth = simulate_telemetry(scenario, **noise)
    ranked = _top(Bundle(inputs=[truth.source], telemetry=frame))
    assert ranked[0]["id"] == truth.hypothesis
    assert [h["score"] for h in ranked] == sorted((h["score"] for h in ranked), reverse=True)


def test_straggler_evidence_names_gpu_and_period():
    frame, truth = simulate_telemetry("straggler")
    ranked = _top(Bundle(telemetry=frame))
    ids = [h["id"] for h in ranked]
    assert ids[:2] == ["collective_straggler", "periodic_stall"]
    assert truth.guilty[0] in " ".join(ranked[0]["evidence"])
    assert "60 s" in ranked[1]["next_step"]


@pytest.mark.parametrize("kw,expected", [
    ({}, "periodic_stall"),
    ({"stall_every": None, "gc_count": 30}, "gc_pause"),
    ({"stall_every": 13, "stall_kind": "gc", "stall_s": 1.2}, "gc_pause"),  # a collection every 13 steps: a lattice
    ({"stall_every": None, "creep": 0.4}, "throttling"),
    ({"stall_every": None, "recompile_steps": (5, 47, 130, 171, 260, 333, 380)}, "recompilation"),
    ({"stall_every": None, "slow_rank": 1, "slow_factor": 1.4}, "collective_straggler"),
    ({"stall_every": None}, "healthy"),
])
def test_step_scenarios_name_their_cause(kw, expected):
    steps, events, _ = simulate_steps(**kw)
    ranked = _top(Bundle(steps=steps, events=events))
    assert ranked[0]["id"] == expected


def test_a_periodic_gc_is_named_gc_with_its_period():
    """Each step allocating alike makes the collector fire at a fixed step period; the lattice is then the GC's."""
    steps, events, _ = simulate_steps(stall_every=13, stall_kind="gc", stall_s=1.2, ranks=1)
    ranked = _top(Bundle(steps=steps, events=events))
    assert ranked[0]["id"] == "gc_pause" and "recur every 13 steps" in " ".join(ranked[0]["evidence"])
    assert "periodic_stall" not in [h["id"] for h in ranked[:2]]
    ckpt = simulate_steps(stall_every=13, stall_s=1.2, ranks=1, gc_count=3)  # checkpoints on the lattice, GC beside
    assert _top(Bundle(steps=ckpt[0], events=ckpt[1]))[0]["id"] == "periodic_stall"


def test_periodic_stall_next_step_names_n_and_period():
    steps, events, truth = simulate_steps(stall_every=40)
    top = _top(Bundle(steps=steps, events=events))[0]
    assert top["id"] == "periodic_stall" and top["score"] > 0.8
    assert "every 40 steps" in top["next_step"] and f"{truth.period_s:.3g} s" in top["next_step"]
    assert any("checkpoint event is logged at 10 of them" in e for e in top["evidence"])


def _events(times, kind, duration_s):
    import pandas as pd

    from playbook.model import schema

    n = len(times)
    return schema.events_frame({"time": pd.DatetimeIndex(times), "host": ["node00"] * n, "rank": [0] * n,
                                "step": [-1] * n, "kind": [kind] * n, "duration_s": [duration_s] * n})


def test_events_at_the_drops_name_the_cause():
    import numpy as np
    import pandas as pd

    from playbook.analysis.coincidence import dips_vs_events
    from playbook.analysis.oscillation.fleet import analyze_oscillation

    frame, _ = simulate_telemetry("oscillation", duration_s=1800.0)
    res = analyze_oscillation(frame)
    at_dips = res.t0 + pd.to_timedelta(res.dips_s[:, 0] + 1.0, unit="s")
    random = res.t0 + pd.to_timedelta(np.random.default_rng(0).uniform(0, 1800, 20), unit="s")
    events = pd.concat([_events(at_dips, "checkpoint", 12.0), _events(random, "gc", 0.5)], ignore_index=True)
    coinc = {c["kind"]: c for c in dips_vs_events(res.dips_s, res.t0, events)}
    assert coinc["checkpoint"]["hits"] == coinc["checkpoint"]["dips"] and coinc["checkpoint"]["p_value"] < 1e-6
    assert coinc["gc"]["p_value"] > 0.05
    ranked = diagnose(Bundle(telemetry=frame, events=events)).hypotheses
    assert ranked[0]["id"] == "periodic_stall" and ranked[0]["score"] > 0.9
    assert "checkpoint events overlap" in ranked[0]["evidence"][0]
    assert "gc_pause" not in [h["id"] for h in ranked]


def _oscillation_with_dips():
    """A simulated oscillating GPU log, its analysis, a 1 s host clock over its 30 min, which of those seconds lie in
    a drop, and a seeded random generator."""
    import numpy as np

    from playbook.analysis.oscillation.fleet import analyze_oscillation

    frame, _ = simulate_telemetry("oscillation", duration_s=1800.0, hosts=1)
    res = analyze_oscillation(frame)
    t = np.arange(0, 1800.0, 1.0)
    inside = np.zeros(len(t), dtype=bool)
    for a, b in res.dips_s:
        inside |= (t >= a) & (t <= b)
    return frame, res, t, inside, np.random.default_rng(0)


def test_host_writes_during_the_drops_point_at_checkpoints():
    import numpy as np
    import pandas as pd

    from playbook.analysis.coincidence import host_during_dips
    from playbook.model import schema

    frame, res, t, inside, rng = _oscillation_with_dips()
    host = schema.host_frame({"time": res.t0 + pd.to_timedelta(t, unit="s"), "host": ["node00"] * len(t),
                              "write_mib_s": np.where(inside, 900.0, 5.0) + rng.normal(0, 2, len(t)),
                              "read_mib_s": 50 + rng.normal(0, 5, len(t))})
    metrics = {m["metric"]: m for m in host_during_dips(host, res.dips_s, res.t0)}
    assert metrics["write_mib_s"]["ratio"] > 50 and metrics["write_mib_s"]["p_value"] < 1e-6
    assert metrics["read_mib_s"]["ratio"] == pytest.approx(1.0, abs=0.05)
    ranked = diagnose(Bundle(telemetry=frame, host=host)).hypotheses
    assert ranked[0]["id"] == "periodic_stall"
    assert any("disk writes rise" in e for e in ranked[0]["evidence"])
    assert not any("disk reads" in e for h in ranked for e in h["evidence"])


def test_host_logs_of_several_nodes_are_compared_each_on_its_own():
    """Three nodes' host logs: node01 writes 900 MiB/s during the drops, the other two write 5 MiB/s throughout.
    Averaged together the rise read 1/3 of node01's; each on its own, node01 is named with its full rise."""
    import numpy as np
    import pandas as pd

    from playbook.analysis.coincidence import host_during_dips
    from playbook.model import schema

    _frame, res, t, inside, rng = _oscillation_with_dips()
    parts = [schema.host_frame({"time": res.t0 + pd.to_timedelta(t, unit="s"), "host": [name] * len(t),
                                "write_mib_s": (np.where(inside, 900.0, 5.0) if name == "node01" else 5.0)
                                + rng.normal(0, 2, len(t))}) for name in ("node00", "node01", "node02")]
    metrics = host_during_dips(pd.concat(parts, ignore_index=True), res.dips_s, res.t0)
    top = metrics[0]
    assert (top["host"], top["metric"]) == ("node01", "write_mib_s") and top["ratio"] > 50
    assert top["p_value"] < 1e-6  # after the 3-host Bonferroni factor
    assert all(m["ratio"] < 1.5 for m in metrics if m["host"] != "node01")


def test_the_bonferroni_factor_counts_every_host_metric_pair_tested():
    """Seven host metrics tested on one host are seven chances to rise by luck: each p-value carries the factor of
    the (host, metric) pairs with data to test (before, only the hosts counted)."""
    import numpy as np
    import pandas as pd

    from playbook.analysis.coincidence import host_during_dips
    from playbook.model import schema

    _frame, res, t, inside, rng = _oscillation_with_dips()
    base = {"time": res.t0 + pd.to_timedelta(t, unit="s"), "host": ["node00"] * len(t),
            "write_mib_s": np.where(inside, 900.0, 5.0) + rng.normal(0, 2, len(t))}
    alone = {m["metric"]: m for m in host_during_dips(schema.host_frame(base), res.dips_s, res.t0)}
    more = dict(base, read_mib_s=50 + rng.normal(0, 5, len(t)), cpu_pct=30 + rng.normal(0, 3, len(t)))
    three = {m["metric"]: m for m in host_during_dips(schema.host_frame(more), res.dips_s, res.t0)}
    assert set(three) == {"write_mib_s", "read_mib_s", "cpu_pct"}
    assert three["write_mib_s"]["p_value"] == pytest.approx(min(1.0, 3 * alone["write_mib_s"]["p_value"]))


def test_a_constant_host_metric_is_no_test_in_the_bonferroni_family():
    """A swap never used and an idle NIC read 0 throughout (sar and vmstat print them anyway): a constant can rise in
    no drop, so it is no chance to rise by luck and does not multiply the p-values (review4: three constant
    columns had multiplied the writes' p-value by 4)."""
    import numpy as np
    import pandas as pd

    from playbook.analysis.coincidence import host_during_dips
    from playbook.model import schema

    _frame, res, t, inside, rng = _oscillation_with_dips()
    base = {"time": res.t0 + pd.to_timedelta(t, unit="s"), "host": ["node00"] * len(t),
            "write_mib_s": np.where(inside, 900.0, 5.0) + rng.normal(0, 2, len(t))}
    alone = {m["metric"]: m for m in host_during_dips(schema.host_frame(base), res.dips_s, res.t0)}
    zeros = dict(base, swap_mib_s=np.zeros(len(t)), net_rx_mib_s=np.zeros(len(t)), net_tx_mib_s=np.zeros(len(t)))
    metrics = {m["metric"]: m for m in host_during_dips(schema.host_frame(zeros), res.dips_s, res.t0)}
    assert set(metrics) == {"write_mib_s"}
    assert metrics["write_mib_s"]["p_value"] == pytest.approx(alone["write_mib_s"]["p_value"])


def test_confidence_is_a_calibrated_posterior_not_one_minus_p():
    # Sellke-Bayarri-Berger: P(signature | p) ≤ 1 / (1 - e p ln p) at even prior odds
    assert ranking.confidence(0.125) == pytest.approx(1 / (1 + 0.7066), abs=2e-3)  # 3 of 3 polls: modest
    assert ranking.confidence(0.05) == pytest.approx(0.71, abs=0.01)
    assert ranking.confidence(1e-8) > 0.999 and ranking.confidence(0.0) == 1.0
    assert ranking.confidence(0.9) == pytest.approx(0.1) and ranking.confidence(None) == 0.5
    ps = [1e-12, 1e-6, 1e-3, 0.01, 0.05, 0.125, 0.3, 0.6, 1.0]
    cs = [ranking.confidence(p) for p in ps]
    assert cs == sorted(cs, reverse=True) and all(c <= 1 - p + 1e-12 for c, p in zip(cs, ps, strict=True))


def test_each_cause_of_one_observation_gets_its_own_reading_and_next_step():
    ev = ranking.support("synchronized_periodic", 1.0, 1.0, "seen: a scheduled stall", "log checkpoint steps",
                     readings={"data_starvation": ("seen: a buffer refill", "time next(DataLoader)")})
    by = {e.hypothesis: e for e in ev}
    assert by["periodic_stall"].next_step == "log checkpoint steps"
    assert by["data_starvation"].text == "seen: a buffer refill"
    assert by["data_starvation"].next_step == "time next(DataLoader)"
    # without a reading, a secondary cause keeps the text but never borrows the primary's next step
    ev = ranking.support("synchronized_irregular", 1.0, 1.0, "seen", "time next(DataLoader)")
    assert {e.hypothesis: e.next_step for e in ev}["host_sync"] is None
    ranked = {h["id"]: h for h in ranking.rank(ev)}
    assert ranked["host_sync"]["next_step"] == CAUSES["host_sync"].next_step
    # one observation read two ways counts once towards "something is wrong"
    assert ranked["healthy"]["score"] == pytest.approx(0.0)
    two = ranking.rank(ranking.support("synchronized_periodic", 0.5, 1.0, "x",
                               readings={"data_starvation": ("y", None)}))
    assert {h["id"]: h["score"] for h in two}["healthy"] == pytest.approx(0.5)


def test_memory_swings_alone_are_no_sign_of_trouble():
    ranked = ranking.rank(ranking.support("memory_swings", 1.0, 1.0, "memory used swings by 40 GiB",
                                  readings={"recompilation": ("new shapes", None)}, anomaly=0.0))
    assert ranked[0]["id"] == "healthy" and ranked[0]["score"] == pytest.approx(1 - 0.35)


def test_two_drops_name_no_schedule_and_no_cause_confidently():
    # LABELED SYNTHETIC: a 60 s stall recorded for 120 s — two drops cannot show a period or its absence
    tel, _ = simulate_telemetry("oscillation", hosts=1, gpus_per_host=2, duration_s=120.0, noise_pct=15.0)
    ranked = {h["id"]: h for h in diagnose(Bundle(telemetry=tel)).hypotheses}
    assert ranked["periodic_stall"]["score"] == pytest.approx(ranked["data_starvation"]["score"])
    assert ranked["periodic_stall"]["score"] < 0.5
    assert "too few drops" in ranked["periodic_stall"]["evidence"][0]
    assert "irregular" not in " ".join(ranked["data_starvation"]["evidence"])


def test_lone_periodic_drop_does_not_claim_waiting_peers_without_power_data():
    tel, _ = simulate_telemetry("straggler", noise_pct=25.0)
    tel = tel.drop(columns=[c for c in ("power_w", "sm_active") if c in tel])
    ev = " ".join(e for h in diagnose(Bundle(telemetry=tel)).hypotheses for e in h["evidence"])
    assert "peers wait" not in ev


def test_one_shared_drop_in_a_short_recording_is_not_healthy():
    """60 s of the 90%/45 s - 20%/15 s swing hold one drop: too few to call it a swing, but not health either; its
    two readings (a scheduled stall, the input pipeline) tie on the one observation, so the loss stays unexplained
    and names both, with the measurement that tells them apart."""
    frame, _ = simulate_telemetry("oscillation", duration_s=60.0, interval_s=1.0)
    d = diagnose(Bundle(telemetry=frame))
    ranked = d.hypotheses
    assert ranked[0]["id"] == "unexplained_slowdown"
    assert {h["id"] for h in ranked[1:3]} == {"periodic_stall", "data_starvation"}
    assert "drop together once from 90% → 20%" in ranked[1]["evidence"][0]
    assert "cannot tell periodic_stall" in d.verdict["sentence"] and "record at least three times longer" in \
        d.verdict["sentence"]
    assert next(h for h in ranked if h["id"] == "healthy")["score"] < 0.1
    steady, _ = simulate_telemetry("healthy", duration_s=60.0, interval_s=1.0)
    top = _top(Bundle(telemetry=steady))[0]
    assert top["id"] == "healthy" and any("over the 59 s recorded" in e for e in top["evidence"])


def test_a_drop_on_one_gpu_of_eight_is_not_a_shared_drop():
    import numpy as np

    from playbook.analysis.oscillation.fleet import analyze_oscillation

    frame, _ = simulate_telemetry("healthy", duration_s=120.0, interval_s=1.0, hosts=2, gpus_per_host=4)
    t = (frame["time"] - frame["time"].min()).dt.total_seconds().to_numpy()
    one = (frame["gpu"].to_numpy() == 0) & (frame["host"].to_numpy() == frame["host"].iloc[0]) & (t > 50) & (t < 65)
    frame.loc[one, "util_pct"] = 15.0
    assert analyze_oscillation(frame).single_drop is None
    frame.loc[(t > 50) & (t < 65), "util_pct"] = 15.0  # now all eight drop at once
    drop = analyze_oscillation(frame).single_drop
    assert drop["gpus"] == drop["of"] == 8 and np.isclose(drop["end_s"] - drop["start_s"], 15.0, atol=2.0)


def test_a_trace_finding_from_one_step_counts_for_less_than_one_seen_step_after_step():
    assert ranking.typical_share(1, 1) == 0.75 and ranking.typical_share(2, 2) == 0.875
    assert ranking.typical_share(5, 5) == pytest.approx(0.984, abs=1e-3) and ranking.typical_share(1, 5) < 0.5
    finding = {"hypothesis": "data_starvation", "level": "high", "evidence": "rank 0: waiting on the DataLoader"}
    one = traces.from_findings([{**finding, "steps": 1, "steps_at_level": 1}], "trace")[0].strength
    many = traces.from_findings([{**finding, "steps": 8, "steps_at_level": 8}], "trace")[0].strength
    bare = traces.from_findings([finding], "trace")[0].strength  # analyses that do not count steps keep the level's
    assert one == pytest.approx(0.85 * 0.75) and many > 0.84 and bare == 0.85
