"""NCCL_DEBUG=INFO logs → `bundle.nccl`: one row per fact NCCL states about how ranks are connected.

A line looks like `host:pid:tid [cudaDev] NCCL INFO <message>`. Several processes write to one file, so lines arrive
interleaved and sometimes spliced together mid-line; every prefix found in a line starts a new message, and a
message that stops short of a pattern it began is counted as garbled (one warning per file), never guessed.

Facts (column `kind`):
  version    NCCL version (detail "2.18.5+cuda12.2")
  init       ncclCommInitRank / comm lines: rank, nranks, device, comm, busId (detail)
  channel    a connection: rank -> peer, transport (P2P, SHM, NET, COLLNET, NVLS), detail ("P2P/IPC/read",
             "NET/IB/0/GDRDMA", "NET/Socket/1"), direction (send/receive/""), gdr (True/False for NET, else NaN)
  net        the network plugin picked: transport NET, detail "IB" / "Socket" / "IBext_v8" / "AWS Libfabric"
  net_device NET/IB or NET/Socket interfaces in use (detail "[0]mlx5_0:1/IB [1]mlx5_1:1/IB", "[0]eth0:10.0.0.1<0>")
  gdr        GPU Direct RDMA Enabled/Disabled lines (gdr True/False, detail the HCA)
  rings      "Connected all rings[, use ring PXN p GDR g]" (gdr from the GDR flag when printed)
  env        NCCL_* variables set by environment (detail "NCCL_IB_DISABLE=1"); also NCCL's echo quoted alone, without
             its prefix (`NCCL_P2P_LEVEL set by environment to LOC`)
  warn       NCCL WARN lines (detail the message)
  timeout    PyTorch's watchdog giving up on a collective ("[Rank 3] Watchdog caught collective operation timeout:
             WorkNCCL(SeqNum=4821, OpType=ALLREDUCE, ... Timeout(ms)=600000) ran for 600050 milliseconds ..."):
             rank, detail "ALLREDUCE seq=4821 ran_ms=600050" (read back with `timeout_fields`). The rank is the
             line's own (torchrun's `[rank13]:` prefix: the global rank) when it has one, else the `[Rank N]` of
             the message (the rank within the collective's process group). The process group comes from the
             watchdog's next line, "[PG ID 11 PG GUID 119 Rank 1] Exception (either an error or timeout)
             detected by watchdog at work: 216, ..." (older: "[PG 1 Rank 0]", "[PG 0 (default_pg) Rank 12]", "Timeout
             at NCCL work: 216"; newer: "failure detected by watchdog at work sequence id: 216"): detail "... pg=119";
             sequence numbers count per group, so only a group's own can be compared. That line's "last enqueued
             [NCCL] work: E, last completed [NCCL] work: C" (the rank's own counters, PyTorch >= 2.3) adds "done=C
             enq=E" (read back with `timeout_counters`)

Columns: host, pid, tid, device, rank, nranks, peer, kind, transport, direction, gdr (float 1/0/NaN), detail,
line (1-based), source. `rank` is filled from the process's own init line when a line does not state it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model.schema import Bundle, SkipCounter
from playbook.readers import textio

COLUMNS = ("host", "pid", "tid", "device", "rank", "nranks", "peer", "kind", "transport", "direction", "gdr",
           "detail", "line", "source")

# a WARN names the source line that raised it (src/debug.cc: "%s:%d:%d [%d] %s:%d NCCL WARN ", newer "... %s:%d (%s)
# NCCL WARN "): "node1:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer ..."
# (pid, tid and device at most 10 digits: int64 columns; Linux pids have 7)
PREFIX_RE = re.compile(r"(?<![A-Za-z0-9_.\-])(?P<host>[A-Za-z0-9_.\-]++):(?P<pid>\d{1,10}+):(?P<tid>\d{1,10}+) "
                       r"\[(?P<dev>\d{1,10}+)\] "
                       r"(?:[\w./\-]{1,200}:\d{1,6} (?:\([^()\n]{0,100}\) )?)?NCCL (?P<level>INFO|WARN|TRACE|ABORT)\s?")
# optionally behind torchrun's "[default3]:" / "[rank3]:" prefix (--tee, --log-dir)
_SNIFF_RE = re.compile(r"^(?:\[\w+\]:)?[A-Za-z0-9_.\-]+:\d+:\d+ \[\d+\] (?:[\w./\-]{1,200}:\d{1,6} (?:\([^()\n]{0,100}\) )?)?"
                       r"NCCL (INFO|WARN) ", re.MULTILINE)
_BARE_VERSION_RE = re.compile(r"^\s*NCCL version (\S+)")
_VERSION_RE = re.compile(r"^NCCL version (\S+)")
# "Channel 02/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA"; NCCL 2.7 printed busIds: "Channel 00 : 0[1c000] -> ..."
_CHANNEL_RE = re.compile(r"^Channel (\d+)(?:/(\d+))? : (\d+)\[([0-9a-fA-Fx]+)\] -> (\d+)\[([0-9a-fA-Fx]+)\]"
                         r"(?: \[(send|receive)\])? via (\S+(?: \S+)?)")
_CHANNEL_START_RE = re.compile(r"^Channel \d+(?:/\d+)? : \d+\[")
_INIT_RE = re.compile(r"(?:ncclCommInitRank(?:Config)?|ncclCommSplit|ncclCommInitAll|(?<!\s))\s*+comm (0x[0-9a-f]+) "
                      r"rank (\d+) n[Rr]anks (\d+)(?: cudaDev (\d+))?(?: nvmlDev \d+)?(?: busId ([0-9a-fA-F]+))?")
_NETWORK_RE = re.compile(r"^Using network (.+?)\s*$")
_NET_DEVICE_RE = re.compile(r"^NET/(IB|Socket|IBext\S*|[A-Za-z ]+?) : Using (\[\d+\].*?)(?: ; OOB .*)?$")
_NET_NODEV_RE = re.compile(r"^NET/(IB|IBext\S*) : No device found")
# the IB verbs library missing (NCCL then falls back to sockets): "Failed to open libibverbs.so[.1]" (INFO or WARN)
_NO_VERBS_RE = re.compile(r"Failed to open libibverbs")
_GDR_RE = re.compile(r"GPU Direct RDMA (Enabled|Disabled) for (.*)$")
_RINGS_RE = re.compile(r"^Connected all rings(?:, use ring PXN (\d) GDR (\d))?")
_ENV_RE = re.compile(r"^(NCCL_[A-Z0-9_]+) set (?:by environment )?to (\S*?)\.?\s*$")


_WATCHDOG_RE = re.compile(r"(?:\[Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout: "
                          r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+).{0,300}?\) ran for (?P<ran>\d+) milli")
_WATCHDOG_PG_RE = re.compile(r"\[PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<guid>[^\s\]]{1,80}))?(?: \([^)\]]{1,80}\))? "
                             r"Rank (?P<rank>\d+)\]\s{1,4}(?:Exception \(either an error or timeout\) detected by "
                             r"watchdog at work: |failure detected by watchdog at work sequence id: |Timeout at NCCL "
                             r"work: )(?P<seq>\d+)(?:,?(?: PG status:)? last enqueued (?:NCCL )?work: (?P<enq>-?\d{1,19}), "
                             r"last completed (?:NCCL )?work: (?P<done>-?\d{1,19}))?")
# the start of either watchdog message, whose rest a wrapped paste puts on the next line ("... operation timeout: " /
# "WorkNCCL(SeqNum=2070, ..."; "... timeout) detected" / "by watchdog at work: 2070, last enqueued ..."; mila-iqia/
# milabench#269)
_WATCHDOG_HEAD_RE = re.compile(r"Watchdog caught collective|Exception \(either an error|failure detected by "
                               r"watchdog|\] Timeout at NCCL")
_TIMEOUT_DETAIL_RE = re.compile(r"^(\w+|\?) seq=(\d+) ran_ms=(-?\d+)(?: pg=(\S+))?(?: done=-?\d+ enq=-?\d+)?$")
_COUNTERS_RE = re.compile(r" done=(-?\d{1,19}) enq=(-?\d{1,19})$")


def timeout_fields(detail: str) -> tuple[str, int, int, str] | None:
    """(op, sequence number, milliseconds it ran, process group or "") from a `timeout` row's detail (op "?" and
    -1 ms when only the watchdog's exception line was logged); None when it is not one."""
    m = _TIMEOUT_DETAIL_RE.match(str(detail))
    return (m.group(1), int(m.group(2)), int(m.group(3)), m.group(4) or "") if m else None


