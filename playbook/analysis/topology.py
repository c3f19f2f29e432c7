"""Environment facts read from `nvidia-smi topo -m` and `lspci -vv` (readers/topo_matrix.py, readers/lspci.py):
bundle.meta["environment:<file>"] sections → per-GPU PCIe links stated at one moment, and the GPU-pair paths.

A section names no host (neither tool prints one), so it describes the host its file is named after, or, when the
telemetry beside it comes from exactly one host, that host (a paste diagnosed next to its run's log).

Two kinds of facts, used differently (analysis/links.py, diagnosis/answer.py):
- a link that trained below what it can (lspci's LnkSta "(downgraded)" against LnkCap) is a `link_degradation`
  finding: a fact, stated with its evidence; its level rises only when the telemetry shows that GPU lagging;
- GPU pairs whose path crosses the CPUs (SYS: the SMP interconnect between NUMA nodes; NODE: between host bridges
  of one node) without NVLink are context for a verdict about collectives, never a cause alone: a topology is
  how the machine is built, and many jobs run well on it.
"""

from __future__ import annotations

from typing import Any

from playbook.model.schema import meta_sections
from playbook.readers.machine_facts import META_PREFIX

CROSSING = {"SYS": "the SMP interconnect between NUMA nodes", "SOC": "the link between CPU sockets",
            "NODE": "the interconnect between PCIe host bridges of a NUMA node"}


def sections(meta: dict[str, Any] | None) -> list[tuple[str, dict]]:
    """(file, section) of every environment section in the bundle's meta, in file order."""
    return sorted(meta_sections(meta, META_PREFIX))


def host_of(section: dict, hosts: list[str]) -> str:
    """The host a section describes: its own (the file's name) when the telemetry has it, else the telemetry's only
    host, else its own."""
    own = str(section.get("host", ""))
    return hosts[0] if own not in hosts and len(hosts) == 1 else own


def stated_links(meta: dict[str, Any] | None, hosts: list[str] = ()) -> list[dict]:
    """Each PCIe link a section states: {host, gpu (None for a device lspci printed without its header), label
    ("gpu0/pcie" or "device at line 3/pcie"), source (the tool), and the link facts (gen, width, max_gen, max_width,
    speed_gt_s, max_speed_gt_s, downgraded, why, bus_id)}."""
    out = []
    for path, sec in sections(meta):
        host = host_of(sec, list(hosts))
        for gpu, facts in (sec.get("gpus") or {}).items():
            if isinstance(facts, dict) and "downgraded" in facts:
                out.append({**facts, "host": host, "gpu": int(gpu), "label": f"gpu{int(gpu)}/pcie",
                            "source": sec.get("format", ""), "file": path})
        for facts in sec.get("devices") or []:
            out.append({**facts, "host": host, "gpu": None, "label": f"device at line {facts.get('line')}/pcie",
                        "source": sec.get("format", ""), "file": path})
    return out


def stated_maxima(meta: dict[str, Any] | None, hosts: list[str] = ()) -> dict[tuple[str, int], tuple[float, float]]:
    """{(host, gpu): (max gen, max width)} every section states (lspci's LnkCap, nvidia-smi -q's Link Info Max):
    what each GPU's link can train to, where NVML's maximum was not recorded."""
    out: dict[tuple[str, int], tuple[float, float]] = {}
    for _, sec in sections(meta):
        host = host_of(sec, list(hosts))
        for gpu, facts in (sec.get("gpus") or {}).items():
            if isinstance(facts, dict) and facts.get("max_gen") and facts.get("max_width"):
                out.setdefault((host, int(gpu)), (float(facts["max_gen"]), float(facts["max_width"])))
    return out


def _speed(gt: float | None, gen: int | None, width: int | None) -> str:
    s = f"{gt:g} GT/s" if gt is not None else "an unstated speed"
    return s + (f" (gen{gen})" if gen else "") + (f" x{width}" if width is not None else "")


def link_text(link: dict) -> str:
    """One line: what the link trained to against what it can, from which tool."""
    now = _speed(link.get("speed_gt_s"), link.get("gen"), link.get("width"))
    cap = (f"capable of {_speed(link.get('max_speed_gt_s'), link.get('max_gen'), link.get('max_width'))}"
           if link.get("max_speed_gt_s") is not None or link.get("max_width") is not None else "no LnkCap line")
    why = " and ".join(link.get("why") or [])
    bus = f" {link['bus_id']}" if link.get("bus_id") else ""
    return f"{link['source']}{bus}: trained at {now}, {cap}" + (f" ({why} downgraded)" if why else "")


def topology(meta: dict[str, Any] | None, hosts: list[str] = ()) -> list[dict]:
    """Per matrix: {host, file, gpus, pairs: {path: count}, crossing: [(i, j, path)] — the GPU pairs whose path
    crosses the CPUs (SYS / SOC / NODE) — nvlink (pairs over NVLink), affinity: {gpu: (cpus, numa)}}."""
    out = []
    for path, sec in sections(meta):
        pairs = sec.get("pairs")
        if not isinstance(pairs, dict) or not pairs:
            continue
        counts: dict[str, int] = {}
        crossing = []
        for key, kind in sorted(pairs.items(), key=lambda kv: tuple(int(x) for x in kv[0].split("-"))):
            counts[kind] = counts.get(kind, 0) + 1
            if kind in CROSSING:
                i, j = key.split("-")
                crossing.append((int(i), int(j), kind))
        gpus = sec.get("gpus") or {}
        out.append({"host": host_of(sec, list(hosts)), "file": path, "gpus": int(sec.get("gpu_count") or len(gpus)),
                    "pairs": counts,
                    "crossing": crossing, "nvlink": sum(n for k, n in counts.items() if k.startswith("NV")),
                    "affinity": {int(g): (f.get("cpu_affinity"), f.get("numa")) for g, f in gpus.items()}})
    return out


def crossing_context(topo: list[dict]) -> str | None:
    """The context sentence for a verdict about collectives: GPU pairs that cross the CPUs without NVLink (None
    when no matrix shows one)."""
    parts = []
    for t in topo:
        if not t["crossing"] or t["nvlink"]:
            continue
        kinds = sorted({k for _, _, k in t["crossing"]})
        total = sum(t["pairs"].values())
        pairs = ", ".join(f"{i}-{j}" for i, j, _ in t["crossing"][:6]) + (" ..." if len(t["crossing"]) > 6 else "")
        parts.append(f"{t['host']}: {len(t['crossing'])} of {total} GPU pairs ({pairs}) cross "
                     + " / ".join(f"{k} ({CROSSING[k]})" for k in kinds) + ", none over NVLink")
    if not parts:
        return None
    return ("context, nvidia-smi topo -m: " + "; ".join(parts) + " — the collectives' hops between those GPUs go "
            "through host memory or the CPUs' link, not peer to peer over NVLink: the machine's build, not a fault")
