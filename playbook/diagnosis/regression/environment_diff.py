"""The environment diff of regression triage (step 5 of the method in diagnosis.regression): versions, variables,
caches, hardware, configuration and command line of each run, what changed, and the causes each change can
produce."""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from typing import Any

from playbook.diagnosis.regression.text import short
from playbook.knowledge import ids as cause_ids
from playbook.knowledge.environment import FIXED_LINKS, KEYWORD_LINKS
from playbook.model import schema

GROUP_PRIOR = {"versions": 0.3, "hardware": 0.3, "code": 0.2, "env": 0.2, "cache": 0.15, "config": 0.15,
               "command": 0.1, "host": 0.05}
# Recorder / rundir bookkeeping in meta.json: not configuration.
_META_SKIP = {"playbook_run", "schema_version", "created", "command", "env", "host", "rank", "pid", "world_size",
              "started", "local_rank", "ended", "sample_hz", "probes", "rows", "rows_dropped", "gc", "compile",
              "steps_timed", "step_timer", "warnings", "synthetic", "segments", "flushes", "nvml", "sampler",
              "exit_status", "returncode", "child_pid", "duration_s", "recording"}
_CONFIG_UNLINKED = {"variant", "lab", "seed", "sample_hz"}


def _flat_config(prefix: str, value: Any, out: dict[str, str], depth: int = 0) -> None:
    if isinstance(value, dict) and depth < 2:
        for k, v in value.items():
            _flat_config(f"{prefix}.{k}" if prefix else str(k), v, out, depth + 1)
    else:
        out[prefix] = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _cache_text(c: dict | None) -> str | None:
    """"cold: missing" / "cold: empty" / "warm: 182.1 MB in 869 files" (the location is a key of its own)."""
    if not isinstance(c, dict):
        return None
    if not c.get("exists"):
        return "cold: missing"
    if not c.get("bytes"):
        return "cold: empty"
    more = "+" if c.get("truncated") else ""
    return f"warm: {_human_bytes(float(c['bytes']))}{more} in {c.get('files', '?')}{more} files"


def environment(bundle: schema.Bundle) -> tuple[dict[str, tuple[str, str]], bool]:
    """Flattened environment and configuration of one run: {key: (value, group)}, and whether a fingerprint
    (meta.json "env") was found. Groups: versions, hardware, env, cache, config, command, code, host."""
    out: dict[str, tuple[str, str]] = {}
    run_meta = bundle.meta.get("run") or {}
    parts = bundle.meta.get("parts") or {}
    fps = [run_meta.get("env")] + [p.get("env") for p in parts.values() if isinstance(p, dict)]
    fps = [f for f in fps if isinstance(f, dict) and f]
    found = bool(fps)

    def put(key: str, value: Any, group: str) -> None:
        if value is None or value == "" or value == {}:
            return
        out[key] = (value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True), group)

    if fps:
        _fingerprint_items(fps, put)
    command = run_meta.get("command") or (fps[0].get("command") if fps else None)
    if isinstance(command, list):
        command = shlex.join(str(c) for c in command)
    from playbook.probes.fingerprint import is_kernel_command

    if command and not is_kernel_command(command):  # a kernel's argv is not the training command
        put("command", command, "command")
        for opt, v in _options(command).items():
            put(f"command {opt}", v, "config")
    config: dict[str, str] = {}
    for k, v in run_meta.items():
        if k not in _META_SKIP:
            _flat_config(k, v, config)
    for p in parts.values():
        if isinstance(p, dict):
            for k, v in p.items():
                if k not in _META_SKIP:
                    _flat_config(k, v, config)
    for k, v in config.items():
        put(k, v, "config")
    if len(bundle.steps):
        put("ranks", str(int(bundle.steps["rank"].nunique())), "config")
        put("hosts", str(int(bundle.steps["host"].nunique())), "config")
    tele = bundle.telemetry
    if len(tele):
        lim = tele["power_limit_w"].dropna()
        if len(lim):
            put("power limit (measured)", f"{lim.median():.0f} W (min {lim.min():.0f} W)", "hardware")
        gen, width = tele["pcie_link_gen"].dropna(), tele["pcie_link_width"].dropna()
        if len(gen) and len(width):
            put("PCIe link (measured)", f"gen{gen.max():.0f} x{width.max():.0f} (lowest gen{gen.min():.0f} "
                f"x{width.min():.0f})", "hardware")
        mem = tele["mem_total_mib"].dropna()
        if len(mem):
            put("GPU memory (measured)", f"{mem.median() / 1024:.0f} GiB", "hardware")
    return out, found


