"""Analyzer: GPUs a job holds and does not use (analysis.device_use) — GPUs beyond the devices the job says it
shards over, idle and holding its memory; a GPU idle with most of its memory held beside working ones at the one
moment a snapshot shows; one process's first GPU fuller than its others and nearly full (DataParallel's master GPU). The notes of
what the inputs say of their devices (a GPU not used, tasks without a GPU) go to the diagnosis' warnings.

unused_gpus or pipeline_imbalance — the rule: a GPU is unused when the evidence says the job never gives it work —
the job's own statement of the devices it computes on (a shard list naming fewer GPUs than it holds) with the GPU
idle at every poll of the recording, a job report's whole-job figure under 1% (accounting.gpu_time), or, at one
moment, an idle GPU holding memory with no process of its own on it. A pipeline's stage works in turns: idle while
it waits on a busier stage of the same data flow, busy when its input comes — so idle time interleaved with work
(antiphase, turns, staggered swings), a queue's or a stage's own timer, or a worker process of its own on the idle
GPU (device_use.own_worker: a rank or a stage between its steps) is not an unused GPU. The reason: an unused GPU's
fix is to start the program on it or give it back; a waiting stage's is to rebalance the stages — and only time
(polls over the run) or the job's own statements separate them; one moment cannot."""

from __future__ import annotations

import numpy as np

from playbook.analysis import device_use
from playbook.analysis.gpu_sharing import HELD_SHARE, held_idle, per_gpu
from playbook.analysis.job_members import IDLE_PCT
from playbook.analysis.series import gpu_series
from playbook.diagnosis.analyzers.base import Analyzer
from playbook.diagnosis.context import Run
from playbook.diagnosis.findings import Finding
from playbook.diagnosis.ranking import impact
from playbook.knowledge import ids
from playbook.model.schema import GPU_MODELS

STATED_CONFIDENCE = 0.8  # the job's own statement of its shard devices, the telemetry showing the rest idle
# one snapshot: an idle GPU holding most of its memory beside a working one, with no process of its own (the
# memory is that of a process working on another GPU: TensorFlow's reservation of every visible GPU, or no process
# list), is what a GPU the job holds and gives no work looks like — and also a stage of one process's model split
# over the GPUs between its turns: supporting evidence that names the GPU, never enough alone to outrank
# insufficient_data. A GPU whose own process idles at that moment (one process per GPU) is a rank or a stage
# between its steps: no reading (heldout4 pytorch_36285, a fast DDP run's rank 0 at 0% in its one snapshot)
SNAPSHOT_CONFIDENCE = 0.45
SNAPSHOT_POLLS = 3
# over time: a GPU idle at every one of THROUGHOUT_POLLS or more polls, holding most of its memory, while a peer
# works at as many — a stage of one data flow works in turns (a stage busy a share p of the time is caught idle at
# all n polls with chance (1 - p)^n: 3% for p = 0.3, n = 10), a straggler's peers wait on it rather than it on
# them, data starvation idles every GPU alike, a lost GPU holds no memory: what is left is a GPU the job holds and
# never gives work (heldout63 keras512: TensorFlow reserves every visible GPU, Keras' multi_gpu_model computes on
# one). Below STATED_CONFIDENCE: the job's own device print is not there to say so
THROUGHOUT_POLLS = 10
# ... and only where the GPUs that work do so at one level (each working GPU's mean at least EVEN of the busiest's):
# working GPUs at uneven levels beside the idle one (20 %, 50 %, 75 % and 0 %: heldout34 thred_26) are a split
# of the work that gives some GPUs little and one none — rebalancing's (pipeline_imbalance), not a GPU left out
EVEN = 0.6
# ... and not where every working GPU reads SPIN_PCT or more at every poll: NCCL's kernels spin at 100 % while they
# wait on a peer stuck in host code (a hung rank: 0 %, its memory held) — a hang, not a GPU left out
SPIN_PCT = 99.0
# ... and not where the idle GPU's memory moves by STEADY_MEM of its size or more over the recording: a process on
# it allocates and frees as its inputs come and go — a stage starved between its rare turns (the seed case's
# drafters at 0-16 % with 34-81 GB that moves), not memory the job reserved and left (TensorFlow's reservation and
# a context read the same MiB at every poll: heldout63 keras512's 15470)
STEADY_MEM = 0.05
THROUGHOUT_CONFIDENCE = 0.75  # above pipeline_imbalance's 0.7 for the same idle GPU: no turns were seen
# a trainer's own accelerator summary saying a GPU is available and not used (Lightning's `GPU available: True,
# used: False`): the run computes on the CPU beside a GPU it could use — nearly always a device setting left at its
# default (heldout59 detoxify66); not 0.8: a CPU run can be meant (a debugging run on a GPU machine)
CPU_RUN_CONFIDENCE = 0.7
NEXT_CPU = ("set the trainer's device (Lightning: accelerator='gpu', devices=N; the script's --device / --gpus "
            "option), check that the model's parameters are on `cuda` after setup; or run where no GPU is held")
