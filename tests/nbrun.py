"""Execute a notebook through papermill with small parameters and return what it recorded."""

from __future__ import annotations

import os
from pathlib import Path

from playbook.report.record import collect

ROOT = Path(__file__).resolve().parents[1]


def run_notebook(name: str, tmp_path: Path, timeout_s: int = 240, **parameters) -> dict:
    """Run notebooks/<name> headlessly (cwd = repo root) and return collect() of the executed copy."""
    import papermill as pm

    out = tmp_path / Path(name).name
    pm.execute_notebook(
        str(ROOT / "notebooks" / name), str(out), parameters=parameters, cwd=str(ROOT),
        kernel_name="python3", progress_bar=False, execution_timeout=timeout_s,
        request_save_on_cell_execute=False,
    )
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return collect(out)
