"""Environment fingerprint: what `playbook compare` diffs between a good and a bad run (meta.json "env").

    from playbook.probes.fingerprint import fingerprint
    fp = fingerprint()          # a JSON-ready dict; cheap (no torch import unless torch is already loaded)

Keys: python, platform, hostname, command, cwd, git_commit, torch {version, cuda, cudnn, nccl, git_version},
packages {name: version} (ML packages found installed), nvidia {driver, cuda_driver, gpus: [{index, name,
memory_total_mib, uuid}]}, cpu {count, affinity}, env {NCCL_*, CUDA_*, OMP_*, TORCH_*, PYTORCH_*, TRITON_*, ...
values of names that look secret are replaced by "<redacted>"}, compile_cache {inductor: {path, exists, bytes,
files, truncated}, triton: {...}}. A field that cannot be read is null; fingerprint() never raises.

torch versions come from the loaded module when torch is imported, otherwise from torch/version.py and the
installed nvidia-* wheels read as text (importing torch costs seconds). Cache sizes are walked for at most
`walk_s` seconds ("truncated": true when cut short).
"""

from __future__ import annotations

import getpass
import importlib.metadata as md
import importlib.util
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ENV_PREFIXES = ("NCCL_", "CUDA_", "OMP_", "TORCH_", "PYTORCH_", "TORCHINDUCTOR_", "TRITON_", "NVIDIA_", "MKL_",
                "KMP_", "CUBLAS_", "CUDNN_", "UCX_", "FI_", "GLOO_", "MASTER_", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
                "TOKENIZERS_PARALLELISM", "PLAYBOOK_")
SECRET = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL", re.I)
PACKAGES = ("torch", "triton", "numpy", "nvidia-ml-py", "nvidia-cudnn-cu12", "nvidia-nccl-cu12",
            "nvidia-cudnn-cu13", "nvidia-nccl-cu13", "nvidia-cuda-runtime-cu12", "transformers", "accelerate",
            "deepspeed", "megatron-core", "apex", "flash-attn", "xformers", "torchvision", "datasets", "pandas",
            "playbook")


def _safe(fn: Any, *args: Any, default: Any = None) -> Any:
    try:
        return fn(*args)
    except Exception:
        return default


_KERNEL_MARKERS = ("ipykernel_launcher", "ipykernel", "colab_kernel_launcher", "jupyter-kernel", "papermill")


def is_kernel_command(command: list[str] | str | None) -> bool:
    """True when `command` is a notebook kernel's launch line (`.../ipykernel_launcher.py -f kernel.json`): the
    kernel's argv says nothing about the training that runs inside it."""
    if not command:
        return False
    text = command if isinstance(command, str) else " ".join(str(c) for c in command)
    head = " ".join(text.split()[:3])
    return any(m in head for m in _KERNEL_MARKERS)


def fingerprint(command: list[str] | str | None = None, nvml: Any = None, walk_s: float = 0.5) -> dict[str, Any]:
    """The environment of this process as a JSON-ready dict (see the module docstring). Never raises. In a
    notebook kernel (no command given) `command` is None: the kernel's argv is not a training command."""
    cmd = command if command is not None else list(sys.argv)
    if command is None and is_kernel_command(cmd):
        cmd = None
    return {
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "platform": _safe(platform.platform),
        "hostname": _safe(socket.gethostname),
        "command": cmd if isinstance(cmd, str) or cmd is None else " ".join(str(c) for c in cmd),
        "cwd": _safe(os.getcwd),
        "git_commit": _safe(_git_commit),
        "torch": _safe(_torch_versions, default={}),
        "packages": _safe(_packages, default={}),
        "nvidia": _safe(_nvidia, nvml, default={}),
        "cpu": {"count": os.cpu_count(), "affinity": _safe(lambda: len(os.sched_getaffinity(0)))},
        "env": _safe(_env, default={}),
        "compile_cache": _safe(_caches, walk_s, default={}),
        "taken": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _git_commit() -> str | None:
    out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=2)
    return out.stdout.strip() or None if out.returncode == 0 else None


