"""Managed platforms' profiler statements (readers/platform_rules_text.py → analysis/platform_rules.py), on layouts written
apart from heldout54's files, from the tools' own output shapes: SageMaker's `rule_job_summary()` dicts one key a
line (CPUBottleneck, BatchSize, GPUMemoryIncrease), `NAME: STATUS` lines with model rules that must not count, a
configured rule name carrying a suffix, and DLProf's expert feedback whose advice names no data loading."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.platform_rules_text import PlatformRuleText, rule_kind


def _run(tmp_path, text: str, name: str = "rules.txt"):
    path = tmp_path / name
    path.write_text(text)
    return diagnose(read_paths([str(path)]))


def _scan(text: str) -> dict | None:
    scanner = PlatformRuleText()
    for line in text.splitlines():
        scanner.feed(line)
    return scanner.summary()


def _summary_dicts(*pairs: tuple[str, str]) -> str:
    # as a notebook prints it under the call (a file that opens with the `[` is taken for JSON: see SOURCES.md)
    return ">>> estimator.latest_training_job.rule_job_summary()\n[" + ",\n".join(
        f" {{'RuleConfigurationName': '{name}',\n  'RuleEvaluationJobArn': 'arn:aws:sagemaker:us-west-2:111122223333:"
        f"processing-job/job-{name.lower()[:12]}',\n  'RuleEvaluationStatus': '{status}',\n  'LastModifiedTime': "
        "datetime.datetime(2021, 3, 1, 10, 0, 0, tzinfo=tzlocal())}" for name, status in pairs) + "]\n"


def test_rule_job_summary_dicts_cpu_bottleneck_is_starvation(tmp_path):
    text = _summary_dicts(("ProfilerReport-1614592015", "IssuesFound"), ("CPUBottleneck", "IssuesFound"),
                          ("LowGPUUtilization", "IssuesFound"), ("GPUMemoryIncrease", "NoIssuesFound"))
    part = _scan(text)
    assert [(r["rule"], r["status"]) for r in part["rules"]] == [
        ("ProfilerReport", "IssuesFound"), ("CPUBottleneck", "IssuesFound"), ("LowGPUUtilization", "IssuesFound"),
        ("GPUMemoryIncrease", "NoIssuesFound")]
    d = _run(tmp_path, text)
    assert d.verdict["id"] == "data_starvation"
    assert not any(h["id"] == "memory_pressure" for h in d.hypotheses if h.get("score", 0) > 0.3)


def test_batch_size_rule_names_too_little_work_per_step(tmp_path):
    d = _run(tmp_path, _summary_dicts(("BatchSize", "IssuesFound"), ("LowGPUUtilization", "IssuesFound")))
    assert d.verdict["id"] == "launch_bound"
    assert "BatchSize" in " ".join(next(h for h in d.hypotheses if h["id"] == "launch_bound")["evidence"])


def test_model_rules_are_not_throughput_and_a_bare_low_gpu_rule_names_no_cause(tmp_path):
    text = ("* `Overfit: IssuesFound`\n* `VanishingGradient: IssuesFound`\n* `LowGPUUtilization: IssuesFound`\n"
            "* `StepOutlier: NoIssuesFound`\n")
    part = _scan(text)
    assert [r["rule"] for r in part["rules"]] == [None, None, "LowGPUUtilization", "StepOutlier"]
    d = _run(tmp_path, text)
    assert d.verdict["id"] == "insufficient_data"
    assert any("LowGPUUtilization" in w for w in d.warnings)


def test_only_model_rules_is_not_a_platform_statement():
    assert _scan("Overfit: IssuesFound\nLossNotDecreasing: NoIssuesFound\n") is None
    assert rule_kind("IOBottleneck-2b9c") == "IOBottleneck" and rule_kind("Overtraining") is None


def test_dlprof_advice_without_data_loading_is_a_caution_not_starvation(tmp_path):
    text = ("Expert Systems Feedback: 2 issues detected. Note that expert systems is still experimental as are all "
            "recommended changes\n\nProblem detected:\n  The GPU is underutilized: Only 31.5% of the profiled time is "
            "spent on GPU kernel operations\nRecommended change:\n  \"CPU\" has the highest (non-GPU) usage at 40.1%. "
            "Investigate the host-side\n work between kernels\n\nProblem detected:\n  GPU Memory is underutilized: "
            "Only 11% of GPU Memory is used\nRecommended change:\n  Try increasing batch size by 2x to increase data "
            "throughput\n")
    part = _scan(text)
    assert part["dlprof"][0]["gpu_share"] == 0.315 and part["dlprof"][0]["top"] == "CPU"
    assert "host-side work between kernels" in part["dlprof"][0]["advice"]
    d = _run(tmp_path, text)
    assert not any(h["id"] == "data_starvation" and h.get("score", 0) > 0.3 for h in d.hypotheses)
    assert any("31.5%" in w for w in d.warnings) and any("11% of GPU memory" in w for w in d.warnings)


def test_dlprof_dataloading_advice_on_one_line_is_starvation(tmp_path):
    text = ("Expert Systems Feedback: 1 issue detected.\nProblem detected:\n  The GPU is underutilized: Only 22% of "
            "the profiled time is spent on GPU kernel operations\nRecommended change:\n  \"Data Loader\" has the "
            "highest (non-GPU) usage at 48%. Investigate the dataloading pipeline.\n")
    d = _run(tmp_path, text)
    assert d.verdict["id"] == "data_starvation"
    assert "\"Data Loader\", took 48.0%" in " ".join(d.hypotheses[0]["evidence"])


def test_dataloader_rule_is_a_configuration_caution(tmp_path):
    d = _run(tmp_path, "Dataloader: IssuesFound\nCPUBottleneck: NoIssuesFound\nIOBottleneck: NoIssuesFound\n")
    assert d.verdict["id"] == "insufficient_data"
    assert any("Dataloader rule" in w and "configuration" in w for w in d.warnings)


def test_a_category_name_with_markup_is_not_read_and_nothing_reaches_html_raw(tmp_path):
    from playbook.report.triage import warnings_html

    text = ("Expert Systems Feedback: 1 issue detected.\n  The GPU is underutilized: Only 12.0% of the profiled time is "
            "spent on GPU kernel operations\n  \"<script>x</script>\" has the highest (non-GPU) usage at 70.0%. "
            "Investigate the kernels\n")
    html = warnings_html(_run(tmp_path, text).warnings, kind="analysis")
    assert "<script>" not in html and "12.0% of the profiled time" in html  # the category: words, spaces, / and -


def test_a_rule_job_summary_list_pasted_alone_is_read_not_taken_for_json(tmp_path):
    text = _summary_dicts(("IOBottleneck", "IssuesFound")).split("\n", 1)[1]  # the list without the call line
    assert text.startswith("[ {'RuleConfigurationName'")
    d = _run(tmp_path, text)
    assert d.verdict["id"] == "data_starvation"
    assert "IOBottleneck" in " ".join(d.hypotheses[0]["evidence"])


def test_a_json_array_is_still_not_text(tmp_path):
    from playbook.readers import lines

    assert lines.sniff("[{'RuleConfigurationName': 'IOBottleneck', 'RuleEvaluationStatus': 'IssuesFound'}]\n")
    assert not lines.sniff('[{"RuleConfigurationName": "IOBottleneck", "RuleEvaluationStatus": "IssuesFound"}]\n')
