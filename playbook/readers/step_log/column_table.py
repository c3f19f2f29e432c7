"""Tables printed as text, turned into the `key value` lines the step grammar reads (readers/step_log/grammar.py).

Two shapes:
- a header row of names, then rows of numbers under it: Chainer's PrintReport (`epoch  main/loss  ...
  elapsed_time`, then `1  0.19  ...  9.21784`), fastai's progress table (`epoch  train_loss  valid_loss  accuracy
  time`, then `0  0.9  0.5  0.8  00:41`). A value belongs to the column of the header name it starts under (an absent
  entry leaves a gap, not a shift). The header names a counter (epoch, iteration, step, ...) and no value. A cell
  may hold several words one space apart (nerfstudio's `Step (% Done)` over `10 (0.03%)`, `Train Iter (time)` over
  `45.857 ms`); rich's `file.py:NNN` at a line's right is left out.
- a ruled block of `| key | value |` rows, one record between two rules: Stable-Baselines3's logger (`| time/ |
  |` then `|    iterations | 1 |`, `|    time_elapsed | 12 |`). A key is read by its last part (`time/fps` → fps).
- a tab-separated table: a header row of names naming a counter, then rows of as many cells, each a value or a
  `key: value ...` of its own (tf_cnn_benchmarks' `Step\tImg/sec\ttotal_loss` over `10\timages/sec: 198.3 +/- 0.4
  (jitter = 1.2)\t7.890`).
- a dict printed over several lines (pprint.pformat's `{'accuracy': 0.1,` then indented ` 'step': 0}`: EasyLM):
  its lines joined into one, the grammar's dict line; a line that is not indented ends it unread (braces in a
  string cannot hold the lines after it).

A row becomes `step N | key value | ...`: the counter is the table's step column (iteration, step, global_step,
iterations, n_updates, ...), else its epoch column (one record per epoch, the epoch as the step, as epochs.py's
records); the grammar gives each key its role (elapsed_time cumulative, time per epoch, ...).
"""

from __future__ import annotations

import re
from itertools import islice

from playbook.readers.step_log.vocab import norm_key

# counter columns, the step's first (a global count of steps), then the epoch's
STEP_COLUMNS = ("global_step", "iteration", "iterations", "iter", "step", "steps", "n_updates", "num_updates",
                "updates", "total_timesteps", "timesteps", "episodes")
EPOCH_COLUMNS = ("epoch", "epochs")
_NAME = re.compile(r"[A-Za-z_][\w/.\-@%]*")
_VALUE = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?%?|\d+:\d{2}(?::\d{2})?|nan|inf|-inf")
_RULE = re.compile(r"^\s*-{10,}\s*$")
# each cell one run of non-bars, stripped by the reader: a lazy cell before an optional space would be quadratic
_KV_ROW = re.compile(r"^\s*\|(?P<key>[^|]*)\|(?P<value>[^|]*)\|\s*$")
_COUNTER_WORD = re.compile(r"(?i)epoch|iter|step|update|episode")
_NUMBER_TOKEN = re.compile(r"(?:^|\s)-?\.?\d")
_OWN_KEY = re.compile(r"^([A-Za-z_][\w/.\-]{0,40}):\s*(" + _VALUE.pattern + r")\b")
_CELL = re.compile(r"\S+(?: \S+)*")  # a cell: words one space apart; cells stand two or more apart
_HEAD_WORD = re.compile(r"[A-Za-z_(%/][\w/.\-@%()]*")  # a word of a many-word column name (`Step (% Done)`)
_QUALIFIER = re.compile(r"\([^()]*\)")
_LEAD_INT = re.compile(r"\d{1,18}")
_DICT_OPEN = re.compile(r"^\s*\{\s*['\"][^'\"]{1,80}['\"]\s*:")  # `{'accuracy': 0.1,` / `{"step": 3,`
MAX_COLUMNS = 64  # columns kept per header: a wide line of names cannot grow memory
MAX_ROWS = 256  # rows of one ruled block


def _key(text: str) -> str:
    """A column's or row's name, normalised part by part (`validation/main/loss`, `train_loss`)."""
    return "/".join(norm_key(p) for p in text.split("/") if norm_key(p))


def _counter(keys: list[str], first: str | None = None) -> str | None:
    """The counter among a table's keys (by their last part): `first` (the leaf the first record of these blocks
    counted by) when present, else a step column, else an epoch column."""
    leaves = {k.rsplit("/", 1)[-1]: k for k in keys}
    return next((leaves[c] for c in (first, *STEP_COLUMNS, *EPOCH_COLUMNS) if c in leaves), None)


def _record(pairs: list[tuple[str, str]], first: str | None = None) -> str | None:
    """`step N | key value | ...` for the (key, value) pairs of one row (keys by their last part); None when the
    row has no whole counter value. `first`: the counter leaf of the blocks' first record, kept while present (a
    counter that appears later, Stable-Baselines3's `train/n_updates` once learning starts, counts other things
    than the `time/total_timesteps` every block states)."""
    counter = _counter([k for k, _ in pairs], first)
    step = dict(pairs).get(counter, "")
    if not re.fullmatch(r"\d{1,18}(?:\.0+)?", step):
        return None
    rest = [f"{k.rsplit('/', 1)[-1]} {v}" for k, v in pairs if k != counter]
    return " | ".join([f"step {step.split('.')[0]}", *rest])


def _source(cell: str) -> bool:
    """Whether a cell is a source location, `file.py:NNN` (rich's log path column at a line's right: where, not what)."""
    path, _, line = cell.rpartition(":")
    return path.endswith(".py") and len(path) > 3 and " " not in path and line.isdigit()


