"""Interconnect health for `playbook diagnose`: which links are saturated (busy near capacity: the bottleneck, but
healthy) and which are degraded (errors rising, port down, trained below their maximum: hand to the cluster team).

Inputs (whatever the bundle has):
  bundle.ib          InfiniBand / RoCE port counters as rates (playbook.probes.interconnect, ib.parquet)
  bundle.telemetry   pcie_tx/rx_mib_s, pcie_link_gen/width (read under load), pcie_replay_count, nvlink_tx/rx_mib_s
                     (NVML sampler, or DCGM fields 1009/1010, 237/238, 202, 1011/1012)
  bundle.meta["parts"][part]["probes"]["nvml"]["pcie_max"]   each GPU's maximum PCIe gen/width (NVML)
  bundle.meta["environment:<file>"]  links stated by `lspci -vv` (LnkCap / LnkSta) and `nvidia-smi topo -m`'s GPU
                     pair paths (playbook.analysis.topology): LnkCap is a maximum beside NVML's; a LnkSta that
                     trained below LnkCap is a degraded link stated at one moment; the topology is context only
The per-link verdicts come from link_status (IB errors/state/rate vs peers, PCIe gen/width vs maximum and
replays, NVLink busy vs a capacity you pass). On top of it, links_table adds PCIe saturation: a PCIe link
whose 90th-percentile throughput (max of tx, rx) reaches `busy_pct` of its raw capacity (per-lane rate of its
generation × width, per direction) is saturated; PCIe's packet overhead keeps real transfers below ~85-90% of raw,
so 80% means at the ceiling.

Findings: every degraded link → `link_degradation` naming host and link (level high when counters rose, a port went
down or an IB link runs below its peers; moderate when only a PCIe link reads below its maximum and its GPU was
never busy — idle GPUs may train their link down to save power, so read it under load — or when an IB port was
down and idle for the whole recording: likely an uncabled port rather than a lost link). A saturated PCIe receive
direction (host → GPU) → `h2d_copy` moderate. Saturated IB/NVLink links are reported, not blamed: they say the job
is bound by communication, which the straggler and overlap analyses judge.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from playbook.analysis import topology
from playbook.knowledge import ids as cause_ids
from playbook.model.schema import IB_ERROR_COLUMNS

# raw PCIe bandwidth per lane and direction, GB/s (after line encoding), by generation
PCIE_LANE_GB_S = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
MIB = 2.0**20
BUSY_PCT = 80.0
GPU_BUSY_PCT = 50.0  # a GPU at or above this utilization at some point was "under load"
STATED = "trained at"  # the words of a link stated by lspci (topology.link_text), not measured under load
READ = "as read"  # a link read in the telemetry while its GPU was not seen busy (idle, or no utilization beside it)


def pcie_max(meta: dict[str, Any] | None) -> dict[tuple[str, int], tuple[float, float]]:
    """{(host, gpu): (max gen, max width)} from the run directory's part metadata (NVML sampler stats)."""
    out: dict[tuple[str, int], tuple[float, float]] = {}
    for info in ((meta or {}).get("parts") or {}).values():
        if not isinstance(info, dict):
            continue
        host = str(info.get("host", ""))
        pm = (((info.get("probes") or {}).get("nvml") or {}).get("pcie_max")) or {}
        for gpu, v in pm.items():
            try:
                out[(host, int(gpu))] = (float(v["gen"]), float(v["width"]))
            except (KeyError, TypeError, ValueError):
                continue
    return out


def pcie_capacity_mib_s(gen: float, width: float) -> float:
    """Raw PCIe bandwidth of one direction in MiB/s (NaN when gen/width are unknown)."""
    lane = PCIE_LANE_GB_S.get(int(gen)) if np.isfinite(gen) else None
    if lane is None or not np.isfinite(width) or width <= 0:
        return math.nan
    return lane * 1e9 * width / MIB


