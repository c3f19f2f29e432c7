"""Reports that speak of ranks by number: which ranks a collective waits for (StallLines), and one figure per rank
(RankTimings).

A collective library's own report of which ranks a collective waits for → one event per rank it names.

Horovod checks every 60 s (HOROVOD_STALL_CHECK_TIME_SECONDS) for tensors some ranks submitted and others did not,
and prints the ranks that did not (horovod/horovod `horovod/common/stall_inspector.cc`; before 0.16
`operations.cc`). Three generations of the wording, all read:
  stall_inspector.cc (>= 0.16): the warning "One or more tensors were submitted to be reduced, gathered or
      broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds. ...", then
      "Missing ranks:" ("Stalled ranks:" in 0.18) and one line per rank: "4: [horovod_allreduce.0, ...]" ("4!: [...]"
      when the rank is past HOROVOD_STALL_SHUTDOWN_TIME_SECONDS) — horovod/horovod#1442;
  operations.cc (0.13-0.16): "Stalled ops: tensor [missing ranks: 1]", then one "tensor [missing ranks: 1]" per
      line (horovod/horovod#342 made it name the missing ranks) — horovod/horovod#1012;
  operations.cc (< 0.13): "Stalled ops: tensor [ready ranks: 21, 25, ...], ..." — the ranks that DID submit; the
      missing ones are the rest of the world (horovod/horovod#215).
The ranks named are the ones the others wait for: each becomes an event of kind `collective_stall` on that rank (not
on the rank that printed the report, rank 0 as Horovod's coordinator). A world size is needed to turn a ready list
into the missing ranks: the one a launcher's command line states (`mpirun -np 32`, `horovodrun -np 8`) or Horovod's
"rank 2 / size 4", else the highest ready rank + 1 (then a missing rank above every ready one cannot be seen, and the
detail says so). Each report (from one warning to the next) names a rank once.

PyTorch's `torch.distributed.monitored_barrier` (c10d ProcessGroupGloo.cpp, torch >= 1.10) is the same report from
rank 0: every other rank must acknowledge the barrier within the timeout, and rank 0 names the ones that did not —
"[Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms" (the first one it finds) or, with
`wait_all_ranks=True`, "[Rank 0]: Ranks 4, 5, 6, 7 failed to pass monitoredBarrier in 2000000 ms" (NVIDIA/nccl#849).
Each rank it names is a `collective_stall` on that rank, once per file (the line repeats in tracebacks and the
launcher's summary).

A list of one time per rank, a line each ("Rank 3: 9.40ms"; FlagScale's straggler report, flagos-ai/FlagScale#938:
"  optimizer:" / "    Min: 9.17ms, Max: 10.12ms, Avg: 9.55ms, Slowdown: 1.10x" / "    Rank 0: 9.98ms" ...) → one
`rank_timings` event per list: the section it times (the nearest line above ending in ":"), the slowest and fastest
rank and their ratio. It names no cause: one list is one moment. Every pattern is bounded and anchored on literal
text.

Megatron-LM's StragglerDetector prints each log interval's least and most of a few figures across the ranks, each
with its rank (`| MnRtt/Rnk: 3455.18ms/14 | MxRtt/Rnk: 3460.39ms/6 | ... | MnUtl/Rnk: 97%/19 | MxUtl/Rnk: 100%/25 |`)
→ StragglerReports: per figure the least minimum and the most maximum over the file, with their ranks (a summary in
Bundle.meta; the diagnosis reads the utilization as a measure of the GPUs' busy time).
"""

from __future__ import annotations

import re

from playbook.readers.step_log.vocab import TIME_UNITS