def _fingerprint_items(fps: list[dict], put) -> None:
    """The fingerprints' (meta.json "env") versions, GPUs, CPU, variables, compile caches, commit and host,
    each handed to put(key, value, group); the first fingerprint speaks for the run, GPUs and hosts are pooled."""
    fp = fps[0]
    torch = fp.get("torch") or {}
    put("python", fp.get("python"), "versions")
    put("torch", torch.get("version"), "versions")
    put("torch CUDA", torch.get("cuda"), "versions")
    put("cuDNN", torch.get("cudnn"), "versions")
    put("NCCL", torch.get("nccl"), "versions")
    nv = fp.get("nvidia") or {}
    put("driver", nv.get("driver"), "versions")
    put("CUDA driver", nv.get("cuda_driver"), "versions")
    for name, v in sorted((fp.get("packages") or {}).items()):
        if name not in ("torch", "playbook"):
            put(f"package {name}", v, "versions")
    gpus: dict[tuple, str] = {}
    for f in fps:
        for g in (f.get("nvidia") or {}).get("gpus") or []:
            gpus[(f.get("hostname"), g.get("uuid") or g.get("index"))] = str(g.get("name"))
    put("GPUs", ", ".join(f"{n} × {m}" for m, n in sorted(Counter(gpus.values()).items())) or "none",
        "hardware")
    cpu = fp.get("cpu") or {}
    put("CPU count", cpu.get("count"), "hardware")
    put("CPU affinity", cpu.get("affinity"), "hardware")
    for k, v in sorted((fp.get("env") or {}).items()):
        put(f"env {k}", str(v), "env")
    caches = fp.get("compile_cache") or {}
    for name in ("inductor", "triton"):
        put(f"compile cache ({name})", _cache_text(caches.get(name)), "cache")
        if isinstance(caches.get(name), dict):
            put(f"compile cache ({name}) location", caches[name].get("path"), "cache")
    put("git commit", fp.get("git_commit"), "code")
    put("host", ", ".join(sorted({str(f.get("hostname")) for f in fps if f.get("hostname")})), "host")
    put("platform", fp.get("platform"), "host")
    put("python executable", fp.get("python_executable"), "host")