def pcie_load(telemetry: pd.DataFrame, busy_pct: float = BUSY_PCT) -> pd.DataFrame:
    """Per GPU: host, gpu, gen, width (highest seen), capacity_mib_s, p90 tx/rx MiB/s, p90 busy % of capacity,
    saturated (bool), direction ("rx" host→GPU / "tx" GPU→host: the busier one)."""
    cols = ["host", "gpu", "gen", "width", "capacity_mib_s", "tx_p90_mib_s", "rx_p90_mib_s", "busy_p90_pct",
            "saturated", "direction"]
    need = {"pcie_tx_mib_s", "pcie_rx_mib_s", "pcie_link_gen", "pcie_link_width"}
    if telemetry is None or telemetry.empty or not need <= set(telemetry.columns):
        return pd.DataFrame(columns=cols)
    rows = []
    for (host, gpu), g in telemetry.groupby(["host", "gpu"], sort=True):
        tx, rx = g["pcie_tx_mib_s"].dropna(), g["pcie_rx_mib_s"].dropna()
        if tx.empty and rx.empty:
            continue
        gen, width = g["pcie_link_gen"].max(), g["pcie_link_width"].max()
        cap = pcie_capacity_mib_s(gen, width)
        txp = float(tx.quantile(0.9)) if len(tx) else math.nan
        rxp = float(rx.quantile(0.9)) if len(rx) else math.nan
        peak = np.nanmax([txp, rxp])
        busy = 100.0 * peak / cap if np.isfinite(cap) and cap > 0 else math.nan
        rows.append({"host": str(host), "gpu": int(gpu), "gen": gen, "width": width, "capacity_mib_s": cap,
                     "tx_p90_mib_s": txp, "rx_p90_mib_s": rxp, "busy_p90_pct": busy,
                     "saturated": bool(np.isfinite(busy) and busy >= busy_pct),
                     "direction": "rx" if (np.nan_to_num(rxp) >= np.nan_to_num(txp)) else "tx"})
    return pd.DataFrame(rows, columns=cols)


def link_status(ib: pd.DataFrame | None = None, telemetry: pd.DataFrame | None = None,
                pcie_max: dict[tuple[str, int], tuple[float, float]] | None = None,
                busy_pct: float = 80.0, nvlink_capacity_mib_s: float | None = None) -> pd.DataFrame:
    """One row per link: host, link ("mlx5_0/1", "gpu0/pcie", "gpu0/nvlink"), status, evidence.

    status "degraded": error counters rose during the recording, the port went down, or the link trained below
    its peers (same kind of link on any host) / its own maximum (`pcie_max[(host, gpu)] = (gen, width)`);
    "saturated": the 90th percentile of its busy share ≥ `busy_pct` (IB: util_pct; NVLink: only with
    `nvlink_capacity_mib_s`); "ok" otherwise. PCIe throughput from NVML is not compared with a capacity (the
    20 ms windows are too noisy); PCIe is judged by gen/width and replays. Degraded wins over saturated.
    """
    rows: list[dict[str, Any]] = []
    if ib is not None and len(ib):
        best_rate = ib.groupby("link_layer")["rate_gbps"].max()
        for (host, dev, port), g in ib.groupby(["host", "device", "port"], sort=True):
            why = []
            for name in IB_ERROR_COLUMNS:
                s = g[name].dropna()
                if len(s) >= 2 and s.iloc[-1] > s.iloc[0]:
                    why.append(f"{name} +{int(s.iloc[-1] - s.iloc[0])}")
            if (g["state"] != "ACTIVE").any() or (g["phys_state"].isin(["Disabled", "Polling", "LinkDown"])).any():
                why.append("port not ACTIVE/LinkUp in some samples")
            rate = g["rate_gbps"].min()
            peer = best_rate.get(g["link_layer"].iloc[0], np.nan)
            if np.isfinite(rate) and np.isfinite(peer) and rate < peer:
                why.append(f"rate {rate:g} Gb/s below peers' {peer:g} Gb/s")
            util = g["util_pct"].dropna()
            p90 = float(util.quantile(0.9)) if len(util) else math.nan
            status = "degraded" if why else ("saturated" if p90 >= busy_pct else "ok")
            if status == "saturated":
                why.append(f"p90 utilization {p90:.0f}% of {g['rate_gbps'].max():g} Gb/s")
            rows.append({"host": host, "link": f"{dev}/{port}", "kind": "ib", "status": status,
                         "evidence": "; ".join(why) or f"p90 utilization {p90:.0f}%"})
    if telemetry is not None and len(telemetry):
        t = telemetry
        best_gen, best_width = t["pcie_link_gen"].max(), t["pcie_link_width"].max()
        for (host, gpu), g in t.groupby(["host", "gpu"], sort=True):
            why = []
            gen, width = g["pcie_link_gen"].dropna(), g["pcie_link_width"].dropna()
            if len(gen) and len(width):
                mx = (pcie_max or {}).get((str(host), int(gpu)))
                ref_gen, ref_width = (mx if mx else (best_gen, best_width))
                if gen.max() < ref_gen or width.max() < ref_width:
                    util = g["util_pct"].dropna() if "util_pct" in g else g["pcie_link_gen"].iloc[:0]
                    when = "under load" if len(util) and util.max() >= GPU_BUSY_PCT else READ
                    why.append(f"PCIe gen{gen.max():g} x{width.max():g} {when}, expected gen{ref_gen:g} "
                               f"x{ref_width:g}")
            rep = g["pcie_replay_count"].dropna()
            if len(rep) >= 2 and rep.iloc[-1] > rep.iloc[0]:
                why.append(f"PCIe replays +{int(rep.iloc[-1] - rep.iloc[0])}")
            if gen.size or rep.size:
                rows.append({"host": host, "link": f"gpu{gpu}/pcie", "kind": "pcie",
                             "status": "degraded" if why else "ok", "evidence": "; ".join(why)})
            nv = g[["nvlink_tx_mib_s", "nvlink_rx_mib_s"]].max(axis=1).dropna()
            if len(nv):
                p90 = float(nv.quantile(0.9))
                sat = nvlink_capacity_mib_s is not None and p90 >= busy_pct / 100 * nvlink_capacity_mib_s
                rows.append({"host": host, "link": f"gpu{gpu}/nvlink", "kind": "nvlink",
                             "status": "saturated" if sat else "ok",
                             "evidence": f"p90 {p90:,.0f} MiB/s" + (
                                 f" of {nvlink_capacity_mib_s:,.0f}" if nvlink_capacity_mib_s else "")})
    return pd.DataFrame(rows, columns=["host", "link", "kind", "status", "evidence"])


