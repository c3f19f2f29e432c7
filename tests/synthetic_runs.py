"""LABELED SYNTHETIC run directories for the regression tests (compare_runs and `playbook compare`): steps and
events from playbook.labs.synthetic with a fingerprint and configuration written into meta.json."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from playbook.labs import synthetic
from playbook.model import schema
from playbook.readers import rundir

FINGERPRINT = {
    "python": "3.11.7", "platform": "Linux-6.1-x86_64", "hostname": "node00", "command": "python train.py --lr 3e-4",
    "cwd": "/home/u/job", "git_commit": "abc123",
    "torch": {"version": "2.5.1", "cuda": "12.4", "cudnn": "90100", "nccl": "2.21.5"},
    "packages": {"torch": "2.5.1", "triton": "3.1.0", "numpy": "2.1.0"},
    "nvidia": {"driver": "550.54.15", "cuda_driver": "12.4",
               "gpus": [{"index": i, "name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-{i}"} for i in range(4)]},
    "cpu": {"count": 64, "affinity": 64},
    "env": {"NCCL_IB_HCA": "mlx5", "OMP_NUM_THREADS": "8"},
    "compile_cache": {"inductor": {"path": "/tmp/torchinductor_u", "exists": True, "bytes": 250_000_000,
                                   "files": 900, "truncated": False},
                      "triton": {"path": "/home/u/.triton/cache", "exists": True, "bytes": 40_000_000, "files": 300,
                                 "truncated": False}},
}


def make_run(path: Path, env: dict | None = None, config: dict | None = None, tokens: float | None = None,
             **steps_kwargs) -> schema.Bundle:
    """A synthetic run directory (steps + events) with a fingerprint and configuration in meta.json."""
    kw = {"ranks": 2, "steps": 120, "step_s": 0.5, "stall_every": None, "seed": 0, **steps_kwargs}
    steps, events, _ = synthetic.simulate_steps(**kw)
    if tokens is not None:
        steps.loc[steps["phase"] == "step", "tokens"] = tokens
    synthetic.write_run_dir(path, steps=steps, events=events)
    meta = json.loads((path / "meta.json").read_text())
    meta["env"] = env if env is not None else FINGERPRINT
    meta["command"] = meta["env"]["command"]
    if config:
        meta["config"] = config
    (path / "meta.json").write_text(json.dumps(meta))
    return rundir.read_run(path)


def changed_env(**changes) -> dict:
    env = copy.deepcopy(FINGERPRINT)
    for dotted, value in changes.items():
        node = env
        keys = dotted.split("__")
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return env