def _options(command: str) -> dict[str, str]:
    """--key value / --key=value / -k value options of a command line (flags → "on")."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        tokens = command.split()
    out: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.startswith("-") and len(t) > 1 and not re.fullmatch(r"-[\d.]+", t):
            if "=" in t:
                k, v = t.split("=", 1)
                out[k] = v
            elif i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                out[t] = tokens[i + 1]
                i += 1
            else:
                out[t] = "on"
        i += 1
    return out


def links(key: str, group: str) -> tuple[tuple[str, ...], float]:
    """The causes a changed item can produce and how directly (0-1)."""
    if key in FIXED_LINKS:
        return FIXED_LINKS[key]
    if group == "host" or group == "command" or key.split(".")[-1] in _CONFIG_UNLINKED:
        return (), 0.0
    name = key.split(" ", 1)[1] if key.startswith(("env ", "command ", "package ")) else key
    name = name.lower()
    found: list[str] = []
    for pattern, causes in KEYWORD_LINKS:
        if re.search(pattern, name):
            found += [c for c in causes if c not in found]
    if group == "versions" and not found:
        return (cause_ids.SLOWER_COMPUTE,), 0.3
    if group == "env" and not found:
        return (cause_ids.SLOWER_COMPUTE,), 0.3
    return tuple(found), (1.0 if found else 0.0)


def environment_diff(good: list[schema.Bundle], bad: list[schema.Bundle]) -> tuple[list[dict], list[str], list[str]]:
    """Changed items [{key, group, good, bad, varies}], unchanged keys, and notes (sides without a fingerprint)."""
    notes = []
    sides = []
    for name, bundles in (("GOOD", good), ("BAD", bad)):
        envs = [environment(b) for b in bundles]
        if not any(found for _, found in envs):
            notes.append(f"no environment fingerprint in {name} (not a playbook run directory, or recorded before "
                         "fingerprints): versions, variables and caches are not compared")
        sides.append(envs)
    fingerprints = all(any(f for _, f in envs) for envs in sides)
    values: list[dict[str, set[str]]] = []
    groups: dict[str, str] = {}
    for envs in sides:
        v: dict[str, set[str]] = {}
        for env, _ in envs:
            for k, (val, g) in env.items():
                v.setdefault(k, set()).add(val)
                groups[k] = g
        values.append(v)
    changed, same = [], []
    for k in sorted(groups):
        g = groups[k]
        if not fingerprints and g not in ("config", "command"):
            continue
        gv, bv = values[0].get(k), values[1].get(k)
        if gv == bv:
            same.append(k)
            continue
        unset = "(unset)" if g == "env" else "(not recorded)"
        gtxt = " | ".join(sorted(gv)) if gv else unset
        btxt = " | ".join(sorted(bv)) if bv else unset
        if g == "cache" and gv and bv and not k.endswith("location") and \
                {_cache_state(v) for v in gv} == {_cache_state(v) for v in bv} and \
                not any(_cache_size_changed(a, b) for a in gv for b in bv):
            same.append(k)  # a warm cache that grew a little is the same warm cache
            continue
        changed.append({"key": k, "group": g, "good": gtxt, "bad": btxt,
                        "varies": bool((gv and len(gv) > 1) or (bv and len(bv) > 1)),
                        "overlap": bool(gv and bv and gv & bv)})
    return changed, same, notes


def _cache_state(text: str) -> str:
    return text.split(":", 1)[0]


def _cache_size_changed(a: str, b: str) -> bool:
    def size(t: str) -> float:
        m = re.search(r"warm: ([\d.]+) (B|KB|MB|GB|TB)", t)
        if not m:
            return 0.0
        return float(m.group(1)) * 1000 ** ("B", "KB", "MB", "GB", "TB").index(m.group(2))

    sa, sb = size(a), size(b)
    return bool(sa and sb and max(sa, sb) / min(sa, sb) > 2)


def link_environment(changed: list[dict], causes: list[dict]) -> list[dict]:
    by_id = {c["id"]: c for c in causes}
    out = []
    for item in changed:
        linked, weight = links(item["key"], item["group"])
        score = max((by_id[c]["score"] * weight for c in linked if c in by_id), default=0.0)
        if item["overlap"]:
            score *= 0.5  # some runs of both sides share a value, so it cannot be the whole story
        prior = GROUP_PRIOR.get(item["group"], 0.05)
        out.append({**item, "causes": list(linked), "link_weight": weight,
                    "score": round(score if score > 0 else 0.1 * prior, 4)})
    out.sort(key=lambda e: (-e["score"], e["key"]))
    for e in out:
        for c in e["causes"]:
            if c in by_id and e["score"] >= 0.1 * GROUP_PRIOR.get(e["group"], 0.05) and by_id[c]["score"] > 0:
                by_id[c]["changes"].append(e["key"])
    for c in causes:
        if c["changes"]:
            items = {e["key"]: e for e in out}
            text = "; ".join(f"{k}: {short(items[k]['good'])} → {short(items[k]['bad'])}" for k in c["changes"][:4])
            more = f" (+{len(c['changes']) - 4} more)" if len(c["changes"]) > 4 else ""
            c["evidence"].append(f"changed with it: {text}{more}")
    return out
