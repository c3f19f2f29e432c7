"""Input-pipeline tools' own statements (readers/input_pipeline_text.py → analysis/input_pipeline.py), on wordings
written apart from heldout49's files, from the tools' sources: TensorFlow Profiler's MODERATELY / NOT / numbered TPU
verdicts, PyTorch's DataLoader warning with the `cpuset` clause, Lightning 1.x's and 2.x's few-workers warnings, and
Ray Data's iterator breakdown in its 2.4-2.9 wording and in a Ray Train ingest (split) shape."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.input_pipeline_text import InputPipelineText, ray_seconds


def _run(tmp_path, text: str, name: str = "run.log"):
    path = tmp_path / name
    path.write_text(text)
    return diagnose(read_paths([str(path)]))


def _scan(text: str) -> dict | None:
    scanner = InputPipelineText()
    for line in text.splitlines():
        scanner.feed(line)
    return scanner.summary()


def test_a_moderate_verdict_is_moderate_starvation_at_its_share(tmp_path):
    d = _run(tmp_path, "Your program is MODERATELY input-bound because 12.3% of the total step time sampled is "
                       "waiting for input. Therefore, you would need to reduce both the input time and other time.\n")
    starved = next(h for h in d.hypotheses if h["id"] == "data_starvation")  # moderate: below the verdict alone
    assert "MODERATELY input-bound, 12.3%" in " ".join(starved["evidence"])
    assert d.verdict["id"] in ("insufficient_data", "data_starvation")


def test_a_not_input_bound_verdict_finds_no_starvation(tmp_path):
    d = _run(tmp_path, "Your program is NOT input-bound because only 0.1% of the total step time sampled is waiting "
                       "for input. Therefore, you should focus on reducing other time.\n")
    assert d.verdict["id"] != "data_starvation"
    assert not any(h["id"] == "data_starvation" and h.get("score", 0) >= 0.5 for h in d.hypotheses)


def test_numbered_tpu_verdicts_in_a_log_keep_the_worst_and_say_how_many():
    part = _scan("2020-05-12 10:00:01.123 I overview: (1) Your program is HIGHLY input-bound because 45.0% of the "
                 "total step time sampled is waiting for input. Therefore, you should first focus on reducing the "
                 "input time.\n(2) 3.2 % of the total step time sampled is spent on 'All Others' time.\n"
                 "later: Your program is MODERATELY input-bound because 7.5% of the total step time sampled is "
                 "waiting for input.\n")
    assert [v["input_share"] for v in part["tf"]] == [0.45, 0.075]
    assert part["tf"][0]["others_share"] == pytest.approx(0.032)


def test_a_share_beyond_all_is_not_a_verdict():
    assert _scan("Your program is HIGHLY input-bound because 999.9% of the total step time sampled is waiting for "
                 "input.\n") is None


def test_the_dataloader_warning_with_the_cpuset_clause_is_a_caution_not_a_finding(tmp_path):
    d = _run(tmp_path, "site-packages/torch/utils/data/dataloader.py:560: UserWarning: \nThis DataLoader will create "
                       "12 worker processes in total. Our suggested max number of worker in current system is 8 "
                       "(`cpuset` is not taken into account), which is smaller than what this DataLoader is going to "
                       "create. Please be aware that excessive worker creation might get DataLoader running slow or "
                       "even freeze, lower the worker number to avoid potential slowness/freeze if necessary.\n")
    assert d.verdict["id"] == "insufficient_data"
    assert any("12 worker processes" in w and "8 CPUs" in w for w in d.warnings)


@pytest.mark.parametrize(("line", "loader", "suggested"), [
    ("pytorch_lightning/utilities/distributed.py:37: UserWarning: The dataloader, val dataloader 0, does not have "
     "many workers which may be a bottleneck. Consider increasing the value of the `num_workers` argument` (try 32 "
     "which is the number of cpus on this machine) in the `DataLoader` init to improve performance.",
     "val dataloader 0", 32),
    ("lightning/pytorch/trainer/connectors/data_connector.py:424: The 'train_dataloader' does not have many workers "
     "which may be a bottleneck. Consider increasing the value of the `num_workers` argument` to `num_workers=15` in "
     "the `DataLoader` to improve performance.", "train_dataloader", 15),
])
def test_lightnings_warning_in_both_wordings(tmp_path, line, loader, suggested):
    assert _scan(line)["lightning"] == [{"loader": loader, "suggested": suggested}]
    d = _run(tmp_path, line + "\n")
    assert d.verdict["id"] == "insufficient_data" and any(loader in w for w in d.warnings)


def test_ray_2_4_wording_with_little_blocked_time_finds_nothing(tmp_path):
    text = ("Dataset iterator time breakdown:\n* Total time user code is blocked: 24.0ms\n"
            "* Total time in user code: 33.3ms\n* Total time overall: 79.38s\n")
    assert _scan(text)["ray_iterators"] == [{"blocked_s": 0.024, "user_s": pytest.approx(0.0333), "overall_s": 79.38}]
    d = _run(tmp_path, text)
    assert d.verdict["id"] == "insufficient_data" and not any("Ray Data" in w for w in d.warnings)


RAY_TRAIN_INGEST = """Operator 1 ReadParquet->MapBatches(decode): 64 tasks executed, 64 blocks produced in 31.2s
* Remote wall time: 1.1s min, 4.2s max, 2.0s mean, 128.0s total
Operator 2 split(4, equal=True):
Dataset iterator time breakdown:
* Total time overall: 40.0s
    * Total time in Ray Data iterator initialization code: 1.2s
    * Total time user thread is blocked by Ray Data iter_batches: 22.0s
    * Total execution time for user thread: 16.5s
