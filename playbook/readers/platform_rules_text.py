"""What managed-training platforms' own profilers state about a run, read wherever it appears in a text (a line
scanner fed by profiler_table.ProfilerTables; the findings: analysis/platform_rules.py).

- Amazon SageMaker Debugger / Profiler rule statuses: `estimator.latest_training_job.rule_job_summary()` (and
  `profiler_rule_job_summary`-style listings) give per rule `'RuleConfigurationName': 'NAME'` and
  `'RuleEvaluationStatus': 'STATUS'` (InProgress, NoIssuesFound, IssuesFound, Error, Stopped); pasted they are often
  `NAME: STATUS` lines (a list bullet, a prefix the paste glued on — `modelVanishingGradient` — allowed). The rule's
  name says what it checked: the profiler rules (smdebug rules/profiler: LowGPUUtilization, BatchSize, CPUBottleneck,
  IOBottleneck, Dataloader, GPUMemoryIncrease, StepOutlier, LoadBalancing, MaxInitializationTime,
  OverallSystemUsage, ProfilerReport) are about the run's resources; the others (VanishingGradient, Overfit, ...) about
  the model, never about throughput.
- NVIDIA DLProf's expert systems: `Expert Systems Feedback: N issues detected.` then `Problem detected:` and
  `Recommended change:` blocks, among them `The GPU is underutilized: Only X% of the profiled time is spent on GPU
  kernel operations` with `"CATEGORY" has the highest (non-GPU) usage at Y%. <advice>` (the advice names what to
  investigate, e.g. the dataloading pipeline), and `GPU Memory is underutilized: Only X% of GPU Memory is used` with
  `Try increasing batch size by Nx ...`.
"""

from __future__ import annotations

import re

STATUSES = ("NoIssuesFound", "IssuesFound", "Error", "InProgress", "Stopped")
# smdebug's profiler rules (rules/profiler): what each checked about the run's resources
PROFILER_RULES = ("LowGPUUtilization", "BatchSize", "CPUBottleneck", "IOBottleneck", "Dataloader",
                  "GPUMemoryIncrease", "StepOutlier", "LoadBalancing", "MaxInitializationTime", "OverallSystemUsage",
                  "ProfilerReport")
_STATUS = "|".join(STATUSES)
_LINE = re.compile(r"^\s*(?:[-*]\s+)?`?([A-Za-z][A-Za-z0-9_]{1,60})`?\s*[:=]\s*`?(" + _STATUS + r")`?\s*,?\s*$")
_DICT_NAME = re.compile(r"""['"]RuleConfigurationName['"]\s*:\s*['"]([A-Za-z0-9_-]{1,80})['"]""")
_DICT_STATUS = re.compile(r"""['"]RuleEvaluationStatus['"]\s*:\s*['"](""" + _STATUS + r""")['"]""")
_DLPROF_HEAD = re.compile(r"Expert Systems Feedback:\s*(\d{1,4}) issues? detected", re.IGNORECASE)
_DLPROF_GPU = re.compile(r"GPU is underutilized:\s*Only\s+(\d{1,3}(?:\.\d{1,3})?)\s?% of the profiled time is spent "
                         r"on GPU kernel", re.IGNORECASE)
_DLPROF_TOP = re.compile(r"""["']?([\w /-]{1,40}?)["']?\s+has the highest \(non-GPU\) usage at """
                         r"(\d{1,3}(?:\.\d{1,3})?)\s?%\.?\s*(.{0,200})", re.IGNORECASE)
_DLPROF_MEM = re.compile(r"GPU Memory is underutilized:\s*Only\s+(\d{1,3}(?:\.\d{1,3})?)\s?% of GPU Memory",
                         re.IGNORECASE)
MAX_ITEMS = 1000


def rule_kind(name: str) -> str | None:
    """The profiler rule a configured name is (`LowGPUUtilization`, `ProfilerReport-1612...`, a glued prefix), else
    None (a model rule, or not a rule)."""
    low = name.lower()
    return next((r for r in PROFILER_RULES if r.lower() in low), None)


class PlatformRuleText:
    """Line scanner: feed(body) True when the line is one of the statements the module docstring lists."""

    def __init__(self):
        self.rules: list[dict] = []  # {name, rule (the profiler rule, None: a model rule), status}
        self.dlprof: list[dict] = []  # {issues, gpu_share, top (category), top_share, advice, memory_share}
        self._pending: str | None = None  # a RuleConfigurationName awaiting its status
        self._advice_open = False  # the recommended change's advice may wrap onto the next line

    def feed(self, body: str) -> bool:
        if "Found" in body or "Error" in body or "InProgress" in body or "Stopped" in body \
                or "RuleConfigurationName" in body:
            if self._rules(body):
                return True
        return self._dlprof(body)

    def _add_rule(self, name: str, status: str) -> None:
        if len(self.rules) < MAX_ITEMS:
            self.rules.append({"name": name, "rule": rule_kind(name), "status": status})

    def _rules(self, body: str) -> bool:
        if m := _LINE.match(body):
            self._add_rule(m.group(1), m.group(2))
            return True
        name, status = _DICT_NAME.search(body), _DICT_STATUS.search(body)
        if name and status:  # one dict on one line
            self._add_rule(name.group(1), status.group(1))
            return True
        if name:
            self._pending = name.group(1)
            return True
        if status and self._pending:
            self._add_rule(self._pending, status.group(1))
            self._pending = None
            return True
        return False

    def _dlprof(self, body: str) -> bool:
        if m := _DLPROF_HEAD.search(body):
            if len(self.dlprof) < MAX_ITEMS:
                self.dlprof.append({"issues": int(m.group(1)), "gpu_share": None, "top": None, "top_share": None,
                                    "advice": "", "memory_share": None})
            self._advice_open = False
            return True
        if not self.dlprof:
            return False
        cur = self.dlprof[-1]
        if (m := _DLPROF_GPU.search(body)) and float(m.group(1)) <= 100:
            cur["gpu_share"] = float(m.group(1)) / 100
            return True
        if (m := _DLPROF_TOP.search(body)) and float(m.group(2)) <= 100:
            cur["top"], cur["top_share"], cur["advice"] = m.group(1).strip(), float(m.group(2)) / 100, m.group(3)
            self._advice_open = True
            return True
        if (m := _DLPROF_MEM.search(body)) and float(m.group(1)) <= 100:
            cur["memory_share"] = float(m.group(1)) / 100
            return True
        if self._advice_open:
            self._advice_open = False
            if body.strip() and not body.strip().endswith(":"):  # the advice wrapped (the next block starts `...:`)
                cur["advice"] = (cur["advice"] + " " + body.strip())[:400]
                return True
        return False

    def summary(self) -> dict | None:
        """{rules, dlprof} (DLProf feedback counted when it states a figure); None when the file printed neither."""
        dlprof = [d for d in self.dlprof if d["gpu_share"] is not None or d["memory_share"] is not None]
        if not (self.rules and any(r["rule"] for r in self.rules)) and not dlprof:
            return None
        return {"rules": self.rules, "dlprof": dlprof}