def timeout_counters(detail: str) -> tuple[int, int] | None:
    """(last completed, last enqueued) sequence numbers of a `timeout` row's rank when its watchdog line stated
    them, else None."""
    m = _COUNTERS_RE.search(str(detail))
    return (int(m.group(1)), int(m.group(2))) if m else None


def sniff(head: str) -> bool:
    """True when `head` holds NCCL_DEBUG=INFO lines (`host:pid:tid [dev] NCCL INFO ...`) or PyTorch's NCCL
    watchdog timeouts."""
    if _WATCHDOG_RE.search(head):
        return True
    if textio.looks_like_json(head):
        return False
    return bool(_SNIFF_RE.search(head))


def read(path: str | Path, **opts: Any) -> Bundle:
    """Parse an NCCL_DEBUG=INFO log (or any log with NCCL lines mixed in) into `bundle.nccl`, streaming it."""
    path = Path(path)
    scanner = NcclLines(str(path))
    for lineno, line in enumerate(textio.iter_lines(path), start=1):  # gzip/zstd/... by magic bytes
        scanner.feed(lineno, line)
    frame, skips, stats = scanner.result()
    if frame.empty:
        raise InputError(f"{path}: no NCCL INFO facts found ({stats['nccl_lines']} NCCL lines, "
                         f"{stats['lines']} lines)")
    warnings = []
    w = skips.warning(rows_read=len(frame))
    if w:
        warnings.append(w)
    return Bundle(inputs=[str(path)], nccl=frame, warnings=warnings, meta={"nccl_log": {str(path): stats}})


