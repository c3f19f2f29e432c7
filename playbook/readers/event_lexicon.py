"""The lexicon of log lines that name a cause outright, wherever they appear in a log: one table of (needles,
pattern, event kind), each row citing where its text comes from. readers/lines.py turns a matching line into an
event (time, rank and latest step of the line) and counts the ERROR/WARNING lines no row explains.

Event kinds follow playbook/knowledge/causes.py where a cause lists them (xid → hardware_fault, recompile → recompilation,
checkpoint / eval → periodic_stall, gc → gc_pause); the others are the schema's (gpu_error, gpu_lost) or new here
(ecc, oom, memory_pressure, nccl_timeout, nccl_error, nccl_warn, network_error, throttle, worker_failed) and measure no cause yet.

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


def _row(needles: tuple[str, ...], pattern: str, kind: str) -> Entry:
    return Entry(needles, re.compile(pattern, re.IGNORECASE), kind)


# First match wins: the specific rows before the generic ones (an OOM is a CUDA error too).
LEXICON: tuple[Entry, ...] = (
    # PyTorch c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate 2.00 GiB ..." raised as
    # torch.OutOfMemoryError (torch.cuda.OutOfMemoryError before 2.5); ROCm builds say "HIP out of memory";
    # cudaErrorMemoryAllocation prints "CUDA error: out of memory"
    _row(("out of memory", "outofmemoryerror"),
         r"\b(?:CUDA|HIP) out of memory|CUDA error: out of memory|OutOfMemoryError", "oom"),
    # CUDA runtime cudaErrorECCUncorrectable: "uncorrectable ECC error encountered" (c10's "CUDA error: ..."): a kind
    # of its own, as it names failing memory where another CUDA error may be the program's own bug
    _row(("ecc",), r"uncorrectable ECC error|double[- ]bit ECC", "ecc"),
    # NVIDIA driver kernel log: "NVRM: Xid (PCI:0000:3b:00): 79, pid=1122, GPU has fallen off the bus."
    _row(("xid",), r"\bXid\b\s*(?:\([^)]{0,40}\))?\s*:?\s*\d+", "xid"),
    # NVIDIA driver: "NVRM: GPU 0000:01:00.0: GPU has fallen off the bus." (without an Xid on the line)
    _row(("fallen off the bus",), r"fallen off the bus", "gpu_lost"),
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
    # event: port error" (older: "Got async event : ..."); NCCL's IB plugins (NET/IBext, NET/IB/GIN) print the same
    _row(("got completion from peer", "got async"),
         r"\bNET/IB\w*(?:/\w+)?\s*:.{0,120}?\b(?:Got completion from peer\b.{0,200}?\bstatus=[1-9]|Got async(?: error)? "
         r"event\b)", "network_error"),
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
    # PyTorch torch/distributed/elastic/multiprocessing/api.py: "failed (exitcode: -9) local_rank: 0 (pid: 11127) of
    # binary: ..." (a worker died: -9 is SIGKILL, often the host's OOM killer); the rank is the line's
    _row(("local_rank",), r"failed \(exitcode: -?\d+\) local_rank: (?P<rank>\d+)", "worker_failed"),
    # nvidia-smi -q "Clocks Event Reasons" (formerly "Clocks Throttle Reasons") rows when active:
    # "HW Slowdown : Active", "SW Thermal Slowdown : Active", "HW Power Brake Slowdown : Active", "SW Power Cap : Active"
    _row(("slowdown", "power cap"), r"\b(?:HW|SW)(?: Thermal| Power Brake)? Slowdown\s*:\s*Active\b|"
                                    r"\bSW Power Cap\s*:\s*Active\b", "throttle"),
)


# every needle in one pattern: most lines hold none, and are passed over with one scan
_ANY_NEEDLE = re.compile("|".join(re.escape(n) for e in LEXICON for n in e.needles))


def match(body: str) -> tuple[str, int] | None:
    """(event kind, the rank the line names or -1) the lexicon gives a line; None when no row matches."""
    low = body.lower()
    if not _ANY_NEEDLE.search(low):
        return None
    for entry in LEXICON:
        if any(n in low for n in entry.needles) and (m := entry.pattern.search(body)):
            rank = m.groupdict().get("rank")
            return entry.kind, int(rank) if rank and len(rank) < 10 else -1
    return None


# Section markers (lines.py merges a run of them with no training step between into one event with a duration)
CHECKPOINT = re.compile(r"sav(e|ing|ed)\b.{0,40}checkpoint|checkpoint.{0,40}\b(sav(e|ed|ing)|written|writing)|"
                        # PaddleClas' "Already save model in ./output/latest"
                        r"\bsaving model\b|\bsaved? (model|weights|state)\b.{0,40}\b(?:to|in)\b|"
                        r"\bsnapshotting\b.{0,40}\bto\b", re.IGNORECASE)  # Caffe: "Snapshotting to binary proto file"
EVAL = re.compile(r"\bevaluat(e|ing|ion)\b|\bvalidat(ion|ing)\b|\brunning eval|\bSanity Checking\b|"
                  r"\b(?:eval|val|valid|test)\s+epoch\b|\bepoch\s*\((?:eval|val|valid|test)\)|"
                  r"\beval_(?:start|stop|accuracy|loss)\b|\btest(?:ing)? net\b|"  # Caffe: "Testing net (#0)"
                  r"\bval(?:id)?[ _](?:loss|acc|accuracy|ppl|bpb)\b|"
                  r"^\W{0,3}(?:test|eval|val|valid|validation|evaluation)\b(?:\s+\d+)?\s*[,:|]|"  # "Test 0, accuracy: ..."
                  r"^\W{0,3}testing\b|"  # a line opening with "Testing": DLRM's "Testing at - 2048/4096 of epoch 0,"
                  # a line opening with a mode and a metric: DGL's "Eval Acc 0.9312"
                  r"^\W{0,3}(?:eval|val|valid|validation|test)\s+(?:acc|accuracy|loss|auc|f1|map|ppl)\b",
                  re.IGNORECASE)
# the start of an evaluation section, whose progress bars are the evaluation's (not training steps)
EVAL_START = re.compile(r"\b(?:start(?:s|ing)?|running|begin(?:s|ning)?)\b.{0,30}?\b(?:evaluat|validat|eval\b|test(?:ing)?\b|"
                        r"inference)|\beval_start\b|\bSanity Checking\b|^\W*(?:Evaluating|Validating|Testing)\b",
                        re.IGNORECASE)
# the end of an evaluation section: MLPerf's eval_stop, "evaluation done/finished/complete", "Total run time"
EVAL_END = re.compile(r"\beval_stop\b|\b(?:evaluation|validation|inference)\s+(?:done|finished|complete[d]?|ended)\b|"
                      r"\bTotal (?:run|inference) time\b", re.IGNORECASE)
GC = re.compile(r"\bgc\.collect\b|\bgarbage collect|\bgc (gen|generation|pause|collect|took)|\bGC\b.{0,20}"
                r"\b(pause|took|collected|gen)", re.IGNORECASE)
EVENT_DURATION = re.compile(r"\b(?:in|took|time:?|took:|duration:?)\s*(\d+(?:\.\d*)?)\s*(ms|s|sec|secs|seconds)\b",
                            re.IGNORECASE)
# a line a logger marked as a warning or an error without a level prefix: "ERROR: ...", python warnings
# ("file.py:86: UserWarning: ..."), an exception's last line ("RuntimeError: ...")
LOUD_TEXT = re.compile(r"^\s*(?:ERROR|WARNING|WARN|CRITICAL|FATAL)\b|^\S{1,300}:\d+: \w{0,40}Warning:|"
                       r"^\s*(?:[\w.]{1,200}\.)?\w{0,60}(?:Error|Exception):")
