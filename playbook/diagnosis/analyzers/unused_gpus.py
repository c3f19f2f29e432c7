"""Analyzer: GPUs a job holds and does not use (analysis.device_use) — GPUs beyond the devices the job says it
shards over, idle and holding its memory; a GPU idle with most of its memory held beside working ones at the one
moment a snapshot shows; one process's first GPU fuller than its others (DataParallel's master GPU). The notes of
what the inputs say of their devices (a GPU not used, tasks without a GPU) go to the diagnosis' warnings."""

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

STATED_CONFIDENCE = 0.8  # the job's own statement of its shard devices, the telemetry showing the rest idle
# one snapshot: an idle GPU holding most of its memory beside a working one is what a GPU the job holds and gives
# no work looks like — and also a pipeline's stage between its turns, or a rank at its step's edge: supporting
# evidence that names the GPU, never enough alone to outrank insufficient_data
SNAPSHOT_CONFIDENCE = 0.45
SNAPSHOT_POLLS = 3
SKEW_CONFIDENCE = 0.6
NEXT_SHARDS = ("give every GPU the job holds a share of each batch (tensor2tensor --worker_gpu=N, "
               "tf.distribute.MirroredStrategy over all GPUs, one DistributedDataParallel rank per GPU), or hold only "
               "the GPUs it uses (CUDA_VISIBLE_DEVICES) so that others can")
NEXT_SKEW = ("DistributedDataParallel (one process per GPU) spreads the memory and the work evenly; with DataParallel, "
             "compute the loss inside the module's forward so the outputs are not gathered on the first GPU")


class UnusedGpus(Analyzer):
    """GPUs held and not used, one process's fuller first GPU (analysis.device_use)."""

    name = "unused_gpus"

    def analyze(self, run: Run) -> None:
        run.warnings.extend(n for n in device_use.said(run.bundle) if n not in run.warnings)
        for s in device_use.first_device_skew(per_gpu(run.bundle)):
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
        tele = run.bundle.telemetry
        whole = run.series if run.series is not None else (gpu_series(tele) if len(tele) else None)
        if whole is None or not len(whole) or "util_pct" not in whole.values:
            return
        if found := device_use.unused_held(run.bundle, whole):
            held = found["held"]
            each = "; ".join(f"{h['gpu']} {h['mem_mib']:.0f} MiB" for h in held[:6])
            n = len(found["busy"]) + len(held)
            run.findings.append(Finding(
                ids.PIPELINE_IMBALANCE, f"the job shards each batch over {found['shards']} device"
                f"{'s' * (found['shards'] != 1)} and holds {n} GPUs: {each} idle at every poll with the job's memory "
                f"reserved — held and given no work ({', '.join(found['busy'][:4])} does it all)",
                confidence=STATED_CONFIDENCE, weight=impact(len(held) / n), lost_share=len(held) / n,
                names=tuple(h["gpu"] for h in held), next_step=NEXT_SHARDS, source=self.name))
            return
        util = whole.values["util_pct"]
        if not (util[util == util] > IDLE_PCT).any():
            return  # no GPU works: memory held without work is held_memory's
        held = [h for h in held_idle(whole) if h["polls"] < SNAPSHOT_POLLS and h["share"] >= HELD_SHARE]
        if held:
            each = "; ".join(f"{h['gpu']} {h['mem_mib']:.0f} of {h['total_mib']:.0f} MiB ({h['share']:.0%})"
                             for h in held[:6])
            run.findings.append(Finding(
                ids.PIPELINE_IMBALANCE, f"at the moment shown, {each} idle with its memory held while another GPU "
                "works: a GPU the job holds and gives no work — or a pipeline stage between its turns; one moment "
                "cannot tell them apart", confidence=SNAPSHOT_CONFIDENCE, weight=impact(1.0),
                names=tuple(h["gpu"] for h in held), next_step=NEXT_SHARDS, source=self.name))
