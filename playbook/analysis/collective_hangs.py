"""Flight-recorder dumps (playbook.readers.flight_recorder) → who is behind in which process group.

When a collective hangs, every rank that reached it waits inside it until the timeout; the rank that did not is
the one to look at. Per (rank, process group) over the dumps' collective entries (p2p entries apart):
  enqueued    highest collective_seq_id the rank recorded at all (it called the collective)
  started     highest seq whose GPU work was seen starting (state started/completed; needs
              TORCH_NCCL_ENABLE_TIMING=1, else None)
  completed   highest seq seen completed
(and the dump's own pg_status counters beside them: they survive the ring buffer wrapping).
A rank is behind in a group when a peer (a rank whose dump has the same group, by name) got further:
  enqueue lag     it never called collective #N that its peers called: it is stuck before it (data, a host-side
                  stall, a different code path) — the peers wait for it. Finding `collective_straggler`, high.
  start lag       it called #N but its GPU never started it (earlier GPU work still running): high.
  completion lag  it started #N but did not finish it while peers did: its link or GPU is slow — moderate.
Mismatches: the same seq id with a different collective name or input sizes on two ranks (a desync bug: ranks
called different collectives), listed apart. Ranks a group's config names but no dump came from are listed as
missing (a crashed process, or a host where the dump could not be written).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from playbook.knowledge import ids as cause_ids
from playbook.readers import flight_recorder as reader


def _max(s: pd.Series) -> int | None:
    s = s[s >= 0]
    return int(s.max()) if len(s) else None


def progress(entries: pd.DataFrame, dumps: list[dict[str, Any]] | None = None) -> pd.DataFrame:
    """One row per (pg_name, rank): enqueued / started / completed seq ids (None when unseen), the names and input
    sizes of the last started and last completed collectives, and pg_status's counters (status_*)."""
    cols = ["pg_name", "pg_desc", "rank", "enqueued", "started", "completed", "last_enqueued_name",
            "last_started_name", "last_started_sizes", "last_started_nbytes", "last_completed_name",
            "last_completed_sizes", "status_enqueued", "status_started", "status_completed", "timing"]
    if entries is None or entries.empty:
        return pd.DataFrame(columns=cols)
    coll = entries[~entries["is_p2p"].astype(bool) & (entries["collective_seq_id"] >= 0)]
    status: dict[tuple[int, str], dict] = {}
    for d in dumps or []:
        for pg_id, st in (d.get("pg_status") or {}).items():
            status[(d.get("rank", -1), str(pg_id))] = st
    rows = []
    for (pg, rank), g in coll.groupby(["pg_name", "rank"], sort=True):
        g = g.sort_values(["collective_seq_id", "record_id"])
        started = g[g["state"].isin(["started", "completed"])]
        done = g[g["state"] == "completed"]
        timing = bool(g["started_ns"].notna().any() or (g["state"] == "started").any())
        last_e = g.iloc[-1]
        last_s = started.iloc[-1] if len(started) else None
        last_c = done.iloc[-1] if len(done) else None
        st = status.get((int(rank), str(int(g["pg_id"].iloc[-1]))), {})
        rows.append({
            "pg_name": pg, "pg_desc": g["pg_desc"].iloc[-1], "rank": int(rank),
            "enqueued": _max(g["collective_seq_id"]),
            "started": int(last_s["collective_seq_id"]) if last_s is not None else None,
            "completed": int(last_c["collective_seq_id"]) if last_c is not None else None,
            "last_enqueued_name": last_e["name"],
            "last_started_name": last_s["name"] if last_s is not None else None,
            "last_started_sizes": last_s["input_sizes"] if last_s is not None else None,
            "last_started_nbytes": float(last_s["nbytes"]) if last_s is not None else math.nan,
            "last_completed_name": last_c["name"] if last_c is not None else None,
            "last_completed_sizes": last_c["input_sizes"] if last_c is not None else None,
            "status_enqueued": st.get("enqueued"), "status_started": st.get("started"),
            "status_completed": st.get("completed"), "timing": timing,
        })
    return pd.DataFrame(rows, columns=cols)


def behind(prog: pd.DataFrame) -> list[dict[str, Any]]:
    """Ranks behind their peers per group (see the module docstring): [{pg, rank, lag, at_seq, peers_at, ...}]."""
    out: list[dict[str, Any]] = []
    for pg, g in prog.groupby("pg_name", sort=True):
        if len(g) < 2:
            continue
        for kind, col in (("enqueue", "enqueued"), ("start", "started"), ("completion", "completed")):
            vals = g[col].dropna() if g[col].notna().any() else pd.Series(dtype=float)
            if col == "started" and not g["timing"].all():
                continue  # without start events, "started" is unknown on some rank: not comparable
            if len(vals) < 2 or vals.min() == vals.max():
                continue
            top = int(vals.max())
            ahead = sorted(int(r) for r in g.loc[g[col] == top, "rank"])
            for _, r in g.iterrows():
                v = r[col]
                if v is None or (isinstance(v, float) and math.isnan(v)) or int(v) >= top:
                    continue
                if any(o["pg"] == pg and o["rank"] == int(r["rank"]) for o in out):
                    continue  # already reported at an earlier stage (enqueue before start before completion)
                out.append({"pg": pg, "pg_desc": r["pg_desc"], "rank": int(r["rank"]), "lag": kind,
                            "at_seq": int(v), "peers_at": top, "peers": ahead,
                            "waiting_in": _name_at(g, ahead, top, col), "last_name": r["last_enqueued_name"]})
    return out


