"""Ray Data's newer iterator breakdown states the wait for the first batch (the pipeline's warm-up, part of the
blocked time): a training loop that waited only for its first batch was not starved in its steady state (written
here from ray/data/_internal/stats.py IterStatsSummary.to_string, apart from heldout49's files)."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

RAY = """Operator 1 ReadParquet->MapBatches(preprocess): 64 tasks executed, 64 blocks produced in 30.2s
* Remote wall time: 1.2s min, 2.1s max, 1.5s mean, 96.0s total

Operator 2 split(4, equal=True): 4 tasks executed, 64 blocks produced in 30.5s

Dataset iterator time breakdown:
* Total time overall: 120.5s
    * Total time in Ray Data iterator initialization code: 12.0ms
    * Total time user thread is blocked by Ray Data iter_batches: {blocked}
    * Total time spent waiting for the first batch after starting iteration: {first}
    * Total execution time for user thread: {user}
* Batch iteration time breakdown (summed across prefetch threads):
    * In ray.get(): 1.0ms min, 5.0ms max, 2.0ms avg, 100.0ms total
Streaming split coordinator overhead time: 1.2s
"""


def _run(tmp_path, text: str):
    path = tmp_path / "ray_stats.txt"
    path.write_text(text)
    return diagnose(read_paths([str(path)]))


def test_a_wait_for_the_first_batch_alone_is_warm_up_not_starvation(tmp_path):
    d = _run(tmp_path, RAY.format(blocked="25.2s", first="24.1s", user="95.2s"))
    assert d.verdict["id"] != "data_starvation"
    assert not any(h["id"] == "data_starvation" and h.get("score", 0) >= 0.5 for h in d.hypotheses)
    assert any("first batch" in w for w in d.warnings)  # the warm-up is said, not dropped


def test_a_steady_wait_past_the_first_batch_is_still_starvation(tmp_path):
    d = _run(tmp_path, RAY.format(blocked="45.2s", first="2.1s", user="75.2s"))
    assert d.verdict["id"] == "data_starvation"
    assert "first batch" in " ".join(d.hypotheses[0]["evidence"])