def _gpu_busy(telemetry: pd.DataFrame | None) -> dict[tuple[str, int], bool]:
    if telemetry is None or telemetry.empty or "util_pct" not in telemetry:
        return {}
    peak = telemetry.groupby(["host", "gpu"])["util_pct"].max()
    return {(str(h), int(g)): bool(v >= GPU_BUSY_PCT) for (h, g), v in peak.items() if np.isfinite(v)}


def links_table(bundle: Any, busy_pct: float = BUSY_PCT, nvlink_capacity_mib_s: float | None = None
                ) -> pd.DataFrame:
    """link_status rows (host, link, kind, status, evidence) with PCIe saturation added (see the module docstring)."""
    ib = getattr(bundle, "ib", None)
    tele = getattr(bundle, "telemetry", None)
    link_cols = ["pcie_link_gen", "pcie_link_width", "pcie_replay_count", "nvlink_tx_mib_s", "nvlink_rx_mib_s",
                 "pcie_tx_mib_s", "pcie_rx_mib_s"]
    has_links = tele is not None and len(tele) and any(tele[c].notna().any() for c in link_cols if c in tele)
    stated = topology.stated_links(getattr(bundle, "meta", None), _hosts(bundle))
    maxima = {**topology.stated_maxima(getattr(bundle, "meta", None), _hosts(bundle)),
              **pcie_max(getattr(bundle, "meta", None))}  # NVML's own maximum first, then lspci's / -q's
    table = link_status(ib=ib if ib is not None and len(ib) else None, telemetry=tele if has_links else None,
                        pcie_max=maxima, busy_pct=busy_pct, nvlink_capacity_mib_s=nvlink_capacity_mib_s)
    measured: set[tuple[str, int]] = set()
    if has_links and {"pcie_link_gen", "pcie_link_width"} <= set(tele.columns):  # read over the recording
        m = tele.dropna(subset=["pcie_link_gen", "pcie_link_width"])
        measured = {(str(h), int(g)) for h, g in m[["host", "gpu"]].drop_duplicates().itertuples(index=False)}
    _add_stated(table, stated, measured)
    if not has_links:
        return table
    load = pcie_load(tele, busy_pct)
    for r in load.itertuples():
        link = f"gpu{r.gpu}/pcie"
        mask = (table["host"].astype(str) == r.host) & (table["link"] == link)
        text = (f"p90 {max(np.nan_to_num(r.tx_p90_mib_s), np.nan_to_num(r.rx_p90_mib_s)):,.0f} MiB/s "
                f"({'host→GPU' if r.direction == 'rx' else 'GPU→host'}) = {r.busy_p90_pct:.0f}% of gen{r.gen:g} "
                f"x{r.width:g} ({r.capacity_mib_s:,.0f} MiB/s)") if np.isfinite(r.busy_p90_pct) else ""
        if not mask.any():
            table.loc[len(table)] = {"host": r.host, "link": link, "kind": "pcie",
                                     "status": "saturated" if r.saturated else "ok", "evidence": text}
            continue
        i = table.index[mask][0]
        if r.saturated and table.at[i, "status"] == "ok":
            table.at[i, "status"] = "saturated"
        if text:
            table.at[i, "evidence"] = "; ".join(x for x in (table.at[i, "evidence"], text) if x)
    return table


