"""Batch reports: execute notebooks headlessly with papermill into one folder per run.

    from playbook.report.runner import plan, run_batch
    jobs = plan(paths=["logs/"], labs=["all"], quick=True)
    summary = run_batch(jobs, "reports/my-run")        # -> summary.json, index.html, <nb>.ipynb, <nb>.html

A report folder holds each executed notebook, its HTML export without input cells, `summary.json`,
`index.html` and the docs (field guide, runbook) as HTML under `guide/`, which the pages link to. A notebook that fails does not stop the others: papermill keeps the partial notebook, which is
exported like the rest, and the error's name and message go into summary.json and the index.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from playbook.core.errors import PlaybookError
from playbook.report import catalog
from playbook.report.scrapbook import collect

SUMMARY_SCHEMA_VERSION = 1
HEADLESS_ENV = "PLAYBOOK_HEADLESS"  # set for the kernels of a batch run: widgets render nothing there
TRIAGE_INPUTS = "inputs"  # the triage notebook's parameter holding the input paths
DEFAULT_TIMEOUT_S = 600
KERNEL_LOG = "kernels.log"  # what the kernels wrote to their stderr outside the notebooks
_KERNEL_ARGS = ["--IPKernelApp.log_level=ERROR"]  # no "running over TCP without encryption" line per kernel


@dataclass
class Job:
    """One notebook to execute: its file, the parameters papermill injects, and its output file stem."""

    notebook: str
    parameters: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    title: str = ""

    def __post_init__(self):
        self.name = self.name or Path(self.notebook).stem
        self.title = self.title or self.name


# What `playbook report` (and `make demo`) triages without PATHs: the strongest embedded sample first (labelled
# synthetic, 64 GPUs swinging 90% / 20%), then the real 8-GPU dflash poll (headerless, undated, polled every 2 s).
DEMO_SAMPLES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("synthetic-64gpu", {}),
    ("dflash-8gpu", {"fields": "index,utilization.gpu,memory.used", "interval_s": 2.0}),
)


def plan(paths: list[str] | None = None, labs: list[str] | None = None, quick: bool = False,
         specs: list[catalog.NotebookSpec] | None = None, fields: str | None = None,
         interval_s: float | None = None, tz: str | None = None, demo: bool = False,
         root: str | Path | None = None) -> list[Job]:
    """The jobs of a report: the triage notebook on `paths` (default: its own default input; with `demo`, one
    triage per DEMO_SAMPLES, as `playbook report` without PATHs runs it), plus
    the notebooks named in `labs` ("all" = every notebook), in notebook order; `quick` applies quick parameters.
    `fields` / `interval_s` / `tz` describe headerless, timestamp-less or local-time `paths` (as `playbook
    diagnose` takes them). `root`: the repository root (default catalog.repo_root()), holding notebooks/ and
    data/samples/."""
    root = Path(root) if root is not None else catalog.repo_root()
    samples = root / "data" / "samples"
    specs = catalog.discover(root / "notebooks") if specs is None else specs
    chosen: dict[str, catalog.NotebookSpec] = {}
    triage = catalog.find(specs, catalog.TRIAGE)
    if triage is None:
        raise PlaybookError(f"no triage notebook ({catalog.TRIAGE}.ipynb) in {root / 'notebooks'}")
    chosen[triage.name] = triage
    for name in labs or []:
        if name == "all":
            chosen.update({s.name: s for s in specs})
            continue
        spec = catalog.find(specs, name)
        if spec is None:
            known = ", ".join(s.name for s in specs)
            raise PlaybookError(f"no notebook called {name!r}; known: {known} (or 'all')")
        chosen[spec.name] = spec
    jobs = []
    for spec in sorted(chosen.values(), key=lambda s: s.name):
        params = spec.quick_parameters() if quick else {}
        if spec.name == triage.name and paths:
            # the user's inputs: their own fields/interval/zone (or none, so the readers detect and warn)
            from playbook.readers import check_tz

            params.update({TRIAGE_INPUTS: [str(_existing(p)) for p in paths], "fields": fields or "",
                           "interval_s": float(interval_s or 0.0), "tz": check_tz(tz)})
        elif spec.name == triage.name and demo and samples.is_dir():
            for sample, extra in DEMO_SAMPLES:
                if (samples / sample).exists():
                    inputs = [str((samples / sample).relative_to(root))]
                    jobs.append(Job(str(spec.path), {**params, TRIAGE_INPUTS: inputs, **extra},
                                    f"{spec.name}-{sample}", f"{spec.title} — {sample}"))
            if any(j.notebook == str(spec.path) for j in jobs):
                continue
        jobs.append(Job(str(spec.path), params, spec.name, spec.title))
    return jobs


def _existing(path: str) -> Path:
    from playbook.readers import check_input  # a FIFO or device is refused here, not inside the notebook

    return check_input(Path(path).expanduser()).resolve()


def run_id(short_name: str, now: datetime | None = None) -> str:
    """`<UTC timestamp>-<short name>`, e.g. 20250101T120000Z-triage (name reduced to [a-z0-9-], ≤ 24 chars)."""
    now = now or datetime.now(timezone.utc)
    slug = re.sub(r"[^a-z0-9]+", "-", short_name.lower()).strip("-")[:24].strip("-") or "report"
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{slug}"


@contextmanager
def _stderr_to(path: Path):
    """Point file descriptor 2 at `path` (appending) while kernels start and run, so the C-level chatter of the
    labs (profiler start/stop lines, kernel log lines) lands in the report's kernels.log instead of the terminal;
    Python-level output inside a kernel is captured into the notebook either way."""
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(log, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


@contextmanager
def _headless_env():
    old = os.environ.get(HEADLESS_ENV)
    os.environ[HEADLESS_ENV] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(HEADLESS_ENV, None)
        else:
            os.environ[HEADLESS_ENV] = old


def execute(job: Job, out_dir: str | Path, timeout_s: float = DEFAULT_TIMEOUT_S,
            cwd: str | Path | None = None) -> dict[str, Any]:
    """Execute one job with papermill into out_dir, export its HTML, and return its summary.json entry. The
    kernel starts in `cwd`, the repository root (default catalog.repo_root()), where inputs are relative to."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    out_dir = Path(out_dir)
    cwd = Path(cwd) if cwd is not None else catalog.repo_root()
    out = out_dir / f"{job.name}.ipynb"
    entry: dict[str, Any] = {
        "notebook": job.name, "title": job.title, "source": _display_path(job.notebook, cwd),
        "parameters": job.parameters, "status": "ok", "error": None, "verdict": None, "records": {},
        "duration_s": 0.0, "cells": [], "ipynb": None, "html": None,
    }
    logging.getLogger("papermill").setLevel(logging.WARNING)
    t0 = time.perf_counter()
    try:
        with _headless_env(), _stderr_to(out_dir / KERNEL_LOG):
            pm.execute_notebook(job.notebook, str(out), parameters=job.parameters, cwd=str(cwd),
                                kernel_name="python3", progress_bar=False, log_output=False,
                                execution_timeout=int(timeout_s), extra_arguments=_KERNEL_ARGS)
    except PapermillExecutionError as exc:
        entry["status"] = "error"
        entry["error"] = {"name": exc.ename, "message": str(exc.evalue), "cell": exc.exec_count}
    except Exception as exc:  # kernel died, timeout, unreadable notebook: still a result, never a crash
        entry["status"] = "error"
        entry["error"] = {"name": type(exc).__name__, "message": str(exc).strip() or repr(exc), "cell": None}
    entry["duration_s"] = round(time.perf_counter() - t0, 3)
    if out.is_file():
        _fill_from_notebook(entry, out)
        from playbook.report.html import export_html

        try:
            export_html(out, out_dir / f"{job.name}.html", entry=entry, source_dir=Path(job.notebook).parent)
            entry["html"] = f"{job.name}.html"
        except Exception as exc:  # an export problem must not lose the executed notebook
            entry["html_error"] = f"{type(exc).__name__}: {exc}"
    return entry


