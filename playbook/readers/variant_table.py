"""A table of runs that differ by a setting (an A/B, an ablation), each row a run or configuration with the time it
took, as users paste them into issues and PR descriptions (a line scanner of profiler_table.ProfilerTables):

    model | ZeRO Offload | TOTAL TIME | TOTAL/AVG FORWARD TIME | TOTAL/AVG BACKWARD TIME | TOTAL/AVG ADAM TIME
    -- | -- | -- | -- | -- | --
    llama2-0.3B | true | 150s | 6s/0.02s | 66s/0.26s | 78s/0.31s

    | Case | Mean step time | Max sampled GPU memory |
    | --- | ---: | ---: |
    | Disabled | `0.752s` | `15.24 GiB` |

Grammar: a header row of cells split at `|` (outer pipes optional, at least 2 cells) that can head a table of runs
(runs_header: a column named for a time, no column of shares — that is a breakdown of one run — and a first column
not naming the parts of one run: stage, category, op ...), then a rule row (cells of dashes and colons only), then
rows of as many cells; any other line ends the table. A blank setting cell repeats the one above it. A cell is a duration when it is a
number with a time unit (`150s`, `0.752 s`, `12.5ms`, `1.2 min`; backticks and `**` around it dropped); a cell of two
durations split by `/` under a header naming the pair (`TOTAL/AVG ...`) is read as its first (the total; the two are
proportional). A column is a time column when every row's cell is a duration (or a plain number under a header that
states its unit, `(s)` / `[ms]`); a column of quantities (`15.24 GiB`, `87%`) is a measurement kept beside the row;
the others are settings (the row's label: `model=llama2-0.3B, ZeRO Offload=true`); where every other column is a
quantity, the first column is the setting (a sweep of one numeric knob: `| Batch Size | Time (Per Epoch) |`).
The whole run's column is the time column whose header names it (total, step, wall, end-to-end, elapsed, run,
iteration, epoch), else the one at least as large as every other in every row (a sum of the others); the other time
columns are its phases (forward, backward, optimizer ...). A table without a time column, or with fewer than two rows,
is not one of these (a memory or accuracy table).

The same comparison typed as lists (a heading per configuration and its epochs, or `LABEL: 33 seconds per epoch`) is
readers/config_lists.py's, whose tables join these.

Labelled rates (a paste comparing systems or settings by throughput, one line each):

    Frontier: 0.19 batch per/second
    nccs prism cluster: 2.469 batches per/second

A run of two or more consecutive lines, each only `<label>: <number> <work unit> per second` (`/s`, `/sec`,
`per second`, `per/second`; the work unit one of batch, sample, image, token, iteration, step, sequence, it), with
distinct labels and one work unit, is a table of runs of one setting column (`run`): each row's whole time is the
seconds per unit of work (1 / rate, `seconds per batch`). One line, or a label repeated (a metric logged over time),
is no table.

summary(): {"tables": [{"line", "whole", "settings": [column names], "phases": [column names], "rows": [{"label",
"settings": {column: value}, "measures": {column: cell}, "whole_s", "phases": {column: seconds}}]}]}, None when none was read. Memory:
MAX_TABLES tables of MAX_ROWS rows at most.
"""

from __future__ import annotations

import re

from playbook.readers.config_lists import ConfigLists
from playbook.readers.step_log.vocab import TIME_UNITS as _UNITS

MAX_TABLES = 32
MAX_ROWS = 200
_DURATION = re.compile(r"^(\d{1,9}(?:\.\d{1,9})?)\s?(ns|us|µs|ms|s|secs?|seconds?|mins?|minutes?|h|hr|hours)$",
                       re.IGNORECASE)
_NUMBER = re.compile(r"^\d{1,9}(?:\.\d{1,9})?$")
_HEADER_UNIT = re.compile(r"[(\[]\s*(ns|us|µs|ms|s|sec|min|h)\s*[)\]]", re.IGNORECASE)
_WHOLE = re.compile(r"\b(total|step|wall|end[- ]to[- ]end|e2e|elapsed|run\s?time|iteration|iter|epoch)\b",
                    re.IGNORECASE)
_PAIR = re.compile(r"\w+\s?/\s?\w+")  # a header naming a pair of figures per cell: `TOTAL/AVG`
_RULE_CELL = re.compile(r"^:?-{2,}:?$")
_TIMED = re.compile(r"\b(time|duration|latency|elapsed|wall|step|iter|epoch|runtime|s/it)\b|[(\[]\s*(ns|us|µs|ms|s|sec|"
                    r"min|h)\s*[)\]]", re.IGNORECASE)