def _torch_versions() -> dict[str, Any]:
    torch = sys.modules.get("torch")
    if torch is not None:
        return {
            "version": str(torch.__version__),
            "cuda": getattr(torch.version, "cuda", None),
            "git_version": getattr(torch.version, "git_version", None),
            "cudnn": _safe(lambda: torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None),
            "nccl": _safe(lambda: ".".join(map(str, torch.cuda.nccl.version()))
                          if torch.cuda.is_available() else None),
            "source": "loaded module",
        }
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return {}
    text = (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text()
    fields = dict(re.findall(r"^(\w+)\s*(?::\s*[^=]+)?=\s*['\"]([^'\"]*)['\"]", text, re.M))
    return {
        "version": fields.get("__version__"),
        "cuda": fields.get("cuda"),
        "git_version": fields.get("git_version"),
        "cudnn": _first_version("nvidia-cudnn-cu12", "nvidia-cudnn-cu13", "nvidia-cudnn-cu11"),
        "nccl": _first_version("nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-nccl-cu11"),
        "source": "torch/version.py and nvidia-* wheels (torch not imported)",
    }


def _first_version(*names: str) -> str | None:
    for name in names:
        v = _safe(md.version, name)
        if v:
            return v
    return None


def _packages() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        v = _safe(md.version, name)
        if v:
            out[name] = v
    return out


def _nvidia(nvml: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"driver": None, "cuda_driver": None, "gpus": []}
    proc = Path("/proc/driver/nvidia/version")
    if proc.is_file():
        m = re.search(r"Kernel Module\s+(?:for \S+\s+)?([\d.]+)", _safe(proc.read_text, default="") or "")
        info["driver"] = m.group(1) if m else None
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
    except Exception as exc:
        info["nvml"] = f"unavailable ({type(exc).__name__})"
        return info
    try:
        info["driver"] = _text(_safe(nvml.nvmlSystemGetDriverVersion)) or info["driver"]
        cuda = _safe(nvml.nvmlSystemGetCudaDriverVersion)
        info["cuda_driver"] = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None
        for i in range(_safe(nvml.nvmlDeviceGetCount, default=0) or 0):
            h = _safe(nvml.nvmlDeviceGetHandleByIndex, i)
            if h is None:
                info["gpus"].append({"index": i, "name": None})
                continue
            mem = _safe(nvml.nvmlDeviceGetMemoryInfo, h)
            info["gpus"].append({
                "index": i,
                "name": _text(_safe(nvml.nvmlDeviceGetName, h)),
                "memory_total_mib": round(mem.total / 2**20) if mem is not None else None,
                "uuid": _text(_safe(nvml.nvmlDeviceGetUUID, h)),
            })
    finally:
        _safe(nvml.nvmlShutdown)
    return info


def _text(v: Any) -> str | None:
    if v is None:
        return None
    return v.decode(errors="replace") if isinstance(v, bytes) else str(v)


def _env() -> dict[str, str]:
    out = {}
    for k in sorted(os.environ):
        if k.startswith(ENV_PREFIXES):
            out[k] = "<redacted>" if SECRET.search(k) else os.environ[k]
    return out


def inductor_cache_dir() -> str:
    """TorchInductor's cache: $TORCHINDUCTOR_CACHE_DIR or <tmp>/torchinductor_<user> (torch's default)."""
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return os.environ["TORCHINDUCTOR_CACHE_DIR"]
    user = re.sub(r'[\\/:*?"<>|]', "_", _safe(getpass.getuser, default="unknown") or "unknown")
    return os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")


def triton_cache_dir() -> str:
    """Triton's kernel cache: $TRITON_CACHE_DIR or ~/.triton/cache."""
    return os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton", "cache")


def _caches(walk_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + walk_s
    return {"inductor": dir_size(inductor_cache_dir(), deadline), "triton": dir_size(triton_cache_dir(), deadline)}


def dir_size(path: str, deadline: float | None = None) -> dict[str, Any]:
    """Bytes and files under `path`, walking until `deadline` (time.monotonic()); never follows symlinks."""
    out: dict[str, Any] = {"path": path, "exists": os.path.isdir(path), "bytes": 0, "files": 0, "truncated": False}
    if not out["exists"]:
        return out
    stack = [path]
    while stack:
        if deadline is not None and time.monotonic() > deadline:
            out["truncated"] = True
            break
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            out["bytes"] += entry.stat(follow_symlinks=False).st_size
                            out["files"] += 1
                    except OSError:
                        continue
        except OSError:
            continue
    return out