def _hosts(bundle: Any) -> list[str]:
    """The hosts the bundle's telemetry and IB tables name (what an environment section may describe)."""
    found: list[str] = []
    for name in ("telemetry", "ib"):
        t = getattr(bundle, name, None)
        if t is not None and len(t) and "host" in t:
            found += [str(h) for h in t["host"].unique()]
    return sorted(set(found))


def _add_stated(table: pd.DataFrame, stated: list[dict], measured: set[tuple[str, int]] = frozenset()) -> None:
    """Links stated by lspci into the table (in place): a downgraded one degrades its row (added when the
    telemetry has none), one at its capability is an ok row where the telemetry has none. Where the telemetry read
    the link's generation and width (`measured`) and found them at its capability, that reading over the recording
    outweighs lspci's one moment: the row stays as the telemetry left it, the statement added as a note."""
    for link in stated:
        mask = (table["host"].astype(str) == link["host"]) & (table["link"] == link["label"])
        text = topology.link_text(link)
        if not mask.any():
            table.loc[len(table)] = {"host": link["host"], "link": link["label"], "kind": "pcie",
                                     "status": "degraded" if link["downgraded"] else "ok", "evidence": text}
            continue
        i = table.index[mask][0]
        if not link["downgraded"]:
            continue
        if (link["host"], link["gpu"]) in measured and table.at[i, "status"] != "degraded":
            text = (f"{text}, but the telemetry reads it at its capability during the recording (an idle GPU "
                    "trains its link down: lspci read it idle)")
        else:
            table.at[i, "status"] = "degraded"
        table.at[i, "evidence"] = "; ".join(x for x in (table.at[i, "evidence"], text) if x)


def _always_down(ib: pd.DataFrame | None, host: str, link: str) -> bool:
    """True when an IB port was not ACTIVE in any sample and carried no traffic (likely unused, not lost)."""
    if ib is None or ib.empty:
        return False
    dev, _, port = link.partition("/")
    g = ib[(ib["host"].astype(str) == host) & (ib["device"].astype(str) == dev) & (ib["port"].astype(str) == port)]
    traffic = g[["tx_mib_s", "rx_mib_s"]].fillna(0.0).to_numpy().sum() if len(g) else 0.0
    return bool(len(g) and (g["state"].astype(str) != "ACTIVE").all() and traffic == 0.0)


