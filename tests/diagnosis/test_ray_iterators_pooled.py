"""Ray Data stats holding several iterator breakdowns of one run (a Ray Train job's training epoch and its short
validation pass, each printed by `ds.stats()`): the share blocked is the run's, the blocked seconds over the iterators'
seconds, not the worst iterator's (analysis/input_pipeline.py). A 2 s validation pass blocked 1.5 s on its first batch
is 1.5 s of a 10-minute run, not starvation costing 75 % of it. LABELED SYNTHETIC stats in Ray 2.10+'s wording."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.readers import read_paths


def _iterator(overall: str, init: str, blocked: str, user: str) -> str:
    return ("Dataset iterator time breakdown:\n"
            f"* Total time overall: {overall}\n"
            f"   * Total time in Ray Data iterator initialization code: {init}\n"
            f"   * Total time user thread is blocked by Ray Data iter_batches: {blocked}\n"
            f"   * Total execution time for user thread: {user}\n\n")


SPLIT = ("Operator 1 ReadParquet->MapBatches(normalize): 48 tasks executed, 48 blocks produced in 585.0s\n"
         "* Remote wall time: 1.1s min, 8.7s max, 3.9s mean, 187.2s total\n\n"
         "Streaming split coordinator overhead time: 88.0ms\n\n")


def _diagnose(tmp_path, text: str):
    path = tmp_path / "ray_train_stats.txt"
    path.write_text(text)
    return diagnose(read_paths([str(path)]))


def test_a_short_validation_pass_blocked_on_its_first_batch_is_not_the_runs_starvation(tmp_path):
    d = _diagnose(tmp_path, SPLIT + _iterator("10.02min", "1.1s", "12.4s", "9.8min")
                  + _iterator("2.0s", "80.0ms", "1.5s", "400.0ms"))
    assert d.verdict["id"] != "data_starvation", d.verdict.get("sentence")
    assert not [h for h in d.hypotheses if h["id"] == "data_starvation" and h.get("score", 0) >= 0.5]


def test_iterators_blocked_alike_still_find_the_starvation_at_their_pooled_share(tmp_path):
    d = _diagnose(tmp_path, SPLIT + _iterator("100.0s", "1.0s", "40.0s", "55.0s")
                  + _iterator("60.0s", "1.0s", "20.0s", "35.0s"))
    assert d.verdict["id"] == "data_starvation"
    evidence = " ".join(d.hypotheses[0]["evidence"])
    assert "38%" in evidence and "2 iterators" in evidence, evidence
