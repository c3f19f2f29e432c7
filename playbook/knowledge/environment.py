"""Environment → causes: which causes a changed setting, version or piece of hardware can produce, for regression
triage (diagnosis.regression.environment_diff): by the item's name (config keys, command options, environment variables)
and for the items whose meaning is known, with a link weight."""

from __future__ import annotations

# Which causes a changed item can produce, by the item's name (config keys, command options, env variables).
KEYWORD_LINKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"compil|dynamo|inductor|triton|dynamic|shape|bucket|pad|warm|backend|graph|cache",
     ("recompilation",)),
    (r"worker|loader|prefetch|decode|shuffle|buffer|dataset|data(?!_?parallel)|augment|num_proc|read|storage",
     ("data_starvation",)),
    (r"pin|non_blocking|h2d|copy|offload", ("h2d_copy",)),  # an offload moves state across PCIe every step
    (r"checkpoint|ckpt|save|eval|log_(every|interval|steps)|logging", ("periodic_stall",)),
    (r"(^|[^a-z])gc|garbage", ("gc_pause",)),
    (r"nccl|gloo|world|nodes|ranks|ddp|fsdp|allreduce|all_reduce|bucket_cap|overlap|comm|master_|ucx|^fi_|socket|"
     r"ib_|hca", ("collective_straggler",)),
    (r"sync|\bitem|print", ("host_sync",)),
    (r"alloc|memory|expandable", ("memory_pressure", "slower_compute")),
    (r"thread|omp_|mkl_|kmp_|batch|hidden|d_model|layers|seq|len|precision|dtype|amp|bf16|fp16|tf32|model|"
     r"device|cuda_|cublas|cudnn", ("slower_compute",)),
)
# Items whose meaning is known: (causes, link weight). Versions can change anything, so they link weakly.
FIXED_LINKS: dict[str, tuple[tuple[str, ...], float]] = {
    "python": (("gc_pause", "slower_compute", "data_starvation"), 0.5),
    "torch": (("slower_compute", "recompilation", "collective_straggler", "memory_pressure"), 0.6),
    "torch CUDA": (("slower_compute",), 0.6),
    "cuDNN": (("slower_compute",), 0.6),
    "NCCL": (("collective_straggler", "link_degradation"), 0.8),
    "driver": (("slower_compute", "throttling"), 0.5),
    "CUDA driver": (("slower_compute",), 0.5),
    "GPUs": (("slower_compute", "throttling", "h2d_copy"), 0.8),
    "CPU count": (("data_starvation", "slower_compute"), 0.8),
    "CPU affinity": (("data_starvation", "slower_compute"), 0.8),
    "compile cache (inductor)": (("recompilation",), 1.0),
    "compile cache (triton)": (("recompilation",), 1.0),
    "compile cache (inductor) location": (("recompilation",), 0.5),
    "compile cache (triton) location": (("recompilation",), 0.5),
    "git commit": (("slower_compute", "data_starvation", "recompilation", "periodic_stall", "host_sync"), 0.4),
    "ranks": (("collective_straggler", "slower_compute"), 0.8),
    "hosts": (("collective_straggler", "link_degradation"), 0.8),
    "power limit (measured)": (("throttling", "slower_compute"), 1.0),
    "PCIe link (measured)": (("h2d_copy", "link_degradation"), 1.0),
    "GPU memory (measured)": (("memory_pressure", "slower_compute"), 0.6),
    "package triton": (("recompilation", "slower_compute"), 0.6),
}
