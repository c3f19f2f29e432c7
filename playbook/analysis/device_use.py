"""Whether a job uses the GPUs it holds: what it says of its devices (readers/device_lines.py, schema.DEVICE_USE) and
what one process's memory on several GPUs shows (the Processes section, analysis.gpu_sharing).

- A GPU available and not used: a trainer's own accelerator summary (`GPU available: True, used: False`) says the
  run computes on the CPU; its GPU does nothing for it, whatever else the input shows.
- Fewer shards than GPUs held: a trainer that states the devices it shards each batch over (`datashard_devices`,
  MirroredStrategy's devices) names K devices; a GPU of the recording idle at every poll while holding memory
  (at least HELD_MIB: a framework that reserves every visible GPU's memory up front, TensorFlow's default), beside
  at most K working ones, is held by the job and given no work — unused_held().
- Tasks without a GPU, tasks on one GPU: each task's `nvidia-smi -L` lists the GPUs it can see: a task that sees
  none computes without one (or fails) although the job asked for GPUs; tasks that each see one GPU, the same one
  (one UUID), share it — which is what a job asking for one GPU for all its tasks gets, and a collision where each task was
  meant to have its own.
- The devices a framework creates (TensorFlow's device lines, DirectML's adapter): the GPUs the process can place
  work on, not the ones it computes on — said as they are (no finding: which device works is not in those lines),
  and where the only device created is a processor's own graphics (device_lines.integrated: Intel UHD / Iris, AMD
  `Radeon(TM) Graphics`), that the run computes on an integrated GPU: host memory, a fraction of a discrete GPU's
  compute — with DirectML's own count of the adapters it found (1: no discrete GPU it could use instead).
- One process on several GPUs, its first one fuller: a process listed on several GPUs computes on all of them
  from one process (DataParallel, a model split over the GPUs); where its first GPU holds FIRST_SKEW times the
  median of its others, and they hold real memory (OTHERS_MIN of the first's: not the empty contexts every rank of
  a DistributedDataParallel job opens on each visible GPU), the first GPU carries the gathered outputs, the loss
  and the master weights: it fills first and caps the batch of all — first_device_skew().
"""

from __future__ import annotations

import numpy as np

from playbook.analysis.gpu_sharing import per_gpu
from playbook.analysis.job_members import IDLE_PCT
from playbook.analysis.series import GpuSeries
from playbook.model import schema

HELD_MIB = 2048.0  # memory an idle GPU holds to count as held by the job (job_members leaves out GPUs below 2 GiB)
FIRST_SKEW = 1.5
OTHERS_MIN = 0.2


def sections(bundle: schema.Bundle) -> list[tuple[str, dict]]:
    """(input, what it says of its devices) per input that says anything."""
    return schema.meta_sections(bundle.meta, schema.DEVICE_USE)


def shard_count(bundle: schema.Bundle) -> int | None:
    """The most GPUs any stated shard list names (a `''` entry: the one default device, a GPU where one is there),
    None when no input states one."""
    counts = [sum(1 for d in sh["devices"] if "cpu" not in d.lower()) for _, s in sections(bundle)
              for sh in s.get("shards") or []]
    return max(counts) if counts else None


def unused_held(bundle: schema.Bundle, series: GpuSeries) -> dict | None:
    """{"shards", "busy", "held": [{gpu, mem_mib, total_mib}]} when the job states K shard devices and GPUs of
    `series` idle at every poll hold at least HELD_MIB beside at most K working GPUs (module docstring); else None."""
    k = shard_count(bundle)
    if k is None or not len(series) or not {"util_pct", "mem_used_mib"} <= set(series.values):
        return None
    busy, held = [], []
    for g, gid in enumerate(series.ids):
        a, b = series.offsets[g], series.offsets[g + 1]
        util = np.asarray(series.values["util_pct"][a:b], dtype=float)
        mem = np.asarray(series.values["mem_used_mib"][a:b], dtype=float)
        ok = np.isfinite(util)
        if not ok.any():
            continue
        if np.max(util[ok]) > IDLE_PCT:
            busy.append(gid)
        elif np.isfinite(mem).any() and np.nanmin(mem) >= HELD_MIB:
            total = series.values.get("mem_total_mib")
            tot = float(np.nanmax(np.asarray(total[a:b], dtype=float))) if total is not None else float("nan")
            held.append({"gpu": gid, "mem_mib": float(np.nanmin(mem)), "total_mib": tot})
    if not held or not busy or len(busy) > k:
        return None
    return {"shards": k, "busy": busy, "held": held}