_SHARE = re.compile(r"%|\bshare\b|\bpercent|\bpct\b|\bfraction\b|\bratio\b", re.IGNORECASE)
_PARTS = re.compile(r"^\s*(stage|phase|step phase|segment|category|op|operator|kernel|function|component|part|"
                    r"section|breakdown)s?\s*$", re.IGNORECASE)
_RATE_LINE = re.compile(
    r"^\s*(?P<label>[A-Za-z][\w .()/-]{0,60}?)\s*:\s*(?P<num>\d{1,9}(?:\.\d{1,9})?)\s?"
    r"(?P<unit>batch(?:es)?|samples?|images?|imgs?|tokens?|tok|iterations?|its?|steps?|sequences?|seqs?)\s?"
    r"(?:/|per\s?/?\s?)\s?(?:s|sec|secs|seconds?)\s*$", re.IGNORECASE)
# a label that counts time (`epoch 1: 7.6 it/s`, `step 300: ...`): a rate logged over a run, not a run of its own
_SERIES_LABEL = re.compile(r"\b(?:epochs?|steps?|iter(?:ation)?s?|batch(?:es)?|updates?)\s*#?\s*\d", re.IGNORECASE)
_UNIT_NOUN = {"batches": "batch", "samples": "sample", "images": "image", "imgs": "image", "img": "image",
              "tokens": "token", "tok": "token", "iterations": "iteration", "its": "iteration", "it": "iteration",
              "steps": "step", "sequences": "sequence", "seqs": "sequence", "seq": "sequence"}
_QUANTITY = re.compile(r"^[-+]?\d[\d,]{0,12}(?:\.\d{1,9})?\s?(?:%|[KMGTP]i?B(?:/s)?|[KMGT]?B/s|[GM]bps|x|×|it/s|"
                       r"samples/s|tokens/s|tok/s|W|°?C)?$", re.IGNORECASE)


def cells(line: str) -> list[str] | None:
    """The cells of a pipe-table line (None when it has no `|`)."""
    s = line.strip()
    if "|" not in s:
        return None
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip().strip("`").strip("*").strip().strip("`").strip() for c in s.split("|")]


def seconds(cell: str, header: str = "") -> float | None:
    """A cell's duration in seconds: `150s`, `` `0.752s` ``, `6s/0.02s` under a `TOTAL/AVG` header (its first), a
    plain number under a header stating its unit; None for anything else."""
    c = cell.replace(",", "").strip()
    if "/" in c and _PAIR.search(header):
        c = c.split("/")[0].strip()
    if (m := _DURATION.match(c)):
        return float(m.group(1)) * _UNITS[m.group(2).lower()]
    if _NUMBER.match(c) and (u := _HEADER_UNIT.search(header)):
        return float(c) * _UNITS[u.group(1).lower()]
    return None


def runs_header(header: list[str]) -> bool:
    """Whether a table's header can be a table of runs: a column named for a time, no column of shares (a share of a
    whole is a breakdown of one run: `| stage | median | share of step |`) and a first column that does not name the
    parts of one run (stage, phase, category, op, kernel, function, component), nor a column of compile times (the
    rows' compilations, `compilation time (s)`: runtime_logs reads them as compile events)."""
    from playbook.readers.runtime_logs import compile_column

    return (any(_TIMED.search(h) for h in header) and not any(
        _SHARE.search(h) or compile_column(h) and _TIMED.search(h) for h in header)  # `torch.compile`: a setting
            and not _PARTS.match(header[0]))


