"""The cause catalog: one record per cause the playbook can name — the only place a cause is defined.

    from playbook.knowledge.causes import CAUSES, cause
    cause("periodic_stall").fix, cause("periodic_stall").command   # "playbook report --labs 12"

Each `Cause` has an id (the hypothesis id in `playbook diagnose` JSON and the cause id in `playbook compare`), a
title, the fix, the next measurement that confirms or refutes it, the lab notebook that reproduces and fixes it and
the command that runs that lab into a report, the event kinds (`events.kind`, lower case) and step phases that
are direct measurements of it, and its kind: "cause" (diagnosis and comparison), "verdict" (healthy,
insufficient_data: what the diagnosis says when no cause wins) or "regression" (causes only a comparison of two
runs can measure; one run's diagnosis names one only where the run's own statement is a direct measurement of it,
an event kind of its own: Keras's "will use generic GPU kernel as fallback" says every step runs a slower kernel). Diagnosis (diagnosis.ranking), comparison (diagnosis.regression), simulate, the reports and the
field guide read it.
"""

from __future__ import annotations

from dataclasses import dataclass

TRIAGE_NOTEBOOK = "notebooks/01_triage.ipynb"  # the walk-through of any run: no failure mode of its own to reproduce


@dataclass(frozen=True)
class Cause:
    """One cause: see the module docstring."""

    id: str
    title: str
    fix: str
    next_step: str
    notebook: str
    event_kinds: tuple[str, ...] = ()
    phases: tuple[str, ...] = ()
    kind: str = "cause"

    @property
    def command(self) -> str:
        """The command that runs this cause's lab notebook into a report, e.g. `playbook report --labs 12`."""
        stem = self.notebook.rsplit("/", 1)[-1].split("_", 1)[0]
        return f"playbook report --labs {stem}"


