"""Evidence from coincidence: utilization drops against logged events (dips_vs_events) and host activity
(host_during_dips)."""

from __future__ import annotations

import numpy as np

from playbook.diagnosis.evidence import ALPHA, _p
from playbook.diagnosis.ranking import Evidence, confidence, impact, support
from playbook.knowledge import ids as cause_ids
from playbook.knowledge.causes import cause_of_event

CAUSE_DIP_SIGNATURE = {cause_ids.PERIODIC_STALL: "dips_checkpoint_eval", cause_ids.GC_PAUSE: "dips_gc",
                       cause_ids.RECOMPILATION: "dips_recompile", cause_ids.HARDWARE_FAULT: "dips_restart"}


def event_signature(kind: str) -> str | None:
    """The dip signature of an event kind, None for kinds that measure no cause."""
    if str(kind).strip().lower() == "log":
        return "dips_logging"
    return CAUSE_DIP_SIGNATURE.get(cause_of_event(kind) or "")


def from_dip_events(coincidences: list[dict], lost_fraction: float, label: str = "GPUs"
                    ) -> tuple[list[Evidence], dict[str, float]]:
    """Evidence from oscillation.dips_vs_events: events of a kind that overlap most utilization drops far beyond
    chance. Also returns {hypothesis: share of drops explained}, to discount generic readings of the drops."""
    out: list[Evidence] = []
    explained: dict[str, float] = {}
    for c in coincidences:
        sig = event_signature(c["kind"])
        share = c["hits"] / c["dips"] if c["dips"] else 0.0
        if sig is None or c["p_value"] >= ALPHA or share < 0.5:
            continue
        text = (f"{c['kind']} events overlap {c['hits']} of {c['dips']} utilization drops of the {label} (chance "
                f"{c['chance']:.0%} each, {_p(c['p_value'])})")
        ev = support(sig, confidence(c["p_value"]), impact(lost_fraction * share), text, p_value=c["p_value"],
                     lost=lost_fraction * share, next_step=
                     f"time the {c['kind']} itself (start, end, bytes written or steps evaluated) and move it off "
                     "the critical path" if sig == "dips_checkpoint_eval" else None)
        out += ev
        for e in ev:
            explained[e.hypothesis] = max(explained.get(e.hypothesis, 0.0), share)
    return out, explained


HOST_SIGNATURES = {"write_mib_s": ("host_writes_in_dips", "disk writes", "checkpoint or log writing"),
                   "read_mib_s": ("host_reads_in_dips", "disk reads", "input data being read"),
                   "iowait_pct": ("host_iowait_in_dips", "CPU iowait", "the input blocked on storage (a local disk "
                                  "or a network filesystem)"),
                   "cpu_max_core_pct": ("host_cpu_in_dips", "the busiest CPU core", "a CPU-bound input pipeline "
                                        "or Python work"),
                   "cpu_pct": ("host_cpu_in_dips", "host CPU", "a CPU-bound input pipeline"),
                   "net_rx_mib_s": ("host_net_in_dips", "network receive", "data or checkpoints moving over the "
                                    "network"),
                   "net_tx_mib_s": ("host_net_in_dips", "network send", "checkpoints or logs leaving the host"),
                   "swap_mib_s": ("host_swap_in_dips", "swapping", "host memory running out: pages of the loader "
                                  "or the trainer going to and from swap")}
HOST_RATIO_MIN = 1.5  # a host metric must be ≥ 1.5× its level between drops to count as part of the drop
# ... and a traffic rate (MiB/s) must rise by 1 MiB/s (256 4-KiB pages a second): the input reads, checkpoint
# writes and swapping that stall a GPU move tens to thousands; from ~0, a trickle of KiB/s passes any ratio
HOST_RISE_MIN_MIB_S = 1.0


def _material(m: dict) -> bool:
    """A host metric's rise in the drops is large enough to be a cause: HOST_RATIO_MIN, and HOST_RISE_MIN_MIB_S for
    traffic rates (a 10 KiB/s swap trickle had read 'swapping rise from ~0' and memory_pressure)."""
    rise_ok = not m["metric"].endswith("_mib_s") or m["during"] - m["between"] >= HOST_RISE_MIN_MIB_S
    return m["ratio"] >= HOST_RATIO_MIN and rise_ok


def from_host(metrics: list[dict], lost_fraction: float) -> list[Evidence]:
    """Evidence from oscillation.host_during_dips: host activity that rises during the utilization drops. Disk
    traffic and iowait that swap traffic accounts for are swapping's symptoms, not evidence of their own."""
    out: list[Evidence] = []
    seen: set[str] = set()
    swapped = _swap_symptoms(metrics)
    for m in metrics:
        sig = HOST_SIGNATURES.get(m["metric"])
        if sig is None or m["p_value"] >= ALPHA or not _material(m) or sig[0] in seen:
            continue
        if (m["metric"], m.get("host")) in swapped:
            continue
        seen.add(sig[0])
        ratio = "from ~0" if not np.isfinite(m["ratio"]) else f"{m['ratio']:.1f}×"
        text = (f"{sig[1]} rise {ratio} during the drops ({m['during']:.3g} vs {m['between']:.3g} between them; "
                f"higher in {m['higher']} of {m['drops']} drops, {_p(m['p_value'])}): {sig[2]}")
        out += support(sig[0], confidence(m["p_value"]), impact(lost_fraction), text, p_value=m["p_value"],
                       lost=lost_fraction, names=(str(m.get("host", "")),) if m.get("host") else ())
    return out


SWAP_SHARE = 0.5  # swap traffic covering half the disk traffic's rise makes the disk traffic swapping's


def _swap_symptoms(metrics: list[dict]) -> set[tuple[str, object]]:
    """(metric, host) of the disk reads, writes and iowait whose rise during the drops swapping explains: the
    host's swap traffic rises significantly too and its rise (MiB/s) is at least SWAP_SHARE of the disk traffic's
    (swapped pages are read from and written to a disk: vmstat counts them in bi/bo, and the CPUs wait on them).
    Where the host's disk traffic is measured it must rise as a host metric must to count (HOST_RATIO_MIN):
    swapping that barely moves the disk traffic (a trickle of KiB/s, or swap in RAM: zram) blocks no CPU on I/O (a
    10 KiB/s trickle had explained away a network filesystem's iowait, 38% against 2%, and read memory_pressure for
    data_starvation)."""
    rise = {(m["metric"], m.get("host")): m["during"] - m["between"] for m in metrics}
    level = {(m["metric"], m.get("host")): m["between"] for m in metrics}
    out: set[tuple[str, object]] = set()
    for m in metrics:
        if m["metric"] != "swap_mib_s" or m["p_value"] >= ALPHA or not _material(m):
            continue
        host = m.get("host")
        disk_keys = [(k, host) for k in ("read_mib_s", "write_mib_s") if (k, host) in rise]
        disk = sum(max(rise[k], 0.0) for k in disk_keys)
        moved = disk > 0 and disk >= (HOST_RATIO_MIN - 1.0) * sum(max(level[k], 0.0) for k in disk_keys)
        if not disk_keys or moved and rise[("swap_mib_s", host)] >= SWAP_SHARE * disk:
            out |= {("read_mib_s", host), ("write_mib_s", host), ("iowait_pct", host)}
    return out