# NCCL lines without the host:pid:tid [dev] prefix (a launcher that strips it, a pasted excerpt)
_BARE_RE = re.compile(r"(?:^|[\s\]:|])NCCL (INFO|WARN) ?(.*)$")
# NCCL's echo of a setting (src/misc/param.cc: "%s set by environment to %s.") quoted alone, without even `NCCL INFO`
# (a reply quoting one line of a log): its own wording, "set by environment to", is what makes it NCCL's
_BARE_ENV_RE = re.compile(r"^\s*[`'\"]?(NCCL_[A-Z0-9_]{1,60}) set by environment to (\S{0,200}?)\.?[`'\"]?\s*$")


class NcclLines:
    """A line scanner: `feed(lineno, line)` says whether the line was an NCCL or watchdog line; `result()` gives
    (nccl frame, skip counter, statistics). Lines are fed one at a time, so a file is never held whole."""

    name = "nccl"

    def __init__(self, source: str = ""):
        self.source = source
        self.skips = SkipCounter(source)
        self.host = textio.host_from_path(source) if source else ""  # for lines without a host:pid prefix
        self.rows: list[dict] = []
        self.clean_hosts: set[str] = set()
        self.n_lines = self.n_nccl = 0
        self.timed_out: dict[int, dict] = {}  # each rank's last timeout row, for its process group (next line)
        self.wrapped: tuple[int, str, int] | None = None  # a watchdog line cut short: (line number, text, rank)

    def feed(self, lineno: int, line: str, rank: int = -1) -> bool:
        """One line; `rank`: the rank the line's prefix names (-1: none), which a watchdog line's `[Rank N]` (the
        rank within its process group) does not override."""
        self.n_lines += 1
        if (held := self.wrapped) is not None:  # the line before began a watchdog message and stopped short
            self.wrapped = None
            # a line that begins its own watchdog message is no wrapped tail (a cut line, then the next rank's:
            # joined, the next rank's figures went to the cut line's rank and its own timeout was lost)
            if not _WATCHDOG_HEAD_RE.search(line) and self._watchdog(held[0], held[1].rstrip() + " " + line.lstrip(),
                                                                     held[2]):
                return True
            self._cut_short(held[0])
        if "NCCL" not in line and "Watchdog" not in line and "watchdog" not in line:
            return False
        rows = self.rows
        matches = list(PREFIX_RE.finditer(line))
        if not matches:
            m = _BARE_VERSION_RE.match(line)
            if m:
                rows.append(_row("", -1, -1, -1, "version", detail=m.group(1), line=lineno))
                return True
            if self._watchdog(lineno, line, rank):
                return True
            if _WATCHDOG_HEAD_RE.search(line):  # its tail may be on the next line (a terminal's or a pager's wrap)
                self.wrapped = (lineno, line, rank)
                return True  # the watchdog's line, read with the next one
            b = _BARE_RE.search(line)
            if not b:
                if (e := _BARE_ENV_RE.match(line)):
                    self.n_nccl += 1
                    rows.append(_row(self.host, -1, -1, -1, "env", detail=f"{e.group(1)}={e.group(2)}", line=lineno))
                    return True
                return False
            self.n_nccl += 1
            base = (self.host, -1, -1, -1)
            msg = b.group(2).rstrip()
            if b.group(1) == "WARN":
                rows.append(_row(*base, "warn", detail=msg, line=lineno))
                return True
            row, garbled = _parse_message(msg, False)
            if row is not None and not garbled:
                row.update(host=base[0], pid=-1, tid=-1, device=-1, line=lineno)
                rows.append(row)
            return True  # an NCCL line, understood even when it states nothing we keep
        self.n_nccl += len(matches)
        for i, m in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
            spliced = i + 1 < len(matches)
            msg = line[m.end():end].rstrip()
            clean = m.start() == 0 or line[m.start() - 1].isspace()
            if clean:
                self.clean_hosts.add(m["host"])
            base = (m["host"] if clean else "\0" + m["host"], int(m["pid"]), int(m["tid"]), int(m["dev"]))
            if m["level"] == "WARN":
                rows.append(_row(*base, "warn", detail=msg, line=lineno))
                continue
            row, garbled = _parse_message(msg, spliced)
            if garbled:
                self.skips.skip(lineno, f"garbled NCCL message {msg[:60]!r}")
            elif row is not None:
                row.update(host=base[0], pid=base[1], tid=base[2], device=base[3], line=lineno)
                rows.append(row)
        return True

    def _watchdog(self, lineno: int, line: str, rank: int) -> bool:
        """A PyTorch watchdog line (its timeout, or its exception line with the process group and counters) → a
        `timeout` row (or the group and counters added to the rank's row); False for any other line."""
        rows = self.rows
        if (w := _WATCHDOG_RE.search(line)):
            who = rank if rank >= 0 else int(w["rank"]) if w["rank"] else -1
            row = _row(self.host, -1, -1, -1, "timeout", rank=who, line=lineno,
                       detail=f"{w['op']} seq={w['seq']} ran_ms={w['ran']}")
            rows.append(row)
            self.timed_out[who] = row
            return True
        if (p := _WATCHDOG_PG_RE.search(line)):
            who = rank if rank >= 0 else int(p["rank"])
            pg = p["guid"] or p["pg"]
            row = self.timed_out.get(who)
            if row is not None and f" seq={p['seq']} " in row["detail"]:
                if " pg=" not in row["detail"]:
                    row["detail"] += f" pg={pg}"
            else:  # the rank's own watchdog line is not in the log (an excerpt): it timed out all the same
                row = _row(self.host, -1, -1, -1, "timeout", rank=who, line=lineno,
                           detail=f"? seq={p['seq']} ran_ms=-1 pg={pg}")
                rows.append(row)
                self.timed_out[who] = row
            if p["done"] is not None and " done=" not in row["detail"]:
                row["detail"] += f" done={p['done']} enq={p['enq']}"
            return True
        return False

    def _cut_short(self, lineno: int) -> None:
        """Count a watchdog message whose figures are neither on its line nor on the next (cut, not wrapped)."""
        self.skips.skip(lineno, "watchdog message cut short: its collective, sequence and duration not read")

    def result(self) -> tuple[pd.DataFrame, SkipCounter, dict]:
        if self.wrapped is not None:  # the file ends on a watchdog message that stopped short
            self._cut_short(self.wrapped[0])
            self.wrapped = None
        _repair_spliced_hosts(self.rows, self.clean_hosts)
        frame = _frame(self.rows, self.source)
        return frame, self.skips, {"lines": self.n_lines, "nccl_lines": self.n_nccl, "facts": int(len(frame))}


