"""The result tables NVIDIA's nccl-tests print (`all_reduce_perf`, `all_gather_perf`, `broadcast_perf`, ...), read
wherever they appear in a text log (a line scanner of lines.py), with or without their header.

The output (nccl-tests src/common.cu): `# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 ...`, one `#  Rank  0
Group  0 Pid 28307 on gpu59 device  0 [0x16] NVIDIA GeForce RTX 4090` line per rank (before 2.10 without `Group`),
a column header (`#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong`, the
first time/algbw/busbw group out-of-place, the second in-place; older versions have no `root`, broadcast no `redop`,
and `error` for `#wrong`), one row per message size, then `# Out of bounds values : 0 OK` and `# Avg bus bandwidth
: 95.3009`. A row is read by its grammar, not by column position: size and count (integers), a data type NCCL
names, an optional reduction op and root, then one or two groups of time (us), algbw and busbw (GB/s) and a wrong
count (`0`, `0e+00` or `N/A`) — so rows pasted without their header are read too.

A sweep over node pairs (one nccl-tests run per pair, as NCCL's maintainers ask for when one node is suspected)
is often pasted as one line per pair: `se02gn644,se02gn699     49.36` (NVIDIA/nccl-tests#106) — two host names
joined by `,` or `/` (or `<->`, ` - ` with spaces around it), one figure, an optional unit (GB/s by default, busbw as
the tests print it) and `# comment`. Both names must hold a digit (cluster host names do; "loss,acc 0.3" does not).
Read into `pairs`: [[host a, host b, GB/s]].

Summary (`summary()`): tables, op (from the `*_perf` command or `Collective test starting:` line when printed),
ranks [{rank, host, gpu}], sizes, peak busbw (GB/s, the larger of out-of-place and in-place) and the size it was
reached at, the largest size's busbw, the printed average, rows with a wrong count above 0.
"""

from __future__ import annotations

import math
import re

META_PREFIX = "nccl_tests:"  # bundle.meta[META_PREFIX + path]: a file's summary()
MAX_ROWS = 10_000  # rows kept per file: a log of endless tables cannot grow memory
# ncclDataType_t names as nccl-tests prints them (src/common.cu test_typenames), old and new spellings
DTYPES = frozenset({"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16",
                    "f8e4m3", "f8e5m2", "fp8_e4m3", "fp8_e5m2", "char", "int", "half_t"})
REDOPS = frozenset({"sum", "prod", "max", "min", "avg", "premulsum", "mulsum", "none"})
_RANK = re.compile(r"^#\s*+Rank\s++(\d{1,7}+)\s++(?:Group\s++\d{1,7}+\s++)?Pid\s++\d{1,10}+\s++on +(\S{0,200}?) *+"
                   r"device\s++(\d{1,4}+)\s++\[[^\]\n]{0,40}\]\s*+(.{0,200}?)\s*$")
_THREADS = re.compile(r"^#\s*+nThread\s++(\d{1,6}+)\s++nGpus\s++(\d{1,6}+)\s++minBytes\b")
_HEADER = re.compile(r"^#\s*+(?:size\s++count\s++type\b|\(B\)\s++\(elements\)|out-of-place\s++in-place\s*$|"
                     r"Using devices\s*$|Out of bounds values\s*:|nccl-tests version\b)")
_AVG = re.compile(r"^#\s*+Avg bus bandwidth\s*+:\s*+(\d{1,12}+(?:\.\d{1,12}+)?)")
_OP = re.compile(r"\b(all_reduce|all_gather|alltoall|broadcast|reduce_scatter|reduce|sendrecv|scatter|gather|"
                 r"hypercube)_perf\b")