SKEW_CONFIDENCE = 0.6
# ... and only where the first GPU is nearly full (its memory at the snapshot over the GPU's total): a fuller first
# GPU with room left caps nothing — the batch can still grow (one process over GPUs split by device_map="auto"
# holding a third of each is no memory pressure); where the input states no total (a Processes section alone) the
# skew is all there is to read
SKEW_FULL = 0.8
NEXT_SHARDS = ("count the devices the trainer shards each batch over (its device print) against the GPUs the job "
               "holds, and watch each GPU during a step (`nvidia-smi --query-gpu=index,utilization.gpu,memory.used "
               "--format=csv -l 1`): with every GPU given a share (tensor2tensor --worker_gpu=N, MirroredStrategy "
               "over all GPUs, one DistributedDataParallel rank per GPU) each one works")
NEXT_SKEW = ("DistributedDataParallel (one process per GPU) spreads the memory and the work evenly; with DataParallel, "
             "compute the loss inside the module's forward so the outputs are not gathered on the first GPU")


class UnusedGpus(Analyzer):
    """GPUs held and not used, one process's fuller first GPU (analysis.device_use)."""

    name = ids.UNUSED_GPUS

    def analyze(self, run: Run) -> None:
        run.warnings.extend(n for n in device_use.said(run.bundle) if n not in run.warnings)
        sharing = per_gpu(run.bundle)
        for name, line in device_use.cpu_runs(run.bundle)[:1]:
            run.findings.append(Finding(
                ids.UNUSED_GPUS, f"{name}:{line}: the trainer says a GPU is available and not used ('GPU available: "
                "True, used: False'): the run computes on the CPU and its GPU does nothing for it",
                confidence=CPU_RUN_CONFIDENCE, next_step=NEXT_CPU, source=self.name))
        tele = run.bundle.telemetry
        whole = run.series if run.series is not None else (
            gpu_series(tele, models=run.bundle.meta.get(GPU_MODELS)) if len(tele) else None)
        totals = _totals(whole)
        for s in device_use.first_device_skew(sharing):
            if s["first_mib"] < SKEW_FULL * totals.get(s["first"], 0.0):
                continue  # room left on the first GPU (a process list alone, no total: the skew is all there is)
            others = s["others_mib"]
            med = float(np.median(others))
            run.findings.append(Finding(
                ids.MEMORY_PRESSURE, f"process {s['pid']} computes on {len(s['gpus'])} GPUs from one process "
                f"(DataParallel, or a model split over them) and holds {s['first_mib']:.0f} MiB on {s['first']} "
                f"against {min(others):.0f}-{max(others):.0f} MiB on its others ({s['first_mib'] / med:.1f}x their "
                "median): the first GPU also keeps the gathered outputs, the loss and the master weights — it fills "
                "first and caps the batch of all", confidence=SKEW_CONFIDENCE,
                weight=impact(1.0 - med / s["first_mib"]), names=(s["first"],), next_step=NEXT_SKEW,
                source=self.name))
        if whole is None or not len(whole) or "util_pct" not in whole.values:
            return
        if found := device_use.unused_held(run.bundle, whole):
            held = found["held"]
            each = "; ".join(f"{h['gpu']} {h['mem_mib']:.0f} MiB" for h in held[:6])
            n = len(found["busy"]) + len(held)
            run.findings.append(Finding(
                ids.UNUSED_GPUS, f"the job shards each batch over {found['shards']} device"
                f"{'s' * (found['shards'] != 1)} and holds {n} GPUs: {each} idle at every poll with the job's memory "
                f"reserved — held and given no work ({', '.join(found['busy'][:4])} does it all)",
                confidence=STATED_CONFIDENCE, weight=impact(len(held) / n), lost_share=len(held) / n,
                names=tuple(h["gpu"] for h in held), next_step=NEXT_SHARDS, source=self.name))
            return
        util = whole.values["util_pct"]
        if not (util[util == util] > IDLE_PCT).any():
            return  # no GPU works: memory held without work is held_memory's
        per = [np.asarray(util[whole.offsets[g]:whole.offsets[g + 1]], dtype=float) for g in range(len(whole.ids))]
        works = [np.nanmax(u, initial=0.0) > IDLE_PCT for u in per]
        busy = [gid for gid, w in zip(whole.ids, works, strict=True) if w]
        idle_held = [h for h in held_idle(whole) if device_use.own_worker(sharing, h["gpu"], busy) is None]
        worked = max((int(np.sum(u > IDLE_PCT)) for u in per), default=0)
        means = [float(np.nanmean(u)) for u, w in zip(per, works, strict=True) if w]
        spin = all(_spins(u) for u, w in zip(per, works, strict=True) if w)
        if worked >= THROUGHOUT_POLLS and not spin and min(means, default=0.0) >= EVEN * max(means, default=0.0) and (
                held := [h for h in idle_held if h["polls"] >= THROUGHOUT_POLLS and h["share"] >= HELD_SHARE
                         and h["mem_swing_mib"] < STEADY_MEM * h["total_mib"]]):
            each = "; ".join(f"{h['gpu']} {h['mem_mib']:.0f} of {h['total_mib']:.0f} MiB" for h in held[:6])
            run.findings.append(Finding(
                ids.UNUSED_GPUS, f"{each} idle at every one of {min(h['polls'] for h in held)}+ polls with most of "
                f"its memory held, while {', '.join(busy[:4])} worked at {worked}: GPUs the job holds and never "
                "gives work (a pipeline stage would be caught working at some poll)", confidence=THROUGHOUT_CONFIDENCE,
                weight=impact(len(held) / len(whole.ids)), lost_share=len(held) / len(whole.ids),
                names=tuple(h["gpu"] for h in held), next_step=NEXT_SHARDS, source=self.name))
            return
        held = [h for h in idle_held if h["polls"] < SNAPSHOT_POLLS and h["share"] >= HELD_SHARE]
        if held:
            each = "; ".join(f"{h['gpu']} {h['mem_mib']:.0f} of {h['total_mib']:.0f} MiB ({h['share']:.0%})"
                             for h in held[:6])
            run.findings.append(Finding(
                ids.UNUSED_GPUS, f"at the moment shown, {each} idle with its memory held while another GPU "
                "works, and no process of its own listed on it: a GPU the job holds and gives no work — or a stage of a "
                "model split over the GPUs between its turns; one moment cannot tell them apart",
                confidence=SNAPSHOT_CONFIDENCE, weight=impact(1.0), names=tuple(h["gpu"] for h in held),
                source=self.name))  # next: the catalog's measurement (per-GPU polls beside the job's device print)


def _totals(series) -> dict[str, float]:
    """Each GPU's memory total (MiB) in `series` (none without the column)."""
    if series is None or not len(series) or "mem_total_mib" not in series.values:
        return {}
    top = series.quantiles("mem_total_mib", (100,))[0]  # each GPU's largest finite value (NaN: none)
    return {gid: float(t) for gid, t in zip(series.ids, top, strict=True) if t > 0}


def _spins(util: np.ndarray) -> bool:
    """Whether a GPU reads SPIN_PCT or more at every poll from its first at SPIN_PCT on, at THROUGHOUT_POLLS of
    them or more: a collective spinning on a hung peer after the rank's start-up (loading reads 0-30 % first)."""
    at = np.flatnonzero(util >= SPIN_PCT)
    rest = util[at[0]:] if len(at) else util[:0]
    return len(rest) >= THROUGHOUT_POLLS and bool(np.nanmin(rest) >= SPIN_PCT)
