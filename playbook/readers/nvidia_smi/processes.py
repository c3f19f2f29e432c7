"""Who shares a GPU, as `nvidia-smi`'s table lists it: the Processes section, the MIG devices section and each GPU's
compute mode — kept per input in Bundle.meta (SHARING + the input's path; schema.GPU_PROCESSES gets each GPU's
process ids) for analysis.gpu_sharing.

The Processes section (nvidia-smi(1); one row per process and GPU, the GI / CI columns from driver 450 on):

    |  GPU       PID   Type   Process name                             Usage      |
    |    0      1611      G   /usr/lib/xorg/Xorg                           453MiB |
    |  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
    |    0   N/A  N/A     10734      C   ...-x86_64-Release/abcdefgh/foo_bar         160MiB |

Type C is a compute context, G a graphics one (a display server), C+G both, M / M+C an MPS server; the memory is
`N/A` where the driver cannot tell it (Windows WDDM). A process that exited but still holds its context shows as
`Unknown Error` (older drivers) or `[Not Found]`. The section may stand alone in a file (a paste of it, no GPU rows).

MIG devices (when MIG is on, the GPU's GPU-Util reads N/A): one block per slice, its first line
`| GPU GI CI MIG | used MiB / total MiB | SMs ... |`.

Compute mode, the last word(s) of a GPU's values line: `Default`, `E. Process` (one context at a time: another
process's context makes the GPU unavailable to a job), `E. Thread`, `Prohibited`.
"""

from __future__ import annotations

import re

from playbook.model import schema

PREFIX = schema.GPU_SHARING  # Bundle.meta key prefix: per input, {"host", "processes", "mig", "modes"}

_HEADER = re.compile(r"^\|\s*GPU\s+(?:GI\s+CI\s+)?PID\s+Type\s+Process name")
_PROCESSES = re.compile(r"^\|\s*Processes:")
_MIG = re.compile(r"^\|\s*MIG devices:")
# | gpu [gi ci] pid type name memory |: bounded pieces, the name the only free run (lazy, anchored on the memory)
_ROW = re.compile(r"^\|\s*(\d{1,4})\s+(?:(N/A|\d{1,4})\s+(N/A|\d{1,4})\s+)?(\d{1,10})\s+([CGM](?:\+[CGM]){0,2})\s+"
                  r"(.{0,300}?)\s+(?:(\d{1,9})\s*MiB|N/A)\s*\|$")
_SLICE = re.compile(r"^\|\s*(\d{1,4})\s+(\d{1,4})\s+(\d{1,4})\s+(\d{1,4})\s*\|\s*(\d{1,9})\s*MiB\s*/\s*(\d{1,9})\s*MiB"
                    r"\s*\|\s*(\d{1,5})\b")
_MODES = ("E. Process", "E. Thread", "Prohibited", "Default")


def sniff(lines: list[str]) -> bool:
    """True when a Processes section's column header and at least one of its rows are among `lines`."""
    header = any(_HEADER.match(ln.strip()) for ln in lines)
    return header and any(_ROW.match(ln.strip()) for ln in lines)


def process_row(line: str) -> dict | None:
    """One Processes row as {gpu, pid, type, name, mem_mib (None: N/A), gi, ci}, None when `line` is not one."""
    m = _ROW.match(line.strip())
    if m is None:
        return None
    gpu, gi, ci, pid, kind, name, mem = m.groups()
    return {"gpu": int(gpu), "pid": pid, "type": kind, "name": name.strip(), "mem_mib": float(mem) if mem else None,
            "gi": None if gi in (None, "N/A") else int(gi), "ci": None if ci in (None, "N/A") else int(ci)}


def compute_mode(values_line: str) -> str | None:
    """The compute mode a GPU's values line ends with (`| ... |  98%   E. Process |`), None when it names none."""
    cells = values_line.split("|")
    last = " ".join(cells[3].split()[1:]) if len(cells) > 3 else ""
    return next((mode for mode in _MODES if last.startswith(mode)), None)


def sections(lines: list[str]) -> tuple[list[dict], list[dict]]:
    """(process rows, MIG slices) of every Processes and MIG devices section in `lines`, each row with the
    snapshot it belongs to (`snapshot`: the count of Processes / MIG headers seen before it, from 0)."""
    procs: list[dict] = []
    slices: list[dict] = []
    where = None
    snap = {"p": -1, "m": -1}
    for raw in lines:
        line = raw.strip()
        if _PROCESSES.match(line):
            where, snap["p"] = "p", snap["p"] + 1
            continue
        if _MIG.match(line):
            where, snap["m"] = "m", snap["m"] + 1
            continue
        if not line.startswith("|"):
            if line and not line.startswith("+"):
                where = None
            continue
        if where is None and _HEADER.match(line):  # the section's header pasted without its title line
            where, snap["p"] = "p", snap["p"] + 1
            continue
        if where == "p" and (row := process_row(line)) is not None:
            procs.append({**row, "snapshot": snap["p"]})
        elif where == "m" and (s := _SLICE.match(line)):
            slices.append({"gpu": int(s.group(1)), "gi": int(s.group(2)), "ci": int(s.group(3)),
                           "dev": int(s.group(4)), "mem_used_mib": float(s.group(5)),
                           "mem_total_mib": float(s.group(6)), "sm": int(s.group(7)), "snapshot": snap["m"]})
    return procs, slices


def last_snapshot(rows: list[dict]) -> list[dict]:
    """The rows of the last snapshot (a log of tables lists the processes of every poll: the last is the state),
    each host's own where a row names its host (gpustat: several hosts' queries in one file)."""
    last: dict[object, int] = {}
    for r in rows:
        last[r.get("host")] = max(last.get(r.get("host"), r["snapshot"]), r["snapshot"])
    return [r for r in rows if r["snapshot"] == last[r.get("host")]]


def attach(bundle: schema.Bundle, src: str, host: str, procs: list[dict], slices: list[dict],
           modes: dict[int, str]) -> schema.Bundle:
    """`bundle` with what the input says of each GPU's sharing (the last snapshot's processes and MIG slices, the
    compute modes; a process row's own host, where it names one, before `host`) in its meta, and schema.GPU_PROCESSES filled with each GPU's process ids (where listed)."""
    procs, slices = last_snapshot(procs), last_snapshot(slices)
    if not (procs or slices or any(m != "Default" for m in modes.values())):
        return bundle
    bundle.meta[PREFIX + src] = {"host": host, "processes": procs, "mig": slices,
                                 "modes": {str(g): m for g, m in modes.items()}}
    with_pid = [row for row in procs if row.get("pid")]
    listed = bundle.meta.setdefault(schema.GPU_PROCESSES, {}) if with_pid else {}
    for row in with_pid:
        pids = listed.setdefault(schema.gpu_id(row.get("host") or host, row["gpu"]), [])
        if row["pid"] not in pids:
            pids.append(row["pid"])
    return bundle
