"""nccl-tests result tables (readers/nccl_tests.py, summarised in bundle.meta["nccl_tests:<file>"]) for
`playbook diagnose`: what each table measured, stated as read. A table alone names no cause: its busbw is judged
against the rate of the links it crossed (NCCL's rule of thumb: ~24 GB/s busbw per 200 Gb/s NIC between nodes,
NVIDIA/nccl-tests issues), which the table does not state.

A sweep over node pairs is different: every pair crosses the same kind of links, so the pairs measure each other.
When its figures fall into a slow and a fast group (see `SLOW_GAP`), the node common to the slow pairs is found by
group testing: a node with one fast pair has sound links (its partner in a slow pair is the suspect), a node in two
or more slow pairs and no fast one is the degraded one; a slow pair of two nodes seen nowhere else stays open (one
of the two, not told apart). Pure functions: no printing, no I/O."""

from __future__ import annotations

from typing import Any

from playbook.knowledge import ids as cause_ids
from playbook.model.schema import meta_sections
from playbook.readers.nccl_tests import META_PREFIX, describe


def tables(meta: dict[str, Any] | None) -> list[tuple[str, dict]]:
    """(file, summary) of every nccl-tests summary in the bundle's meta, in file order."""
    return sorted(meta_sections(meta, META_PREFIX))


# Pairs whose busbw differs by less than this ratio are one group. nccl-tests repeats a pair's busbw within a few %
# (NVIDIA/nccl-tests#106: two sound pairs 86.8 and 88.4 GB/s, 2%); a node at half its rate (one rail of two, a port
# trained at a lower speed, traffic through the CPU) costs ~2x (the same thread: 49 against 87-88 GB/s, 1.8x). 1.3 is
# far above the noise and below a lost half.
SLOW_GAP = 1.3


def pair_findings(pairs: list[list]) -> list[dict]:
    """A node-pair sweep ([host a, host b, GB/s]) → the link_degradation finding naming the node common to the slow
    pairs (see the module docstring); [] without a slow group (fewer than 3 pairs, or no gap of SLOW_GAP)."""
    if len(pairs) < 3:
        return []
    values = sorted(p[2] for p in pairs)
    # (a pair at 0 GB/s beside one above it is an infinite gap; two at 0 are one group, no gap)
    ratio, cut = max(((hi / lo if lo > 0 else float("inf") if hi > 0 else 1.0, lo)
                      for lo, hi in zip(values[:-1], values[1:], strict=True)), key=lambda x: x[0])
    if ratio < SLOW_GAP:
        return []
    slow = [p for p in pairs if p[2] <= cut]
    fast_hosts = {h for p in pairs if p[2] > cut for h in p[:2]}
    distinct = list({frozenset(p[:2]): p for p in slow}.values())  # a pair measured twice is one pair, not two
    count: dict[str, int] = {}
    for p in distinct:
        for h in p[:2]:
            count[h] = count.get(h, 0) + 1
    guilty = sorted(h for h, n in count.items() if n >= 2 and h not in fast_hosts)
    open_pairs = [p for p in distinct if not ({p[0], p[1]} & (set(guilty) | fast_hosts))]
    # a sound node's one slow pair: its partner is the suspect (one pair only: moderate)
    suspects = [(p, b) for p in distinct for a, b in (p[:2], p[1::-1]) if a in fast_hosts
                and b not in fast_hosts and b not in guilty]
    fast = [p[2] for p in pairs if p[2] > cut]
    told = (f"node-pair sweep: {len(slow)} of {len(pairs)} pairs at {min(p[2] for p in slow):g}-{cut:g} GB/s busbw "
            f"against {min(fast):g}-{max(fast):g} GB/s for the rest ({ratio:.1f}x)")
    out = []
    if guilty:
        partners = sorted({h for p in slow if set(p[:2]) & set(guilty) for h in p[:2]} - set(guilty))
        cleared = [h for h in partners if h in fast_hosts]
        out.append({"hypothesis": cause_ids.LINK_DEGRADATION, "level": "high", "hosts": guilty, "evidence": (
            f"{told}; {', '.join(guilty)} {'is' if len(guilty) == 1 else 'are'} in "
            f"{' and '.join(str(count[h]) for h in guilty)} slow pairs and no fast one"
            + (f", while {', '.join(cleared)} also {'has' if len(cleared) == 1 else 'have'} a fast pair"
               if cleared else "") + ": the node common to the slow pairs")})
    if suspects:
        out.append({"hypothesis": cause_ids.LINK_DEGRADATION, "level": "moderate",
                    "hosts": sorted({b for _, b in suspects}), "evidence": f"{told}; " + "; ".join(
                        f"{p[0]}-{p[1]} slow ({p[2]:g} GB/s) while {p[1] if b == p[0] else p[0]} has a fast pair: "
                        f"{b} the suspect (in one slow pair: pair it with another node of a fast pair to confirm)"
                        for p, b in suspects[:4])})
    if open_pairs:
        out.append({"hypothesis": cause_ids.LINK_DEGRADATION, "level": "moderate", "evidence": (
            f"{told}; " + "; ".join(f"{a}-{b} slow ({v:g} GB/s): one of the two, not told apart (pair each with a "
                                     "node of a fast pair)" for a, b, v in open_pairs[:4]))})
    return out


def summarize(bundle: Any) -> dict | None:
    """{tables: [{file, line (describe()), peak_busbw_gb_s, ...}], findings: [...] (a node-pair sweep's, see
    pair_findings)}; None without a table."""
    found = tables(getattr(bundle, "meta", None))
    if not found:
        return None
    findings = [f for _, s in found for f in pair_findings(s.get("pairs") or [])]
    return {"tables": [{"file": f, "line": describe(s), **s} for f, s in found], "findings": findings}