WARNING = re.compile(r"submitted to be reduced, gathered or broadcasted by subset of ranks")
LISTED = re.compile(r"\[(missing|ready) ranks: ?(\d{1,7}(?:, ?\d{1,7}){0,4095})\]")
BLOCK_HEAD = re.compile(r"(?:^|[\s:>\]])(?:Stalled|Missing) ranks:\s*$")
BLOCK_ROW = re.compile(r"(?:^|[\s:>\]])(\d{1,7})(!?): \[")
# the world size a launcher's command line or Horovod's own start-up line states
WORLD = re.compile(r"\b(?:mpirun|mpiexec|horovodrun)\b.{0,300}?\s-(?:np|n)\s+(\d{1,7})\b|\brank \d{1,7} / size (\d{1,7})\b")
NEEDLES = ("ranks", "mpirun", "mpiexec", "horovodrun", "/ size", "monitoredBarrier")
# c10d's monitored_barrier: the ranks (one, or every one with wait_all_ranks) that did not acknowledge it in T ms
BARRIER = re.compile(r"\bRanks? (\d{1,7}(?:, ?\d{1,7}){0,4095}) failed to pass monitoredBarrier in (\d{1,12}) ms")


class StallLines:
    """Feed lines one at a time; `feed` returns the (rank, what) pairs a stall report line names, [] for a report
    line that names no new rank, None for a line that is not part of a report."""

    def __init__(self):
        self.world = 0  # stated world size (0: none seen)
        self.in_block = False  # after a "Missing ranks:" line, until a line that is not a rank row
        self.named: set[int] = set()  # ranks the current report has named

    def feed(self, raw: str, body: str) -> list[tuple[int, str]] | None:
        """`raw`: the whole line (a block row's rank may sit where a launcher prefix is expected); `body`: the
        line after its prefixes."""
        if self.in_block:
            if (row := BLOCK_ROW.search(raw)) and len(row.group(1)) < 8:
                what = "past the stall shutdown time" if row.group(2) else "in the stall report's list"
                return self._name([int(row.group(1))], what)
            self.in_block = False
        if not any(n in body for n in NEEDLES):  # (the patterns below are case-sensitive, their words lowercase)
            return None
        if "monitoredBarrier" in body and (b := BARRIER.search(body)):
            ranks = sorted({int(r) for r in b.group(1).replace(" ", "").split(",")})
            return self._name(ranks, f"did not pass torch.distributed.monitored_barrier within "
                                     f"{int(b.group(2)) / 1e3:g} s (rank 0's report)")
        warning = WARNING.search(body) is not None
        if not warning and (w := WORLD.search(body)):
            self.world = max(self.world, int(w.group(1) or w.group(2)))
            return None  # a command or start-up line: read for its world size, understood by others or not at all
        out: list[tuple[int, str]] | None = None
        if warning:
            self.named, out = set(), []
        for m in LISTED.finditer(body):
            ranks = {int(r) for r in m.group(2).replace(" ", "").split(",")}
            if m.group(1) == "missing":
                out = (out or []) + self._name(sorted(ranks), "named missing")
                continue
            world = max(self.world, max(ranks) + 1)
            basis = f"of the {world} ranks `-np` states" if self.world >= world else (
                f"of ranks 0-{world - 1} (the file states no world size: a rank above {world - 1} cannot be seen)")
            out = (out or []) + self._name(sorted(set(range(world)) - ranks), f"not in the ready list {basis}")
        if BLOCK_HEAD.search(body):
            self.in_block = True
            out = out or []
        return out

    def _name(self, ranks: list[int], what: str) -> list[tuple[int, str]]:
        new = [r for r in ranks if r not in self.named]
        self.named.update(new)
        return [(r, what) for r in new]


RANK_TIME = re.compile(r"^\s*Rank (\d{1,7})\s*:\s*(\d{1,12}(?:\.\d{1,9})?)\s*(ms|us|µs|s)\s*$")
SECTION = re.compile(r"^\s*([A-Za-z][\w.\-/ ]{0,60}?)\s*:\s*$")
SUMMARY = re.compile(r"^\s*Min:\s*[\d.]{1,20}\s*[a-zµ]{0,3},\s*Max:\s*[\d.]{1,20}")