_NUM = re.compile(r"^\d{1,15}+(?:\.\d{1,15}+)?$")
_HOST = r"(?:[A-Za-z][\w.\-]{0,62}?|\d{1,3}(?:\.\d{1,3}){3})"  # a host name, or an IPv4 address (sweeps by IP)
_PAIR = re.compile(rf"^({_HOST})\s*(?:[,/]|\s(?:<->|-)\s)\s*({_HOST})\s*:?\s+"
                   r"(\d{1,9}(?:\.\d{1,6})?)\s*(GB/s|Gb/s|Gbps)?\s*(?:#.{0,200})?$")
_PAIR_SCALE = {None: 1.0, "GB/s": 1.0, "Gb/s": 1 / 8, "Gbps": 1 / 8}  # → GB/s
_WRONG = re.compile(r"^(?:\d{1,15}+|\d(?:\.\d{1,6})?e[+-]\d{1,3}|N/A)$")


def _group(tokens: list[str]) -> tuple[float, float, float, float] | None:
    """(time us, algbw, busbw, wrong) from 4 tokens, or None when they are not such a group."""
    if len(tokens) != 4 or not all(_NUM.match(t) for t in tokens[:3]) or not _WRONG.match(tokens[3]):
        return None
    wrong = math.nan if tokens[3] == "N/A" else float(tokens[3])
    return float(tokens[0]), float(tokens[1]), float(tokens[2]), wrong


def parse_row(body: str) -> dict | None:
    """One result row → {size, count, type, redop, root, oop: (time, algbw, busbw, wrong), ip: (...) or None}."""
    tokens = body.split()
    if len(tokens) < 7 or not tokens[0].isdigit() or not tokens[1].isdigit() or tokens[2] not in DTYPES:
        return None
    i = 3
    redop = tokens[i] if tokens[i] in REDOPS else ""
    i += bool(redop)
    root = None
    if i < len(tokens) and re.fullmatch(r"-1|\d{1,7}", tokens[i]) and len(tokens) - (i + 1) in (4, 8):
        root, i = int(tokens[i]), i + 1
    rest = tokens[i:]
    if len(rest) not in (4, 8):
        return None
    oop = _group(rest[:4])
    ip = _group(rest[4:]) if len(rest) == 8 else None
    if oop is None or (len(rest) == 8 and ip is None):
        return None
    return {"size": int(tokens[0]), "count": int(tokens[1]), "type": tokens[2], "redop": redop, "root": root,
            "oop": oop, "ip": ip}


