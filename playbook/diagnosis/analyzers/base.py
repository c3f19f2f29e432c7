"""The analyzer contract: a class with a `name` and `analyze(run)`, which reads the inputs (and what earlier
analyzers found) from the shared `Run` and adds Findings to it; `register` appends an analyzer to REGISTRY, the
explicit, ordered list `diagnose` runs (papermill's engine registry reads the same way)."""

from __future__ import annotations

from playbook.diagnosis.context import Run


class Analyzer:
    """One analysis of a diagnosis: `name` (for warnings) and `analyze(run)`, which adds Findings to `run`."""

    name = "analyzer"

    def analyze(self, run: Run) -> None:
        raise NotImplementedError


REGISTRY: list[Analyzer] = []


def register(analyzer):
    """Append `analyzer` (a class, instantiated here, or an instance) to REGISTRY; returns it (a decorator)."""
    REGISTRY.append(analyzer() if isinstance(analyzer, type) else analyzer)
    return analyzer


def run_all(run: Run) -> None:
    """Run every registered analyzer in order; one that fails on odd input leaves a warning, not a stop."""
    for analyzer in REGISTRY:
        try:
            analyzer.analyze(run)
        except Exception as exc:  # one failing analysis must not stop the diagnosis
            run.warnings.append(f"{analyzer.name} analysis skipped: {type(exc).__name__}: {exc}"[:300])