def _display_path(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _fill_from_notebook(entry: dict[str, Any], ipynb: Path) -> None:
    """Recorded values, verdict and per-cell durations from an executed (possibly partial) notebook."""
    nb = json.loads(ipynb.read_text(encoding="utf-8"))
    entry["ipynb"] = ipynb.name
    records = collect(nb)
    entry["verdict"] = records.pop("verdict", None)
    head = records.get("headline")
    if isinstance(head, dict) and head.get("figure_png"):
        import base64
        import binascii

        png = ipynb.with_suffix(".key.png")
        try:
            png.write_bytes(base64.b64decode(head.pop("figure_png"), validate=True))
            head["figure"] = png.name
        except (binascii.Error, ValueError):
            head.pop("figure", None)
    entry["records"] = records
    cells = []
    for index, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        meta = (cell.get("metadata") or {}).get("papermill") or {}
        first = next((ln for ln in catalog.cell_source(cell).splitlines() if ln.strip()), "")
        cells.append({"index": index, "execution_count": cell.get("execution_count"),
                      "duration_s": meta.get("duration"), "status": meta.get("status"), "first_line": first[:80]})
    entry["cells"] = cells


class _PlainProgress:
    """Progress off a terminal (a log file, CI): one plain line per finished notebook on stderr, where a
    progress bar's redraws would pile up as one long line; nothing when `quiet`."""

    def __init__(self, total: int, quiet: bool = False):
        self.total, self.done, self.name, self.quiet = total, 0, "", quiet

    def set_postfix_str(self, name: str) -> None:
        self.name = name

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.quiet:
            print(f"notebooks: {self.done}/{self.total} done ({self.name})", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool):
    """A tqdm bar on a terminal, plain lines elsewhere, nothing when not `enabled`."""
    if enabled and sys.stderr.isatty():
        from tqdm.auto import tqdm

        return tqdm(total=total, desc="notebooks", unit="nb", dynamic_ncols=True)
    return _PlainProgress(total, quiet=not enabled)


def _execute_packed(job: dict, out_dir: str, timeout_s: float, cwd: str) -> dict[str, Any]:
    return execute(Job(**job), out_dir, timeout_s, cwd)


def run_batch(jobs: list[Job], out_dir: str | Path, parameters: dict[str, Any] | None = None,
              run_name: str | None = None, workers: int = 1, timeout_s: float = DEFAULT_TIMEOUT_S,
              progress: bool = True, cwd: str | Path | None = None) -> dict[str, Any]:
    """Execute `jobs` into out_dir (one at a time, or `workers` kernels at once) and write summary.json and
    index.html there. Returns the summary. Notebook failures are recorded, never raised. `cwd`: the repository
    root the kernels start in (default catalog.repo_root())."""
    from playbook import __version__
    from playbook.report.html import link_siblings, write_index

    out_dir = Path(out_dir)
    cwd = Path(cwd) if cwd is not None else catalog.repo_root()
    out_dir.mkdir(parents=True, exist_ok=True)
    from playbook.report.guide.pages import bundle_docs

    bundle_docs(out_dir, cwd, [j.name for j in jobs])  # first: the pages link to these copies, not the checkout
    created = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    entries: dict[str, dict[str, Any]] = {}
    bar = _progress(len(jobs), progress)
    try:
        if workers <= 1 or len(jobs) <= 1:
            for job in jobs:
                bar.set_postfix_str(job.name)
                entries[job.name] = execute(job, out_dir, timeout_s, cwd)
                bar.update(1)
        else:
            import multiprocessing

            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                futures = {pool.submit(_execute_packed, asdict(j), str(out_dir), timeout_s, str(cwd)): j
                           for j in jobs}
                for fut in as_completed(futures):
                    job = futures[fut]
                    entries[job.name] = fut.result()
                    bar.set_postfix_str(job.name)
                    bar.update(1)
    finally:
        bar.close()
    notebooks = [entries[j.name] for j in jobs if j.name in entries]
    counts = {"ok": 0, "error": 0, "confirmed": 0, "refuted": 0, "inconclusive": 0}
    for e in notebooks:
        counts[e["status"]] += 1
        status = (e.get("verdict") or {}).get("status")
        if status in counts:
            counts[status] += 1
    summary = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "run_id": run_name or out_dir.name,
        "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "playbook_version": __version__,
        "parameters": parameters or {},
        "duration_s": round(time.perf_counter() - t0, 3),
        "counts": counts,
        "notebooks": notebooks,
    }
    link_siblings(out_dir, [e["notebook"] for e in notebooks if e.get("html")])
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    write_index(summary, out_dir, root=cwd)
    return summary