CATALOG: tuple[Cause, ...] = (
    Cause(
        "healthy",
        "healthy: no finding points at a cause",
        fix="nothing to fix; keep this run's telemetry as the baseline for `playbook compare`",
        next_step="if throughput is still below expectations, record step phases (`playbook record -- ...`) and diagnose again",
        notebook=TRIAGE_NOTEBOOK,
        kind="verdict",
    ),
    Cause(
        "insufficient_data",
        "not enough data to name a cause",
        fix="record what the verdict names next (GPU utilization with clocks and power, step times, or a profiler trace) and diagnose again",
        next_step="record GPU telemetry for ≥ 10 minutes (nvidia-smi --query-gpu=timestamp,index,utilization.gpu,power.draw,power.limit,clocks.sm,clocks_event_reasons.active --format=csv -lms 1000) or the run's step phases (`playbook record -- python train.py`)",
        notebook=TRIAGE_NOTEBOOK,
        kind="verdict",
    ),
    Cause(
        "unexplained_slowdown",
        "GPU time lost to something no input explains",
        fix="record what the verdict names next, at the windows it names, and diagnose again",
        next_step="record step phases (`playbook record -- python train.py`) and GPU power and clocks while it runs slow, or a torch.profiler trace of a slow and a normal step",
        notebook=TRIAGE_NOTEBOOK,
        kind="verdict",
    ),
    Cause(
        "data_starvation",
        "input pipeline starvation (DataLoader, storage)",
        fix="more DataLoader workers with persistent_workers and prefetch_factor, pin_memory; move decoding / augmentation off the training process or pre-shard the data",
        next_step="measure time blocked in next(DataLoader) per step (playbook.probes `timed(loader)`): ≥ 5% of step time is loader-bound, ≥ 20% input-bound",
        notebook="notebooks/10_data_starvation.ipynb",
        event_kinds=("io_stall", "data_load"),
        phases=("data",),
    ),
    Cause(
        "h2d_copy",
        "slow host-to-device copies (pageable memory)",
        fix="pin host memory (pin_memory=True) and copy with non_blocking=True, prefetching the next batch to the GPU on a side stream",
        next_step="profile one step (torch.profiler) and look for 'Memcpy HtoD (Pageable -> Device)'",
        notebook="notebooks/11_h2d_copies.ipynb",
        phases=("h2d",),
    ),
    Cause(
        "periodic_stall",
        "periodic stall (checkpoint, evaluation or logging every N steps)",
        fix="asynchronous (background) or sharded checkpointing, evaluation in a separate process or less often, asynchronous logging — so no rank blocks the collective every N steps",
        next_step="log checkpoint, eval and logging step numbers (or record step phases) and compare them with the stall period",
        notebook="notebooks/12_checkpoint_eval_stalls.ipynb",
        event_kinds=("checkpoint", "checkpoint_write", "save", "eval", "evaluation", "validation", "log"),
        phases=("checkpoint", "eval", "log"),
    ),
    Cause(
        "host_sync",
        "host-device syncs inside the step (.item(), .cpu(), printing tensors)",
        fix="take .item() / .cpu() / printing of tensors out of the step loop (one copy of a whole tensor instead of one per element); keep metrics on the device and synchronise every N steps",
        next_step="profile one step and count cudaStreamSynchronize / aten::item / aten::_local_scalar_dense",
        notebook="notebooks/13_host_sync_gc.ipynb",
        event_kinds=("debug_sync",),
    ),
    Cause(
        "gc_pause",
        "Python garbage-collection pauses",
        fix="gc.freeze() after setup, then gc.disable() and gc.collect() every N steps at a point where all ranks are in step; create fewer temporary Python objects per step",
        next_step="log gc.callbacks start/stop times per step and compare them with the slow steps",
        notebook="notebooks/13_host_sync_gc.ipynb",
        event_kinds=("gc", "gc_pause", "garbage_collection"),
    ),
    Cause(
        "recompilation",
        "graph recompilations (torch.compile, XLA, jax.jit, tf.function)",
        fix="keep the compiled graph's inputs to a few shapes and types: mark dynamic dimensions (torch._dynamo.mark_dynamic) or pad to a few bucketed shapes, pass tensors rather than changing Python values (tf.function, jax.jit static arguments); fix the failing guard before raising cache_size_limit",
        next_step="run with TORCH_LOGS=recompiles to see which guard fails and on which shape (JAX: jax_log_compiles; TensorFlow: its retracing warning names the function)",
        notebook="notebooks/14_recompilation.ipynb",
        event_kinds=("compile", "recompile", "recompilation"),
    ),
    Cause(
        "collective_straggler",
        "a straggler rank the others wait for in collectives",
        fix="make the slow rank as fast as the others: move rank-specific work (checkpointing, logging, evaluation) off the training loop, balance its data, fix its host",
        next_step="record per-rank step phases (playbook record) or Kineto traces on all ranks: the rank that waits least in the collective is the straggler",
        notebook="notebooks/20_collective_stragglers.ipynb",
        event_kinds=("nccl_timeout", "collective_stall"),
        phases=("collective",),
    ),
    Cause(
        "hardware_fault",
        "a failing GPU, board or node",
        fix="drain the node, run DCGM diagnostics (dcgmi diag -r 3) and replace the failing GPU or board",
        next_step="on the named host: `dmesg | grep -i xid`, `nvidia-smi -q` (retired pages, remapped rows, PCIe replay counter), then `dcgmi diag -r 3`",
        notebook="notebooks/20_collective_stragglers.ipynb",
        event_kinds=("restart", "xid", "ecc", "gpu_lost", "pcie_fatal", "nvlink_fatal", "diag_fail"),
    ),
    Cause(
        "throttling",
        "clock throttling (power cap, thermal, HW slowdown)",
        fix="restore cooling / power delivery on the named GPU's host (airflow, fans, power capping); drain it if hardware slowdown persists",
        next_step="on the named host under load: `nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER` (clock event reasons, temperatures, power limit)",
        notebook="notebooks/20_collective_stragglers.ipynb",
        event_kinds=("throttle",),
    ),
    Cause(
        "link_degradation",
        "degraded interconnect (IB/RoCE, NVLink, PCIe)",
        fix="repair the named link: a fabric link (IB/RoCE, GPUDirect RDMA via nvidia-peermem, NCCL_IB_HCA / NCCL_SOCKET_IFNAME) so NCCL stops falling back to sockets, or a PCIe link trained below its slot (reseat the card, move it to a full-width slot, check the BIOS link speed)",
        next_step="NCCL_DEBUG=INFO on every rank: look for 'NET/Socket' instead of 'NET/IB' and for missing GDRDMA; nccl-tests all_reduce_perf across the named host",
        notebook="notebooks/20_collective_stragglers.ipynb",
        event_kinds=("network_error", "pcie_error", "pcie_downgraded"),
    ),
    Cause(
        "padding_imbalance",
        "uneven work per rank (padding, sequence lengths)",
        fix="pack sequences or bucket them by length so every rank gets the same number of real tokens per step",
        next_step="log real (non-padding) tokens per step per rank and correlate them with step time",
        notebook="notebooks/21_padding_vs_packing.ipynb",
    ),
    Cause(
        "pipeline_imbalance",
        "pipeline / producer-consumer imbalance",
        fix="rebalance the stages (split the saturated stage, add consumers), deepen the queue between producer and consumer, dispatch work to the least-loaded worker",
        next_step="log each stage's queue depth and busy time: the saturated stage is the bottleneck, the idle ones wait on it",
        notebook="notebooks/22_pipeline_imbalance.ipynb",
    ),
    Cause(
        "launch_bound",
        "kernel-launch bound (many tiny kernels)",
        fix="fewer, larger kernels: CUDA graphs or torch.compile(mode='reduce-overhead'), larger batches, fused optimizers",
        next_step="profile one step: many kernels shorter than the gaps between their launches",
        notebook="notebooks/02_observability.ipynb",
    ),
    Cause(
        "memory_pressure",
        "memory pressure (GPU allocator churn, host swapping)",
        fix="reduce allocator churn (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), keep shapes static, lower the batch or checkpoint activations; a host that swaps or OOM-kills: fewer DataLoader workers or less prefetch and pinned memory, or a larger memory limit for the job",
        next_step="log torch.cuda.memory_stats() (num_alloc_retries, reserved vs allocated) over time; for a killed process, `dmesg -T | grep -i -e oom -e killed` on its host",
        notebook=TRIAGE_NOTEBOOK,
        event_kinds=("oom", "memory_pressure", "host_oom"),
    ),
    Cause(
        "slower_compute",
        "slower compute in every step (a slower kernel, library, clock or precision: fwd/bwd/optimizer and unphased time)",
        fix="undo the change that slowed every step (library or driver version, GPU model or clocks, CPU threads, precision, model or batch size) — the linked changes name the candidates; where the framework states a fallback to a generic kernel, meet the fast kernel's conditions it names (Keras cuDNN RNNs: recurrent_dropout=0, default activations, unroll=False)",
        next_step="profile one step (torch.profiler, TensorBoard's profiler) and compare its top kernels' times with the fast path's (in a comparison: on each side); check SM clocks and throttle reasons under load (nvidia-smi -q -d PERFORMANCE)",
        notebook="notebooks/40_regression_compare.ipynb",
        # the framework stating a slower kernel for every step (Keras's "will not use cuDNN kernel ... generic GPU
        # kernel as fallback"): the run's own pace cannot show it
        event_kinds=("kernel_fallback",),
        kind="regression",
    ),
    Cause(
        "between_steps",
        "time between steps (outside the step timer)",
        fix="move what runs between steps (logging, evaluation, checkpointing, data hand-off) inside a timed phase to see it, then off the training loop",
        next_step="wrap the code between steps in Recorder phases (rec.phase('log'), ...) and compare again",
        notebook="notebooks/40_regression_compare.ipynb",
        event_kinds=("callback_slow",),  # Keras timing its own callbacks against the batch (keras_statements.py)
        phases=("gap",),
    ),
    Cause(
        # GPU time a failure or restart costs outside any step's time: the downtime until the relaunched run steps
        # again, the re-initialisation and checkpoint reload, the data fast-forward of a resume (a trainer replaying
        # the batches it had consumed), and the steps computed again since the last checkpoint (or because the
        # resumed count started below it). No other cause names it: hardware_fault is the failing device, not the
        # restart; periodic_stall the checkpoint written, not the one read back; unexplained_slowdown is what no
        # input explains, and a trainer's own "resuming from step N" line explains it (heldout42 had to label a
        # restart from scratch unexplained_slowdown for want of this id; heldout51)
        "restart_loss",
        "GPU time lost to a failure or restart (downtime, reload, data fast-forward, steps computed again)",
        fix="checkpoint often enough that a restart loses little (asynchronous or in-memory checkpoints), resume "
            "the data position from the checkpoint instead of replaying batches (a stateful or seekable loader; "
            "transformers' ignore_data_skip, accelerate's skip_first_batches), restore the step count with the "
            "weights, give long rank-0 work before the first collective a longer process-group timeout, and let "
            "preemption signals save and requeue (SIGTERM / SIGUSR1 handlers, `--requeue`)",
        next_step="time each restart: the last step before the failure, the relaunch, the checkpoint load, the first "
                  "step after; compare the step the run resumes at with the checkpoint's step",
        notebook=TRIAGE_NOTEBOOK,
        event_kinds=("resume", "worker_restart"),
    ),
    Cause(
        # GPUs the job holds and gives no work for the whole run: allocated (and often holding the memory a
        # framework reserves on every visible GPU) but idle at every observation — the program started on fewer GPUs
        # than the job asked for (one process where DDP wanted one per GPU, a shard or device list naming fewer,
        # CUDA_VISIBLE_DEVICES narrowed), a scheduler binding that hides the GPU from its task, or the model left on
        # the CPU. Not pipeline_imbalance: a stage of a pipeline works in turns (idle while it waits on a busier
        # stage, busy when its input comes), an unused GPU never works (heldout58's job reports at 0% over the whole
        # job and heldout59's GPUs idle beyond the devices a trainer shards over had to borrow
        # unexplained_slowdown and pipeline_imbalance for want of this id)
        "unused_gpus",
        "GPUs held but not used (allocated, idle all run)",
        fix="use the GPUs held — one process per GPU (DistributedDataParallel via torchrun --nproc_per_node=N, "
            "MirroredStrategy over all devices, a trainer's devices / gpus setting), the device ids and "
            "CUDA_VISIBLE_DEVICES each process sees checked against the GPUs allocated, the model and its batches "
            "actually moved to `cuda` — or request only the GPUs the program uses, so that others can",
        next_step="during the run, per GPU: `nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv "
                  "-l 1` beside the job's own device print (each process's CUDA_VISIBLE_DEVICES, "
                  "torch.cuda.device_count(), the device of a parameter, the trainer's device summary): a GPU "
                  "allocated and at 0% while the others work is one the program never started on",
        notebook=TRIAGE_NOTEBOOK,
    ),
    Cause(
        "workload_change",
        "work per step changed",
        fix="compare runs with the same work per step, or judge them by throughput only",
        next_step="log tokens per step on both runs",
        notebook="notebooks/40_regression_compare.ipynb",
        kind="regression",
    ),
)
CAUSES: dict[str, Cause] = {c.id: c for c in CATALOG}
DIAGNOSIS_IDS: tuple[str, ...] = tuple(c.id for c in CATALOG if c.kind != "regression" or c.event_kinds)
EVENT_KIND_CAUSE: dict[str, str] = {k: c.id for c in CATALOG for k in c.event_kinds}
PHASE_CAUSE: dict[str, str] = {p: c.id for c in CATALOG for p in c.phases}


