"""The lexicon of log lines that name a cause outright, wherever they appear in a log: one table of (needles,
pattern, event kind), each row citing where its text comes from. readers/lines.py turns a matching line into an
event (time, rank and latest step of the line) and counts the ERROR/WARNING lines no row explains.

Event kinds follow playbook/knowledge/causes.py where a cause lists them (xid, gpu_lost, pcie_fatal, nvlink_fatal → hardware_fault,
oom, host_oom → memory_pressure, pcie_error, pcie_downgraded → link_degradation, io_stall, data_load → data_starvation, recompile →
recompilation, checkpoint / eval → periodic_stall, gc → gc_pause); the others measure no cause (gpu_error,
nccl_error, nccl_warn, worker_failed: a process that died; job_cancelled: the scheduler ended the job; hung_task: a
task the kernel saw blocked). A row may name the host, the rank and the time the line is about (`host`, `rank`,
`at` groups: srun's "node7: task 3", Slurm's "CANCELLED AT 2018-08-19T16:30:21").

The checkpoint / evaluation / GC markers, whose lines lines.py merges into one event per section, live here too.
Every pattern is linear (no nested quantifiers); a row is tried only when one of its lower-case needles is in the
line, so a line without any needle costs one scan.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from playbook.knowledge import ids as cause_ids


class Entry(NamedTuple):
    needles: tuple[str, ...]  # lower-case substrings, one of which the line must hold before the pattern is tried
    pattern: re.Pattern
    kind: str


class Hit(NamedTuple):
    """What a row reads from a line: its event kind, and the rank (-1), host ("") and time text ("") it names."""

    kind: str
    rank: int = -1
    host: str = ""
    at: str = ""


def _row(needles: tuple[str, ...], pattern: str, kind: str) -> Entry:
    return Entry(needles, re.compile(pattern, re.IGNORECASE), kind)


# First match wins: the specific rows before the generic ones (an OOM is a CUDA error too).
LEXICON: tuple[Entry, ...] = (
    # PyTorch c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate 2.00 GiB ..." raised as
    # torch.OutOfMemoryError (torch.cuda.OutOfMemoryError before 2.5); ROCm builds say "HIP out of memory";
    # cudaErrorMemoryAllocation prints "CUDA error: out of memory"
    _row(("out of memory", "outofmemoryerror"),
         r"\b(?:CUDA|HIP) out of memory|CUDA error: out of memory|OutOfMemoryError", "oom"),
    # an out-of-memory stated at a step, as run notes and per-step memory profiles put it (`step 5 OOM`, `-> step 5:
    # OOM`, `OOM at iteration 120`, `OOMed in epoch 3`): the acronym in capitals, placed at a numbered step; `to
    # avoid OOM`, `CUDA OOMs: 0` (memory_summary's counter) place no OOM at a step
    _row(("oom",), r"\b(?:step|iter|iteration|epoch|batch)\s?[=#:]?\s?\d{1,12}\s?[:,-]?\s?(?-i:OOM)\b(?!s)|"
                   r"\b(?-i:OOM)(?:ed|'d)?\s(?:at|in|on|during)\s(?:step|iter|iteration|epoch|batch)\s?[=#:]?\s?\d",
         "oom"),
    # CUDA runtime cudaErrorECCUncorrectable: "uncorrectable ECC error encountered" (c10's "CUDA error: ..."): a kind
    # of its own, as it names failing memory where another CUDA error may be the program's own bug
    _row(("ecc",), r"uncorrectable ECC error|double[- ]bit ECC", "ecc"),
    # CUDA runtime cudaErrorNvlinkUncorrectable: "uncorrectable NVLink error detected during the execution" (the
    # driver's Xid 74): a GPU's NVLink failed, not the program (MIC-DKFZ/nnUNet#1519, pytorch/pytorch#58155)
    _row(("nvlink error",), r"uncorrectable NVLink error|CUDA_ERROR_NVLINK_UNCORRECTABLE|cudaErrorNvlinkUncorrectable",
         "nvlink_fatal"),
    # NVIDIA driver kernel log: "NVRM: Xid (PCI:0000:3b:00): 79, pid=1122, GPU has fallen off the bus."
    _row(("xid",), r"\bXid\b\s*(?:\([^)]{0,40}\))?\s*:?\s*\d+", "xid"),
    # NVIDIA driver: "NVRM: GPU 0000:01:00.0: GPU has fallen off the bus." (without an Xid on the line), and newer
    # drivers' three-line "NVRM: The NVIDIA GPU 0000:b3:00.0 / NVRM: (PCI ID: ...) installed in this system has /
    # NVRM: fallen off the bus and is not responding to commands." (NVIDIA/NVSentinel#155)
    _row(("fallen off the bus",), r"fallen off the bus", "gpu_lost"),
    # nvidia-smi (NVML) when the GPU no longer answers: "Unable to determine the device handle for GPU0000:03:00.0:
    # Unknown Error" (rwth-i6/returnn#1486), "...: GPU is lost.  Reboot the system to recover this GPU"
    _row(("device handle for gpu",), r"Unable to determine the device handle for GPU\s?[0-9A-Fa-f:.]{4,20}: "
                                     r"(?:Unknown Error|GPU is lost)", "gpu_lost"),
    # The driver cannot bring a GPU up or must reset it before any further use: the GPU is out of the job as surely
    # as one off the bus. NVIDIA kernel module (nv.c): "NVRM: GPU %04x:%02x:%02x.%x: RmInitAdapter failed!
    # (0x%x:0x%x:%d)" then "NVRM: rm_init_adapter failed, device minor number %d" (the bus id before it on newer
    # drivers); its status codes (nvstatuscodes.h) "Reset required [NV_ERR_RESET_REQUIRED] (0x00000062)" as the RM's
    # assertions print them ("nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED]
    # (0x00000062) returned from ..."; scitix/sichek#51: the GPU then fails every CUDA context), and the GSP's "GPU
    # marked for reset" after back-to-back RPC timeouts. An init failure is also what a driver that does not match
    # the card's firmware prints: the verdict's next step (nvidia-smi -q, dcgmi diag) tells the two apart
    _row(("rminitadapter failed", "rm_init_adapter failed", "nv_err_reset_required", "marked for reset"),
         r"\bRmInitAdapter failed!|\brm_init_adapter failed\b|\[NV_ERR_RESET_REQUIRED\]|\bGPU marked for reset\b",
         "gpu_lost"),
    # Linux drivers/pci/pcie/aer.c: "PCIe Bus Error: severity=%s, type=%s, (%s)", severity "Corrected" /
    # "Uncorrected (Non-Fatal)" / "Uncorrected (Fatal)" (newer kernels: "Correctable", "Uncorrectable (...)"):
    # a fatal one takes the device off the bus (rwth-i6/returnn#1500), the others are a link retrying (pop-os#3363)
    _row(("pcie bus error",), r"PCIe Bus Error: (?:severity=)?Uncorrect\w{0,4} \(Fatal\)", "pcie_fatal"),
    _row(("pcie bus error",), r"PCIe Bus Error: (?:severity=)?(?:Correct|Uncorrect)", "pcie_error"),
    # Linux drivers/pci/pci.c __pcie_print_link_status: "%u.%03u Gb/s available PCIe bandwidth, limited by %s x%d link
    # at %s (capable of %u.%03u Gb/s with %s x%d link)": a device's link trained below what it can do
    # (stas00/ml-engineering compute/accelerator/nvidia/debug.md: a gen5 GPU behind a gen4 switch, half its bandwidth)
    _row(("available pcie bandwidth",), r"available PCIe bandwidth, limited by [\d.]+ GT/s PCIe x\d+ link at "
                                        r"\S+ \(capable of", "pcie_downgraded"),
    # The host's memory ran out. Linux mm/oom_kill.c: "Out of memory: Killed process 25315 (python3) total-vm:..."
    # (cgroup: "Memory cgroup out of memory: Killed process ..."; before 5.x "Out of memory: Kill process 25635
    # (python) score 974 or sacrifice child"); Slurm's task/cgroup plugin: "slurmstepd: error: Detected 1 oom_kill
    # event in StepId=11300781.0" (older "Detected 1 oom-kill event(s) in step 997857.batch cgroup"), srun's "srun:
    # error: sdumont6156: task 0: Out Of Memory"; Kubernetes' kubelet eviction ("The node was low on resource:
    # memory.", "The node had condition: [MemoryPressure].") and container status "OOMKilled"; PyTorch's DataLoader
    # out of shared memory (torch/csrc/DataLoader.cpp: "ERROR: Unexpected bus error encountered in worker. This might
    # be caused by insufficient shared memory (shm)", torch/utils/data/dataloader.py: "... killed by signal: Bus
    # error. It is possible that dataloader's workers are out of shared memory.")
    _row(("out of memory: kill", "oom_kill event", "oom-kill event", "out of memory", "low on resource: memory",
          "memorypressure", "oomkilled", "shared memory"),
         r"\bout of memory: Kill(?:ed)? process \d|\bDetected \d{1,9} oom[-_]kill event|"
         r"\bsrun: error: (?P<host>[\w.-]{1,63}): tasks? (?P<rank>\d{1,7})[\d,-]{0,40}: Out Of Memory|"
         r"\bThe node was low on resource: memory\b|\bThe node had condition: \[MemoryPressure\]|\bOOMKilled\b|"
         r"insufficient shared memory \(shm\)|out of shared memory", "host_oom"),
    # Slurm's slurmstepd when the scheduler ends the job: "*** JOB 3884617 ON node023 CANCELLED AT
    # 2018-08-19T16:30:21 DUE TO TIME LIMIT ***" (before Slurm 17: "*** JOB 830329 CANCELLED AT 2018-08-06T17:21:44
    # DUE TO TIME LIMIT on n447 ***"); also DUE TO PREEMPTION / NODE FAILURE, or none (scancel)
    _row(("cancelled at",), r"\*\*\* (?:JOB|STEP) [\w.]{1,40} (?:ON (?P<host>[\w.-]{1,63}) )?CANCELLED AT "
                            r"(?P<at>[\dT:-]{10,19})(?: DUE TO [A-Z ]{1,40}?)?(?: on (?P<host_old>[\w.-]{1,63}))? "
                            r"\*\*\*", "job_cancelled"),
    # Ray's raylet (src/ray/raylet/local_object_manager.cc): "Spilled 34829 MiB, 68 objects, write throughput 712
    # MiB/s." (Ray's driver prints it behind "(raylet, ip=10.0.33.149) "): the node's object store overflowed its
    # memory and wrote blocks to disk, to read them back later — the readers wait on the disk (ray-project/ray#33307:
    # the bulk executor "got a lot of spilling, and it's the slowest, about 2x slower"). Its status line too: "Spilled
    # 1234 MiB, 12 objects, avg write throughput 400 MiB/s" (ray memory / the dashboard's summary)
    _row(("spilled",), r"(?:\(raylet, ip=(?P<host>[\w.:-]{1,63})\)\s*)?\bSpilled \d{1,12} MiB, \d{1,12} objects, "
                       r"(?:avg )?write throughput \d", cause_ids.MEMORY_PRESSURE),
    # Linux kernel/hung_task.c: "INFO: task nvc:[driver]:5403 blocked for more than 120 seconds."
    _row(("blocked for more than",), r"\btask .{1,80}? blocked for more than \d{1,9} seconds", "hung_task"),
    # Linux net/sunrpc/clnt.c: "nfs: server fileserver not responding, still trying" (an NFS read stalls until
    # the server answers: the input pipeline waits)
    _row(("not responding",), r"\bserver \S{1,100} not responding, (?:still trying|timed out)", "io_stall"),
    # The trainer itself (re)loading its data mid-run: OpenNMT-py's inputter "Loading %s dataset from %s, number of
    # examples: %d" (one line per shard, the steps wait while it loads: OpenNMT/OpenNMT-py#1362 pastes "Loading dataset
    # from XXXX.train.0.pt" inside a 70 s longer window), fairseq's trainer "loading train data for epoch %d". A load
    # at the start times no step; one inside the run names the data as the cause of the stall at its step. No bare
    # "shard": FSDP scripts print "[rank-0] Loading shard from model_world_size_8_rank_0.pt", a checkpoint's
    _row(("loading",), r"\bloading (?:\w{1,20} )?(?:dataset|data) (?:from|for epoch)\b", "data_load"),
    # The Tacotron feeders' background thread (keithito/tacotron datasets/datafeeder.py, Rayhane-mamah/Tacotron-2
    # tacotron/feeder.py and its forks): "Generated %d batches of size %d in %.03f sec" / "Generated {} train batches
    # of size {} in {:.3f} sec": the time it took to read and pad a group of batches the trainer then dequeues
    _row(("batches of size",), r"\bGenerated \d{1,9} (?:train |test )?batches of size \d{1,7} in \d", "data_load"),
    # PyTorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: "[Rank 0] Watchdog caught collective operation
    # timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, ...) ran for 600081 milliseconds before timing out."
    _row(("watchdog caught",), r"Watchdog caught collective operation timeout", "nccl_timeout"),
    # PyTorch c10d: "NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled cuda error (run with NCCL_DEBUG=INFO ...),
    # NCCL version 2.18.1 / ncclUnhandledCudaError: Call to CUDA function failed.", "NCCL communicator was aborted"
    _row(("nccl error", "nccl communicator", "ncclunhandled", "ncclsystem", "ncclinternal", "ncclremote",
          "ncclinvalid"), r"NCCL error\b|\bnccl(?:Unhandled\w*|System|Internal|Remote|InvalidUsage)Error\b|"
                    r"NCCL communicator was aborted", "nccl_error"),
    # NCCL src/transport/net_ib.cc: a work request that failed on the wire, "NET/IB : Got completion from peer
    # 10.0.0.2<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) ..." (status 12: transport retries
    # exceeded — the link or the peer stopped answering), and the HCA's own "NET/IB : mlx5_0:1 Got async error
    # event: port error" (older: "Got async event : ..."); NCCL's IB plugins (NET/IBext, NET/IB/GIN) print the same.
    # Older NCCL worded the completion error "Got completion from peer %s with error %d, opcode ..." (2.9-2.18) and
    # "Got completion with error %d, opcode %d, len %d, vendor err %d" (<= 2.8); each is printed only when the status
    # is not IBV_WC_SUCCESS (0)
    _row(("got completion", "got async"),
         r"\bNET/IB\w*(?:/\w+)?\s*:.{0,120}?\b(?:Got completion (?:from peer \S{1,120} )?with (?:status=|error )[1-9]|"
         r"Got async(?: error)? event\b)", "network_error"),
    # NCCL src/debug.cc WARN(): "host:pid:tid [dev] NCCL WARN <message>"
    _row(("nccl warn",), r"\bNCCL WARN\b", "nccl_warn"),
    # c10/cuda/CUDAException: "CUDA error: an illegal memory access was encountered"; driver API names
    # ("CUDA_ERROR_LAUNCH_FAILED"), runtime names (cudaErrorIllegalAddress)
    _row(("cuda error", "cuda_error_", "cudaerror"), r"CUDA error: \S|\bCUDA_ERROR_[A-Z_]+|\bcudaError[A-Z]\w+",
         "gpu_error"),
    # PyTorch torch/_inductor/cudagraph_trees.py, a graph re-recorded per new shape under mode="reduce-overhead":
    # "CUDAGraph supports dynamic shapes by recording a new graph for each distinct input size. Recording too many
    # CUDAGraphs may lead to extra overhead. We have observed 51 distinct sizes. ..."
    _row(("cudagraph",), r"CUDAGraph supports dynamic shapes by recording a new graph|"
                         r"re-record(?:ing)? (?:the )?CUDA ?Graph", "recompile"),
    # DeepSpeed deepspeed/runtime/zero/stage3.py (also torch.sagemaker's FSDP): "%d pytorch allocator cache flushes
    # since last step. this happens when there is high memory pressure and is detrimental to performance."
    _row(("allocator cache flush",), r"pytorch allocator cache flushes since last step", cause_ids.MEMORY_PRESSURE),
    # PyTorch's caching allocator counts the cudaMalloc calls it had to retry after freeing its cache
    # (torch.cuda.memory_stats()["num_alloc_retries"]: fragmentation near the memory limit, each retry a synchronous
    # free and malloc); torchtitan torchtitan/tools/metrics.py prints it each logged step when above zero:
    # f"{num_retries} {device_type.upper()} memory allocation retries." ("5 CUDA memory allocation retries.")
    _row(("memory allocation retries", "num_alloc_retries"),
         r"\b[1-9]\d{0,9} [A-Z]{2,6} memory allocation retries\b|\bnum_alloc_retries\b['\"]?\s{0,3}[:=]\s{0,3}[1-9]",
         cause_ids.MEMORY_PRESSURE),
    # A debugging mode left on that makes the host wait for the device in every step (cause host_sync): PyTorch
    # torch/autograd/anomaly_mode.py, `detect_anomaly()`: "Anomaly Detection has been enabled. This mode will increase
    # the runtime and should only be enabled for debugging." (its backward checks each result for NaN on the host);
    # Lightning (#17380): "You have turned on `Trainer(detect_anomaly=True)`. This will significantly slow down
    # compute speed ..."; CUDA_LAUNCH_BLOCKING=1 in an echoed environment or command (every kernel launch waits for
    # the kernel; CUDA's docs) — but not PyTorch's hint "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"
    _row(("anomaly detection has been enabled", "detect_anomaly=true", "cuda_launch_blocking"),
         r"Anomaly Detection has been enabled|\bdetect_anomaly=True\b.{0,40}\bslow|"
         r"^(?!.*\b(?:consider|passing|might|may)\b).*\bCUDA_LAUNCH_BLOCKING\b['\"]?\]?\s{0,3}(?:=|:|set to)\s{0,3}['\"]?1\b",
         "debug_sync"),
    # Open MPI's launcher when a rank dies of a signal (orte/prte errmgr help text "...noticed that process rank %d
    # with PID %d on node %s exited on signal %d (%s)."): "mpirun noticed that process rank 7 with PID 0 on node
    # HOSTNAME exited on signal 9 (Killed)." (horovod/horovod#469) — the rank and node are the dead process's
    _row(("noticed that process rank",),
         r"\b(?:mpirun|mpiexec|orterun|prterun) noticed that process rank (?P<rank>\d{1,7}) with PID \d{1,10} on "
         r"node (?P<host>[\w.-]{1,63}) exited on signal \d{1,3}\b", "worker_failed"),
    # A process that died. PyTorch torch/distributed/elastic/multiprocessing/api.py: "failed (exitcode: -9)
    # local_rank: 0 (pid: 11127) of binary: ..." (-9 is SIGKILL, often the host's OOM killer; the rank is the
    # line's), and its ChildFailedError summary's "exitcode  : -9 (pid: 14750)" (time, host and rank on the lines
    # before: lines.py); torch/utils/data/dataloader.py: "DataLoader worker (pid 19597) is killed by signal:
    # Killed.", "DataLoader worker (pid(s) 3216) exited unexpectedly"; srun: "srun: error: node7: task 3: Exited
    # with exit code 1"; bash's report of a killed job: "/bin/bash: line 27: 318 Killed sh start.sh", "Killed"
    _row(("local_rank", "exitcode", "dataloader worker", "srun: error", "killed"),
         r"failed \(exitcode: -?\d+\) local_rank: (?P<rank>\d+)|^\s*exitcode\s*: -?\d{1,4} \(pid: \d{1,10}\)|"
         r"\bDataLoader worker \(pid(?:\(s\))? \d{1,10}(?:, \d{1,10}){0,40}\) (?:is killed by signal|exited unexpectedly)|"
         r"\bsrun: error: (?P<host>[\w.-]{1,63}): tasks? (?P<rank2>\d{1,7})[\d,-]{0,40}: (?:Exited with exit code|Killed|"
         r"Terminated|Segmentation fault|Aborted|Bus error)|\bline \d{1,7}: {1,12}\d{1,10} Killed\b|^\s*Killed\s*$",
         "worker_failed"),
    # nvidia-smi -q "Clocks Event Reasons" (formerly "Clocks Throttle Reasons") rows when active:
    # "HW Slowdown : Active", "SW Thermal Slowdown : Active", "HW Power Brake Slowdown : Active", "SW Power Cap : Active";
    # the host's CPUs (Linux arch/x86/kernel/cpu/mce/therm_throt.c): "CPU5: Core temperature above threshold, cpu
    # clock throttled (total events = 2081)"
    _row(("slowdown", "power cap", "clock throttled"), r"\b(?:HW|SW)(?: Thermal| Power Brake)? Slowdown\s*:\s*Active\b|"
                                    r"\bSW Power Cap\s*:\s*Active\b|temperature above threshold, cpu clock throttled",
         "throttle"),
)


# every needle in one pattern: most lines hold none, and are passed over with one scan
_ANY_NEEDLE = re.compile("|".join(re.escape(n) for e in LEXICON for n in e.needles))


# a command line that searches logs for the words (grep and its kin, journalctl's --grep / -g): it quotes a
# line's words as its pattern and states nothing (what the search found, if anything, follows it); a process named
# grep in a kernel line ("name=grep,", "(grep)") is no such command: the command word is followed by its arguments
_SEARCH_COMMAND = re.compile(r"(?:^|[\s|;&(`$#])[efz]?grep\s+\S|\bjournalctl\b[^|]{0,200}?(?:--grep[=\s]|\s-g\s)")


def match(body: str) -> Hit | None:
    """The event the lexicon reads from a line (kind, and the rank, host and time text the line names); None when
    no row matches, and for a command line that searches for the words."""
    low = body.lower()
    if not _ANY_NEEDLE.search(low) or _SEARCH_COMMAND.search(body):
        return None
    for entry in LEXICON:
        if any(n in low for n in entry.needles) and (m := entry.pattern.search(body)):
            g = {k: v for k, v in m.groupdict().items() if v}
            rank = g.get("rank") or g.get("rank2")
            return Hit(entry.kind, int(rank) if rank and len(rank) < 10 else -1,
                       g.get("host") or g.get("host_old") or "", g.get("at", ""))
    return None


# a checkpoint word that is not the recompute technique's name (`gradient checkpointing`, `activation_checkpointing`)
_NOT_RECOMPUTE = r"(?<!gradient )(?<!gradient_)(?<!gradient-)(?<!activation )(?<!activation_)(?<!activations )"

# Section markers (lines.py merges a run of them with no training step between into one event with a duration)
# (gradient / activation checkpointing recomputes activations in backward: the words name no save, `checkpointing to
# save GPU memory` no checkpoint written)
CHECKPOINT = re.compile(r"(sav(e|ing|ed)|writ(e|ing)|wrote)\b.{0,40}" + _NOT_RECOMPUTE + r"checkpoint|"  # llm.c: "Writing checkpoint at step"
                        + _NOT_RECOMPUTE + r"checkpoint.{0,40}\b(sav(e|ed|ing)|written|writing)|"
                        # PaddleClas' "Already save model in ./output/latest"
                        # MLX-LM: "Iter 50: Saved adapter weights to adapters/adapters.safetensors"; darknet: "Saving
                        # weights to backup/yolov4_last.weights"; BasicSR: "Saving models and training states."; Sockeye:
                        # 'Saved params/state_dict to "model/params.00001"'
                        r"\b(saving|writing) models?\b|\b(saved?|saving|writ(e|ing)|wrote) (?:[a-z]+ )?(model|weights|state|params|parameters)\b"
                        r".{0,40}\b(?:to|in)\b|"
                        r"\bsnapshotting\b.{0,40}\bto\b|"  # Caffe: "Snapshotting to binary proto file"
                        # a whole message that names a part of the training state and says it is saved (the passive,
                        # no path: LLaMA2-Accessory's `model saved`, `optimizer saved`, `rank-specific saved` — each
                        # rank's shard —, a script's `Best model saved!`); `config saved`, `results saved` name no state
                        r"^\W{0,3}(?!no )(?:[\w-]+ ){0,2}(?:model|optimizer|weights|state|states|params|parameters|ckpt|"
                        r"rank(?:-[a-z]+)?)(?: [\w-]+){0,2} (?:(?:is|was|has been|have been) )?"
                        r"(?<!not )(?<!never )saved\b\W{0,3}$|"  # `Model not saved`, `No model saved`: no save
                        # a timing decorator's line for a function that saves (DLRover's engine.py: "Function
                        # save_to_memory cost 0.545s"; "save_checkpoint took 3.2s"), not one that loads a checkpoint
                        # (`load_checkpoint took`, `Loading checkpoint took`) or recomputes (`gradient_checkpointing`)
                        r"\b(?:function\s+)?(?<!load )(?<!loading )(?<!restoring )(?<!resuming )(?<!gradient )"
                        r"(?<!activation )(?!\w{0,40}?(?:load|restor|resum|gradient|activation))"
                        r"\w{0,40}(?:save|checkpoint)\w{0,40}\s+(?:cost|took)\s+\d", re.IGNORECASE)
EVAL = re.compile(r"\bevaluat(e|ing|ion)\b|\bvalidat(ion|ing)\b|\brunning eval|\bSanity Checking\b|"
                  r"\b(?:eval|val|valid|test)\s+epoch\b|\bepoch\s*\((?:eval|val|valid|test)\)|"
                  r"\beval_(?:start|stop|accuracy|loss)\b|\btest(?:ing)? net\b|"  # Caffe: "Testing net (#0)"
                  r"\bval(?:id)?[ _](?:loss|acc|accuracy|ppl|bpb)\b|"
                  r"^\W{0,3}(?:test|eval|val|valid|validation|evaluation)\b(?:\s+\d+)?\s*[,:|]|"  # "Test 0, accuracy: ..."
                  r"^\W{0,3}testing\b|"  # a line opening with "Testing": DLRM's "Testing at - 2048/4096 of epoch 0,"
                  # a line opening with a mode and a metric: DGL's "Eval Acc 0.9312"
                  r"^\W{0,3}(?:eval|val|valid|validation|test)\s+(?:acc|accuracy|loss|auc|f1|map|ppl)\b",
                  re.IGNORECASE)
# a sentence of prose (PROSE_WORDS words or more, no figure): a post that mentions "the evaluation scores" opens no
# evaluation; the lines a run prints about one are short or carry a step, an epoch, a count or a time
PROSE_WORDS = 14
_WORD = re.compile(r"[A-Za-z]+")


def eval_marker(body: str) -> bool:
    """Whether a line marks an evaluation (EVAL), not a sentence of prose that names one."""
    return bool(EVAL.search(body)) and (any(c.isdigit() for c in body) or len(_WORD.findall(body)) < PROSE_WORDS)


# the start of an evaluation section, whose progress bars are the evaluation's (not training steps)
EVAL_START = re.compile(r"\b(?:start(?:s|ing)?|running|begin(?:s|ning)?)\b.{0,30}?\b(?:evaluat|validat|eval\b|test(?:ing)?\b|"
                        r"inference)|\beval_start\b|\bSanity Checking\b|^\W*(?:Evaluating|Validating|Testing)\b",
                        re.IGNORECASE)
# the end of an evaluation section: MLPerf's eval_stop, "evaluation done/finished/complete", "Total run time"
EVAL_END = re.compile(r"\beval_stop\b|\b(?:evaluation|validation|inference)\s+(?:done|finished|complete[d]?|ended)\b|"
                      r"\bTotal (?:run|inference) time\b", re.IGNORECASE)
GC = re.compile(r"\bgc\.collect\b|\bgarbage collect|\bgc (gen|generation|pause|collect|took)|\bGC\b.{0,20}"
                r"\b(pause|took|collected|gen)", re.IGNORECASE)
EVENT_DURATION = re.compile(r"\b(?:in|took|time:?|took:|duration:?|cost:?)\s*(\d+(?:\.\d*)?)\s*(ms|s|sec|secs|seconds)\b",
                            re.IGNORECASE)
# the seconds a Hugging Face Trainer's metrics state for an evaluation (transformers trainer_utils.speed_metrics:
# `{split}_runtime`, rounded seconds: `'eval_runtime': 4.121`, `test_runtime`, `predict_runtime`)
SPLIT_RUNTIME = re.compile(r"\b(?:eval|test|predict|val|validation)_runtime['\"]?\s*[:=]\s*(\d+(?:\.\d*)?)\b")
# a line a logger marked as a warning or an error without a level prefix: "ERROR: ...", python warnings
# ("file.py:86: UserWarning: ..."), an exception's last line ("RuntimeError: ...")
LOUD_TEXT = re.compile(r"^\s*(?:ERROR|WARNING|WARN|CRITICAL|FATAL)\b|^\S{1,300}:\d+: \w{0,40}Warning:|"
                       r"^\s*(?:[\w.]{1,200}\.)?\w{0,60}(?:Error|Exception):")


def stated_duration(body: str) -> float:
    """The seconds a marker line states (`saved in 3.2 s`, `Save duration: 13.567s`); a Unix clock reading
    (NeMo's `Start time: 1755612135.735s` before it) is no duration. NaN when none."""
    for m in EVENT_DURATION.finditer(body):
        value = float(m.group(1)) * (1e-3 if m.group(2).lower() == "ms" else 1.0)
        if value < 1e6:
            return value
    m = SPLIT_RUNTIME.search(body)
    return float(m.group(1)) if m and float(m.group(1)) < 1e6 else float("nan")