class VariantTable:
    """feed(body) True when the line belongs to a table of runs; summary() the tables read (module docstring)."""

    def __init__(self):
        self.tables: list[dict] = []
        self._header: list[str] | None = None
        self._rows: list[list[str]] | None = None  # the rows of the table being read (after its rule)
        self._line = 0
        self._n = 0
        self.lists = ConfigLists()  # the same comparison typed as lists (readers/config_lists.py)
        self._rates: list[tuple[int, str, float, str, str]] = []  # the labelled rate lines being read

    def _rate(self, body: str) -> bool:
        """A labelled rate line (module docstring): kept for the run of them it belongs to; any other line closes
        the run. True (the line is taken) from the run's second line on: a first line alone, or a label logged
        again (`throughput: 812 samples/s` every epoch), stays free for the other scanners."""
        m = _RATE_LINE.match(body)
        if m is None or float(m.group("num")) <= 0 or _SERIES_LABEL.search(m.group("label")):
            self._close_rates()
            return False
        unit = m.group("unit").lower()
        rate = (self._n, m.group("label").strip(), float(m.group("num")), _UNIT_NOUN.get(unit, unit),
                body.split(":", 1)[1].strip())
        if self._rates and (rate[1] in {r[1] for r in self._rates} or rate[3] != self._rates[0][3]):
            self._close_rates()  # a label again or another unit: a new run starts here
        self._rates.append(rate)
        return len(self._rates) >= 2

    def _close_rates(self) -> None:
        rates, self._rates = self._rates, []
        if len(rates) < 2 or len(self.tables) >= MAX_TABLES:
            return
        rows = [{"label": label, "settings": {"run": label}, "measures": {"rate": text}, "whole_s": 1.0 / value,
                 "phases": {}} for _, label, value, _, text in rates[:MAX_ROWS]]
        self.tables.append({"line": rates[0][0], "whole": f"seconds per {rates[0][3]}", "settings": ["run"],
                            "phases": [], "rows": rows})

    def feed(self, body: str) -> bool:
        self._n += 1
        if self._rows is None and self._rate(body):
            return True
        row = cells(body)
        if row is None and self._rows is None and self.lists.feed(body):
            self._header = None
            return True
        if self._rows is not None:
            if row is not None and len(row) == len(self._header or ()) and not all(_RULE_CELL.match(c) for c in row):
                if len(self._rows) < MAX_ROWS:
                    self._rows.append(row)
                return True
            self._close()
        if row is None or len(row) < 2:
            self._header = None
            return False
        if self._header is not None and len(row) == len(self._header) and all(_RULE_CELL.match(c) for c in row):
            if not runs_header(self._header):
                self._header = None
                return False  # a breakdown of one run (stages and their shares), another scanner's
            self._rows = []
            return True  # the header above was this table's: its line was taken by no one else
        self._header, self._line = row, self._n
        return False  # a header alone is no table yet: it stays free for another scanner

    def _close(self) -> None:
        header, rows = self._header or [], self._rows or []
        self._header, self._rows = None, None
        if len(rows) < 2 or len(self.tables) >= MAX_TABLES:
            return
        times = {j: [seconds(r[j], header[j]) for r in rows] for j in range(len(header))}
        times = {j: v for j, v in times.items() if all(x is not None for x in v)}
        if not times:
            return
        top = [max(v[i] for v in times.values()) for i in range(len(rows))]  # each row's largest time, once
        largest = [j for j in times if all(times[j][i] >= top[i] for i in range(len(rows)))]
        named = [j for j in times if _WHOLE.search(header[j])]
        whole = next((j for j in named if j in largest), named[0] if named else largest[0] if largest else None)
        if whole is None:
            return
        # a column of quantities (`15.24 GiB`, `87%`, `41.3 GB/s`) is a measurement beside the time, not a setting
        measures = [j for j in range(len(header)) if j not in times and all(_QUANTITY.match(r[j]) for r in rows)]
        settings = [j for j in range(len(header)) if j not in times and j not in measures]
        if not settings and measures and measures[0] == 0:
            # a sweep of one numeric knob (`| Batch Size | Time (Per Epoch) |`, `| GPUs | step time |`): the first
            # column names the rows, as in every table of runs, even when its values are numbers
            settings, measures = [0], measures[1:]
        if not settings:
            return
        for j in settings:  # a blank setting cell repeats the one above it (a markdown table's merged cells)
            for above, r in zip(rows, rows[1:], strict=False):
                if not r[j]:
                    r[j] = above[j]
        phases = [j for j in times if j != whole]
        out_rows = [{"label": ", ".join(f"{header[j]}={r[j]}" if len(settings) > 1 else r[j] for j in settings),
                     "settings": {header[j]: r[j] for j in settings}, "measures": {header[j]: r[j] for j in measures},
                     "whole_s": times[whole][i],
                     "phases": {header[j]: times[j][i] for j in phases}} for i, r in enumerate(rows)]
        self.tables.append({"line": self._line, "whole": header[whole], "settings": [header[j] for j in settings],
                            "phases": [header[j] for j in phases], "rows": out_rows})

    def summary(self) -> dict | None:
        if self._rows is not None:
            self._close()
        self._close_rates()
        tables = self.tables + ((self.lists.summary() or {}).get("tables") or [])
        return {"tables": tables} if tables else None