def cause(cause_id: str) -> Cause:
    """The catalog record for `cause_id` (KeyError naming the known ids when unknown)."""
    try:
        return CAUSES[cause_id]
    except KeyError:
        raise KeyError(f"unknown cause {cause_id!r}; known: {', '.join(CAUSES)}") from None


def cause_of_event(kind: str) -> str | None:
    """The cause an event kind measures directly (case-insensitive), None when it measures none."""
    return EVENT_KIND_CAUSE.get(str(kind).strip().lower())


# What-if accounting (playbook.analysis.accounting): the causes that can explain each kind of lost time, in the
# order a diagnosis prefers them when the evidence is equal. A bucket goes to the best-ranked of its candidates
# that the findings support (diagnosis.attribution), to the cause of an event or phase measured at its own steps and
# windows first, and stays "unexplained" otherwise.
BUCKET_CAUSES: dict[str, tuple[str, ...]] = {
    # a slow step every N steps: a checkpoint/eval/log on a schedule, a loader refill, GC on a fixed allocation
    # cycle; or the optimizer step of gradient accumulation (benign, with the optimizer phase as evidence)
    "recurring_slow": ("periodic_stall", "data_starvation", "gc_pause", "recompilation", "collective_straggler"),
    # one-off stalls: a recompile, a GC, a checkpoint, a slow read, a peer that was late
    "stalls": ("recompilation", "gc_pause", "periodic_stall", "data_starvation", "collective_straggler",
               "hardware_fault"),
    # steps slower than the run's best pace for a stretch (a level shift, a creep as a device heats, a slow phase
    # of the run): a throttled or failing device, a new straggler, allocator pressure
    "slow_stretches": ("throttling", "hardware_fault", "collective_straggler", "memory_pressure"),
    # time between the timed steps: logging, evaluation, data hand-off the timer does not cover
    "outside_timer": ("between_steps", "periodic_stall", "data_starvation"),
    # pipelined stages at different paces: the faster ones wait
    "stage_imbalance": ("pipeline_imbalance",),
    # one rank slower than its peers on the same work, step after step (analysis/rank_waits.py): the straggler's own
    # share of the loss, beside its peers' wait for it
    "slow_rank": ("collective_straggler", "hardware_fault", "throttling"),
    # all GPUs below their busy level together: something every rank waits on (and any cause host activity measured
    # at the drops supports: diagnosis.attribution)
    "fleet_drops": ("periodic_stall", "data_starvation", "host_sync", "gc_pause", "collective_straggler",
                    "recompilation", "link_degradation", "throttling"),
    # one GPU idle or below its peers at the same moments: a starved stage, a straggler's peers, a dead worker; or a
    # GPU the job holds and never gives work — where the job says so (its shard devices, diagnosis/analyzers/
    # unused_gpus.py): telemetry alone keeps the stage's reading
    "idle_gpu": ("pipeline_imbalance", "collective_straggler", "data_starvation", "hardware_fault", "unused_gpus"),
    # GPUs dropping each on its own schedule: per-rank input pipelines, uneven work, stages waiting on each other
    "gpu_drops": ("data_starvation", "padding_imbalance", "pipeline_imbalance", "collective_straggler"),
    "underused_gpu": ("pipeline_imbalance", "collective_straggler", "padding_imbalance", "data_starvation",
                      "throttling"),
    "lost_gpu": ("hardware_fault",),
    # a steady low level: input, syncs, launches, communication — telemetry alone cannot tell
    "steady_idle": ("data_starvation", "host_sync", "launch_bound", "collective_straggler", "h2d_copy"),
    # utilization without power: kernels spinning in a collective while a peer is late
    "busy_wait": ("collective_straggler", "link_degradation", "pipeline_imbalance"),
    "slow_clock": ("throttling", "hardware_fault"),
    # the GPU idle inside profiled steps (a torch.profiler table's kernel time against the steps' wall time): the
    # host did not keep it fed — syncs, the loader, launches, copies
    "profile_idle": ("host_sync", "data_starvation", "launch_bound", "h2d_copy", "collective_straggler"),
    # a job's GPUs idle by its accounting figures (sacct, seff): no time axis, so any of a steady low level's causes
    "job_idle": ("data_starvation", "host_sync", "launch_bound", "collective_straggler", "h2d_copy"),
    # a job's GPUs under 1% over the whole job (a job report's figure per GPU, node or job): allocated, never used
    # — the program not started on them; the figure is the measurement (diagnosis.attribution)
    "unused_gpus": ("unused_gpus",),
}
# Waiting phases that no cause lists in its `phases`: a queue wait is a stage waiting on another
PHASE_FALLBACK: dict[str, str] = {"blocked": "pipeline_imbalance", "wait": "pipeline_imbalance",
                                  "waiting": "pipeline_imbalance", "idle": "pipeline_imbalance",
                                  "queue": "pipeline_imbalance", "queue_wait": "pipeline_imbalance",
                                  "sync": "host_sync", "barrier": "collective_straggler", "d2h": "host_sync",
                                  # the hand-over between a trainer and a rollout engine (readers/step_log/handoff.py)
                                  "handoff": "pipeline_imbalance",
                                  # a batch held by its longest sample (readers/step_log/sample_tail.py): uneven work
                                  "tail": "padding_imbalance"}
