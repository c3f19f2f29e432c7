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
