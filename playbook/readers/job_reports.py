"""What a cluster's job-efficiency tools print about a GPU job after (or during) it: one figure per GPU or per job,
no time axis — the infrastructure team's view, as readers/slurm_usage.py reads sacct and seff. Three layouts:

- `jobstats` (PrincetonUniversity/jobstats output_formatters.ClassicOutput): the metadata block (`Job ID:`, `GPUs:`,
  `Run Time: [D-]HH:MM:SS[ (in progress)]`), the "Overall Utilization" meters (`GPU utilization  [|||   68%]`), and
  the detailed sections `GPU utilization per node` (`<node> (GPU <i>): 65.7%`, `0%` marked `<-- GPU was not used`,
  "GPU utilization is unknown" for MIG) and `GPU memory usage per node - maximum used/total` (`<node> (GPU <i>):
  26.5GB/40.0GB (66.2%)`, binary units named KB/MB/GB). The utilization is the GPU's mean over the run (Prometheus'
  duty cycle averaged); each GPU of the detail is a figure, the overall meter only when there is no detail.
- whitespace tables of jobs, their meaning from the header's words: a job id column (`JobID`), a GPU utilization
  column (`GPU-Util`, `GPUEff`, `GPU_Util`...: words naming the GPU and its utilization or efficiency), optionally a
  GPU count (`GPUs`, `GPUs-Allocated`), the GPUs left unused (`GPUs-Unused`) and a duration (`Elapsed` as
  [D-]HH:MM:SS, `Hours`, or `Zero-Util-GPU-Hours` over the unused GPUs). Beside `GPUs-Unused` the utilization
  column's 0% is the unused GPUs' own reading (Job Defense Shield's `GPU-Unused-Util`, or its `GPU-Util` written
  "0%" for every such row), marked `util_of: "unused"`: the working GPUs' utilization is not in the table (a figure
  above 0 there is a mean over all the GPUs, the unused ones at 0). `reportseff -g` (troycomi/reportseff) prints
  under the job's row a row per node (indented, the trailing columns CPUEff MemEff GPUEff GPUMem) and a row per GPU
  (indented further, GPUEff GPUMem): a row shorter than the header fills the header's last columns; the finest rows
  (GPUs, else nodes, else the job) are the figures. Job Defense Shield's alert emails print such a table (`JobID Cluster Partition State GPUs-Allocated
  GPU-Util Hours`).
- `dcgmi stats -j <job> [-v]` and `dcgmi stats -p <pid> -v` (NVIDIA/DCGM dcgmi/ProcessStats.cpp): boxed tables with a
  header row (`| Summary |`, `| GPU ID: <n> |`) and `| <name> | <value> |` rows: `Total Execution Time (sec)`, `No. of
  Processes`, `SM Utilization (%)` as `Avg: 100, Max: 100, Min: 100` (the mean is the figure), `Max GPU Memory Used
  (bytes)`. With -v the per-GPU blocks are the figures (the summary repeats them). A block that recorded no process
  and no figure (`No. of Processes 0`, energy "Not Specified", 0 bytes) is no measurement of the GPUs: DCGM's job
  statistics come from NVML's accounting mode, which sees only processes started after the watches and none on MIG
  devices (NVIDIA/DCGM#73); it is said so, not read as an idle GPU.

The figures go to Bundle.meta[slurm_usage.META_PREFIX + path] as slurm_usage's {"jobs": [...]} (each {job, stat,
util_pct, mem_mib, gpus, elapsed_s, model}, plus the GPU's `host` and `gpu` where the tool names them and `of`, the
job id a node's or GPU's figure belongs to; `running` for a job in progress: jobstats' `(in progress)`, a
table's State RUNNING), with "empty": [sentence] for reports that measured nothing. Several
reports in one file (jobstats or dcgmi stats run in a loop) are read each under its own job.
"""

from __future__ import annotations

import re
from pathlib import Path

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import textio
from playbook.readers.slurm_usage import META_PREFIX, clock_seconds

FORMAT = "job-efficiency reports (jobstats, reportseff, Job Defense Shield tables, dcgmi stats)"