# Causes utilization cannot see: a throttled, failing or memory-starved GPU still runs a kernel all the time (100%
# utilization at a fraction of its clock), and a slow link stretches kernels that read busy. On the GPU-time basis a
# finding for one of these outranks "healthy" even when the utilization accounting shows no loss. So does a slower
# kernel in every step that the framework states (slower_compute from one run's kernel_fallback statement): it reads
# busy and slows the run's own pace with it.
UTILIZATION_BLIND: tuple[str, ...] = ("throttling", "hardware_fault", "link_degradation", "memory_pressure",
                                      "slower_compute")
# Events that state a condition every later step runs under, printed once (a debugging mode switched on, a slower
# kernel chosen when the model was built): a standing cost, never a moment however few of them a log holds
STANDING_EVENT_KINDS: tuple[str, ...] = ("debug_sync", "kernel_fallback")
# Events that are findings by themselves, whatever time they cost: the log states the fault (the readers' event
# lexicon, readers/event_lexicon.py, names the kind). Confidence that the event means its cause: the driver's own
# fault report (Xid, ECC, a GPU lost) 0.9; a watchdog timeout names a collective some rank never reached (a
# straggler or a hang) 0.7; an out-of-memory error is memory pressure 0.8; a clock slowdown report 0.8.
FAULT_EVENTS: dict[str, float] = {"xid": 0.9, "ecc": 0.9, "gpu_lost": 0.95, "nccl_timeout": 0.7, "oom": 0.8,
                                  "throttle": 0.8,
                                  # an IB transport error is the link's, or a peer that died (its QP stops
                                  # answering alike): not higher than a watchdog timeout
                                  "network_error": 0.7,
                                  # the host's OOM killer, a pod evicted for memory, shared memory exhausted: the
                                  # kernel or the scheduler states it; a fatal PCIe error takes the device off the
                                  # bus; a corrected one is a link retrying (harmless when rare); an NFS server not
                                  # answering stalls every read of the input pipeline
                                  "host_oom": 0.8, "pcie_fatal": 0.9, "pcie_error": 0.6, "io_stall": 0.7,
                                  # DCGM's own hardware or stress test failed on the GPU (NVIDIA's runbook: rerun,
                                  # then RMA); the kernel states a PCIe link trained below what both ends can do
                                  # (a downtrained link, or a slower switch: either way less bandwidth)
                                  "diag_fail": 0.85, "pcie_downgraded": 0.6, "nvlink_fatal": 0.9,
                                  # a debugging mode the framework says is on and slows every step (anomaly
                                  # detection, synchronous launches): every step pays it, so the run's own pace
                                  # cannot show the loss — the statement is the evidence
                                  "debug_sync": 0.9,
                                  # the allocator's own count of mallocs it retried after flushing its cache
                                  # (torch's num_alloc_retries as torchtitan logs it; DeepSpeed's "allocator cache
                                  # flushes ... detrimental to performance"): fragmentation near the memory limit
                                  # stated, its cost not — a rare retry is as harmless as a corrected PCIe error
                                  "memory_pressure": 0.6,
                                  # a collective library's own report naming the ranks that did not submit a
                                  # collective the others have waited in for over its check time (Horovod's
                                  # coordinator holds every other rank's request and none from them:
                                  # readers/rank_reports.py) — the cause's definition stated outright, as the
                                  # driver's own fault report is (0.9); a watchdog timeout (0.7) names no rank and
                                  # may also be a link that failed mid-collective
                                  "collective_stall": 0.9,
                                  # Keras stating that a layer runs the generic kernel, not cuDNN's, in every
                                  # step (readers/keras_statements.py): the slower kernel is stated, its cost not
                                  "kernel_fallback": 0.7}