class ColumnTables:
    """`feed(body)` for every line: None when the line is no part of a table, "" when it is (a header, a rule, a
    row kept for its record), else the record line that stands for it."""

    def __init__(self):
        self.header: list[tuple[int, str]] | None = None  # (column start, name) of the last header row
        self.tab_header: list[str] | None = None  # the names of the last tab-separated header row
        self.block: list[tuple[str, str]] | None = None  # the (key, value) rows of an open ruled block
        self.first_counter: str | None = None  # the counter leaf of the first ruled block's record
        self.dict_lines: list[str] | None = None  # the lines so far of a dict printed over several lines
        self.depth = 0  # its braces still open

    def feed(self, body: str) -> str | None:
        if self.dict_lines is not None or ("{" in body and _DICT_OPEN.match(body)):
            return self._dict(body)
        if _RULE.match(body):
            rows, self.block = self.block, []
            if not rows:
                return ""
            if self.first_counter is None and (counter := _counter([k for k, _ in rows])) is not None:
                self.first_counter = counter.rsplit("/", 1)[-1]
            return _record(rows, self.first_counter) or ""
        if self.block is not None and (m := _KV_ROW.match(body)):
            value = m["value"].strip()
            if value and _key(m["key"]) and len(self.block) < MAX_ROWS:  # `| time/ |  |` is a tag: skipped
                self.block.append((_key(m["key"]), value))
            return ""
        self.block = None
        return self._tabs(body) if "\t" in body.strip() else self._columns(body)

    def _tabs(self, body: str) -> str | None:
        cells = [c.strip() for c in body.strip().split("\t", MAX_COLUMNS)]
        if len(cells) > MAX_COLUMNS:
            return None
        if all(_NAME.fullmatch(c) for c in cells):
            names = [_key(c) for c in cells]
            self.tab_header = names if _counter(names) is not None else self.tab_header
            return "" if _counter(names) is not None else None
        if self.tab_header is None or len(cells) != len(self.tab_header):
            return None
        pairs = []
        for name, cell in zip(self.tab_header, cells, strict=True):
            if _VALUE.fullmatch(cell):
                pairs.append((name, cell))
            elif (m := _OWN_KEY.match(cell)):  # a cell naming its own value: `images/sec: 198.3 +/- 0.4`
                pairs.append((norm_key(m[1].replace("/", " per ")), m[2]))
            else:
                return None
        return _record(pairs)

    def _dict(self, body: str) -> str | None:
        """A line of a dict printed over several lines: "" until its last, then the whole dict on one line; None
        for a dict that closes on its first line (an ordinary dict line)."""
        if self.dict_lines is not None and body[:1] not in " \t}]":
            self.dict_lines, self.depth = None, 0  # not the dict's: it was left open (a brace in a string)
            return self.feed(body)
        depth = self.depth + body.count("{") - body.count("}")
        if self.dict_lines is None and depth <= 0:
            return None
        self.dict_lines = (self.dict_lines or []) + [body.strip()]
        self.depth = depth
        if depth > 0 and len(self.dict_lines) < MAX_ROWS:
            return ""
        text, self.dict_lines, self.depth = " ".join(self.dict_lines), None, 0
        return text

    def _columns(self, body: str) -> str | None:
        """A header row of names over rows of values, cells two or more spaces apart. A cell may hold several words
        (nerfstudio's `Step (% Done)   Train Iter (time)   ETA (time)` over `10 (0.03%)   45.857 ms   22 m, 55 s`):
        a name's bracketed qualifiers are dropped and `/` read as per, a value cell starts with a number, the counter
        cell's leading integer is the step; rich's `file.py:NNN` at the right of a line and a rule are decoration."""
        if "  " not in body or self.header is None and (_NUMBER_TOKEN.search(body) or not _COUNTER_WORD.search(body)):
            return None  # no columns (two spaces apart), or no header yet and this no header (a number, no counter)
        cells = [(m.start(), m.group()) for m in islice(_CELL.finditer(body), MAX_COLUMNS + 2)]
        if len(cells) >= 2 and _source(cells[-1][1]):
            cells.pop()  # rich's `file.py:NNN` at the right of every line it logs
        if len(cells) == 1 and set(cells[0][1]) == {"-"}:
            return "" if self.header is not None else None  # the header's rule (beside a log path)
        if not 2 <= len(cells) <= MAX_COLUMNS:
            return None
        if len(cells) >= 3 and all(_NAME.fullmatch(t) if " " not in t else
                                   all(_HEAD_WORD.fullmatch(w) for w in t.split(" ")) for _, t in cells):
            names = [_key(t) if " " not in t else norm_key(_QUALIFIER.sub(" ", t).replace("/", " per "))
                     for _, t in cells]
            if _counter(names) is None:
                return None
            self.header = [(start, name) for (start, _), name in zip(cells, names, strict=True)]
            return ""
        if self.header is None or not all(_VALUE.fullmatch(t) or " " in t and _NUMBER_TOKEN.match(t) for _, t in cells):
            return None
        starts = [s for s, _ in self.header]
        counter = _counter([name for _, name in self.header])
        pairs: dict[str, str] = {}
        for start, text in cells:
            col = max((i for i, s in enumerate(starts) if s <= start + 1), default=None)
            if col is None or self.header[col][1] in pairs:
                return None  # a value left of the first column, or two in one column: not this table's row
            name = self.header[col][1]
            lead = _LEAD_INT.match(text) if name == counter and " " in text else None
            pairs[name] = lead.group() if lead else text
        return _record(list(pairs.items()))