_JOBSTATS_GPU = re.compile(r"^\s*(\S+) \(GPU (\d+)\):[ \t]*(?:(\d+(?:\.\d+)?)%)?")  # "unknown": tested apart
_JOBSTATS_MEM = re.compile(r"^\s*(\S+) \(GPU (\d+)\):\s*(\d+(?:\.\d+)?)([KMGTP]?B)/")
_METER = re.compile(r"^\s*GPU utilization\s+\[[| ]*?(\d+)%\]")
_META = re.compile(r"^\s*(Job ID|GPUs|Run Time)\s*:\s*(\S+)")
_CLOCK = re.compile(r"^(?:(\d+)-)?(\d{1,3}):(\d{2}):(\d{2})$")
_BOX_HEAD = re.compile(r"^\|\s*(Summary|GPU ID:\s*(\d+))\s*\|\s*$")
_AVG = re.compile(r"Avg:\s*(\d+(?:\.\d+)?)")
_DCGMI_JOB = re.compile(r"statistics for job:\s*(\S+?)\.?\s*$")
# dcgmi prints its doubles with `ss << val` (6 significant digits): "6.2e-05", "1.2096e+06" (blanks as words)
_DOUBLE = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_BYTES = {"B": 1 / 2**20, "KB": 1 / 2**10, "MB": 1.0, "GB": 2**10, "TB": 2**20, "PB": 2**30}


def sniff(head: str) -> bool:
    """jobstats' report, a job table with a GPU utilization column, or dcgmi stats' boxed job / process tables."""
    lines = textio.head_lines(head)[:400]
    if any("Slurm Job Statistics" in line for line in lines[:40]) and any(
            "GPU utilization" in line for line in lines):
        return True
    if any("Total Execution Time (sec)" in line and line.lstrip().startswith("|") for line in lines):
        return True
    return _has_table(lines)


def read(path: str | Path, **_opts) -> schema.Bundle:
    """The job figures of a jobstats report, a job table or dcgmi stats' tables (module docstring) into meta."""
    path = Path(path)
    src = str(path)
    lines = textio.read_text(path).splitlines()
    skips = schema.SkipCounter(src)
    empty: list[str] = []
    events: list[dict] = []
    if any("Total Execution Time (sec)" in line for line in lines):
        jobs = _dcgmi(lines, empty, events, src)
    elif starts := [i for i, line in enumerate(lines) if "Slurm Job Statistics" in line]:
        # several reports in one file (`for j in ...; do jobstats $j; done`): each read apart, under its own job id
        jobs = [j for a, b in zip([0, *starts[1:]], [*starts[1:], len(lines)], strict=True)
                for j in _jobstats(lines[a:b], empty)]
    else:
        jobs = _table(lines, skips)
    if not jobs and not empty and not events:
        raise InputError(f"{src}: no GPU utilization figure in this job report (jobstats' GPU lines, a job table's "
                         "GPU utilization column, dcgmi stats' SM Utilization)"
                         + (f" ({skips.reasons[0]})" if skips.reasons else ""))
    bundle = schema.Bundle(inputs=[src], meta={META_PREFIX + src: {"jobs": jobs, "empty": empty}})
    if events:
        bundle.events = schema.events_frame({k: [e[k] for e in events] for k in events[0]})
    if (warning := skips.warning(rows_read=len(jobs))):
        bundle.warnings.append(warning)
    return bundle


def _seconds(text: str) -> float | None:
    return clock_seconds(_CLOCK.match(text.strip()))


def _figure(job: str, util: float | None, *, gpus: int | None = None, elapsed: float | None = None,
            mem: float | None = None, host: str | None = None, gpu: str | None = None, of: str | None = None) -> dict:
    out = {"job": job, "stat": "mean", "util_pct": util, "mem_mib": mem, "gpus": gpus, "elapsed_s": elapsed,
           "model": None}
    if of is not None:
        out["of"] = of  # the job a node's or GPU's figure belongs to
    if mem is not None:
        out["mem_stat"] = "max"  # jobstats' and dcgmi's GPU memory are the run's maximum
    if host is not None or gpu is not None:
        out.update(host=host, gpu=gpu)
    return out