def _name_at(g: pd.DataFrame, ranks: list[int], seq: int, col: str) -> str | None:
    name_col = {"enqueued": "last_enqueued_name", "started": "last_started_name",
                "completed": "last_completed_name"}[col]
    names = g.loc[g["rank"].isin(ranks), name_col].dropna()
    return str(names.iloc[0]) if len(names) else None


def mismatches(entries: pd.DataFrame, limit: int = 10) -> list[dict[str, Any]]:
    """Collectives with the same (group, seq id) but a different name or input sizes across ranks."""
    if entries is None or entries.empty:
        return []
    coll = entries[~entries["is_p2p"].astype(bool) & (entries["collective_seq_id"] >= 0)]
    out = []
    for (pg, seq), g in coll.groupby(["pg_name", "collective_seq_id"], sort=True):
        if g["rank"].nunique() < 2:
            continue
        sig = g["name"].astype(str) + " " + g["input_sizes"].astype(str)
        if sig.nunique() > 1:
            out.append({"pg": pg, "seq": int(seq), "calls": {int(r): s for r, s in zip(g["rank"], sig,
                                                                                       strict=True)}})
            if len(out) >= limit:
                break
    return out


def missing_ranks(dumps: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per group: ranks its config lists that no dump came from."""
    have = {d.get("rank") for d in dumps}
    out: dict[str, list[int]] = {}
    for d in dumps:
        for pg, info in (d.get("pg_config") or {}).items():
            missing = sorted(set(info.get("ranks") or []) - have)
            if missing:
                out[pg] = missing
    return out


def summarize(bundle: Any) -> dict | None:
    """JSON-ready flight-recorder summary for `playbook diagnose` (None without dumps).

    Keys: ranks [int]; progress [{pg_name, pg_desc, rank, enqueued, started, completed, last_started_name,
    last_started_sizes, last_completed_name, ...}]; behind [{pg, rank, lag enqueue|start|completion, at_seq,
    peers_at, peers, waiting_in}]; mismatches [{pg, seq, calls {rank: "name sizes"}}]; missing {pg: [ranks]};
    findings [{hypothesis: collective_straggler, level, rank, evidence}]; warnings [str].
    """
    dumps = reader.dumps(bundle)
    if not dumps:
        return None
    entries = reader.entries_frame(bundle)
    prog = progress(entries, dumps)
    late = behind(prog)
    mism = mismatches(entries)
    missing = missing_ranks(dumps)
    findings = []
    for b in late:
        pg = f"process group {b['pg']}" + (f" ({b['pg_desc']})" if b.get("pg_desc") else "")
        what = b.get("waiting_in") or "a collective"
        peers = _ranks_text(b["peers"])
        if b["lag"] == "enqueue":
            text = (f"rank {b['rank']} never called collective #{b['peers_at']} ({what}) of {pg} that {peers} "
                    f"called and wait in; its last was #{b['at_seq']} ({b['last_name']}): it is stuck before the "
                    f"collective (input, host-side work, a different code path)")
            level = "high"
        elif b["lag"] == "start":
            text = (f"rank {b['rank']} called collective #{b['peers_at']} ({what}) of {pg} but its GPU never "
                    f"started it (still on earlier work at #{b['at_seq']}), while {peers} did")
            level = "high"
        else:
            text = (f"rank {b['rank']} started but did not finish collective #{b['peers_at']} ({what}) of {pg} "
                    f"that {peers} finished (last completed #{b['at_seq']}): its GPU or link is slow")
            level = "moderate"
        findings.append({"hypothesis": cause_ids.COLLECTIVE_STRAGGLER, "level": level, "rank": b["rank"],
                         "evidence": "flight recorder: " + text})
    warnings = []
    if mism:
        m = mism[0]
        warnings.append(f"flight recorder: ranks called different collectives at #{m['seq']} of process group "
                        f"{m['pg']}: " + "; ".join(f"rank {r}: {s}" for r, s in sorted(m["calls"].items()))
                        + (f" (+{len(mism) - 1} more)" if len(mism) > 1 else ""))
    for pg, ranks in missing.items():
        warnings.append(f"flight recorder: no dump from {_ranks_text(ranks)} of process group {pg}")
    if len(prog) and not prog["timing"].any():
        warnings.append("flight recorder: no start events (set TORCH_NCCL_ENABLE_TIMING=1): a collective shows "
                        "as scheduled until it completes")
    records = prog.assign(last_started_nbytes=prog["last_started_nbytes"].map(
        lambda x: None if x != x else float(x))).to_dict("records")
    return {"ranks": sorted({int(d.get("rank", -1)) for d in dumps}), "progress": records, "behind": late,
            "mismatches": mism, "missing": missing, "findings": findings, "warnings": warnings}


def _ranks_text(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return f"ranks {ranks[0]}-{ranks[-1]}"
    return "ranks " + ", ".join(map(str, ranks))