def _repair_spliced_hosts(rows: list[dict], clean_hosts: set[str]) -> None:
    """A prefix glued to the end of a cut message ("...via P2P/IPChost2:12:13 [1] NCCL INFO") swallows the tail of
    that message into its host name: use the longest host seen on clean lines that ends the glued name."""
    for row in rows:
        host = row["host"]
        if not host.startswith("\0"):
            continue
        host = host[1:]
        fits = [h for h in clean_hosts if host.endswith(h)]
        row["host"] = max(fits, key=len) if fits else host


def _row(host, pid, tid, device, kind, **kw) -> dict:
    row = {"host": host, "pid": pid, "tid": tid, "device": device, "rank": -1, "nranks": -1, "peer": -1,
           "kind": kind, "transport": "", "direction": "", "gdr": np.nan, "detail": "", "line": -1}
    row.update(kw)
    return row


def _parse_message(msg: str, spliced: bool) -> tuple[dict | None, bool]:
    """(row or None, garbled). Unknown messages return (None, False): NCCL says much we do not need."""
    if msg.startswith("Channel ") and " -> " in msg or _CHANNEL_START_RE.match(msg):
        m = _CHANNEL_RE.match(msg)
        if not m:
            return None, True
        src, dst, direction, via = int(m[3]), int(m[5]), m[7] or "", m[8].strip()
        transport = via.split("/")[0].upper()
        if transport not in ("P2P", "SHM", "NET", "COLLNET", "NVLS", "COLLNETDIRECT", "COLLNETCHAIN"):
            return None, True
        if spliced and via.endswith("/") or (transport == "NET" and via.count("/") < 2 and spliced):
            return None, True
        local, peer = (dst, src) if direction == "receive" else (src, dst)
        gdr = float("GDRDMA" in via) if transport == "NET" else np.nan
        return _row("", -1, -1, -1, "channel", rank=local, peer=peer, transport=transport, direction=direction,
                    gdr=gdr, detail=via), False
    m = _VERSION_RE.match(msg)
    if m:
        return _row("", -1, -1, -1, "version", detail=m.group(1)), False
    m = _INIT_RE.search(msg)
    if m and ("comm 0x" in msg):
        detail = f"comm {m[1]}" + (f" busId {m[5]}" if m[5] else "")
        return _row("", -1, -1, -1, "init", rank=int(m[2]), nranks=int(m[3]), detail=detail), False
    if msg.startswith(("ncclCommInitRank comm 0x", "comm 0x")):
        return None, True  # an init line cut before its rank / nranks
    m = _NETWORK_RE.match(msg)
    if m:
        return _row("", -1, -1, -1, "net", transport="NET", detail=m.group(1)), False
    if _NO_VERBS_RE.search(msg):
        return _row("", -1, -1, -1, "net_device", transport="NET", detail="IB: no verbs library"), False
    m = _NET_NODEV_RE.match(msg)
    if m:
        return _row("", -1, -1, -1, "net_device", transport="NET", detail=f"{m.group(1)}: no device"), False
    m = _NET_DEVICE_RE.match(msg)
    if m:
        return _row("", -1, -1, -1, "net_device", transport="NET", detail=f"{m.group(1).strip()} {m.group(2)}"), \
            False
    m = _GDR_RE.search(msg)
    if m:
        return _row("", -1, -1, -1, "gdr", transport="NET", gdr=float(m.group(1) == "Enabled"),
                    detail=m.group(2).strip()), False
    m = _RINGS_RE.match(msg)
    if m:
        gdr = float(m.group(2)) if m.group(2) is not None else np.nan
        return _row("", -1, -1, -1, "rings", gdr=gdr, detail=msg), False
    m = _ENV_RE.match(msg)
    if m:
        return _row("", -1, -1, -1, "env", detail=f"{m.group(1)}={m.group(2)}"), False
    return None, False


def _frame(rows: list[dict], source: str) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c == "gdr" else "int64" if c in (
            "pid", "tid", "device", "rank", "nranks", "peer", "line") else "string") for c in COLUMNS})
    df = pd.DataFrame(rows)
    df["source"] = source
    # a process's rank and world size, from its first init line, for lines that do not state them
    init = df[df["kind"] == "init"].drop_duplicates(["host", "pid", "device"])
    if len(init):
        key = ["host", "pid", "device"]
        fill = init.set_index(key)[["rank", "nranks"]].add_suffix("_init")
        joined = df.join(fill, on=key)
        df["rank"] = np.where(df["rank"] >= 0, df["rank"], joined["rank_init"].fillna(-1)).astype("int64")
        df["nranks"] = np.where(df["nranks"] >= 0, df["nranks"], joined["nranks_init"].fillna(-1)).astype("int64")
    for c in ("host", "kind", "transport", "direction", "detail"):
        df[c] = df[c].astype("string")
    df["source"] = df["source"].astype("category")
    return df[list(COLUMNS)].reset_index(drop=True)