* Batch iteration time breakdown (summed across prefetch threads):
    * In ray.get(): 2.1ms min, 1.9s max, 180.5ms avg, 20.3s total
Streaming split coordinator overhead time: 3.1ms
"""


def test_ray_train_ingest_blocked_time_is_starvation(tmp_path):
    d = _run(tmp_path, RAY_TRAIN_INGEST)
    top = d.hypotheses[0]
    assert top["id"] == "data_starvation" and "55%" in " ".join(top["evidence"])
    assert "ReadParquet->MapBatches(decode)" in " ".join(top["evidence"])


def test_ray_without_a_split_is_starvation_only_when_the_loop_works(tmp_path):
    working = RAY_TRAIN_INGEST.replace("Operator 2 split(4, equal=True):\n", "").replace(
        "Streaming split coordinator overhead time: 3.1ms\n", "")
    assert _run(tmp_path, working).verdict["id"] == "data_starvation"  # the loop's own work is 41% of the time
    idle = working.replace("Total execution time for user thread: 16.5s", "Total execution time for user thread: 0.4s")
    d = _run(tmp_path, idle, "idle.log")
    assert d.verdict["id"] == "insufficient_data" and any("pipeline's own execution" in w for w in d.warnings)


def test_ray_seconds():
    assert ray_seconds("38.53s") == 38.53 and ray_seconds("24.0ms") == 0.024 and ray_seconds("3.6us") == 3.6e-6
    assert ray_seconds("T") is None and ray_seconds("12 s") is None


def test_a_split_says_the_loop_trains_even_when_it_barely_runs(tmp_path):
    starved = RAY_TRAIN_INGEST.replace("Total execution time for user thread: 16.5s",
                                       "Total execution time for user thread: 0.4s")
    assert _run(tmp_path, starved).verdict["id"] == "data_starvation"


def test_an_operator_name_reaches_html_escaped(tmp_path):
    from playbook.report.triage import warnings_html

    text = RAY_TRAIN_INGEST.replace("Operator 2 split(4, equal=True):\n", "").replace(
        "Streaming split coordinator overhead time: 3.1ms\n", "").replace(
        "Total execution time for user thread: 16.5s", "Total execution time for user thread: 0.4s").replace(
        "ReadParquet->MapBatches(decode)", "MapBatches(<script>x</script>)")
    html = warnings_html(_run(tmp_path, text).warnings, kind="analysis")
    assert "&lt;script&gt;" in html and "<script>" not in html