def _jobstats(lines: list[str], empty: list[str]) -> list[dict]:
    meta: dict[str, str] = {}
    section, util, mem, overall = "", {}, {}, None
    for line in lines:
        if (m := _META.match(line)) and m.group(1) not in meta:
            meta[m.group(1)] = m.group(2)
        if (m := _METER.match(line)) and overall is None:
            overall = float(m.group(1))
        stripped = line.strip()
        if stripped.startswith("GPU utilization per node"):
            section = "util"
        elif stripped.startswith("GPU memory usage per node"):
            section = "mem"
        elif not stripped:  # a blank line ends a section
            section = ""
        elif section == "util" and (m := _JOBSTATS_GPU.match(line)) and (m.group(3) or "unknown" in line):
            util[(m.group(1), m.group(2))] = float(m.group(3)) if m.group(3) is not None else None
        elif section == "mem" and (m := _JOBSTATS_MEM.match(line)):
            mem[(m.group(1), m.group(2))] = float(m.group(3)) * _BYTES.get(m.group(4), 1.0)
    job = meta.get("Job ID", "")
    elapsed = _seconds(meta.get("Run Time", ""))
    running = any("(in progress)" in line for line in lines if _META.match(line) and "Run Time" in line)
    gpus = int(meta["GPUs"]) if meta.get("GPUs", "").isdecimal() else None
    figures = [_figure(f"{job} {node} (GPU {i})".strip(), value, gpus=1, elapsed=elapsed, mem=mem.get((node, i)),
                       host=node, gpu=i, of=job) for (node, i), value in util.items() if value is not None]
    if not figures and overall is not None and not any(v is None for v in util.values()):
        figures = [_figure(job, overall, gpus=gpus, elapsed=elapsed)]
    for f in figures if running else []:
        f["running"] = True  # `Run Time: ... (in progress)`: the figures are the job's so far
    if not figures and (util or any("GPU utilization is unknown" in line for line in lines)):
        empty.append(f"a jobstats report of job {job or '?'} whose GPU utilization is unknown (jobstats measures "
                     "none on MIG slices, and none where the exporter recorded nothing)")
    return figures


# --- job tables: meaning from the header's words ---------------------------------------------------------------

def _words(name: str) -> str:
    return re.sub(r"[^a-z%]+", " ", name.lower()).strip()


def _role(name: str) -> str | None:
    w = _words(name)
    if w in ("jobid", "job id", "job"):
        return "job"
    if "hours" in w:  # JDS's `Zero-Util-GPU-Hours`: GPU-hours of the unused GPUs, no utilization
        return "hours" if w == "hours" else "zero_hours" if "zero" in w else None
    if "gpu" in w and ("util" in w or "eff" in w) and "mem" not in w:
        return "util"
    if "gpu" in w and "unused" in w:
        return "unused"
    if w in ("gpus", "gpus allocated", "ngpus", "alloc gpus", "gpu count", "num gpus", "reqgpus", "gpus alloc"):
        return "gpus"
    if w in ("elapsed", "run time", "runtime", "walltime", "wall time"):
        return "elapsed"
    if w == "state":  # RUNNING: the row's figures are the job's so far
        return "state"
    if w == "hours":
        return "hours"
    return None


def _table_columns(cells: list[str]) -> list[str | None] | None:
    """The role of each header cell, when the header names a job id and a GPU utilization column (and every cell
    reads as a column's name: letters, no digits, no `=` or `:`); else None."""
    if len(cells) < 3 or any(re.search(r"[\d=:,;'\"]", c) or not c[0].isalpha() for c in cells):
        return None
    roles = [_role(c) for c in cells]
    return roles if "job" in roles and "util" in roles else None


def _has_table(lines: list[str]) -> bool:
    """A job table's header followed by a row of as many cells whose job id starts with a digit."""
    for i, line in enumerate(lines[:60]):
        if (roles := _table_columns(line.split())) is None:
            continue
        rows = [r.split() for r in lines[i + 1:i + 4] if r.strip() and not set(r.strip()) <= set("-=+| ")]
        if rows and len(rows[0]) == len(roles) and rows[0][roles.index("job")][:1].isdigit():
            return True
    return False


