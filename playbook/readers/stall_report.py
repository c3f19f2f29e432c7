"""A collective library's own report of which ranks a collective waits for → one event per rank it names.

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
detail says so). Each report (from one warning to the next) names a rank once. Every pattern is bounded and
anchored on literal text.
"""

from __future__ import annotations

import re

WARNING = re.compile(r"submitted to be reduced, gathered or broadcasted by subset of ranks")
LISTED = re.compile(r"\[(missing|ready) ranks: ?(\d{1,7}(?:, ?\d{1,7}){0,4095})\]")
BLOCK_HEAD = re.compile(r"(?:^|[\s:>\]])(?:Stalled|Missing) ranks:\s*$")
BLOCK_ROW = re.compile(r"(?:^|[\s:>\]])(\d{1,7})(!?): \[")
# the world size a launcher's command line or Horovod's own start-up line states
WORLD = re.compile(r"\b(?:mpirun|mpiexec|horovodrun)\b.{0,300}?\s-(?:np|n)\s+(\d{1,7})\b|\brank \d{1,7} / size (\d{1,7})\b")
NEEDLES = ("ranks", "mpirun", "mpiexec", "horovodrun", "/ size")


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
        low = body.lower()
        if not any(n in low for n in NEEDLES):
            return None
        if (w := WORLD.search(body)) and not WARNING.search(body):
            self.world = max(self.world, int(w.group(1) or w.group(2)))
            return None  # a command or start-up line: read for its world size, understood by others or not at all
        out: list[tuple[int, str]] | None = None
        if WARNING.search(body):
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