class RankTimings:
    """Feed lines one at a time; `feed` returns (first line, True when the line starts a list, the list's summary)
    for a rank's time, True for a list's min/max summary line, None for any other line."""

    def __init__(self):
        self.section = ""  # the last line that ended in ":" (the heading of what the list times)
        self.times: dict[int, float] = {}  # the current list: rank -> seconds
        self.first = 0  # the line the current list started on

    def feed(self, lineno: int, body: str) -> tuple[int, bool, str] | bool | None:
        m = RANK_TIME.match(body) if "Rank " in body else None  # (gates: this runs on every line of a text log)
        if m is None:
            if self.times:
                self.times = {}
            if body.rstrip().endswith(":") and (h := SECTION.match(body)):
                self.section = h.group(1)
            return True if "Min:" in body and SUMMARY.match(body) else None
        start = not self.times
        self.first = lineno if start else self.first
        self.times[int(m.group(1))] = float(m.group(2)) * TIME_UNITS[m.group(3)]
        slow = max(self.times, key=self.times.__getitem__)
        fast = min(self.times, key=self.times.__getitem__)
        what = f"{self.section} " if self.section else ""
        return self.first, start, (f"{what}per rank ({len(self.times)} ranks): slowest rank {slow} "
                                   f"{self.times[slow] * 1e3:.2f} ms, fastest rank {fast} {self.times[fast] * 1e3:.2f} "
                                   f"ms ({self.times[slow] / self.times[fast] if self.times[fast] > 0 else 1.0:.2f}x)")


# Megatron-LM's StragglerDetector report (megatron/core/utils.py, megatron/core/README_STRAGGLER.md), one line per log
# interval: `| MnRtt/Rnk: 3455.18ms/14 | MxRtt/Rnk: 3460.39ms/6 | MnPwr/Rnk: 602415W/5 | ... | MnUtl/Rnk: 97%/19 |
# MxUtl/Rnk: 100%/25 | MnClk/Rnk: 1950MHz/13 | ... | MnEtpt/Rnk: 296.11TF/13 | MxEtpt/Rnk: 297.70TF/1`: the least and
# the most of each figure across the ranks, each with the rank it was measured on (Rtt: the interval's round-trip time
# of the traced ops; Pwr, Tmp, Utl, Clk: the GPU's power, temperature, utilization and SM clock; DRtt: the data
# loader's; Etpt: the estimated throughput)
MINMAX_FIELD = re.compile(r"\b(Mn|Mx)(Rtt|DRtt|Pwr|Tmp|Utl|Clk|Etpt)/Rnk:\s*(\d+(?:\.\d+)?)\s*([A-Za-z%]*)/(\d+)")


class StragglerReports:
    """Feed lines one at a time; `feed` is True for a StragglerDetector report line (three min/max fields at least).
    `summary()`: {"reports": n, "<figure>": {"min": least min, "min_rank": its rank, "max": most max, "max_rank": its
    rank, "unit": ...}} over every report of the file, {} without one."""

    def __init__(self):
        self.reports = 0
        self.figures: dict[str, dict] = {}

    def feed(self, body: str) -> bool:
        if "/Rnk:" not in body:  # (a gate: this runs on every line of a text log)
            return False
        found = MINMAX_FIELD.findall(body)
        if len(found) < 3:
            return False
        self.reports += 1
        for side, name, value, unit, rank in found:
            f = self.figures.setdefault(name, {"unit": unit})
            v, r = float(value), int(rank)
            if side == "Mn" and ("min" not in f or v < f["min"]):
                f["min"], f["min_rank"] = v, r
            if side == "Mx" and ("max" not in f or v > f["max"]):
                f["max"], f["max_rank"] = v, r
        return True

    def summary(self) -> dict:
        return {"reports": self.reports, **self.figures} if self.reports else {}

