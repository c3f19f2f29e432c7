"""Signatures → causes: how strongly each signature an analyzer reports (diagnosis.findings.Finding.signature) points
at each cause, 0-1, with the reason for each row. The ranker (diagnosis.ranking) multiplies a finding's confidence
and weight by these; the evaluation (tests/diagnosis/test_eval_confusion.py) is the check — change a value only with
its confusion matrix in hand."""

from __future__ import annotations

SPECIFICITY: dict[str, dict[str, float]] = {
    # Each row: how strongly one signature points at each cause (0-1), with the reason. The values are ordinal
    # judgements from how often each cause produces the signature in the labs and public reports; the evaluation
    # (tests/diagnosis/test_eval_confusion.py) is the check — change one only with its confusion matrix in hand.
    # a shared drop on a schedule: checkpoint/eval/log every N steps mostly, a shard/shuffle refill sometimes
    "synchronized_periodic": {"periodic_stall": 0.6, "data_starvation": 0.35},
    # the same every few seconds (under from_telemetry.LOADER_CADENCE_S): too often for checkpoint or eval every N
    # steps; a loader queue running dry every num_workers batches, or a refill; a log line's sync sometimes
    "synchronized_periodic_fast": {"data_starvation": 0.6, "periodic_stall": 0.3},
    # the same at a slower period with the GPUs low for most of each cycle: work is the minority of the cycle, so the
    # drop is the normal state (input arriving in bursts) more than a save or evaluation every N steps
    "synchronized_periodic_idle": {"data_starvation": 0.55, "periodic_stall": 0.35},
    # a shared drop at random: the input pipeline running dry mostly; syncs and GC pauses also hit all ranks
    "synchronized_irregular": {"data_starvation": 0.55, "host_sync": 0.2, "gc_pause": 0.2},
    # fewer than 3 drops: neither a period nor irregularity can be tested — the two readings share the support
    "synchronized_untimed": {"periodic_stall": 0.4, "data_starvation": 0.4},
    # each GPU on its own schedule: per-rank input pipelines, or uneven work per rank
    "independent_swings": {"data_starvation": 0.45, "padding_imbalance": 0.35},
    # per-node drops: node-local input/storage first, then the node's link or cooling
    "host_groups": {"data_starvation": 0.45, "link_degradation": 0.3, "throttling": 0.2},
    # busy while the other group idles and back: producer/consumer stages, little else does this
    "antiphase": {"pipeline_imbalance": 0.85},
    # a steady low level that is bursts between whole empty poll windows (analysis.idle_windows): the host hands
    # over work with seconds between — the input pipeline mostly; a large synchronous copy from pageable memory
    # also leaves windows without a kernel (copies are not kernels)
    "idle_windows": {"data_starvation": 0.6, "h2d_copy": 0.15},
    # GPUs busy one at a time, far less often together than independent schedules: stages of one model run in
    # sequence (naive model parallelism); a rank waiting in a collective reads busy, so data-parallel waits do not
    # look like this (analysis.oscillation.turns). Likely, not confirmed: work handed to one GPU at a time by
    # something else (requests served round-robin at a concurrency of one, trials run one after another) looks the same
    "turn_taking": {"pipeline_imbalance": 0.7},
    # the same on GPUs of different models: data-parallel replicas of unequal speed whose waits idle the faster one
    # (a host-side synchronisation; tensorpack#447, two unequal cards "when one GPU is 100%, the other is 0%"), or
    # stages of one model on mismatched cards. Possible only: replicas that start each step together overlap at
    # least as often as chance, so turns need the waits to idle both sides in alternation (one anecdote, no trace)
    "turn_taking_unequal": {"collective_straggler": 0.45, "pipeline_imbalance": 0.35},
    # one period, each GPU's dip a fixed step after the previous GPU's: the bubbles of a pipeline schedule
    "staggered_swings": {"pipeline_imbalance": 0.85},
    "idle_and_saturated": {"pipeline_imbalance": 0.7},  # one side saturated, the other starved: a bottleneck stage
    "idle_only": {"pipeline_imbalance": 0.45, "data_starvation": 0.25},  # some GPUs low, none saturated: weaker
    # peers busy at low power while one GPU idles: they wait for it in a collective — a direct measurement
    "waiting_straggler": {"collective_straggler": 0.9},
    "straggler_no_power": {"collective_straggler": 0.6},  # the same, without power to show the peers wait
    "straggler_periodic": {"periodic_stall": 0.75},  # one rank's own periodic work (rank-0 checkpoint, eval)
    # an idle laggard: its host is late (rank-specific work, data skew); hardware needs device evidence
    "straggler_persistent": {"collective_straggler": 0.6, "padding_imbalance": 0.2},
    "rotating": {"padding_imbalance": 0.5, "data_starvation": 0.3},  # the data decides who is slow
    "throttle_bits": {"throttling": 0.9},  # the driver says why the clock is held down: a direct measurement
    # a low busy clock without reason bits: throttling mostly, a degraded board sometimes
    "slow_clock": {"throttling": 0.75, "hardware_fault": 0.3},
    # busy at a low clock with power at the enforced limit: the limit holds the clock down
    "power_cap": {"throttling": 0.9},
    "lost": {"hardware_fault": 0.9},  # errors then silence while peers report: Xid-like loss of the device
    "host_lost": {"hardware_fault": 0.4},  # a whole node silent: the node died, or only its logging did
    "memory_full": {"memory_pressure": 0.55},  # near-full memory makes the allocator retry, not always
    "memory_swings": {"memory_pressure": 0.35, "recompilation": 0.15},  # churn; new shapes allocate new buffers
    "periodic_slow_events": {"periodic_stall": 0.95},  # slow steps on a lattice with a stall event at them
    "dips_checkpoint_eval": {"periodic_stall": 0.9},  # checkpoint/eval events overlap the drops
    "dips_logging": {"periodic_stall": 0.6, "host_sync": 0.2},  # logging stalls, or the .item() it does
    "dips_gc": {"gc_pause": 0.9},
    "dips_recompile": {"recompilation": 0.9},
    "dips_restart": {"hardware_fault": 0.3},  # restarts follow faults, but also preemption and code errors
    "host_writes_in_dips": {"periodic_stall": 0.6},  # disk writes during the drops: checkpoint or log writing
    "host_reads_in_dips": {"data_starvation": 0.55},  # disk reads during the drops: input being read
    "host_cpu_in_dips": {"data_starvation": 0.45, "gc_pause": 0.15},  # CPU-bound loader, or Python work
    # every core busy while the GPUs idle: the loop waits on host work, which in a training loop is the input
    # pipeline's (decoding, augmentation, its workers' threads oversubscribing the cores, other programs' load)
    "host_cpu_saturated": {"data_starvation": 0.6, "gc_pause": 0.1},
    # CPUs idle waiting on I/O during the drops: input blocked on storage, network filesystems included (their
    # reads show in iowait, not in the block-device counters)
    "host_iowait_in_dips": {"data_starvation": 0.55},
    # kernels running most of the time over mostly idle SMs (DCGM SM activity < 0.5 while utilization is high):
    # grids too small for the GPU — small batches, many tiny kernels
    "sm_underfilled": {"launch_bound": 0.6},
    # the host swaps while the GPUs wait: its memory is short (too many loader workers or prefetched batches, a
    # page cache squeezed out) and the work waits on swap I/O (vmstat si/so, sar -W, node_vmstat_pswp*). One
    # explanation, where iowait or reads have several: weighted above them, and the disk traffic and iowait swap
    # accounts for are not counted again (evidence/from_coincidence._swap_symptoms)
    "host_swap_in_dips": {"memory_pressure": 0.7},
    "host_net_in_dips": {"periodic_stall": 0.3, "data_starvation": 0.3},  # checkpoints or data on the network
    "periodic_slow": {"periodic_stall": 0.8},  # slow every N steps without a logged marker
    "gc": {"gc_pause": 0.9},  # GC events cover the slow steps' extra time: a direct measurement
    "creep": {"throttling": 0.55, "memory_pressure": 0.25},  # slowing over minutes: heat, or fragmentation
    # a jump that stays: a device slowing (throttle), a straggler appearing, or a changed workload or code path
    "level_shift": {"throttling": 0.4, "collective_straggler": 0.35, "hardware_fault": 0.15},
    "recompile": {"recompilation": 0.9},  # recompilation events logged at the slow steps
    "phase_data": {"data_starvation": 1.0},  # time blocked on the loader, measured: the cause itself
    "phase_h2d": {"h2d_copy": 0.8},  # copy time measured; part of it may be a sync hiding in the copy
    "phase_stall": {"periodic_stall": 0.7},  # checkpoint/eval/log phases measured, without a lattice
    "trace_finding": {},  # the finding's own hypothesis, at 1.0
    "straggler_hardware": {"hardware_fault": 0.45, "throttling": 0.3},  # same rank, slower compute: the device
    "straggler_software": {"padding_imbalance": 0.35, "data_starvation": 0.25},  # rotates or late host-side
    # GPU idle inside profiled steps that no specific trace analysis accounts for, by HTA's idle category:
    # waiting for the host to issue work (the host is busy elsewhere: input, Python, a GC), short gaps between
    # back-to-back kernels (launch overhead), or waits on work already issued (syncs, copies, other streams)
    "trace_idle_host": {"data_starvation": 0.4, "launch_bound": 0.25, "host_sync": 0.15, "gc_pause": 0.1},
    "trace_idle_kernel": {"launch_bound": 0.8},
    "trace_idle_other": {"host_sync": 0.35, "h2d_copy": 0.25, "collective_straggler": 0.2},
    # the same host wait in a trace of GPU activity alone (no CPU ops, annotations or Python frames recorded): the
    # launch rate and syncs still show in the runtime calls, but an input wait or a GC pause cannot be seen, so
    # trace_idle_host's support for them is dropped rather than guessed
    "trace_idle_unobserved": {"launch_bound": 0.25, "host_sync": 0.15},
    # GPU idle in a trace that records the host's annotations but no launch calls (XProf traces of JAX,
    # TensorFlow, PyTorch/XLA): which side the gaps wait on is unknown, so the support is spread over both
    "trace_idle_unsplit": {"data_starvation": 0.25, "launch_bound": 0.2, "host_sync": 0.2, "gc_pause": 0.05},
}