def _degraded_level(row: pd.Series, busy: dict[tuple[str, int], bool], ib: pd.DataFrame | None) -> tuple[str, str]:
    """(level, note): moderate for a PCIe link read below its maximum on a GPU that was never busy, and for an
    IB port that was down the whole recording with no traffic and nothing else wrong; high otherwise."""
    ev = str(row["evidence"])
    if row["kind"] == "pcie" and STATED in ev and "under load" not in ev and "replays" not in ev:
        return "moderate", (" (stated at one moment: a GPU that idles may train its link down to save power, so "
                            "read LnkSta under load; whether it costs anything needs the GPU's telemetry beside it)")
    if row["kind"] == "pcie" and ("under load" in ev or f"{READ}, expected" in ev) and "replays" not in ev:
        gpu = int(str(row["link"]).split("/")[0].removeprefix("gpu"))
        key = (str(row["host"]), gpu)
        if key not in busy:  # no utilization beside the link: whether the GPU was busy is not known
            return "moderate", (" (no utilization read beside it, so whether the GPU was busy is not known: an idle "
                                "link may train down to save power; read it under load)")
        if not busy[key]:
            return "moderate", (" (the GPU was never busy: an idle link may train down to save power; read it "
                                "under load)")
    if row["kind"] == "ib" and ev == "port not ACTIVE/LinkUp in some samples" and \
            _always_down(ib, str(row["host"]), str(row["link"])):
        return "moderate", (" (down for the whole recording and idle: an unused port, or a link lost before the "
                            "job; check NCCL_IB_HCA lists only cabled ports)")
    return "high", ""


def summarize(bundle: Any, nvlink_capacity_mib_s: float | None = None) -> dict | None:
    """JSON-ready link summary (None when the bundle has no IB table and no PCIe/NVLink telemetry).

    Keys: links [{host, link, kind ib|pcie|nvlink, status ok|saturated|degraded, evidence}], degraded [link ids
    "host:link"], saturated [...], findings [{hypothesis, level, hosts, link, evidence; gpus and stated for a GPU's
    PCIe link}], topology [per `nvidia-smi topo -m` matrix: playbook.analysis.topology.topology()]. NVLink is judged
    saturated only against `nvlink_capacity_mib_s` (per direction; NVML does not report a capacity).
    """
    table = links_table(bundle, nvlink_capacity_mib_s=nvlink_capacity_mib_s)
    topo = topology.topology(getattr(bundle, "meta", None), _hosts(bundle))
    if table.empty and not topo:
        return None
    busy = _gpu_busy(getattr(bundle, "telemetry", None))
    findings = []
    for _, r in table[table["status"] == "degraded"].iterrows():
        level, note = _degraded_level(r, busy, getattr(bundle, "ib", None))
        findings.append({"hypothesis": cause_ids.LINK_DEGRADATION, "level": level, "hosts": [str(r["host"])],
                         "link": str(r["link"]), "evidence": f"{r['host']} {r['link']} ({r['kind']}): "
                                                             f"{r['evidence']}{note}"})
        gpu = str(r["link"]).split("/")[0].removeprefix("gpu")
        if r["kind"] == "pcie" and gpu.isdigit():
            findings[-1]["gpus"] = [f"{r['host']}:{gpu}"]
            findings[-1]["stated"] = STATED in str(r["evidence"])
        if r["kind"] == "pcie":  # a slot, not the fabric: what to read and reseat
            findings[-1]["next"] = (
                f"on {r['host']}, under load: `nvidia-smi -q -d PCI` for {r['link'].split('/')[0]} (Link Info: "
                "current vs max generation and width) and `lspci -vv` LnkSta; reseat the card or riser, check the "
                "slot's BIOS link speed and any setpci / udev rule that pins it")
    load = pcie_load(getattr(bundle, "telemetry", None))
    for r in load[load["saturated"] & (load["direction"] == "rx")].itertuples():
        findings.append({"hypothesis": cause_ids.H2D_COPY, "level": "moderate", "hosts": [r.host],
                         "link": f"gpu{r.gpu}/pcie", "evidence": (
                             f"{r.host} gpu{r.gpu}: PCIe host→GPU at {r.busy_p90_pct:.0f}% of its gen{r.gen:g} "
                             f"x{r.width:g} capacity (p90): copies run at the bus limit")})
    ids = table["host"].astype(str) + ":" + table["link"].astype(str)
    return {"links": table.to_dict("records"), "degraded": list(ids[table["status"] == "degraded"]),
            "saturated": list(ids[table["status"] == "saturated"]), "findings": findings, "topology": topo}