# Fault events logged by the ranks that waited, not by the one they waited for (PyTorch's NCCL watchdog reports the
# collective it gave up on from every rank that reached it): their ranks are not named as the culprits
WAITERS_EVENTS: frozenset[str] = frozenset({"nccl_timeout"})
# Xid codes that report the application's own error (a bad memory access, a killed context), not the hardware
# (NVIDIA's Xid catalog: 13 graphics engine exception, 31 memory page fault, 43 GPU stopped processing, 45
# preemptive cleanup, 68 video processor exception)
APPLICATION_XIDS: frozenset[int] = frozenset({13, 31, 43, 45, 68})
# Events that end a run when nothing follows them (the last thing its logs say), each with the words the verdict
# uses: "The run ended on <words> (<the line>)". A kind that names a cause is preferred to a bare death
# (worker_failed) among those after the last step: the OOM kill, not the worker it killed.
ENDING_EVENTS: dict[str, str] = {
    "host_oom": "the host running out of memory (fewer DataLoader workers or a smaller prefetch_factor, or more "
                "memory or /dev/shm for the job)",
    "gpu_lost": "a GPU the driver lost (off the bus, failed to start, or to be reset)", "pcie_fatal": "a fatal PCIe error",
    "input_exhausted": "the input running out of data (Keras stops training when the dataset yields fewer batches "
                       "than steps_per_epoch x epochs: repeat() the dataset or lower steps_per_epoch)",
    "oom": "a CUDA out-of-memory error", "gpu_error": "a CUDA error", "nccl_timeout": "a collective timeout",
    "nccl_error": "an NCCL error", "job_cancelled": "the scheduler cancelling the job",
    "worker_failed": "a process that died (a signal or an exit code, see the line)",
}
