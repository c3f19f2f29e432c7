"""A trainer's input queue as its own records print it (readers/input_pipeline_text.py → analysis/input_pipeline.py
`_queues`), on inputs written apart from heldout64's files, from the tools' print statements: tensorpack's monitor
lines (`QueueInput/queue_size`, the epoch's mean depth, and the older `input_queue_size`), Detectron's `json_stats` with
a full minibatch queue, a server's request queue (not an input), and empty-queue warnings with and without a running
count (a lone start-up warning finds nothing)."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.input_pipeline_text import InputPipelineText


def _run(tmp_path, text: str, name: str = "run.log"):
    path = tmp_path / name
    path.write_text(text)
    return diagnose(read_paths([str(path)]))


def _scan(text: str) -> dict | None:
    scanner = InputPipelineText()
    for line in text.splitlines():
        scanner.feed(line)
    return scanner.summary()


def _starved(d) -> dict | None:
    return next((h for h in d.hypotheses if h["id"] == "data_starvation"), None)


def _tensorpack_epochs(depths: list[str]) -> str:
    """tensorpack's per-epoch monitor block (callbacks/monitor.py ScalarPrinter), one epoch a depth."""
    out = []
    for i, q in enumerate(depths, start=1):
        out += [f"[0905 10:{i:02d}:00 @base.py:282] Epoch {i} (global_step {i * 500}) finished, time:61.2 sec.",
                f"[0905 10:{i:02d}:01 @monitor.py:459] GPUUtil/0: 9.81",
                f"[0905 10:{i:02d}:01 @monitor.py:459] QueueInput/queue_size: {q}",
                f"[0905 10:{i:02d}:01 @monitor.py:459] learning_rate: 0.1"]
    return "\n".join(out) + "\n"


def test_an_epoch_mean_near_zero_in_every_epoch_is_high_starvation(tmp_path):
    d = _run(tmp_path, _tensorpack_epochs(["2.32e-37", "0.0312", "1.5e-05"]))
    starved = _starved(d)
    assert d.verdict["id"] == "data_starvation"
    assert "QueueInput/queue_size" in " ".join(starved["evidence"]) and "3 of 3" in " ".join(starved["evidence"])


def test_a_full_queue_finds_no_starvation(tmp_path):
    d = _run(tmp_path, _tensorpack_epochs(["50", "49.8", "50"]))
    assert _starved(d) is None or _starved(d)["score"] < 0.3


def test_the_older_stats_key_and_json_records_are_read_and_the_record_stays_a_step():
    part = _scan('[0202 02:56:58 @stats.py:113] input_queue_size: 50\n'
                 'json_stats: {"eta": "1:02:03", "iter": 20, "loss": 1.2, "mb_qsize": 64, "mem": 3000, "time": 0.41}\n')
    assert [(q["key"], q["depth"]) for q in part["queue_depths"]] == [("input_queue_size", 50.0), ("mb_qsize", 64.0)]
    scanner = InputPipelineText()
    assert scanner.feed('json_stats: {"iter": 20, "mb_qsize": 0, "time": 0.41}') is False  # observed, not claimed


def test_a_request_queue_names_no_input():
    assert _scan("INFO server: queue_size=0 running=8 waiting=0\nINFO engine: request_queue_size: 0\n") is None


def test_a_minority_of_empty_records_finds_nothing(tmp_path):
    lines = [f'json_stats: {{"iter": {i * 20}, "loss": 0.9, "mb_qsize": {q}, "time": 0.52}}'
             for i, q in enumerate([0, 64, 63, 64, 62], start=1)]
    d = _run(tmp_path, "\n".join(lines) + "\n")
    assert _starved(d) is None or _starved(d)["score"] < 0.3


def test_warnings_without_a_count_are_counted_line_by_line(tmp_path):
    d = _run(tmp_path, "step 10 loss 2.1\nWARNING: data queue is empty\nstep 20 loss 2.0\n"
                       "WARNING: data queue is empty\nstep 30 loss 1.9\nWARNING: prefetch queue empty\n")
    starved = _starved(d)
    assert starved is not None and "2 batch requests past the first" in " ".join(starved["evidence"])


def test_a_lone_start_up_warning_finds_nothing():
    part = _scan("batch queue is empty (1 warnings)\n")
    assert part["queue_waits"] == [1]
    out: list[dict] = []
    from playbook.analysis import input_pipeline
    input_pipeline.findings("x.log", part, out, [], lambda s: None)
    assert out == []