class NcclTestsTables:
    """The line scanner: feed(body) for every line; True when the line belongs to nccl-tests output."""

    def __init__(self):
        self.rows: list[dict] = []
        self.ranks: dict[int, dict] = {}
        self.op = ""
        self.threads: tuple[int, int] | None = None
        self.avg: list[float] = []
        self.tables = 0
        self._in_table = False
        self.pairs: list[list] = []  # a node-pair sweep: [host a, host b, GB/s]

    def feed(self, body: str) -> bool:
        text = body.strip()
        if not text:
            return False
        if text.startswith("#"):
            return self._comment(text)
        row = parse_row(text) if text[0].isdigit() else None  # (a row opens with its size)
        if row is None and text[0].isalnum() and (p := _PAIR.match(text)):
            a, b = p.group(1), p.group(2)
            if a != b and any(c.isdigit() for c in a) and any(c.isdigit() for c in b) and len(self.pairs) < MAX_ROWS:
                self.pairs.append([a, b, float(p.group(3)) * _PAIR_SCALE[p.group(4)]])
                return True
        if row is None:
            m = _OP.search(text) if "_perf" in text else None
            if m and not self.op:
                self.op = m.group(1)  # the command line: "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8"
            return False
        if not self._in_table:
            self.tables += 1
            self._in_table = True
        if len(self.rows) < MAX_ROWS:
            self.rows.append(row)
        return True

    def _comment(self, text: str) -> bool:
        if m := _RANK.match(text):
            self.ranks[int(m.group(1))] = {"rank": int(m.group(1)), "host": m.group(2), "device": int(m.group(3)),
                                           "gpu": m.group(4)}
            return True
        if m := _THREADS.match(text):
            self.threads = (int(m.group(1)), int(m.group(2)))
            self._in_table = False
            if (op := _OP.search(text)) and not self.op:
                self.op = op.group(1)
            return True
        if m := _AVG.match(text):
            self.avg.append(float(m.group(1)))
            self._in_table = False
            return True
        if "_perf" in text and (op := _OP.search(text)):  # "#  ./all_reduce_perf -b 8 ...", "Collective test ..."
            self.op = self.op or op.group(1)
            return True
        if _HEADER.match(text):
            return True
        return text == "#" and bool(self.threads or self.rows)

    def summary(self) -> dict | None:
        """What the tables state (see the module docstring); None when no result row was read."""
        if not self.rows:  # a node-pair sweep, or the closing average quoted without the rows above it
            return ({"tables": 0, "rows": 0, **({"pairs": self.pairs} if self.pairs else {}),
                     **({"avg_busbw_gb_s": self.avg[-1]} if self.avg else {})} if self.pairs or self.avg else None)
        best = (-1.0, 0)
        for r in self.rows:
            for g in (r["oop"], r["ip"]):
                if g is not None and g[2] > best[0]:
                    best = (g[2], r["size"])
        last = max(self.rows, key=lambda r: r["size"])
        last_bw = max(g[2] for g in (last["oop"], last["ip"]) if g is not None)
        wrong = sum(1 for r in self.rows for g in (r["oop"], r["ip"]) if g is not None and g[3] > 0)
        ranks = [self.ranks[k] for k in sorted(self.ranks)]
        return {"tables": self.tables, "op": self.op, "rows": len(self.rows),
                "sizes": [min(r["size"] for r in self.rows), last["size"]],
                "peak_busbw_gb_s": best[0], "peak_size": best[1], "largest_busbw_gb_s": last_bw,
                "avg_busbw_gb_s": self.avg[-1] if self.avg else None, "wrong_rows": wrong,
                "ranks": ranks, "hosts": sorted({r["host"] for r in ranks if r["host"]}),
                "gpus": sorted({r["gpu"] for r in ranks if r["gpu"]}),
                "threads_gpus": list(self.threads) if self.threads else None,
                **({"pairs": self.pairs} if self.pairs else {})}


def describe(s: dict) -> str:
    """One line: 'nccl-tests all_reduce_perf: 13 sizes 8 B..128 MiB; peak busbw 21.86 GB/s at 128 MiB; 2 ranks on
    1 host (GeForce RTX 2080 Ti)'."""
    if not s.get("rows"):
        pairs = s.get("pairs") or []
        if not pairs and s.get("avg_busbw_gb_s") is not None:
            return (f"nccl-tests: average bus bandwidth {s['avg_busbw_gb_s']:g} GB/s (its closing line; the result "
                    "rows are not in the input)")
        return (f"nccl-tests node-pair sweep: {len(pairs)} pairs, busbw "
                f"{min(p[2] for p in pairs):g}..{max(p[2] for p in pairs):g} GB/s" if pairs else "nccl-tests: nothing")
    op = f"{s['op']}_perf" if s.get("op") else "table"
    where = ""
    if s.get("ranks"):
        hosts = s.get("hosts") or []
        where = (f"; {len(s['ranks'])} rank{'s' * (len(s['ranks']) != 1)} on {len(hosts)} host"
                 f"{'s' * (len(hosts) != 1)}" + (f" ({', '.join(s['gpus'][:3])})" if s.get("gpus") else ""))
    wrong = f"; {s['wrong_rows']} rows with wrong results" if s.get("wrong_rows") else ""
    return (f"nccl-tests {op}: {s['rows']} sizes {_bytes(s['sizes'][0])}..{_bytes(s['sizes'][1])}; peak busbw "
            f"{s['peak_busbw_gb_s']:g} GB/s at {_bytes(s['peak_size'])}{where}{wrong}")


def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"
