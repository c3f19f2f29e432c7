"""Which host-side calls wait on the device or on the input pipeline: one vocabulary for every profiler text that
names Python functions (pstats_text.py's cProfile rows, stack_samples.py's py-spy dumps and folded stacks,
line_profile.py's source lines).

  loader      the DataLoader's iteration: any function of torch/utils/data's dataloader.py or _utils/fetch.py (the
              loop's `next(loader)` nests them), torch.profiler's `enumerate(DataLoader)#...` op
  sync        calls that return only once the device has answered or a transfer is done: the Tensor methods `.item()`,
              `.cpu()`, `.tolist()`, `.cuda()`, `.to()`, `synchronize`, `torch.as_tensor` and torch's
              `_cuda_synchronize`; in native or op frames cuda*/hip*Synchronize and `_local_scalar_dense` (what
              `.item()` runs)
  collective  torch.distributed's collectives (distributed_c10d.py: all_reduce, broadcast, barrier, send/recv ...):
              a rank waiting there waits for its peers
"""

from __future__ import annotations

import re

LOADER_FILES = ("dataloader.py", "fetch.py")
SYNC_METHODS = ("item", "cpu", "tolist", "cuda", "to", "synchronize")
SYNC_BUILTINS = ("as_tensor", "_cuda_synchronize")
COLLECTIVE_FILE = "distributed_c10d.py"
# native and op frames: the runtime's synchronize calls (profiler_table.SYNC_CALLS' names) and the scalar read
_NATIVE_SYNC = re.compile(r"(?:^|\W)(?:(?:cu(?:da)?|hip)(?:Stream|Device|Event|Ctx)Synchronize|_local_scalar_dense)",
                          re.IGNORECASE)  # any suffix: cudaStreamSynchronize_v2, _local_scalar_dense_cuda
_LOADER_OP = re.compile(r"^enumerate\(DataLoader\)")
_CUDA_FILE = re.compile(r"(?:^|[/\\])torch[/\\]cuda[/\\]")
LOADER, SYNC, COLLECTIVE = "loader", "sync", "collective"


def basename(path: str) -> str:
    """The file name of a frame's path (either slash)."""
    return re.split(r"[/\\]", path)[-1]


def frame_kind(func: str, path: str = "") -> str | None:
    """LOADER, SYNC, COLLECTIVE or None for one frame: its function name and the file it runs in ("" for a native
    or op frame, whose name is then matched alone)."""
    base = basename(path)
    if base in LOADER_FILES and path:
        return LOADER
    if base == COLLECTIVE_FILE:
        return COLLECTIVE
    if func == "synchronize" and _CUDA_FILE.search(path):
        return SYNC
    if not path and (_NATIVE_SYNC.search(func) or func in SYNC_BUILTINS):
        return SYNC
    if not path and _LOADER_OP.match(func):
        return LOADER
    return None


def innermost(frames: list[tuple[str, str]]) -> str | None:
    """The kind of the innermost frame that has one (frames innermost first, as (function, path)): a wait inside
    the loader's own code counts as the loader's, a sync the loader makes as a sync."""
    return next((k for func, path in frames if (k := frame_kind(func, path))), None)