def own_worker(sharing: dict[str, dict], idle: str, busy: list[str]) -> str | None:
    """The pid of a process the Processes section lists on the `idle` GPU as its home — listed on no `busy` GPU
    of the same host, or holding there under OTHERS_MIN of its memory on `idle` (the small context a
    DistributedDataParallel rank opens on another GPU) — None when there is none (no process list, or the idle
    GPU's memory belongs to a process that holds as much on a working GPU: one process over several GPUs).

    A GPU with a worker of its own is in use: one process per GPU (DDP ranks, a pipeline's stage processes) idle at
    one moment is a rank between steps or a stage between its turns, not a GPU the job holds and gives no work
    (heldout4 pytorch_36285: a DDP rank's GPU at 0% in the one snapshot of a run its reporter calls fast)."""
    host = idle.rpartition(":")[0]
    for row in (sharing.get(idle) or {}).get("processes") or []:
        pid, mib = row.get("pid"), row.get("mem_mib")
        if not pid or mib is None or mib <= 0:
            continue
        there = sum(float(r.get("mem_mib") or 0.0) for g in busy if g.rpartition(":")[0] == host
                    for r in (sharing.get(g) or {}).get("processes") or [] if r.get("pid") == pid)
        if there < OTHERS_MIN * float(mib):
            return str(pid)
    return None


def first_device_skew(sharing: dict[str, dict]) -> list[dict]:
    """[{pid, gpus, first, first_mib, others_mib}] for each process listed on several GPUs of a host whose first
    GPU holds FIRST_SKEW times the median of its others, they holding at least OTHERS_MIN of the first's."""
    per: dict[tuple[str, str], list[tuple[int, str, float]]] = {}
    for gid, entry in sharing.items():
        host, _, index = gid.rpartition(":")
        for row in entry["processes"]:
            if row.get("pid") and row.get("mem_mib") is not None and index.isdigit():
                per.setdefault((host, str(row["pid"])), []).append((int(index), gid, float(row["mem_mib"])))
    out = []
    for (_, pid), rows in per.items():
        if len({r[0] for r in rows}) < 2:
            continue
        rows.sort()
        first, others = rows[0], [r[2] for r in rows[1:]]
        med = float(np.median(others))
        if first[2] > 0 and med > 0 and first[2] >= FIRST_SKEW * med and min(others) >= OTHERS_MIN * first[2]:
            out.append({"pid": pid, "gpus": [r[1] for r in rows], "first": first[1], "first_mib": first[2],
                        "others_mib": others})
    return out


def notes(bundle: schema.Bundle) -> list[str]:
    """For `playbook info`: one line per process whose first GPU holds more than its others, then said()."""
    return [f"process {s['pid']} on {len(s['gpus'])} GPUs: {s['first_mib']:.0f} MiB on {s['first']}, "
            f"{min(s['others_mib']):.0f}-{max(s['others_mib']):.0f} MiB on the others (one process computing on "
            "several GPUs: its first GPU keeps the gathered outputs and the master weights)"
            for s in first_device_skew(per_gpu(bundle))] + said(bundle)


def cpu_runs(bundle: schema.Bundle) -> list[tuple[str, int]]:
    """(input name, line) per accelerator summary saying a GPU is available and not used."""
    return [(src.rsplit("/", 1)[-1], a["line"]) for src, s in sections(bundle) for a in s.get("accelerators") or []
            if a["kind"] == "GPU" and a["available"] and not a["used"]]


