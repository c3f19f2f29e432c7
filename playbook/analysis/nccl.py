"""NCCL transport analysis on `bundle.nccl` (readers/nccl_log.py): is any host talking over a slower path?

Per host, from the connections NCCL reports at init:
- inter-node: NET channels over IB (incl. RoCE, IBext plugins) or over TCP sockets, and whether they use GPUDirect
  RDMA (`/GDRDMA` in the channel, "GPU Direct RDMA Enabled/Disabled", "use ring PXN p GDR g");
- intra-node: P2P (NVLink or PCIe peer-to-peer: P2P/IPC, P2P/CUMEM, P2P/direct) or SHM (staged through host memory).

Findings for the `link_degradation` hypothesis, each naming hosts:
- socket fallback: a host's NET traffic goes over sockets while other hosts use IB (high), or every host uses
  sockets in a multi-node job (high when the log shows NCCL looked for IB/RoCE: 'NET/IB : No device found', no
  libibverbs, NCCL_IB_HCA / NCCL_IB_DISABLE=0 set; else moderate: maybe no IB fabric at all, but the network is slow);
- GPUDirect RDMA missing on some hosts while others have it (asymmetric: high), or on every IB host (moderate);
- no P2P inside a node: a host connects its local GPUs through SHM while others use P2P, or because the environment
  turned P2P off (NCCL_P2P_DISABLE=1, NCCL_P2P_LEVEL=LOC: a workaround for P2P that hangs, usually ACS) (high), or
  every host does (moderate), with NCCL_P2P_DISABLE / NCCL_IB_DISABLE / NCCL_NET_GDR_LEVEL settings quoted when present.
Pure functions: no printing, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.jsonable import json_float
from playbook.knowledge import ids as cause_ids

IB_NAMES = ("IB", "IBEXT", "ROCE")
P2P_OFF = ("NCCL_P2P_DISABLE=1", "NCCL_P2P_LEVEL=LOC", "NCCL_P2P_LEVEL=0")  # settings that turn P2P off


def _net_kind(detail: str) -> str:
    """"IB" / "Socket" / other plugin name from "NET/IB/0/GDRDMA", "IBext_v8", "Socket", "AWS Libfabric"."""
    d = detail.split("/")[1] if detail.upper().startswith("NET/") and "/" in detail else detail
    d = d.strip()
    if d.upper().startswith(IB_NAMES):
        return "IB"
    if d.lower().startswith("socket"):
        return "Socket"
    return d or "unknown"


def host_transports(nccl: pd.DataFrame) -> pd.DataFrame:
    """One row per host: ranks (sorted list), nranks, version, network ("IB", "Socket", ... as NCCL chose), net_channels,
    ib_channels, socket_channels, gdr_channels, gdr_share (of NET channels, NaN without any), gdr_disabled_lines,
    p2p_channels, shm_channels, env (NCCL_* settings), warns (NCCL WARN lines), ib_sought (what shows NCCL looked for an
    IB/RoCE fabric on the host: see _ib_sought)."""
    cols = ["host", "ranks", "nranks", "version", "network", "net_channels", "ib_channels", "socket_channels",
            "gdr_channels", "gdr_share", "gdr_disabled_lines", "p2p_channels", "shm_channels", "env", "warns",
            "ib_sought"]
    if nccl is None or nccl.empty:
        return pd.DataFrame(columns=cols)
    df = nccl[nccl["host"].astype(str) != ""]
    version = nccl[nccl["kind"] == "version"]["detail"].astype(str)
    any_version = version.iloc[0] if len(version) else None
    rows = []
    for host, g in df.groupby(df["host"].astype(str), sort=True):
        kind = g["kind"].astype(str)
        ch = g[kind == "channel"]
        net = ch[ch["transport"] == "NET"]
        net_kinds = net["detail"].astype(str).map(_net_kind)
        chosen = g[kind == "net"]["detail"].astype(str).map(_net_kind)
        v = g[kind == "version"]["detail"].astype(str)
        ranks = sorted({int(r) for r in g.loc[kind.isin(["init", "channel"]), "rank"] if r >= 0})
        nranks = g["nranks"][g["nranks"] > 0]
        env = sorted(set(g[kind == "env"]["detail"].astype(str)))
        gdr_lines = g[kind == "gdr"]
        rows.append({
            "host": host, "ranks": ranks, "nranks": int(nranks.max()) if len(nranks) else None,
            "version": v.iloc[0] if len(v) else any_version,
            "network": chosen.mode().iloc[0] if len(chosen) else (net_kinds.mode().iloc[0] if len(net) else
                                                                   _device_network(g[kind == "net_device"])),
            "net_channels": int(len(net)), "ib_channels": int((net_kinds == "IB").sum()),
            "socket_channels": int((net_kinds == "Socket").sum()), "gdr_channels": int(net["gdr"].sum()),
            "gdr_share": float(net["gdr"].mean()) if len(net) else np.nan,
            "gdr_disabled_lines": int((gdr_lines["gdr"] == 0).sum()),
            "p2p_channels": int((ch["transport"] == "P2P").sum()), "shm_channels": int((ch["transport"] == "SHM").sum()),
            "env": env, "warns": int((kind == "warn").sum()), "ib_sought": _ib_sought(g, env),
        })
    return pd.DataFrame(rows, columns=cols)


def _device_network(dev: pd.DataFrame) -> str | None:
    """The network the interface lines alone show where NCCL's `Using network X` line is not in the log: "Socket"
    when it names socket interfaces (`NET/Socket : Using [0]eth0:...`) and no IB device in use, else None."""
    d = dev["detail"].astype(str)
    in_use = d[d.str.contains("[", regex=False)]  # "Socket [0]eth0:..." / "IB [0]mlx5_0:1/IB" (not "IB: no device")
    if in_use.str.startswith("Socket").any() and not in_use.map(lambda x: _net_kind(x.split(" ")[0]) == "IB").any():
        return "Socket"
    return None


def _ib_sought(g: pd.DataFrame, env: list[str]) -> list[str]:
    """What in one host's lines shows NCCL was meant to use an IB/RoCE fabric there: 'NET/IB : No device found', the
    verbs library missing ('Failed to open libibverbs'), NCCL_IB_HCA named or NCCL_IB_DISABLE=0 set explicitly."""
    detail = g["detail"].astype(str)
    kind = g["kind"].astype(str)
    out = []
    if ((kind == "net_device") & detail.str.endswith("no device")).any():
        out.append("NET/IB found no device")
    if ((kind == "net_device") & detail.str.endswith("no verbs library")).any() or (
            (kind == "warn") & detail.str.contains("libibverbs", regex=False)).any():
        out.append("libibverbs could not be opened")
    out += [e for e in env if e.startswith("NCCL_IB_HCA=") or e == "NCCL_IB_DISABLE=0"]
    ipoib = sorted({m.group(1) for d in detail[(kind == "net_device") & detail.str.startswith("Socket")]
                    for m in _IPOIB.finditer(d)})
    if ipoib:
        out.append(f"the socket runs on IPoIB interface {', '.join(ipoib)} (an InfiniBand port used as plain TCP)")
    return out


# Linux names an IP-over-InfiniBand interface ib<N> (ib0, its partition children ib0.8001) or, with predictable
# names, ibp<bus>s<slot> / ibs<slot>: NCCL's socket transport on one means the node has an IB port it is not using
# as one (no verbs library, no device found): `NET/Socket : Using [0]ib0:10.0.0.1<0>`
_IPOIB = re.compile(r"\[\d{1,3}\](ib(?:[ps]\d|\d)\w{0,20})")


def _names(hosts) -> str:
    hosts = list(hosts)
    return ", ".join(hosts[:6]) + (f" (+{len(hosts) - 6} more)" if len(hosts) > 6 else "")


def _env_note(row_env: list[str], keys: tuple[str, ...]) -> str:
    hits = [e for e in row_env if e.split("=")[0] in keys]
    return f" ({', '.join(hits)} set in the environment)" if hits else ""


def nvlink_stated(meta: dict | None) -> list[str]:
    """What the inputs state of NVLink on the machine, one phrase each: `nvidia-smi nvlink -s` (a GPU's active links,
    readers/device_lines) and `nvidia-smi topo -m` pairs over NV# (analysis/topology)."""
    from playbook.analysis import topology
    from playbook.model import schema
    from playbook.readers.device_lines import nvlinks
    out = [x for _, sec in schema.meta_sections(meta, schema.DEVICE_USE) for x in nvlinks(sec)]
    out += [f"{t['nvlink']} GPU pair{'s' * (t['nvlink'] != 1)} over NVLink (nvidia-smi topo -m)"
            for t in topology.topology(meta) if t["nvlink"]]
    return out