def _percent(cell: str) -> float | None:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%?", cell.strip())
    return float(m.group(1)) if m and float(m.group(1)) <= 100 else None


def _table(lines: list[str], skips: schema.SkipCounter) -> list[dict]:
    roles: list[str | None] | None = None
    out: list[dict] = []
    jobs, nodes, gpus_rows = [], [], []  # the current job's rows by depth: the job, its nodes, their GPUs
    job, node, depth0 = None, None, None

    def close() -> None:  # each job's finest rows are its figures (reportseff -n prints nodes for some jobs only)
        out.extend(gpus_rows or nodes or jobs)
        jobs.clear(), nodes.clear(), gpus_rows.clear()

    for no, raw in enumerate(lines, start=1):
        cells = raw.split()
        if not cells:
            continue
        if (found := _table_columns(cells)) is not None:
            close()
            roles, depth0, job = found, None, None
            continue
        if roles is None or set(raw.strip()) <= set("-=+| "):
            continue
        indent = len(raw) - len(raw.lstrip())
        depth0 = indent if depth0 is None else depth0
        if len(cells) == len(roles):  # a whole row: a job
            close()
            row = dict(zip(roles, cells, strict=True))
            util = _percent(row.get("util", ""))
            if row.get("util", "").strip("-") == "" or util is None:
                skips.skip(no, f"no GPU utilization in {row.get('util', '')!r}")
                job = None
                continue
            gpus = int(row["gpus"]) if row.get("gpus", "").isdecimal() else None
            unused = int(row["unused"]) if row.get("unused", "").isdecimal() else None
            elapsed = (_seconds(row["elapsed"]) if "elapsed" in row else
                       float(row["hours"]) * 3600 if re.fullmatch(r"\d+(?:\.\d+)?", row.get("hours", "")) else None)
            if elapsed is None and unused and re.fullmatch(r"\d+(?:\.\d+)?", row.get("zero_hours", "")):
                elapsed = float(row["zero_hours"]) * 3600 / unused  # the unused GPUs' hours, each the job's
            job, node = _figure(row["job"], util, gpus=gpus, elapsed=elapsed), None
            if row.get("state", "").upper() == "RUNNING":
                job["running"] = True
            if unused is not None:
                job["gpus_unused"] = unused
                if util == 0:  # beside a GPUs-Unused count, Job Defense Shield's 0% is the unused GPUs' reading
                    job["util_of"] = "unused"  # (`GPU-Unused-Util`, or `GPU-Util` set to "0%"), not the job's mean
            jobs.append(job)
        elif job is not None and len(cells) >= 2 and indent > depth0:  # reportseff: a node, then its GPUs
            trailing = dict(zip(reversed(roles), reversed(cells[1:]), strict=False))  # the last columns
            util = _percent(trailing.get("util", ""))
            if util is None:
                continue
            name = cells[0]
            if name.isdecimal() and node is not None:
                fig = _figure(f"{job['job']} {node} (GPU {name})", util, gpus=1, elapsed=job["elapsed_s"],
                              host=node, gpu=name, of=job["job"])
                gpus_rows.append(fig)
            else:
                node = name
                fig = _figure(f"{job['job']} {name}", util, elapsed=job["elapsed_s"], host=name, of=job["job"])
                nodes.append(fig)
            if job.get("running"):
                fig["running"] = True
    close()
    return out


# --- dcgmi stats ------------------------------------------------------------------------------------------------

# dcgmi stats' Event Stats counts and Slowdown Stats shares (% of the job's time) → event kinds of the catalog
_COUNTS = {"Critical XID Errors": "xid", "Double Bit ECC Errors": "ecc", "PCIe Replay Warnings": "pcie_error"}
_SLOWDOWN = re.compile(r"^(?:Due to\s*)?-\s*(Power|Thermal|Reliability|Board Limit)\s*\(%\)$")
SLOWDOWN_MIN_PCT = 5.0  # a clock held down for under 5% of the job is within what boost management does anyway


