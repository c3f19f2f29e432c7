"""A Slurm job's GPU usage as its accounting reports it after the job: not samples over time, one figure per job
(step) — what a cluster user pastes when the question is "did my job use its GPU?".

- `sacct -P/-p ... -o JobID,TRESUsageInAve[,TRESUsageInMax ...]` (or `sstat`, the same fields of a running step;
  acct_gather_gpu: the TRES pairs
  `gres/gpuutil=100` (%) and `gres/gpumem=40777023488` (bytes with --noconvert, else with a K/M/G/T suffix, binary),
  `|`-separated, a header line unless -n). The statistic comes from the column's name — the header, or the `-o` /
  `--format` list of a pasted command line: TRESUsageInAve is the step's mean, TRESUsageInMax its maximum (Min and
  Tot are not a level and are passed over). A step whose GPU figures are all 0 (the `.extern` step, a step on no GPU)
  is not GPU work; the job's own line holds no usage.
- a sacct column holding a JSON object of the job's GPU figures, as a site's epilog writes them into the job's
  comment (`sacct -o comment -p`: `{"gpu_util": 99.0, "gpu_mem_max": 1279.0, "gpu_power": 204.26, "ncpu": 1,
  "ngpu": 1}|`, AaltoSciComp/scicomp-docs triton/examples/monitoring/gpu.rst). The meaning comes from each key's
  words: a key naming the GPU and its utilization is the utilization in % (its statistic the maximum when the key
  says max / peak, else the mean), one naming GPU memory is MiB unless it names its unit (`_gb`/`_gib`, `_bytes`),
  one naming the GPU count (`ngpu`, `gpus`, `num_gpus`) the count; other keys are passed over. A job on no GPU
  (`"ngpu": 0`, or every GPU figure 0 with no count) is no GPU work, as the TRES lines' all-zero steps.
- `seff` with a GPU section (`Max GPU Utilization: 41%`, `Max GPU Memory Utilized: 874.00 MiB`, `Number of GPUs`,
  `GPU Type`, `Job Wall-clock time: [D-]HH:MM:SS`).

The figures go to Bundle.meta[META_PREFIX + path] as {"jobs": [{job, stat ("mean" | "max"), util_pct, mem_mib,
gpus, elapsed_s, model}]}; the accounting (analysis.accounting.gpu_time.job_usage_accounting) reads them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import textio

FORMAT = "Slurm job GPU usage (sacct TRESUsageIn*, seff)"
META_PREFIX = "job_usage:"  # bundle.meta[META_PREFIX + path]: {"jobs": [...]}

_TRES_UTIL = re.compile(r"(?:^|[|,])gres/gpuutil=(\d+(?:\.\d+)?)")
_TRES_MEM = re.compile(r"(?:^|[|,])gres/gpumem=(\d+(?:\.\d+)?)([KMGTP]?)")
# the field list of a pasted command: `-o LIST`, clustered short options ending in o (`-pno LIST`), --format=LIST
_FORMAT_ARG = re.compile(r"(?:\s-[A-Za-z]{0,8}o|--format|--fields)[= ]\s?([A-Za-z%0-9,._-]{1,400})")
# the command line itself, after a shell prompt (a conda env's `(base) ` before it) or none: `sacct ...`,
# `[root@gpu3 ~]# sstat ...`, `user@h:~$ sacct`
_COMMAND = re.compile(r"^(?:\([^()|\n]{1,60}\)\s+)?(?:\[[^\]\n]{0,120}\]|[^\s|]{0,120}?)?[$#]?\s*s(?:acct|stat)\s")
_SEFF = re.compile(r"^\s*(Max GPU Utilization|GPU Utilization|Max GPU Memory Utilized|GPU Memory Utilized|"
                   r"Number of GPUs|GPU Type|Job Wall-clock time|Job ID)\s*:\s*(\S[^\n]{0,80})$")
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)\s?%")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s?([KMGT]i?B|B)\b")
_CLOCK = re.compile(r"^(?:(\d+)-)?(\d{1,2}):(\d{2}):(\d{2})$")
_STATS = {"tresusageinave": "mean", "tresusageinmax": "max"}
_UNITS = {"": 1 / 2**20, "K": 1 / 2**10, "M": 1.0, "G": 2**10, "T": 2**20, "P": 2**30}  # -> MiB
_SIZE_MIB = {"B": 1 / 2**20, "KiB": 1 / 2**10, "KB": 1 / 2**10, "MiB": 1.0, "MB": 1.0, "GiB": 2**10, "GB": 2**10,
             "TiB": 2**20, "TB": 2**20}


# a sacct cell holding a JSON object with a key naming GPU utilization: `{"gpu_util": 99.0, ...}|`
_JSON_CELL = re.compile(r'\{[^{}\n]{0,400}?"[\w.-]{0,20}gpu[\w.-]{0,20}"\s*:[^{}\n]{0,400}\}')
_JOB_ID = re.compile(r"\d[\w.+-]{0,40}")  # 123, 123.batch, 123_4.0
_GPU_COUNT_KEYS = {"ngpu", "ngpus", "gpus", "num_gpus", "gpu_count", "n_gpus"}


def clock_seconds(clock: re.Match | None) -> float | None:
    """The seconds of a `[D-]HH:MM:SS` match (its four groups: days, hours, minutes, seconds); None for no match."""
    if clock is None:
        return None
    d, h, m, s = (int(x or 0) for x in clock.groups())
    return float(((d * 24 + h) * 60 + m) * 60 + s)


def sniff(head: str) -> bool:
    """sacct TRES lines holding a GPU figure, a sacct cell holding a JSON object of GPU figures, or seff's GPU
    section with its wall-clock line."""
    lines = head.splitlines()[:400]
    if any("|" in ln and _JSON_CELL.search(ln) for ln in lines) and _json_paste(lines):
        return True
    if "gres/gpuutil=" in head or "gres/gpumem=" in head:
        return any("|" in ln and "gres/gpu" in ln for ln in lines)
    return "Job Wall-clock time:" in head and ("GPU Utilization:" in head or "GPU Memory Utilized:" in head)


def _json_paste(lines: list[str]) -> bool:
    """sacct's `|` cells with a job comment's JSON in little else: each JSON-bearing line a sacct row (its first cell
    a job id, or the JSON itself under `-o comment`), at most one line in five outside sacct's grammar (a logger's
    `time | level | {json}` lines are a training log, not sacct's)."""
    rows = [_sacct_row(ln) for ln in lines if ln.strip()]
    return "json" in rows and rows.count("other") * 5 <= len(rows)