def said(bundle: schema.Bundle) -> list[str]:
    """One line per statement of device use the inputs make: a GPU not used, the shard devices, tasks' listings."""
    out = []
    for src, s in sections(bundle):
        name = src.rsplit("/", 1)[-1]
        for a in s.get("accelerators") or []:
            if a["kind"] == "GPU" and a["available"] and not a["used"]:
                out.append(f"{name}:{a['line']}: the trainer says a GPU is available and not used ('GPU available: "
                           "True, used: False'): this run computes on the CPU, its GPU does nothing for it")
            elif a["kind"] == "GPU" and not a["available"]:
                out.append(f"{name}:{a['line']}: the trainer found no GPU ('GPU available: False'): it computes on "
                           "the CPU")
        for sh in (s.get("shards") or [])[:1]:
            devs = ", ".join(d or "the default device" for d in sh["devices"][:8])
            out.append(f"{name}:{sh['line']}: the trainer shards each batch over {len(sh['devices'])} device"
                       f"{'s' * (len(sh['devices']) != 1)} ({devs})")
        for r in s.get("listings") or []:
            out += _listing(name, r)
        out += _created(name, s.get("created") or [], s.get("adapters"))
    return out


def _created(name: str, made: list[dict], adapters: int | None) -> list[str]:
    """What the devices a framework creates say (module docstring)."""
    if not made:
        return []
    listed = ", ".join(f"{d['index']}: {d['name']}" + (" (integrated)" if d["integrated"] else "") for d in made[:8])
    framework = made[0]["framework"]
    if all(d["integrated"] for d in made):
        found = (f"; DirectML found {adapters} compatible adapter{'s' * (adapters != 1)}" if adapters else "")
        alone = " — no discrete GPU beside it" if adapters == len(made) else ""
        return [f"{name}:{made[0]['line']}: {framework} computes on an integrated GPU ({listed}){found}{alone}: the "
                "processor's own graphics, in host memory with a fraction of a discrete GPU's compute — steps slower "
                "than a discrete GPU's and, for small or sequential models (an LSTM's many small steps), than the "
                "CPU's"]
    if len(made) > 1:
        return [f"{name}:{made[0]['line']}: {framework} creates devices on {len(made)} GPUs ({listed}): the ones it "
                "can place work on — by default all of it goes to the first (device 0) unless the program places it "
                "(tf.device, CUDA_VISIBLE_DEVICES); which GPU computes is not in these lines"]
    return [f"{name}:{made[0]['line']}: {framework} creates one device ({listed})"]


def _listing(name: str, tasks: list[dict]) -> list[str]:
    out = []
    labelled = [t for t in tasks if t["task"]]
    if not labelled:
        return out
    blind = [t["task"] for t in labelled if not t["gpus"]]
    if blind:
        out.append(f"{name}: nvidia-smi -L of {len(labelled)} tasks: {len(blind)} see no GPU ({', '.join(blind[:8])})"
                   " — those tasks compute without one, or fail: the job has fewer GPUs at work than it asked for")
    seen: dict[str, list[str]] = {}
    # a task confined to one GPU (its listing names that one): tasks that each see several — the node's GPUs without
    # a per-task binding, each rank picking its own by LOCAL_RANK — share none of them by the listing alone
    for t in labelled if all(len(t["gpus"]) <= 1 for t in labelled) else []:
        for g in t["gpus"]:
            seen.setdefault(g["uuid"], []).append(t["task"])
    for uuid, who in seen.items():
        if len(who) > 1:
            out.append(f"{name}: {len(who)} tasks see the same GPU ({uuid[:12]}…: {', '.join(who[:8])}): they share "
                       "one GPU — as asked where the job requested one GPU for all its tasks, a collision where each "
                       "task was to have its own")
    return out