def _dcgmi_events(block: dict[str, str], where: str, job: str, src: str, seen: set) -> list[dict]:
    """The block's error counts above 0 and its slowdown shares of at least SLOWDOWN_MIN_PCT as events (the
    slowdown shares are the job's, printed again in each GPU's block: once per reason)."""
    out = []
    for name, value in block.items():
        number = _DOUBLE.match(value.strip())
        if number is None:
            continue
        amount = float(number.group())
        if name in _COUNTS and amount > 0:
            out.append({"kind": _COUNTS[name], "host": where, "source": src,
                        "detail": f"{where}: dcgmi stats {job}: {name} {value.strip()}"})
        elif (m := _SLOWDOWN.match(name)) and amount >= SLOWDOWN_MIN_PCT and (m.group(1), amount) not in seen:
            seen.add((m.group(1), amount))
            out.append({"kind": "throttle", "host": "all GPUs", "source": src,
                        "detail": f"dcgmi stats {job}: the clocks held down by {m.group(1).lower()} "
                                  f"{amount:g}% of the job's time"})
    return out


def _box_row(line: str) -> tuple[str, str] | None:
    """`| <name> | <value> |` → (name, value), split on its bars (a regex of lazy cells goes quadratic on a long
    damaged line)."""
    s = line.strip()
    if len(s) < 2 or s[0] != "|" or s[-1] != "|" or s.count("|") != 3:
        return None
    name, value = s[1:-1].split("|")
    return name.strip(), value.strip()


def _dcgmi(lines: list[str], empty: list[str], events: list[dict], src: str) -> list[dict]:
    job = ""
    blocks: list[dict[str, str]] = []
    for line in lines:
        if m := _DCGMI_JOB.search(line):
            job = m.group(1)
        elif m := _BOX_HEAD.match(line.strip()):
            blocks.append({"_head": m.group(1), "_gpu": m.group(2) or "", "_job": job})  # the job line above it
        elif (row := _box_row(line)) and blocks:
            blocks[-1].setdefault(row[0].rstrip(" *").strip(), row[1])
    figures, seen = [], set()
    chosen = []  # per job (several `dcgmi stats -j` in one file): its per-GPU blocks, else its summary
    for job in dict.fromkeys(b["_job"] for b in blocks):
        mine = [b for b in blocks if b["_job"] == job]
        chosen += [b for b in mine if b["_gpu"]] or mine
    for b in chosen:
        job = b["_job"]
        events += _dcgmi_events(b, f"GPU {b['_gpu']}" if b["_gpu"] else "all GPUs", f"job {job}" if job else
                                b["_head"], src, seen)
        util = _AVG.search(b.get("SM Utilization (%)", ""))
        elapsed = _DOUBLE.match(b.get("Total Execution Time (sec)", ""))
        mem = re.fullmatch(r"\d+", b.get("Max GPU Memory Used (bytes)", ""))
        name = f"{job} GPU {b['_gpu']}".strip() if b["_gpu"] else (job or b["_head"])
        if util is not None:
            figures.append(_figure(name, float(util.group(1)), gpus=1 if b["_gpu"] else None,
                                   elapsed=float(elapsed.group()) if elapsed else None,
                                   mem=int(mem.group()) / 2**20 if mem and int(mem.group()) else None,
                                   host=None, gpu=b["_gpu"] or None, of=job if b["_gpu"] else None))
            continue
        procs = b.get("No. of Processes", b.get("No. of Conflicting Processes", ""))
        what = f"dcgmi stats of {'job ' + job if job else b['_head']}"
        if procs != "0" or (mem and int(mem.group())):
            empty.append(f"{what} whose {b['_head'].lower()} prints no utilization (`dcgmi stats -v` prints SM "
                         "Utilization per GPU)")
        else:
            empty.append(f"{what}{' (' + elapsed.group() + ' s)' if elapsed else ''} that recorded no process "
                         "and no GPU figure (0 processes, 0 bytes of GPU memory: DCGM's job statistics come from "
                         "NVML's accounting mode, which sees only processes started after the watches and none on "
                         "MIG devices — no measurement of the GPUs, not an idle GPU)")
    return figures