def _sacct_row(line: str) -> str:
    """'json' (a row holding a job comment's GPU JSON), 'row' (a command, a header of names, a row with a job id or
    led by nothing), or 'other'."""
    s = line.strip()
    if s.startswith("$") or _COMMAND.match(s):
        return "row"
    if "|" not in s:
        return "other"
    cells = [c.strip() for c in s.split("|")]
    if not (cells[0] == "" or cells[0].startswith("{") or any(_JOB_ID.fullmatch(c) for c in cells)):
        return "row" if all(re.fullmatch(r"[A-Za-z][\w%.:-]{0,40}|", c) for c in cells) else "other"
    return "json" if _json_cells(s) else "row"


def read(path: str | Path, **_opts) -> schema.Bundle:
    """The job figures of a sacct or seff paste (see the module docstring) into Bundle.meta."""
    path = Path(path)
    src = str(path)
    text = textio.read_text(path)
    skips = schema.SkipCounter(src)
    jobs = _sacct(text, skips) if "gres/gpu" in text else (_json_cells(text) or _seff(text))
    if not jobs:
        raise InputError(f"{src}: no job step with GPU usage (a GPU figure other than 0 under TRESUsageInAve / "
                         "TRESUsageInMax, or seff's GPU lines)" + (f" ({skips.reasons[0]})" if skips.reasons else ""))
    bundle = schema.Bundle(inputs=[src], meta={META_PREFIX + src: {"jobs": jobs}})
    warning = skips.warning(rows_read=len(jobs))
    if warning:
        bundle.warnings.append(warning)
    return bundle


