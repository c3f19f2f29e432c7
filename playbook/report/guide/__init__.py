"""Field-guide figures: rerun the labs with their quick parameters and regenerate the numbers in docs/field-guide.md.

What it does (`--outputs`: step 2's quoted commands and excerpts only, under a minute; no lab runs)
    1. Runs every notebook with its quick parameters through the batch runner (`playbook report --labs all
       --quick`, playbook.report.runner) into reports/<UTC time>-guide/, and writes machine.json beside its
       summary.json (date, CPU count, torch version, GPU or not).
    2. Diagnoses labelled SYNTHETIC telemetry and step logs with known answers (playbook.labs.synthetic), one per failure
       signature; runs the commands the pages quote (OUTPUT_COMMANDS: `playbook diagnose` on the two embedded
       samples and on the NCCL socket-fallback fixture, `playbook watch --for 30s` on a fake NVML once this build
       has `watch`; BENCH_COMMANDS: `python benchmarks/probe_overhead.py
       --repeats 3`) and cuts the fixture excerpts (EXCERPTS: NCCL transport lines by grep, an `nvidia-smi -q -d
       PERFORMANCE` dump), keeping their output exactly as printed.
    3. Writes Markdown tables, JSON and small PNG plots into OUT_DIR, and rewrites the generated regions of the
       guide (between `<!-- generated:NAME -->` and `<!-- /generated -->`) and the quoted regions of
       docs/runbook.md and README.md, each stamped with the run's date and machine, so the numbers in the pages are
       the last run's, never typed by hand.

The exact command
    python -m playbook.report.guide docs/figures                      # what `make guide-figures` runs (15-40 min on 2 cores)
    python -m playbook.report.guide --outputs docs/figures            # only the quoted command outputs (< 1 min): rerun
                                                               # after a change to what `playbook diagnose` prints
    python -m playbook.report.guide docs/figures --summary reports/20260101T120000Z-guide/summary.json
                                                               # reuse a finished batch: no lab reruns (seconds)
    python -m playbook.report.guide /tmp/fig --labs 10 13 --guide /tmp/guide.md   # two labs only, into a scratch copy

How to read the result
    OUT_DIR/lab-results.md is the table the guide embeds: one row per notebook with the batch status (ok / failed
    / not run), the verdict the notebook recorded (confirmed / refuted / inconclusive) and its key figures.
    A failed notebook keeps its error in the table (name, message, cell) and in the report folder, whose
    index.html shows the partial notebook. Exit status: 0 when every notebook ran, 1 when one failed (the guide
    and figures are still written), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from dataclasses import asdict
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from playbook.core.errors import InputError, PlaybookError
from playbook.report import catalog
from playbook.report.guide.figures import (
    PLOTS,
    plot_overheads,
    plot_serving,
    save_png,
    signature_rows,
    signatures_table,
)
from playbook.report.guide.lab_results import LabRow, lab_rows, lab_section, plot_speedups, results_table
from playbook.report.guide.quotes import EXCERPTS, FAST_QUOTES, QUOTES, command_outputs, shown

GUIDE_PAGE = "docs/field-guide.md"  # relative to the repository root (catalog.repo_root, resolved once in main)
OTHER_PAGES = ("docs/runbook.md", "README.md")  # other pages quoting generated output
MACHINE_FILE = "machine.json"
COMMAND = "python -m playbook.report.guide docs/figures"
OUTPUTS_COMMAND = "python -m playbook.report.guide --outputs docs/figures"

REGION = re.compile(r"(<!-- generated:(?P<name>[a-z0-9_.-]+) -->\n)(?P<body>.*?)(<!-- /generated -->)", re.DOTALL)

# ---------------------------------------------------------------- machine and batch

def machine_stamp(gpu_probe: bool = True) -> dict[str, Any]:
    """Where the figures were measured: UTC date, CPU count, Python, torch version, GPU name or None.

    gpu_probe=False skips importing torch (the torch version then comes from the package metadata, GPU unknown)."""
    stamp: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(terse=True),
        "torch": None, "gpu": None, "gpu_checked": False,
    }
    try:
        stamp["torch"] = metadata.version("torch")
    except metadata.PackageNotFoundError:
        pass
    if gpu_probe:
        try:
            import torch

            stamp["torch"] = torch.__version__
            stamp["gpu_checked"] = True
            if torch.cuda.is_available():
                stamp["gpu"] = f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}"
        except Exception:  # no torch, or a broken CUDA install: the stamp says "not checked"
            pass
    return stamp


def machine_text(machine: dict[str, Any]) -> str:
    """One line: "2 CPUs, torch 2.13.0+cpu, no GPU" (or the GPU's name; "GPU not checked")."""
    gpu = machine.get("gpu") or ("no GPU" if machine.get("gpu_checked") else "GPU not checked")
    return f"{machine.get('cpus', '?')} CPUs, torch {machine.get('torch') or '?'}, {gpu}"


def run_labs(labs: list[str], report_dir: Path, root: Path, jobs: int = 1, timeout_s: float = 600,
             progress: bool = True) -> dict[str, Any]:
    """Execute the notebooks `labs` ("all" = every one) with quick parameters into report_dir through the batch
    runner; writes machine.json beside summary.json and returns the summary (with "machine" added)."""
    from playbook.report import runner

    jobs_ = runner.plan(labs=labs, quick=True, root=root)
    parameters = {"labs": labs, "quick": True, "jobs": jobs, "timeout_s": timeout_s,
                  "notebooks": [j.name for j in jobs_], "by": COMMAND}
    summary = runner.run_batch(jobs_, report_dir, parameters=parameters, run_name=report_dir.name, workers=jobs,
                               timeout_s=timeout_s, progress=progress, cwd=root)
    machine = machine_stamp()
    machine["date"] = summary.get("created", machine["date"])
    (report_dir / MACHINE_FILE).write_text(json.dumps(machine, indent=2), encoding="utf-8")
    summary["machine"] = machine
    return summary


def load_summary(path: str | Path) -> dict[str, Any]:
    """A batch report's summary.json (a file, or the report folder holding it), with "machine" from machine.json
    beside it when present (else the current machine, marked as such)."""
    path = Path(path)
    if path.is_dir():
        path = path / "summary.json"
    if not path.is_file():
        raise InputError(f"{path}: no such summary.json (pass a report folder or its summary.json)")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a JSON summary ({exc})") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("notebooks"), list):
        raise InputError(f"{path}: no 'notebooks' list: not a summary.json written by `playbook report`")
    machine_file = path.parent / MACHINE_FILE
    if machine_file.is_file():
        summary["machine"] = json.loads(machine_file.read_text(encoding="utf-8"))
    else:
        summary["machine"] = {**machine_stamp(), "assumed": True, "date": summary.get("created")}
    summary.setdefault("run_id", path.parent.name)
    return summary


# ---------------------------------------------------------------- regions

def stamp_line(summary: dict[str, Any]) -> str:
    """The italic line every generated region starts with: command, date, run id, machine."""
    machine = summary.get("machine") or {}
    gpu_note = "" if machine.get("gpu") else " (CPU figures; GPU figures not yet measured)"
    assumed = " — machine assumed: no machine.json beside the summary" if machine.get("assumed") else ""
    date = machine.get("date") or summary.get("created") or "?"
    return (f"*Generated by `{COMMAND}` on {date} from batch `{summary.get('run_id', '?')}` — "
            f"{machine_text(machine)}{gpu_note}{assumed}.*")


def region_names(text: str) -> list[str]:
    """Names of the generated regions in a guide's text, in order."""
    return [m.group("name") for m in REGION.finditer(text)]


def rewrite_regions(text: str, bodies: dict[str, str], fallback: str | None) -> tuple[str, list[str]]:
    """Replace each generated region's body with bodies[name] (or `fallback` for names not generated; None keeps
    their body as it is); returns the new text and the names that got no body."""
    missed: list[str] = []

    def repl(m: re.Match) -> str:
        name = m.group("name")
        body = bodies.get(name)
        if body is None:
            missed.append(name)
            if fallback is None:
                return m.group(0)
            body = fallback
        return f"{m.group(1)}{body.strip()}\n{m.group(4)}"

    return REGION.sub(repl, text), missed


def build_regions(summary: dict[str, Any], rows: list[LabRow], out_dir: Path, guide_dir: Path,
                  signatures: list[dict[str, Any]] | None, samples: dict[str, str],
                  images: dict[str, Path], notebooks_dir: Path) -> dict[str, str]:
    """Markdown bodies of every generated region, each starting with the stamp line (notebook links relative to
    `guide_dir`, pointing into `notebooks_dir`)."""
    stamp = stamp_line(summary)
    rel = os.path.relpath(out_dir, guide_dir)

    def img(name: str, alt: str) -> str:
        return f"\n\n![{alt}]({rel}/{images[name].name})" if name in images else ""

    counts = {s: sum(r.status == s for r in rows) for s in ("ok", "failed", "not run", "missing")}
    verdicts = {v: sum(r.verdict == v for r in rows) for v in ("confirmed", "refuted", "inconclusive")}
    totals = (f"{counts['ok']} notebooks ran, {counts['failed']} failed, {counts['not run']} not run, "
              f"{counts['missing']} missing; verdicts: {verdicts['confirmed']} confirmed, {verdicts['refuted']} "
              f"refuted, {verdicts['inconclusive']} inconclusive.")
    bodies = {
        "machine": stamp,
        "lab-results": f"{stamp}\n\n{totals}\n\n{results_table(rows, os.path.relpath(notebooks_dir, guide_dir))}{img('speedups', 'fix vs fault per lab')}",
    }
    for r in rows:
        bodies[f"lab-{r.notebook}"] = f"{stamp}\n\n{lab_section(r)}"
    obs = next((r for r in rows if r.notebook == "02_observability"), None)
    if obs is not None and "overheads" in images:
        bodies["lab-02_observability"] += img("overheads", "probe overhead per observation level")
    serving = next((r for r in rows if r.notebook == "30_serving_parity"), None)
    if serving is not None and "serving" in images:
        bodies["lab-30_serving_parity"] += img("serving", "serving p99 latency")
    if signatures is not None:
        bodies["signatures"] = (f"{stamp}\n\nEvery row is LABELLED SYNTHETIC data from `playbook.labs.synthetic` with a "
                                f"known answer (✓: diagnose names it first).\n\n{signatures_table(signatures)}")
    ran = summary.get("commands_at")  # the quoted commands run when the guide is regenerated, maybe after the batch
    command_stamp = stamp if not ran else stamp.replace(
        f" from batch `{summary.get('run_id', '?')}`", f" (command run {ran}; batch `{summary.get('run_id', '?')}`)")
    bodies.update(quote_bodies(samples, command_stamp))
    return bodies


def quote_bodies(texts: dict[str, str], stamp: str) -> dict[str, str]:
    """Region bodies of quoted outputs: the stamp, the excerpt's note when it has one, the command and its text."""
    bodies = {}
    for name, text in texts.items():
        note = f"{EXCERPTS[name][2]}\n\n" if name in EXCERPTS else ""
        bodies[name] = f"{stamp}\n\n{note}```\n$ {shown(name)}\n{text}\n```"
    return bodies


def outputs_stamp(machine: dict[str, Any] | None = None) -> str:
    """The stamp of regions refilled by the fast path (`--outputs`): command, date, CPUs and playbook version (these
    outputs read files: no GPU is involved, so none is named)."""
    from playbook import __version__

    machine = machine or machine_stamp(gpu_probe=False)
    return (f"*Generated by `{OUTPUTS_COMMAND}` on {machine['date']} — {machine.get('cpus', '?')} CPUs, "
            f"playbook {__version__}.*")


def rewrite_pages(pages: list[Path], bodies: dict[str, str], fallback: str | None = None) -> dict[Path, list[str]]:
    """Rewrite the generated regions of each existing page; returns page -> region names left without a body."""
    missed = {}
    for page in pages:
        if page.is_file():
            text, missed[page] = rewrite_regions(page.read_text(encoding="utf-8"), bodies, fallback)
            page.write_text(text, encoding="utf-8")
    return missed


def write_command_outputs(out_dir: str | Path, pages: list[str | Path], outputs: dict[str, str],
                          stamp: str | None = None) -> list[Path]:
    """The fast path: write each quoted output to OUT_DIR/<name>.txt and into the pages' regions of that name;
    every other region (lab figures, signatures) keeps its committed body. Returns the files written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for name, text in outputs.items():
        path = out_dir / f"{name}.txt"
        path.write_text(f"$ {shown(name)}\n{text}".rstrip() + "\n", encoding="utf-8")
        files.append(path)
    paths = [Path(p) for p in pages]
    rewrite_pages(paths, quote_bodies(outputs, stamp or outputs_stamp()))
    return files + [p for p in paths if p.is_file()]


# ---------------------------------------------------------------- writing

def write_outputs(summary: dict[str, Any], out_dir: str | Path, guide: str | Path | None,
                  signatures: list[dict[str, Any]] | None = None, samples: dict[str, str] | None = None,
                  plots: bool = True, present: list[str] | None = None,
                  pages: list[str | Path] = (), root: str | Path | None = None) -> dict[str, Any]:
    """Write tables, JSON and plots into out_dir and rewrite the guide's generated regions (when `guide` exists),
    and the regions of the other `pages` that have a body here (theirs without one are left as they are).
    `root`: the repository root whose notebooks/ the tables link to (default catalog.repo_root()).

    Returns {"rows": [...], "files": [...], "missed_regions": [...], "failed": [...]}."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    notebooks_dir = (Path(root) if root is not None else catalog.repo_root()) / "notebooks"
    rows = lab_rows(summary, present=present, notebooks_dir=notebooks_dir)
    samples = samples or {}
    files: list[Path] = []
    for stale in [*out_dir.glob("lab-*.md"), *(out_dir / f"{n}.png" for n in PLOTS), out_dir / "signatures.md",
                  *(out_dir / f"{n}.txt" for n in QUOTES)]:
        stale.unlink(missing_ok=True)  # what this run does not regenerate must not linger from an earlier one

    def write(name: str, text: str) -> None:
        path = out_dir / name
        path.write_text(text.rstrip() + "\n", encoding="utf-8")
        files.append(path)

    stamp = stamp_line(summary)
    write("lab-results.md", f"{stamp}\n\n{results_table(rows, os.path.relpath(notebooks_dir, out_dir))}")
    extract = {"run_id": summary.get("run_id"), "created": summary.get("created"),
               "machine": summary.get("machine"), "duration_s": summary.get("duration_s"),
               "labs": [asdict(r) | {"speedup": r.speedup} for r in rows]}
    write("lab-results.json", json.dumps(extract, indent=1, default=str, allow_nan=False))
    for r in rows:
        if r.status in ("ok", "failed"):
            write(f"lab-{r.notebook}.md", f"{stamp}\n\n# {r.title or r.notebook}\n\n{lab_section(r)}")
    if signatures is not None:
        write("signatures.md", f"{stamp}\n\n{signatures_table(signatures)}")
    for name, text in samples.items():
        write(f"{name}.txt", f"$ {shown(name)}\n{text}")
    images: dict[str, Path] = {}
    if plots:
        from playbook.plots.style import use_headless_backend

        use_headless_backend()
        records = next((nb.get("records") or {} for nb in summary.get("notebooks") or []
                        if nb.get("notebook") == "02_observability" and nb.get("status") == "ok"), {})
        serving = next((r.figures for r in rows if r.notebook == "30_serving_parity" and r.status == "ok"), {})
        for name, fig in (("speedups", plot_speedups(rows)), ("overheads", plot_overheads(records)),
                          ("serving", plot_serving(serving))):
            if fig is not None:
                images[name] = save_png(fig, out_dir / f"{name}.png")
                files.append(images[name])
    missed: list[str] = []
    if guide is not None and Path(guide).is_file():
        guide = Path(guide)
        bodies = build_regions(summary, rows, out_dir, guide.parent, signatures, samples, images, notebooks_dir)
        text, missed = rewrite_regions(guide.read_text(encoding="utf-8"), bodies,
                                       f"{stamp}\n\n*Nothing was generated for this region in this run.*")
        guide.write_text(text, encoding="utf-8")
        files.append(guide)
        rewrite_pages([Path(p) for p in pages], bodies)
        files += [Path(p) for p in pages if Path(p).is_file()]
    return {"rows": rows, "files": files, "missed_regions": missed,
            "failed": [r.notebook for r in rows if r.status == "failed"]}


# ---------------------------------------------------------------- command line

EXAMPLES = """example:
  python -m playbook.report.guide docs/figures                  rerun every lab quickly, regenerate the guide (make guide-figures)
  python -m playbook.report.guide --outputs docs/figures        only the quoted command outputs and excerpts (< 1 min)
  python -m playbook.report.guide docs/figures --summary reports/20260101T120000Z-guide
                                                         reuse a finished batch report: no lab reruns
  python -m playbook.report.guide /tmp/fig --labs 10 13 --guide /tmp/guide.md    two labs, into scratch copies
"""


def build_parser() -> argparse.ArgumentParser:
    doc = (__doc__ or "").split("\n\n")[0]
    p = argparse.ArgumentParser(prog="python -m playbook.report.guide", description=doc, epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", metavar="OUT_DIR", help="where the tables and plots go (the guide embeds docs/figures)")
    p.add_argument("--guide", metavar="MD",
                   help="the guide whose generated regions are rewritten (default docs/field-guide.md)")
    p.add_argument("--pages", nargs="*", metavar="MD",
                   help="other pages whose quoted regions are rewritten (default docs/runbook.md README.md)")
    p.add_argument("--outputs", action="store_true",
                   help="only rerun the quoted commands and excerpts and rewrite their regions (< 1 min; the lab "
                        "figures stay as committed)")
    p.add_argument("--summary", metavar="PATH", help="a finished report's summary.json (or its folder): no reruns")
    p.add_argument("--labs", nargs="+", default=["all"], metavar="NAME",
                   help="notebooks to rerun: 'all' (default) or names/numbers as `playbook report --labs` takes")
    p.add_argument("--report-dir", metavar="DIR", help="batch report folder (default reports/<UTC time>-guide)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="notebooks at once (default 1: steadier timings)")
    p.add_argument("--timeout", type=float, default=600, metavar="S", help="seconds a cell may run (default 600)")
    p.add_argument("--no-signatures", action="store_true", help="skip the synthetic signature catalog")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    t0 = time.perf_counter()
    try:
        root = catalog.repo_root()  # once: the pages, notebooks and samples are found from here
    except PlaybookError as exc:
        print(f"playbook.report.guide: error: {exc}", file=sys.stderr)
        return 2
    args.guide = args.guide or str(root / GUIDE_PAGE)
    args.pages = [str(root / p) for p in OTHER_PAGES] if args.pages is None else args.pages

    def say(msg: str) -> None:
        print(f"[guide {time.perf_counter() - t0:6.0f} s] {msg}", file=sys.stderr, flush=True)

    if args.outputs:
        try:
            outputs = command_outputs(root, FAST_QUOTES, say=lambda c: say(f"running {c}"))
            files = write_command_outputs(args.out_dir, [args.guide, *args.pages], outputs)
        except PlaybookError as exc:
            print(f"playbook.report.guide: error: {exc}", file=sys.stderr)
            return 2
        failed = [n for n, text in outputs.items() if re.search(r"\(exit status [1-9]|could not run|did not finish", text)]
        say(f"done: {len(files)} files written" + (f"; failed: {', '.join(failed)}" if failed else ""))
        return 1 if failed else 0
    try:
        if args.summary:
            summary = load_summary(args.summary)
            say(f"1/4 reusing {args.summary}: {len(summary['notebooks'])} notebook(s), no reruns")
        else:
            from playbook.report.runner import run_id

            report_dir = Path(args.report_dir) if args.report_dir else root / "reports" / run_id("guide")
            say(f"1/4 running notebooks {' '.join(args.labs)} with quick parameters into {report_dir}/")
            summary = run_labs(args.labs, report_dir, root, args.jobs, args.timeout, progress=not args.no_progress)
        signatures = None
        if not args.no_signatures:
            say("2/4 diagnosing labelled synthetic signatures (playbook.labs.synthetic)")
            signatures = signature_rows()
        summary["commands_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        samples = command_outputs(root, QUOTES, say=lambda c: say(f"3/4 {c}"))
        say(f"4/4 writing tables and plots into {args.out_dir}/, the guide {args.guide} and {' '.join(args.pages)}")
        result = write_outputs(summary, args.out_dir, args.guide, signatures, samples, pages=args.pages, root=root)
    except PlaybookError as exc:
        print(f"playbook.report.guide: error: {exc}", file=sys.stderr)
        return 2
    for r in result["rows"]:
        print(f"  {r.notebook:<28} {r.status:<8} {r.verdict or '-':<13} "
              f"{'' if r.duration_s is None else f'{r.duration_s:6.1f} s'}  {r.error or ''}")
    if result["missed_regions"]:
        say(f"regions with nothing generated: {', '.join(result['missed_regions'])}")
    if not Path(args.guide).is_file():
        say(f"no guide at {args.guide}: only the figures were written")
    say(f"done: {len(result['files'])} files written; {len(result['failed'])} notebook(s) failed"
        + (f": {', '.join(result['failed'])}" if result["failed"] else ""))
    return 1 if result["failed"] else 0
