"""readers/input_pipeline_text.py is offered every line of every text log: an ordinary training line (digits,
`not`) costs no TensorFlow-verdict search (those searches were ~7% of a plain log's scan), while the verdicts still
read in either case."""

from __future__ import annotations

import pytest

from playbook.readers import input_pipeline_text
from playbook.readers.input_pipeline_text import InputPipelineText


class _Counting:
    def __init__(self, pattern):
        self.pattern, self.calls = pattern, 0

    def search(self, text):
        self.calls += 1
        return self.pattern.search(text)


def test_an_ordinary_line_costs_no_tf_search(monkeypatch):
    counters = {name: _Counting(getattr(input_pipeline_text, name)) for name in ("_TF_INPUT", "_TF_OTHERS")}
    for name, counter in counters.items():
        monkeypatch.setattr(input_pipeline_text, name, counter)
    scanner = InputPipelineText()
    for i in range(50):
        scanner.feed(f"2024-05-01 08:00:{i:02d},123 - INFO - step {i} | loss 2.{i:03d} | 12.5 % of budget | not bad")
    assert {name: c.calls for name, c in counters.items()} == {"_TF_INPUT": 0, "_TF_OTHERS": 0}


@pytest.mark.parametrize("line", [
    "Your program is HIGHLY input-bound because 77.4% of the total step time sampled is waiting for input.",
    "your program is moderately input-bound because 6.1 % OF THE TOTAL STEP TIME SAMPLED IS WAITING FOR INPUT",
])
def test_a_verdict_still_reads(line):
    scanner = InputPipelineText()
    assert scanner.feed(line)
    assert scanner.tf[0]["input_share"] in (pytest.approx(0.774), pytest.approx(0.061))


# torch/utils/data/dataloader.py _create_warning_msg where cpu_count gave nothing (num_worker_suggest None)
NO_SUGGESTION = ("/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py:557: UserWarning: This "
                 "DataLoader will create 16 worker processes in total. DataLoader is not able to compute a suggested "
                 "max number of worker in current system. Please be aware that excessive worker creation might get "
                 "DataLoader running slow or even freeze, lower the worker number to avoid potential slowness/freeze "
                 "if necessary.\n")


def test_the_dataloader_warning_without_a_suggestion_is_read_and_cautioned(tmp_path):
    from playbook.analysis import inventory
    from playbook.diagnosis import diagnose
    from playbook.readers import read_paths

    scanner = InputPipelineText()
    assert scanner.feed(NO_SUGGESTION.strip())
    assert scanner.torch_workers == [{"workers": 16, "suggested": None}]
    assert "None" not in " ".join(inventory._other_profilers({"input_pipeline": scanner.summary()}))

    path = tmp_path / "run.log"
    path.write_text(NO_SUGGESTION)
    d = diagnose(read_paths([str(path)]))
    said = [w for w in d.warnings if "DataLoader warned" in w]
    assert said and "16 worker processes" in said[0] and "None" not in said[0]