def _sacct(text: str, skips: schema.SkipCounter) -> list[dict]:
    names: list[str] = []
    jobs = []
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("$") or _COMMAND.match(line):  # a prompt, or the command (sstat: a running step)
            if m := _FORMAT_ARG.search(line):
                names = [n.split("%")[0].strip().lower() for n in m.group(1).split(",")]
            continue
        cells = line.split("|")
        if len(cells) < 2:
            continue
        if any(c.strip().lower().startswith("tresusage") for c in cells):
            names = [c.strip().lower() for c in cells]
            continue
        for col, cell in enumerate(cells):
            util, mem = _TRES_UTIL.search(cell), _TRES_MEM.search(cell)
            if util is None and mem is None:
                continue
            stat = _STATS.get(names[col]) if col < len(names) else None
            if stat is None:
                skips.skip(no, f"GPU figures under {names[col] if col < len(names) else 'an unnamed column'!r}: "
                               "not TRESUsageInAve / TRESUsageInMax")
                continue
            util_pct = float(util.group(1)) if util else None
            mem_mib = float(mem.group(1)) * _UNITS[mem.group(2)] if mem else None
            if not util_pct and not mem_mib:  # the .extern step, a step on no GPU
                continue
            jobs.append({"job": _job_id(cells, names), "stat": stat, "util_pct": util_pct, "mem_mib": mem_mib,
                         "gpus": None, "elapsed_s": None, "model": None})
    return jobs


def _job_id(cells: list[str], names: list[str]) -> str:
    """The cell under JobID (or JobIDRaw) when the columns are named; without names the first cell when it reads as a
    job id (`123`, `123.batch`, `123_4.0`), else none: a lone usage column is no job id."""
    for key in ("jobid", "jobidraw"):
        if key in names and names.index(key) < len(cells):
            return cells[names.index(key)].strip()
    first = cells[0].strip()
    return first if not names and re.fullmatch(r"\d[\w.+-]{0,40}", first) else ""


def _json_cells(text: str) -> list[dict]:
    """Each `|`-separated cell that parses as a JSON object naming a GPU utilization (see the module docstring)."""
    jobs, column = [], None  # the JobID column of a header line, when there is one
    for raw in text.splitlines():
        cells = raw.strip().split("|")
        if len(cells) < 2:
            continue
        names = [c.strip().lower() for c in cells]
        if "jobid" in names or "jobidraw" in names:
            column = names.index("jobid" if "jobid" in names else "jobidraw")
            continue
        for cell in cells:
            cell = cell.strip()
            if not (cell.startswith("{") and cell.endswith("}")):
                continue
            try:
                doc = json.loads(cell)
            except ValueError:
                continue
            if isinstance(doc, dict) and (job := _json_job(doc, cells, column)) is not None:
                jobs.append(job)
    return jobs


def _json_job(doc: dict, cells: list[str], column: int | None = None) -> dict | None:
    util = mem = gpus = None
    stat = "mean"
    for key, value in doc.items():
        words = str(key).lower()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if words in _GPU_COUNT_KEYS:
            gpus = int(value)
        elif "gpu" in words and "util" in words and util is None and 0 <= value <= 100:
            util, stat = float(value), "max" if ("max" in words or "peak" in words) else "mean"
        elif "gpu" in words and "mem" in words and mem is None:
            unit = 2**10 if re.search(r"_gi?b\b|gi?b$", words) else 1 / 2**20 if "byte" in words else 1.0
            mem = float(value) * unit
    if util is None or gpus == 0 or (gpus is None and not util and not mem):  # a job on no GPU, as TRES's .extern
        return None
    ids = [cells[column].strip()] if column is not None and column < len(cells) else [c.strip() for c in cells]
    job = next((c for c in ids if _JOB_ID.fullmatch(c)), "")  # under JobID, else the first cell that reads as one
    return {"job": job, "stat": stat, "util_pct": util,
            "mem_mib": mem, "gpus": gpus, "elapsed_s": None, "model": None}


def _seff(text: str) -> list[dict]:
    got: dict[str, str] = {}
    for raw in text.splitlines():
        if m := _SEFF.match(raw):
            got.setdefault(m.group(1), m.group(2).strip())
    util_text = got.get("Max GPU Utilization") or got.get("GPU Utilization")
    util = _PERCENT.match(util_text) if util_text else None
    mem_text = got.get("Max GPU Memory Utilized") or got.get("GPU Memory Utilized")
    size = _SIZE.match(mem_text) if mem_text else None
    if util is None and size is None:
        return []
    stat = "max" if "Max GPU Utilization" in got or util is None else "mean"
    gpus = got.get("Number of GPUs", "")
    elapsed = clock_seconds(_CLOCK.match(got.get("Job Wall-clock time", "")))
    return [{"job": got.get("Job ID", ""), "stat": stat, "util_pct": float(util.group(1)) if util else None,
             "mem_mib": float(size.group(1)) * _SIZE_MIB.get(size.group(2), 1.0) if size else None,
             "gpus": int(gpus) if gpus.isdecimal() else None, "elapsed_s": elapsed,
             "model": got.get("GPU Type") or None}]
