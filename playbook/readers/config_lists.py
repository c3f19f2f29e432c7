"""Runs of one job under several configurations as a reporter types them into an issue or a PR description — no
table, one configuration after another — read into the tables of runs of readers/variant_table.py (its summary's
form), so analysis.variant_runs compares them:

  A heading per configuration, then its epochs, one line each:
      -- Current version                 (a short line: `-- NAME`, `## NAME`, `**NAME**`, `NAME:` or NAME alone)
      epoch 0: 7.45 it/s                 (`epoch N: VALUE UNIT`, `Epoch N - VALUE UNIT`, `epoch N took VALUE UNIT`)
      epoch 1: 7.6 it/s
  One configuration a line:
      Zero workers: about 33 seconds per Epoch     (`LABEL: [about|around|~|approx.] VALUE UNIT per epoch`,
      Eight workers: 136 s/epoch                    `... s/epoch`, `... each epoch`)

A rate (`it/s`, `samples/s`: work per second) is turned into seconds per unit of work (1 / rate), a time (`s/it`,
`s`, `sec`, `seconds`, `min`, `ms`) kept: every configuration of one table is in one kind — per iteration (`it/s`,
`s/it`) or per epoch (a time an epoch) — and a block in the other kind starts another table. A configuration's time
is its steady epochs' median: the epochs after its first where it has more than one (the first pays each start-up
once: the workers' spawn, the caches' fill), else its one figure; its epochs are kept ("samples", "first_s") for the
comparison's spread. A heading is a line of at most HEADING_MAX characters that is no measurement and comes right
before a block's first line; a block without one is named `run N`. A table needs two configurations.

summary(): {"tables": [{"line", "whole": "time per iteration" | "time per epoch", "settings": ["configuration"],
"phases": [], "typed": True, "rows": [{"label", "settings": {"configuration": label}, "measures": {}, "phases": {},
"whole_s", "samples": [s, ...], "first_s"}]}]}, None when none was read. Memory: MAX_TABLES tables of MAX_ROWS
configurations of MAX_SAMPLES epochs at most.
"""

from __future__ import annotations

import re
import statistics

MAX_TABLES = 16
MAX_ROWS = 64
MAX_SAMPLES = 1000
HEADING_MAX = 60
_VALUE = r"(\d{1,9}(?:\.\d{1,9})?)\s?(it/s|its/s|iter/s|samples/s|s/it|sec/it|ms|s|secs?|seconds?|mins?|minutes?)"
_EPOCH = re.compile(r"^\s*epoch\s?(\d{1,6})\s?(?::|-|–|took|=)\s*(?:about|around|~|≈|approx\.?)?\s*" + _VALUE
                    + r"\s*\.?\s*$", re.IGNORECASE)
_ONE = re.compile(r"^\s*[-*•]?\s*([^:]{1,60}?)\s*:\s*(?:about|around|~|≈|approx\.?)?\s*" + _VALUE
                  + r"\s*(?:per|/|an?|each)\s*epoch\s*\.?\s*$", re.IGNORECASE)
_HEADING = re.compile(r"^\s*(?:-{1,3}|#{1,4}|\*{1,2}|>)?\s*([A-Za-z(][^\n]{0,58}?)\s*:?\s*(?:\*{1,2})?\s*$")
_SECONDS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0,
            "minute": 60.0, "minutes": 60.0, "s/it": 1.0, "sec/it": 1.0}
_RATES = ("it/s", "its/s", "iter/s", "samples/s")


def _seconds(value: str, unit: str) -> tuple[float, str] | None:
    """(seconds per unit of work, kind) of a measurement; None for a zero rate."""
    v, u = float(value), unit.lower()
    if u in _RATES:
        return (1.0 / v, "iteration") if v > 0 else None
    return v * _SECONDS[u], "iteration" if "/it" in u else "epoch"


class ConfigLists:
    """feed(body) True for a line it reads; summary() the tables (module docstring)."""

    def __init__(self):
        self.tables: list[dict] = []
        self._rows: list[dict] = []  # the configurations of the table being read
        self._kind = ""
        self._line = 0
        self._n = 0
        self._heading: str | None = None  # the line before, when it can head a block
        self._block: dict | None = None

    def feed(self, body: str) -> bool:
        self._n += 1
        if (m := _EPOCH.match(body)) and (got := _seconds(m.group(2), m.group(3))):
            if self._block is None and self._heading is None:
                return False  # epochs under no configuration's heading: one run's epoch times, the step logs' to read
            if self._block is None or self._block["kind"] != got[1]:
                self._block = self._row(self._heading or f"run {len(self._rows) + 1}", got[1])
            if len(self._block["samples"]) < MAX_SAMPLES:
                self._block["samples"].append(got[0])
            self._heading = None
            return True
        self._block = None
        if (m := _ONE.match(body)) and (got := _seconds(m.group(2), m.group(3))):
            self._row(m.group(1).strip(), got[1])["samples"].append(got[0])
            self._heading = None
            return True
        h = _HEADING.match(body) if len(body.strip()) <= HEADING_MAX else None
        self._heading = h.group(1).strip() if h else None
        return False  # a heading is claimed by no one: it stays free for the other scanners

    def _row(self, label: str, kind: str) -> dict:
        if self._kind and kind != self._kind:
            self._close()
        if not self._rows:
            self._line, self._kind = self._n, kind
        row = {"label": label, "kind": kind, "samples": []}
        if len(self._rows) < MAX_ROWS:
            self._rows.append(row)
        return row

    def _close(self) -> None:
        rows, kind = [r for r in self._rows if r["samples"]], self._kind
        self._rows, self._kind, self._block = [], "", None
        if len(rows) < 2 or len(self.tables) >= MAX_TABLES:
            return
        out = []
        for r in rows:
            steady = r["samples"][1:] if len(r["samples"]) > 1 else r["samples"]
            out.append({"label": r["label"], "settings": {"configuration": r["label"]}, "measures": {}, "phases": {},
                        "whole_s": statistics.median(steady), "samples": steady, "first_s": r["samples"][0]})
        self.tables.append({"line": self._line, "whole": f"time per {kind}", "settings": ["configuration"],
                            "phases": [], "typed": True, "rows": out})

    def summary(self) -> dict | None:
        self._close()
        return {"tables": self.tables} if self.tables else None