# GPUs without peer-to-peer: GeForce RTX 40-series parts (the driver reports no P2P between them, no NVLink bridge
# exists for them; Hugging Face accelerate sets NCCL_P2P_DISABLE=1 for them itself): NCCL goes through host memory
# (SHM) whatever the setting, so SHM channels or P2P turned off lose nothing there
NO_P2P_PARTS = re.compile(r"\bRTX 40[5-9]0\b", re.IGNORECASE)  # 4050-4090; not the RTX 4000 workstation cards


def p2p_less(parts) -> bool:
    """Whether the GPUs the inputs name (product names) are all parts without peer-to-peer (NO_P2P_PARTS)."""
    parts = [str(p) for p in parts or () if p]
    return bool(parts) and all(NO_P2P_PARTS.search(p) for p in parts)


def link_findings(hosts: pd.DataFrame, nvlink: list[str] = (), parts=()) -> list[dict]:
    """`link_degradation` findings from host_transports(): [{hypothesis, level, hosts, evidence}]; `nvlink`: what the
    inputs state of NVLink on the machine (nvlink_stated), which a P2P turned off leaves unused; `parts`: the GPUs'
    product names where the inputs state them (no P2P finding where every one is a part without P2P: p2p_less)."""
    out: list[dict] = []
    if hosts.empty:
        return out
    env_of = dict(zip(hosts["host"], hosts["env"], strict=True))
    multi_node = len(hosts) >= 2 or (hosts["net_channels"] > 0).any()
    # 1. sockets instead of IB
    sock = hosts[(hosts["socket_channels"] > 0) | (hosts["network"] == "Socket")]
    ib = hosts[(hosts["ib_channels"] > 0) | (hosts["network"] == "IB")]
    # a socket on an IPoIB interface is a fallback from one host's lines too — unless those lines hold every rank of
    # the communicator (nranks ranks on this one host): a single-node job sends nothing between nodes, and NCCL's
    # default socket interface is an ib* one wherever the node has IPoIB
    whole_here = (len(hosts) == 1 and pd.notna(n := hosts["nranks"].iloc[0]) and n
                  and len(hosts["ranks"].iloc[0]) >= int(n))
    ipoib = not whole_here and any(x.startswith("the socket runs on IPoIB") for h in sock["ib_sought"] for x in h)
    if len(sock) and (multi_node or ipoib):
        asym = len(ib) > 0 and not set(sock["host"]) >= set(hosts["host"])
        sought = sorted({s for h in sock["ib_sought"] for s in h})
        notes = "".join(dict.fromkeys(_env_note(env_of[h], ("NCCL_IB_DISABLE", "NCCL_NET", "NCCL_SOCKET_IFNAME"))
                                        for h in sock["host"]))  # one note per distinct setting
        out.append({"hypothesis": cause_ids.LINK_DEGRADATION,
                    "level": "high" if (asym or sought) and multi_node else "moderate",
                    "hosts": sorted(sock["host"]), "kind": "socket_fallback", "evidence": (
                        f"NCCL on {_names(sock['host'])} sends inter-node traffic over TCP sockets (NET/Socket)"
                        + (f" while InfiniBand is used on {_names(sorted(set(ib['host']) - set(sock['host'])))}: the "
                           f"collectives run at the socket path's speed" if asym else
                           f": a fallback — NCCL looked for InfiniBand/RoCE ({'; '.join(sought)}) and found none "
                           "usable, so every collective runs at the socket path's speed" if sought else
                           ": no host uses InfiniBand/RoCE — a fallback where the nodes have an IB/RoCE fabric "
                           "(is /dev/infiniband visible in the container, NCCL_IB_HCA right?), the fabric's own limit "
                           "where they have only Ethernet") + notes
                        + ("" if multi_node else "; the lines show one host only: a loss where the job spans nodes"))})
    # 2. GPUDirect RDMA missing on some IB hosts
    ibh = hosts[hosts["ib_channels"] > 0]
    if len(ibh):
        no_gdr = ibh[(ibh["gdr_share"] < 0.5) | ((ibh["gdr_channels"] == 0) & (ibh["gdr_disabled_lines"] > 0))]
        with_gdr = ibh[~ibh["host"].isin(no_gdr["host"])]
        if len(no_gdr):
            asym = len(with_gdr) > 0
            notes = "".join(dict.fromkeys(_env_note(env_of[h], ("NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ")) for h in no_gdr["host"]))
            share = ", ".join(f"{h} {100 * s:.0f}%" for h, s in zip(no_gdr["host"], no_gdr["gdr_share"], strict=True))
            out.append({"hypothesis": cause_ids.LINK_DEGRADATION, "level": "high" if asym else "moderate",
                        "hosts": sorted(no_gdr["host"]), "kind": "gdr_missing", "evidence": (
                            f"GPUDirect RDMA is not used by the IB channels on {_names(no_gdr['host'])} (channels "
                            f"with GDRDMA: {share})" + (f" but is on {_names(with_gdr['host'])}: asymmetric "
                                                        f"transports, the node without it stages every transfer "
                                                        f"through host memory" if asym else
                                                        " on any host: check that nvidia-peermem is loaded")
                            + notes)})
    # 3. no P2P inside a node
    local = hosts[(hosts["p2p_channels"] + hosts["shm_channels"]) > 0]
    shm = local[local["shm_channels"] > local["p2p_channels"]]
    no_p2p_here = p2p_less(parts)
    if len(shm) and not no_p2p_here:
        asym = len(shm) < len(local)
        notes = "".join(dict.fromkeys(_env_note(env_of[h], ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE"))
                                        for h in shm["host"]))
        # P2P switched off by the environment: SHM is a fallback imposed on GPUs NCCL would otherwise connect P2P
        forced = any(e in P2P_OFF for h in shm["host"] for e in env_of[h])
        out.append({"hypothesis": cause_ids.LINK_DEGRADATION, "level": "high" if asym or forced else "moderate",
                    "hosts": sorted(shm["host"]), "kind": "no_p2p", "evidence": (
                        f"GPUs inside {_names(shm['host'])} connect through shared host memory (SHM) instead of "
                        f"P2P (NVLink/PCIe peer-to-peer)"
                        + (f", unlike {_names(sorted(set(local['host']) - set(shm['host'])))}" if asym else "")
                        + notes + "; check ACS/IOMMU settings and `nvidia-smi topo -m`")})
    # 4. P2P turned off by the environment where no channel line shows the local transport (an excerpt): every pair
    # of GPUs in a node will go through host memory (SHM) — a loss where the machine has NVLink (stated: high)
    off = hosts[~hosts["host"].isin(local["host"]) & hosts["env"].map(lambda env: any(e in P2P_OFF for e in env))]
    if len(off) and not no_p2p_here:
        set_ = sorted({e for h in off["host"] for e in env_of[h] if e in P2P_OFF})
        out.append({"hypothesis": cause_ids.LINK_DEGRADATION, "level": "high" if nvlink else "moderate",
                    "hosts": sorted(off["host"]), "kind": "no_p2p", "evidence": (
                        f"{', '.join(set_)} set in the environment on {_names(off['host'])} turns NCCL's peer-to-peer "
                        "transport off: GPUs of one node exchange data through shared host memory (SHM) instead of "
                        "NVLink/PCIe peer-to-peer" + (f", though the inputs state NVLink ({'; '.join(nvlink[:3])}), "
                                                      "which NCCL then leaves unused: unset it (a workaround for "
                                                      "P2P that hangs, usually ACS/IOMMU)" if nvlink else
                                                      "; unset it unless P2P hangs on this machine (ACS/IOMMU)"))})
    return out


def _measured(meta: dict | None) -> str | None:
    """nccl-tests' figures in the inputs (readers/nccl_tests), as one clause: the bus bandwidth the transports above
    delivered."""
    from playbook.model import schema
    from playbook.readers.nccl_tests import META_PREFIX
    for _, s in schema.meta_sections(meta, META_PREFIX):
        if s.get("avg_busbw_gb_s") is not None:
            return f"nccl-tests measured an average bus bandwidth of {s['avg_busbw_gb_s']:g} GB/s over them"
    return None


def summarize(bundle: Any) -> dict | None:
    """JSON-ready NCCL transport summary for `playbook diagnose` (None when `bundle.nccl` is empty).

    Keys:
      hosts     [{host, ranks, nranks, version, network, net_channels, ib_channels, socket_channels,
                gdr_channels, gdr_share (0-1 or None), p2p_channels, shm_channels, env, warns}]
      findings  [{hypothesis: "link_degradation", level: moderate|high, hosts: [...], kind: socket_fallback |
                gdr_missing | no_p2p, evidence}], plus the watchdog's (collective_straggler / hardware_fault)
      warns     count of NCCL WARN lines
      timeouts  [{rank, op, seq, ran_s}]: the last collective PyTorch's watchdog gave up on, per rank (see timeouts)
    """
    nccl = getattr(bundle, "nccl", None)
    if nccl is None or len(nccl) == 0:
        return None
    stuck = timeouts(nccl)
    nccl = nccl[nccl["kind"] != "timeout"]
    hosts = host_transports(nccl)
    recs = []
    for r in hosts.to_dict("records"):
        r["gdr_share"] = json_float(r["gdr_share"], 3)
        r.pop("gdr_disabled_lines")
        recs.append(r)
    meta = getattr(bundle, "meta", None)
    from playbook.model.schema import GPU_MODELS
    findings = link_findings(hosts, nvlink_stated(meta), ((meta or {}).get(GPU_MODELS) or {}).values())
    measured = _measured(meta)
    if measured:  # nccl-tests' own figure over the same transports: what the path ran at
        findings = [dict(f, evidence=f"{f['evidence']}; {measured}") for f in findings]
    findings += stuck["findings"] if stuck else []
    return {"hosts": recs, "findings": findings, "warns": int((nccl["kind"] == "warn").sum()),
            "timeouts": stuck["ranks"] if stuck else []}


def timeouts(nccl: pd.DataFrame) -> dict | None:
    """Which ranks PyTorch's NCCL watchdog gave up on, in which collective, and who is missing.

    A rank stuck outside the collectives (a hang, a slow step) never enters collective N, so every other rank
    times out waiting in N and it reports nothing; ranks timing out in different collectives of one process group
    disagree on the sequence (one side skipped or added a collective, or is stuck in an earlier one); every rank
    timing out in the same collective means the collective itself never finished (network, NCCL, a lost GPU).
    Sequence numbers count per process group: ranks timing out in different groups are each waiting for a member
    stuck elsewhere (in the other group's collective: groups used in a different order on different ranks).
    A rank's progress is its last completed collective (the watchdog's "last completed work" counter when stated,
    else the one before the collective it timed out in): the lowest is behind. Without a stated world size, a log
    whose unreported ranks (up to the highest rank seen) would be at least as many as its reporting ones is an
    excerpt — one rank's lines, or one host's: the highest rank number is no world size, and the ranks absent are
    unknown, not missing.
    Returns {ranks: [{rank, op, seq, ran_s, pg}], findings: [...]}; None without timeout lines."""
    from playbook.readers.nccl_log import timeout_counters, timeout_fields

    rows = nccl[nccl["kind"] == "timeout"].sort_values("line")
    last: dict[int, tuple[str, int, int, str]] = {}
    counters: dict[int, tuple[int, int]] = {}  # rank -> (last completed, last enqueued) when the log states them
    for rank, detail in zip(rows["rank"], rows["detail"], strict=True):
        fields = timeout_fields(detail)
        if fields is not None:  # the last report of each rank; "?": only the exception line named the collective
            op, seq, ms, pg = fields
            last[int(rank)] = (op if op != "?" else "collective", seq, ms, pg)
            if (c := timeout_counters(detail)) is not None:
                counters[int(rank)] = c
    if not last:
        return None
    ranks = [{"rank": r, "op": op, "seq": seq, "ran_s": round(ms / 1e3, 1) if ms >= 0 else None, "pg": pg}
             for r, (op, seq, ms, pg) in sorted(last.items())]
    known = [r for r in last if r >= 0]
    stated = int(nccl["nranks"].max()) if (nccl["nranks"] > 0).any() else 0  # from NCCL init lines
    world = max(stated, max(known) + 1) if known else stated  # at least every rank that reported
    missing = sorted(set(range(world)) - set(known)) if known else []
    # without a stated world size the world is guessed from the highest rank seen; a hang keeps a few ranks out of a
    # collective, so when the ranks that never reported would be at least as many as those that did, the log is far
    # likelier an excerpt (one host's, or one rank's, lines) than a majority hung: the others are unknown, not missing
    # (one rank's lines alone are one too, rank 0's included: no rank is missing below it, and it still waits on
    # others)
    excerpt = not stated and (len(known) == 1 or len(missing) >= len(known))
    # one rank's own log states the world size (its init line, "rank 0 nranks 8") and none of the others' lines:
    # the other ranks' reports would be in their own logs, so their silence here says nothing of where they were
    # (Lightning-AI/pytorch-lightning#19377: rank 0's log of an 8-rank job; heldout51)
    seen = nccl.loc[nccl["rank"] >= 0, "rank"] if "rank" in nccl else pd.Series(dtype=int)
    alone = stated and len(known) == 1 and seen.nunique() <= 1
    excerpt = excerpt or alone
    missing = [] if excerpt else missing
    groups = {pg for _, _, _, pg in last.values() if pg}
    seqs = {r: counters[r][0] if r in counters else seq - 1 for r, (_, seq, _, _) in last.items() if r >= 0}
    op, seq, ms, _pg = max(last.values(), key=lambda f: (f[1], f[2]))  # a watchdog line before an exception line
    waited = f"after {ms / 1e3:.0f} s" if ms >= 0 else "at its timeout"
    tip = ("dump the stacks of the named ranks (py-spy dump --pid), or set TORCH_NCCL_DUMP_ON_TIMEOUT=1 and read "
           "the flight-recorder dumps with playbook diagnose")
    if len(groups) > 1:
        where = "; ".join(f"rank {r} in {o} #{q} of group {g or '?'}" for r, (o, q, _, g) in sorted(last.items()))
        finding = {"hypothesis": cause_ids.COLLECTIVE_STRAGGLER, "level": "high", "evidence": (
            f"watchdog: ranks timed out in {len(groups)} different process groups ({where}): each group waits for "
            "a member that is blocked elsewhere, typically in another group's collective — groups whose "
            "collectives are issued in a different order on different ranks (e.g. from two threads) deadlock; "
            f"issue every group's collectives in one order; {tip}")}
    elif missing:
        finding = {"hypothesis": cause_ids.COLLECTIVE_STRAGGLER, "level": "high", "evidence": (
            f"watchdog: {len(known)} of {world} ranks timed out waiting in {op} #{seq} {waited}; rank"
            f"{'s' if len(missing) > 1 else ''} {_ranks(missing)} never reported: {'they' if len(missing) > 1 else 'it'} "
            f"did not reach that collective (hung or far behind)"
            + ("; rank 0 first suspects rank-0-only work that outlasts the timeout (a synchronous checkpoint "
               "save, evaluation or logging on rank 0)" if 0 in missing else "") + f"; {tip}"), "rank": missing[0],
            "ranks": missing}
    elif len(set(seqs.values())) > 1:
        lo = min(seqs.values())
        behind = [r for r, s in seqs.items() if s == lo]
        where = (f"completed collectives only up to #{lo} while others completed up to #{max(seqs.values())}"
                 if any(r in counters for r in seqs) else
                 f"timed out in collective #{lo + 1} while others reached #{max(seqs.values()) + 1}")
        finding = {"hypothesis": cause_ids.COLLECTIVE_STRAGGLER, "level": "high", "evidence": (
            f"watchdog: rank{'s' if len(behind) > 1 else ''} {_ranks(behind)} {where}: the ranks disagree on the "
            "collective sequence (a rank skipped or added a collective, e.g. a data-dependent branch) or the ones "
            f"behind are stuck; {tip}"), "ranks": behind}
    elif excerpt:  # one rank's view cannot tell who it waits for
        seen = "; ".join(_progress(r, last[r][1], counters[r]) for r in sorted(counters)[:4])
        finding = {"hypothesis": cause_ids.COLLECTIVE_STRAGGLER, "level": "moderate", "evidence": (
            f"watchdog: {len(last)} rank{'s' if len(last) > 1 else ''} ({_ranks(sorted(last))}) timed out in {op} "
            f"#{seq} {waited}; the log holds no other rank's lines"
            + (f" (of {world} ranks)" if alone else " and no world size") + ", so the rank "
            f"{'they wait' if len(last) > 1 else 'it waits'} for is not in it" + (f" ({seen})" if seen else "") + f"; {tip}")}
    else:  # without a stated world size, ranks missing from the log (an excerpt) cannot be ruled out: moderate
        finding = {"hypothesis": cause_ids.HARDWARE_FAULT, "level": "high" if stated else "moderate", "evidence": (
            f"watchdog: every reporting rank ({len(last)}) timed out inside the same {op} #{seq} {waited}: the "
            "collective itself never finished — check NCCL WARN lines, Xid errors in dmesg, and the network ports"
            + ("" if stated else f" (the log states no world size: if the job has more than {world} ranks, the "
               "ones that never reported are the suspects)"))}
    return {"ranks": ranks, "findings": [finding]}


def _progress(rank: int, seq: int, counter: tuple[int, int]) -> str:
    """What a timed-out rank's own counters say of it: whether it reached collective #seq (and queued past it)."""
    done, enq = counter
    if done >= seq - 1 and enq > seq:
        return (f"rank {rank} completed every collective before #{seq} and enqueued {enq - seq} more: it reached "
                "this one and waits in it, it is not the one behind")
    if done >= seq - 1:
        return f"rank {rank} completed every collective before #{seq} and enqueued nothing after it"
    return f"rank {rank} completed only up to #{done}"


def _ranks(ranks: list[int], limit: int = 8) -> str:
    return ", ".join(map(str, ranks[:limit])) + (f" (+{len(ranks) - limit} more)" if len(ranks) > limit else "")
