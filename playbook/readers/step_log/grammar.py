"""Step records from one grammar, not one pattern per framework.

A step line is a STEP COUNTER plus TYPED FIELDS `key <sep> value <unit>` in any order:

counters   `step N`, `iter N`, `iteration N/M`, `global_step=N`, `num_updates=N`, `steps: N`, `step:N/M`
           (keywords; with several on a line the most global wins: global_step > num_updates > iter(ation) > step),
           `Epoch: [e][i/N]` / `Epoch(train) [e][i/N]` / `Iter(train) [i/N]` (PyTorch examples, MMEngine),
           `Train: e [i/N` (timm), `epoch 001:  i / N` (fairseq), `Epoch e/E` header + `i/N [====]` (Keras),
           tqdm bars `i/N [mm:ss<mm:ss, 3.4it/s]` after `Epoch e:` (Lightning) or a leading `e/E` (ultralytics),
           rich bars `i/N 0:00:20 • 0:00:40 5.00it/s`, a bare `[i/N]` or `[batch=i/N]`, `[e/E][i/N]` (Pointcept),
           `E=e B=i` (Sockeye), `step_i: N` (Pax), CLU's leading `[N] k=v`
           and big_vision's `[N] name = value`, DLLogger's JSON `"step": [e, i]`;
           `current_steps` / `completed_steps`, `Up. N` (Marian), `tick N` (StyleGAN), `Batch [a-b]` (MXNet) and
           `a-bbatch` (ESPnet): the range's end, integer-valued floats (`global_step=99.00`), `batch N` (last).
           Inside an epoch (named before the counter, or after it: DLRM's `it i/N of epoch e`) the step is
           (e - first epoch) * N + i; without N, a count restarting each epoch counts on (columns.EpochRestarts).
fields     any `key <sep> value [unit] [(running average)]`, separators `:` `=` space, fields split by `|` `,`
           `;` tab, runs of spaces or ` - `; units ns/us/ms/s/sec/min/h and H:MM:SS; per-step units (ms/step,
           s/it, sec/batch); step rates (it/s, steps/sec, global_step/sec, ups); throughput (samples/s,
           examples/sec, tokens/s, tok/s, tps, wps). `3.140 (3.393)`: the current value and its average (kept: the
           current; printed every k > 1 steps, the window's mean from the averages: running_avg.py); `time (data): 0.41 (0.01)`: the bracketed name labels the bracketed value (BasicSR); a step
           noun with a decimal (`Batch 3.505`) is its time; a date is no value. Python dict lines (`{'loss': 1.9, 'epoch': 0.1}`) and JSON Lines are fields too. A unit may sit
           in the key (`iter time (s)`, `step [ms]`, `train_step_timing in s`, `Batch (t)`) or be the key
           (`ms/step: 120`); `1.23K` / `2.62M` scale their value; `<what>_per_sec` is a rate of what precedes
           `per`. A counter line without fields takes them from the indented lines or the box-drawn table below it
           (Composer, OLMo, Ray Train); a box table under a record line adds to that record; a lone `key: N` counter
           takes the `key: value` lines held since the last blank line (RLlib's YAML result, key_block.py).
           A table printed as text (a header row of names over rows of values: Chainer, fastai; ruled `| key |
           value |` blocks: Stable-Baselines3) is read as one record line per row (column_table.py).
roles      by key: per-step durations (iter time, step_time, time per iteration, batch_time, dt, time, ...),
           cumulative times (train_time, elapsed, runtime, wall: per-step = difference / steps between lines),
           running averages (step_avg), a window's time (TensorFlow's `step = 200 (11.474 sec)`, Trax's `Ran 500
           train steps in 5.03 secs`), a time named for the epoch (no step's), phases (`Data`, env-time,
           data_time, dataloader, data_wait, reader_cost → data; forward/backward/optimizer/comm/compute → fwd/bwd/
           optimizer/collective/compute), tokens (count, or rate x step time), markers in parentheses (litgpt
           `(optimizer.step)`). A time written as a clock that rises line by line is the wall clock (torch_xla's
           `Time=10:01:38`): cumulative.

The duration field is chosen PER FILE (duration_field.py): among fields present on at least half as many step
lines as the best-covered one, the most specific role wins (vocab.PREFERENCE: per-step > generic time > window >
verified-monotone cumulative > running average > unnamed); a cumulative field that is not monotone is read as
per-step, a rising field of Unix clock readings (MLPerf's `time_ms`) as cumulative, a plain time as the line time
stamps show it (columns.clock_reading: a window's, Marian, fairseq2's `Lapse Time`, its stage times per step too; a
running total, OpenNMT), and a time under half its line's forward + backward + optimizer times is a part of the
step, never the step; a clock on the lines that the chosen field does not account for replaces it (line_clock.py:
CenterNet's `Tot:` beside its running mean `Net`). Only records whose counter is of a kind (keyword / progress bar /
position) carrying the chosen field count (a worker's tqdm batches are not Ray's steps). A running total since the
epoch began times each epoch's first line by its position (Flair). A step time to which the data wait must be added
to match the lines' stamps leaves it out: the step is both (Coqui's step_time + loader_time; columns.data_apart).
Step rates on lines of their own (Pax's `steps/sec:`) give the next step line that states no time their mean pace.
A file without a duration field sums its stages (a timer family, or the data wait plus the compute: DLLogger's
`data_time` + `compute_time`), else divides its batch by its samples per second (without time stamps; the batch from
a field or the file's `Batch size: N` line), else gives window means from the time stamps of its step lines; a file
that times no step at all gives one record per epoch from its epoch times (epochs.EpochTimes: nnU-Net's `Epoch
time: 120.38 s`), else from the stamps of its epoch lines (VITS). Plain running totals whose sum keeps pace with the
stamps are parts of the step (running_parts.py: SoundSpaces' env-time + pth-time).
"""

from __future__ import annotations

from array import array
from collections import Counter

import numpy as np

from playbook.readers.line_prefix import stamp_ns
from playbook.readers.step_log import bar_loops, timer_line, window_count
from playbook.readers.step_log.bar_loops import BarLoops, drop_records, in_eval_section
from playbook.readers.step_log.column_table import ColumnTables
from playbook.readers.step_log.columns import (
    CLOCK_FLOOR_S,
    EpochRestarts,
    adopt_untagged,
    best_column,
    data_apart,
    from_throughput,
    per_step_diff,
    phase_fields,
    stage_sum,
    stated_efficiency,
    summed_phases,
    window_means,
    window_starts,
)
from playbook.readers.step_log.counter import StepCounter, label_step
from playbook.readers.step_log.duration_field import choose_duration
from playbook.readers.step_log.epochs import EpochTimes
from playbook.readers.step_log.fraction_pair import FractionPairs
from playbook.readers.step_log.key_block import KeyBlock
from playbook.readers.step_log.pending import PendingStep
from playbook.readers.step_log.repeats import carry_stamps
from playbook.readers.step_log.reruns import Reruns
from playbook.readers.step_log.running_avg import bracket_windows, column_for
from playbook.readers.step_log.running_parts import running_parts
from playbook.readers.step_log.sample_tail import Wrapped, tail_fields
from playbook.readers.step_log.smoothed import smoothed_columns, smoother
from playbook.readers.step_log.span_line import implicit_counter, timing_heading, trail_stages
from playbook.readers.step_log.spelled import join_spelled
from playbook.readers.step_log.vocab import (
    BATCH_SIZE_LINE,
    BOX_CHARS,
    BOX_ROW,
    BRACKET,
    DECIMAL,
    DIGIT,
    EPOCH_AFTER,
    EPOCH_BRACKET,
    EPOCH_PAIR,
    EPOCH_WORD,
    EVAL_MODE,
    FAIRSEQ,
    GENERIC,
    HAS_FIELD,
    IMPLICIT_HINT,
    INNER_FRACTION,
    KERAS,
    KERAS_EPOCH,
    KEYWORD,
    LEAD_STEP,
    LETTER_PAIR,
    MAX_BLOCK_LINES,
    MAX_STEP,
    MAX_TRAIL_LINES,
    NAMED_EPOCH,
    NAT,
    NEXT_FRACTION,
    PER_STEP,
    RANGE_SUFFIX,
    RATE_LINE,
    STEP_LIST,
    TIME_UNITS,
    TIMER_LINE,
    TIMER_ROW,
    TQDM,
    TQDM_EPOCH,
    TQDM_OPEN,
    UNIT_HEAD,
    VALUE_RE,
    blank_options,
    bracket_unit,
    classify,
    clock_seconds,
    continues,
    keyword_rank,
    norm_key,
    plan_line,
    step_total,
    unquote_numbers,
    value_unit,
)

DATA_SAMPLE = 20_000  # records whose stamps tell whether a file's step time leaves out its data wait (data_apart)


class StepLines:
    """The step scanner: feed(line context) for every line; result() builds the step rows of the file."""

    name = "steps"

    def __init__(self):
        self.step, self.rank, self.time, self.line = (array("q") for _ in range(4))
        self.keyword = array("b")
        self.kind = array("b")  # the counter's kind: 0 a bracket / epoch position, 1 a keyword, 2 a progress bar,
        self.loops = BarLoops()  # ... or a tqdm bar's loop (bar_loops.py)
        self.pos = array("q")  # the counter's position within its epoch, -1 unknown
        self.smoothed = None  # the printer of window means (smoothed.py: MetricLogger's, LogProcessor's), if any
        self.avg_cols: dict[str, array] = {}  # name -> the running averages printed beside its values
        self._avgs: dict[str, float] = {}  # the current line's
        self.reruns = Reruns()
        self.tables = ColumnTables()  # tables printed as text (column_table.py)
        self.pending = PendingStep()  # a bare step banner waiting for its time (pending.py)
        self.keys = KeyBlock()  # `key: value` lines held for the one-key counter line that ends them (key_block.py)
        self.wrapped = Wrapped()  # a metrics line the paste cut inside a number, joined with its rest (sample_tail.py)
        self.fields: dict[str, array] = {}
        self.field_role: dict[str, tuple] = {}
        self.markers: Counter = Counter()
        self.epoch0: dict[str, int] = {}
        self.keras_epoch: int | None = None
        self.last_step: dict[int, int] = {}
        self.span_ends: dict[int, int] = {}  # rank -> the step its last span line ended at (span_line.py)
        self.bare_counting: dict[int, bool] = {}  # rank -> its bare integers count its steps (span_line.py)
        self.last_bar: dict[int, bool] = {}  # rank -> its last record was a tqdm bar's (span_line.py)
        self.rates: dict[int, tuple[int, float]] = {}  # rank -> step rate lines since its last step line (_hold_rate)
        self.metric_lines = 0
        self.eval_lines = 0
        self.tqdm_lines = 0
        self._plans: dict[str, tuple] = {}
        self.timed = 0  # records with a field: a training step went by (events use it to merge their lines)
        self.restarts = EpochRestarts()
        self.pairs = FractionPairs()  # a keyword's `a/b` that turns out to be (epoch, count)
        # rank -> total of its open eval section's bars (None before the first), closed by training or another bar
        self.sections: dict[int, int | None] = {}
        # a counter line ending in ':' whose `key: value` fields follow indented (Composer's `[batch=12/100]:`)
        self._block: tuple | None = None
        self._block_text: list[str] = []
        self._orphan: tuple | None = None  # a counter line without fields, not stored: a box table may follow
        self._box: int | None = None
        self._box_bare = False
        self._timer: tuple[int, float] | None = None  # (record, seconds per unit) of an open timer table
        self.timer_last: tuple | None = None  # (record, names, scoped) of the last timer line (timer_line.py)
        self._trail: tuple[int, int] | None = None  # (rank, line) of the last record when it had no fields
        self.batch_size: int | None = None  # a file's `Batch size: 32` / `Namespace(batch_size=128, ...)` line
        self.epochs = EpochTimes()  # epoch times, the records of a file that times no step
        self._window = False  # the chosen duration field is a window's time (result divides its phases too)

    # -- per line ------------------------------------------------------------------------------------------
    def _counter(self, body: str) -> StepCounter | None:
        if "[" in body and (m := STEP_LIST.search(body)):  # `"step": [0, 10]`: iteration 10 of epoch 0
            if m["i"] is None:
                return None  # `"step": [0]`: epoch 0's summary
            evaluating = m["v"] is not None  # `[0, 40, 10]`: the 10th validation iteration after iteration 40
            i = int(m["i"]) if evaluating else self.restarts.step(int(m["e"]), int(m["i"]))
            return StepCounter(i, None, None, m.span(), True, evaluating)
        best = None
        for m in KEYWORD.finditer(body):
            if step_total(body, m.start()):
                continue  # `Total optimization steps = 60`, `max_steps=100`: a count of steps, not a counter
            if m["k"].lower() == "batch" and body.startswith(".", m.end("i")):
                continue  # `Batch 3.000 (3.358)`: a batch written with a point is its time (AverageMeter), no count
            rank = keyword_rank(m["k"])
            if best is None or rank < best[0]:
                best = (rank, m)
        if best is not None:
            m = best[1]
            head = body[: m.start()]
            evaluating = bool(EVAL_MODE.search(head[-40:]))
            after = body[m.end(): m.end() + 40].lstrip(" \t,")
            e = EPOCH_WORD.search(head) or EPOCH_AFTER.match(after) if m["n"] else None
            if e and best[0] >= 2 and not evaluating:
                # "Epoch 2/10 | Step 120/500", "it 1024/4096 of epoch 1": a step within its epoch, as global steps count
                c = self._within(int(e.group(1)), int(m["i"].replace(",", "")), int(m["n"]), m.span(), "keyword", False)
                c.keyword = True
                return c
            e = None if m["n"] or evaluating or best[0] < 2 else EPOCH_WORD.search(head)  # icefall `Epoch 2, batch 0`
            i = self.restarts.step(int(e.group(1)), int(m["i"].replace(",", ""))) if e else int(m["i"].replace(",", ""))
            if m["n"] and not evaluating and (pair := self.pairs.step(m["k"].lower(), i, int(m["n"]), self)) is not None:
                i = pair  # WeNet's `Batch 4/203700` then `Batch 4/203800`: epoch 4's batch (fraction_pair.py)
            return StepCounter(i, None, None, m.span(), True, evaluating)
        if (m := EPOCH_BRACKET.search(body)) and not (c := self._epoch_fraction(m, body)):
            mode = (m["m"] or "").lower()
            e = m["e"] or m["e2"]  # `Epoch: [1][50/196]`, open_clip's `Train Epoch: 0 [4096/1000000 (0%)]`
            return self._within(int(e) if e else None, int(m["i"]), int(m["n"]), m.span(), mode,
                                bool(EVAL_MODE.search(mode)) if mode else bool(EVAL_MODE.search(body[: m.start()])))
        if m and c:
            return c
        if (m := EPOCH_PAIR.search(body)):  # `Train: [1/100][29/510]`
            return self._within(int(m["e"]), int(m["i"]), int(m["n"]), m.span(), "bracket",
                                bool(EVAL_MODE.search(body[: m.start()])))
        if (m := TQDM.search(body) or TQDM_OPEN.search(body)):
            head, n = body[: m.start()], int(m["n"]) if m["n"] else None
            epoch, i = int(e["e"] or e["e2"]) if (e := TQDM_EPOCH.search(head)) else None, int(m["i"])
            self.tqdm_lines += 1
            if n is None and epoch is not None:  # no total (`3it [00:18, 5.86s/it]`): a count restarting each epoch
                epoch, i = None, self.restarts.step(epoch, i)
            c = self._progress(epoch, i, n, (m.start(), m.start() + len(m["i"]) + (1 + len(m["n"]) if n else 0)),
                               "tqdm", bool(EVAL_MODE.search(head)))
            c.kind = self.loops.kind(head, n, body[m.start():])
            return c
        if (m := NAMED_EPOCH.search(body)):
            mode = m["m"].lower()
            return self._within(int(m["e"]), int(m["i"]), int(m["n"]), m.span(), "timm",
                                bool(EVAL_MODE.search(mode)))
        if (m := FAIRSEQ.search(body)):
            return self._within(int(m["e"]), int(m["i"]), int(m["n"]), m.span(), "fairseq",
                                bool(EVAL_MODE.search(body[: m.start()])))
        if (m := KERAS.match(body)):
            return self._progress(self.keras_epoch, int(m["i"]), int(m["n"]), m.span(), "keras", False)
        for m in BRACKET.finditer(body):
            if m["w"] and m["w"].lower().startswith("epoch"):
                continue  # `[epoch=2/10]`: the epoch, not the step
            head = body[: m.start()]
            e = EPOCH_WORD.search(head)  # Composer's `[epoch=1][batch=12/100]`: a batch within its epoch
            return self._within(int(e.group(1)) if e else None, int(m["i"]), int(m["n"]), m.span(), "bracket",
                                bool(EVAL_MODE.search(head)))
        if (m := LETTER_PAIR.search(body)):
            i = self.restarts.step(int(m["e"]), int(m["i"]))
            return StepCounter(i, None, None, m.span(), True, bool(EVAL_MODE.search(body[: m.start()])))
        if (m := RANGE_SUFFIX.search(body)):
            return StepCounter(int(m["i"]), None, None, m.span(), True, bool(EVAL_MODE.search(body[: m.start()])))
        if (m := LEAD_STEP.match(body)):
            return StepCounter(int(m["i"] or m["f"]), None, None, m.span(), False, False)
        return None

    def _epoch_fraction(self, m, body: str) -> StepCounter | None:
        """`Epoch [1/30], batch: [100/8290]` (the PyTorch tutorials' `Epoch [1/5], Step [100/600]`) or `Train Epoch
        [1/20]: 50%|##| 35/70 [00:19<...]`: the bracket after `Epoch` is the epoch of E, and the position within it
        is the step or batch fraction, or the progress bar, that follows."""
        if m["e"] or m["e2"] or m["w"].lower() != "epoch":
            return None
        rest = body[m.end():]
        head = body[: m.start()]
        evaluating = bool(EVAL_MODE.search(head[-40:]))
        if (f := NEXT_FRACTION.match(rest) or INNER_FRACTION.search(rest)):
            c = self._within(int(m["i"]), int(f["i"]), int(f["n"]), (m.end() + f.start(), m.end() + f.end()),
                             "epoch fraction", evaluating)
            c.keyword = not evaluating  # a counter of its own line: timestamps between such lines time the steps
            return c
        if (t := TQDM.search(rest)):
            self.tqdm_lines += 1
            c = self._progress(int(m["i"]), int(t["i"]), int(t["n"]), (m.end() + t.start(), m.end() + t.start()
                               + len(t["i"]) + 1 + len(t["n"])), "tqdm", evaluating)
            c.kind = self.loops.kind(body[: m.end() + t.start()], int(t["n"]), rest[t.start():])
            return c
        return None

    def _progress(self, *args) -> StepCounter:
        c = self._within(*args)
        c.progress = True
        return c

    def _within(self, epoch, i, n, span, mode, evaluating) -> StepCounter:
        first = self.epoch0.setdefault(mode, epoch) if epoch is not None and not evaluating else None
        c = StepCounter(i if first is None else (epoch - first) * n + i, epoch, n, span, False, evaluating)
        c.pos = i
        return c

    def _flush(self) -> None:
        """Store the open block record (a counter line and its indented field lines), if any."""
        if self._block is None:
            return
        c, ctx, rest = self._block
        self._block = None
        text = rest + "\t" + "\t".join(self._block_text)
        self._block_text = []
        fields = self._fields(text, c)
        if fields or (c.keyword and ctx.time != NAT):
            self._store(c, ctx, fields)
            self._box = None  # its table, if any, was read with it
        elif c.keyword:  # DeepSpeed's `Profile Summary at step 10:`, its latencies lines below
            self.pending.hold(c, ctx, len(self.step))

    def _merge(self, row: int, fields: dict) -> None:
        """Fields read after a record was stored (a box table under its line) added to that record."""
        n = len(self.step)
        for name, (value, role) in fields.items():
            col = column_for(self.fields, self.field_role, name, role, n)
            if col is not None and np.isnan(col[row]):
                col[row] = value

    def _timer_row(self, m) -> None:
        """One timer row: its phase (by name) gets the row's max, in seconds, on the record above; a timer that
        spans several phases (`forward-backward`) or none is left out."""
        row, factor = self._timer
        words = set(norm_key(m["name"]).split("_"))
        if {"forward", "backward"} <= words or {"fwd", "bwd"} <= words:
            return
        role = classify(m["name"] + " time", None)
        if role is None or role[0] != "phase":
            return
        value = float(m["b"] or m["a"]) * factor
        name = f"timer {role[1]}"
        col = self.fields.get(name)
        if col is not None and len(col) > row and np.isfinite(col[row]):
            value = max(value, col[row])  # nested timers of one phase (optimizer, optimizer-inner-step): the outer
            col[row] = np.nan
        self._merge(row, {name: (value, ("phase", role[1], 1.0))})

    def feed(self, ctx) -> bool:
        body = unquote_numbers(join_spelled(ctx.body))  # `time:7 minutes 50 seconds`: one value; `"ups": "0.68"`
        body = self.wrapped.feed(body, bool(KEYWORD.search(body) or IMPLICIT_HINT.search(body)))  # sample_tail.py
        self.keys.note(body)
        if (row := self.tables.feed(body)) is not None:  # a table's header, rule or row: its record line stands in
            if not row:
                ctx.progress = True  # its words are column names (`valid_loss`), not an evaluation's message
                return True
            body = row
        boxed = BOX_ROW.match(body) is not None
        if self._box is not None:
            if boxed or self._box_bare and continues(body):
                self._merge(self._box, self._fields(BOX_CHARS.sub("  ", body), None))
                return True
            self._box = None
        if self._orphan is not None:  # a counter line without fields, then a table or indented lines holding them
            if boxed or continues(body):
                self._block = self._orphan
            self._orphan = None
        if self._block is not None:
            if (boxed or continues(body)) and len(self._block_text) < MAX_BLOCK_LINES:
                self._block_text.append(BOX_CHARS.sub("  ", body).strip() if boxed else body.strip())
                return True
            self._flush()
        if self._timer is not None:
            if (m := TIMER_ROW.match(body)):
                self._timer_row(m)
                return True
            self._timer = None
        if (m := TIMER_LINE.match(body)):  # `time (ms) | forward: 53.79 | ...`: the parts of a step (timer_line.py)
            timer_line.feed(self, body[m.end():], TIME_UNITS[m.group(1).lower()], ctx)
            return True
        if len(self.step) and body.rstrip().endswith(":") and (m := UNIT_HEAD.search(body)) and \
                not KEYWORD.search(body):
            self._timer = (len(self.step) - 1, TIME_UNITS[m.group(1).lower()])
            return True
        if not DIGIT.search(body):
            return timing_heading(self, body, ctx)  # `⏱️  Timing:` before its step's times (span_line.py)
        if (m := KERAS_EPOCH.match(body)):
            self.keras_epoch = int(m.group(1))
            return True
        self.loops.rank = ctx.rank  # each rank's bars on their own clocks (bar_loops.py)
        # a command line's options configure the run (`--eval-iters 10`, `--train-iters 500`): no step counter
        c = self._counter(blank_options(body) if "--" in body else body) or label_step(ctx)
        if c is None and (c := implicit_counter(self, body, ctx)) is not None:
            self._store(c, ctx, c.fields)
            self._trail = (ctx.rank, ctx.lineno)  # its stage times may follow, a line each (`• gen: 31.2s (50%)`)
            return True
        if "poch" in body and self._epoch_line(body, ctx, c):
            return True
        if c is None:
            if self._trail and self._trail[0] == ctx.rank and ctx.lineno - self._trail[1] <= MAX_TRAIL_LINES \
                    and self._follows(body, ctx):
                return True
            if self.pending.held and (got := self.pending.take(ctx, len(self.step), self._fields(body, None, False))):
                stored = len(self.step)
                self._store(*got)
                # the step's other timing lines follow; none join a record when _store refused the step (damage)
                self._trail = (ctx.rank, ctx.lineno) if len(self.step) > stored else None
                return True
            if RATE_LINE.search(body):
                self.metric_lines += 1  # TensorFlow's `global_step/sec: 8.7` on a line of its own
                self._hold_rate(body, ctx.rank)
                return True
            if body.lstrip().startswith("{") and HAS_FIELD.search(body):
                self.metric_lines += 1  # a metrics dict without a step (Hugging Face Trainer); kept as read
                return True
            if self.batch_size is None and (m := BATCH_SIZE_LINE.search(body)):
                self.batch_size = int(m[1])  # without time stamps, samples per second / it give the step time
            return False
        if not c.evaluating and ctx.rank in self.sections:
            c.evaluating = in_eval_section(self.sections, c, ctx.rank)
        # a bar's postfix repeats the last val_loss; only its end (Keras' last update, Lightning's 100%) is a validation
        ctx.progress = c.progress and not c.evaluating and not (c.n and c.step % c.n == 0)
        if c.evaluating:
            self.eval_lines += 1
            ctx.evaluating = True
            return True
        rest = body[: c.span[0]] + " \ue000 " + body[c.span[1]:]
        fields = self._fields(rest, c)
        if not fields and (held := self.keys.take(body)):
            fields = self._fields(held, c)  # a dict printed a key a line, the counter its last key (key_block.py)
        if not fields and rest.rstrip().endswith(":"):
            self._block = (c, ctx, rest.rstrip()[:-1])  # its fields follow on the next, indented lines
            return True
        if not fields and not (c.keyword and ctx.time != NAT):
            if c.keyword and VALUE_RE.search(rest):  # a step line of metrics only (`step = 0, loss ...`)
                self._store(c, ctx, {})
                return True
            self._orphan = (c, ctx, rest)
            if c.keyword:
                self.pending.hold(c, ctx, len(self.step))
            return c.progress
        self.smoothed = self.smoothed or smoother(body)
        self._store(c, ctx, fields)
        return True

    def _epoch_line(self, body: str, ctx, c: StepCounter | None) -> bool:
        """A line naming an epoch: remembered (before any step record, events are tied to it); without a step
        counter, the epoch's time it states (`Epoch time: 120.38 s`) is kept aside (epochs.EpochTimes)."""
        if c is not None:
            if (m := EPOCH_WORD.search(body)):
                self.epochs.current[ctx.rank] = int(m[1])
            return False
        timed = self.epochs.feed(body, ctx, self._fields(body, None, count=False))
        self.timed += timed  # an epoch of training went by: an evaluation after it is a new one
        return timed

    def _follows(self, body: str, ctx) -> bool:
        """A line without a counter after a step line without fields (DeepSpeed-Chat's `Epoch: 0 | Step: 3 | ...`
        then `End-to-End => Latency: 21.34s, ...`): when it holds a time of the step, its fields are that step's."""
        fields = trail_stages(self._fields(body, None), body)  # a stage's time, a line each (span_line.py)
        if not any(role[0] == "phase" or role[0] == "dur" and role[1] in (PER_STEP, GENERIC) for _, role in
                   fields.values()):
            return False
        self._merge(len(self.step) - 1, fields)
        self._trail = (ctx.rank, ctx.lineno)  # a run of timing lines (NeMo-RL's stage times) goes on
        return True

    def _fields(self, rest: str, c: StepCounter, count: bool = True) -> dict[str, tuple[float, tuple]]:
        """name -> (value, role) for the typed fields of `rest` (the line with its counter replaced); `count`: count
        its markers (`(optimizer.step)`) as a step line's."""
        matches = list(VALUE_RE.finditer(rest))
        segs, prev_end = [], 0
        for m in matches:
            segs.append(rest[prev_end:m.start()])
            segs.append((value_unit(m, rest) or ("\ue001" if m["clock"] else "")) + bracket_unit(m))
            prev_end = m.end()
        tail = rest[prev_end:]
        shape = "\ue002".join(segs) + "\ue002" + tail  # the line without its numbers: lines of a log repeat it
        plan = self._plans.get(shape)
        if plan is None:
            plan = plan_line(segs, tail)
            if len(self._plans) < 4096:  # bounded: a log of ever-new line shapes is parsed afresh each time
                self._plans[shape] = plan
        fields, markers = plan
        for marker in markers if count else ():
            self.markers[marker] += 1
        found: dict[str, tuple[float, tuple]] = {}
        for i, name, role, scale, group in fields:
            m = matches[i]
            if role[3:] == (DECIMAL,) and "." not in (m["num"] or ""):
                continue  # `batch 12` beside another counter: a count, not a time
            if m[group] is None and group == "avg":
                continue  # a paired key (`time (data)`) without its bracketed value on this line
            if m["clock"] and group == "num":
                value = clock_seconds(m["clock"])
            else:
                value = float(m[group].replace(",", "")) * scale
            found[name] = (value, role)
            if group == "num" and m["avg"] is not None and role[0] in ("dur", "phase") and not bracket_unit(m):
                self._avgs[name] = float(m["avg"].replace(",", "")) * scale  # `Time 22.424 (7.498)`: its average
        return tail_fields(rest, window_count.per_count(found))  # a stage held by its slowest sample

    def _hold_rate(self, body: str, rank: int) -> None:
        """A step rate on a line of its own (Pax's `steps/sec: 2.5` every 10 steps): held, as (lines, their summed
        seconds per step), for the rank's next step line that states no time of its own (`[PAX STATUS] step_i: 100`)."""
        for value, role in self._fields(body, None, False).values():
            if role[:2] == ("rate", PER_STEP) and value > 0:
                n, total = self.rates.get(rank, (0, 0.0))
                self.rates[rank] = (n + 1, total + 1.0 / value)
                return

    def _store(self, c: StepCounter, ctx, fields: dict) -> None:
        if not -MAX_STEP < c.step < MAX_STEP:
            return  # a 20-digit "step" is an id or a hash, not a step (and would not fit the int64 column)
        if not (-(2**63) <= ctx.rank < 2**63 and NAT <= ctx.time < 2**63):
            return  # damage that does not fit the int64 columns: appending part of a record would misalign them
        n = len(self.step)
        self.step.append(c.step)
        self.rank.append(ctx.rank)
        # a keyword line without a stamped prefix may date itself (Coqui's `--> TIME: 2024-03-05 10:00:13 -- STEP:`)
        self.time.append(stamp_ns(ctx.body) if ctx.time == NAT and c.keyword else ctx.time)
        self.line.append(ctx.lineno)
        self.keyword.append(1 if c.keyword else 0)
        self.kind.append(c.kind if c.kind is not None else 1 if c.keyword else 2 if c.progress else 0)
        self.pos.append(c.pos)
        if c.keyword and c.kind is None:
            self.reruns.feed(ctx.rank, c.step, self.epochs.current.get(ctx.rank), ctx.lineno, ctx.time, ctx.body)
        self.last_step[ctx.rank], self.last_bar[ctx.rank] = c.step, self.kind[-1] >= bar_loops.FIRST_KIND
        held = self.rates.pop(ctx.rank, None)
        if held and c.keyword and not any(role[0] in ("dur", "rate") for _, role in fields.values()):
            fields = {**fields, "(rate lines)": (held[0] / held[1], ("rate", PER_STEP, 1.0))}  # their mean pace
        # a record with more than a clock reading (MLPerf's `time_ms` on every line) is a training step gone by
        trains = any(not (role[0] == "dur" and value * role[2] > CLOCK_FLOOR_S) for value, role in fields.values())
        self.timed += trains
        if trains:
            self.sections.pop(ctx.rank, None)  # a training record ends the rank's evaluation section
        self._box = n
        self._trail = (ctx.rank, ctx.lineno) if not fields else None
        self._box_bare = not fields  # a record without fields may take them from the indented lines below (OLMo)
        for name, (value, role) in fields.items():
            col = column_for(self.fields, self.field_role, name, role, n)
            if col is not None and len(col) == n:
                col.append(value)
        for name, value in self._avgs.items():  # its running average beside a value (running_avg.py)
            col = column_for(self.avg_cols, {}, name, (), n) if name in fields else None
            if col is not None and len(col) == n:
                col.append(value)
        self._avgs = {}

    # -- per file ------------------------------------------------------------------------------------------
    def _column(self, name: str) -> np.ndarray:
        col = np.frombuffer(self.fields[name], dtype=np.float64) if len(self.fields[name]) else np.empty(0)
        n = len(self.step)
        if len(col) < n:
            col = np.concatenate([col, np.full(n - len(col), np.nan)])
        return col

    def result(self) -> dict:
        """The file's step rows, one per (rank, step) (the last line wins): numpy arrays "step", "rank", "line",
        "duration" (s), "start" (int64 ns UTC, NAT unknown), "tokens", "work" (the step's stated token count, else
        its input size or sequence length, else its batch size; NaN unknown), "phases" {phase: seconds}; "chosen" (the duration
        field, None when none), "how" (in words), "windowed" (window means from timestamps), "restarts" (reruns.py)."""
        self._flush()
        self._window = False
        if self.loops.codes and (keep := self.loops.keep(np.frombuffer(self.kind, np.int8),
                                                         bar_loops.timed_records(self))) is not None:
            drop_records(self, keep)  # the bars of other loops than the training's (bar_loops.py)
        n = len(self.step)
        step = np.frombuffer(self.step, dtype=np.int64) if n else np.empty(0, np.int64)
        rank = np.frombuffer(self.rank, dtype=np.int64) if n else np.empty(0, np.int64)
        time = np.frombuffer(self.time, dtype=np.int64) if n else np.empty(0, np.int64)
        line = np.frombuffer(self.line, dtype=np.int64) if n else np.empty(0, np.int64)
        out = {"chosen": None, "how": None, "n_records": n, "restarts": self.reruns.found()}
        if not n:
            return self.epochs.result(out)
        rank = adopt_untagged(step, rank)
        cols = {name: self._column(name) for name in self.fields}
        time = carry_stamps(step, rank, time, cols)  # a record's copy without a stamp: the stamp is its own
        cols.update(smoothed_columns(self.smoothed, cols, np.frombuffer(self.pos, np.int64), step, rank))
        cols.update(bracket_windows(cols, self.avg_cols, np.frombuffer(self.pos, np.int64), rank, step))
        roles = self.field_role
        kind = np.frombuffer(self.kind, dtype=np.int8)
        pos = np.frombuffer(self.pos, np.int64)
        cols, roles = running_parts(step, rank, time, cols, roles)  # totals that sum to the clock
        chosen, duration, how, self._window = choose_duration(step, rank, time, kind, cols, roles, pos)
        windowed = False
        if chosen is None:
            chosen, duration, how = stage_sum(cols, roles)
        if chosen is None:
            chosen, duration, how = from_throughput(cols, roles, None if (time != NAT).any() else self.batch_size,
                                                    step, rank)
        if chosen is None:
            kw = np.frombuffer(self.keyword, dtype=np.int8).astype(bool)
            duration, windowed = window_means(step, rank, time, kw), True
            how = "window means of timestamped step lines"
        ok = np.isfinite(duration) & (duration >= 0)
        if self.epochs.rows and ok.sum() < len(self.epochs.rows):  # no step time, or fewer than epoch times
            return self.epochs.result(out)  # (traiNNer#72: one iteration line, 11 epoch times): the epochs are the records
        # the same (rank, step) printed again (a progress bar redrawn, a repeated message): the last one counts
        idx = np.flatnonzero(ok)
        if len(idx):
            order = np.lexsort((idx, step[idx], rank[idx]))
            idx = idx[order]
            last = np.ones(len(idx), dtype=bool)
            last[:-1] = (step[idx[1:]] != step[idx[:-1]]) | (rank[idx[1:]] != rank[idx[:-1]])
            idx = np.sort(idx[last])
        phases = {}
        for phase, name in phase_fields(cols, roles, chosen).items():
            seconds = cols[name] * roles[name][2]
            if self._window:  # a window's time beside the window's stage times (fairseq2's Data Time): per step too
                seconds = per_step_diff(step, rank, seconds, cumulative=False)
            phases[phase] = seconds[idx]
        phases.update({} if self._window else summed_phases(cols, roles, idx))  # a hand-off timed in parts (columns.py)
        phases = timer_line.per_step(phases, {p for p, k in phase_fields(cols, roles, chosen).items()
                                              if k.startswith("timer ")}, idx, step, rank, duration)
        if "data" in phases and not windowed:  # a wait longer than its step, or the stamps, may show it apart
            stamped = np.full(len(idx), np.nan)
            if (time[idx] != NAT).sum() >= 4:
                m = min(n, DATA_SAMPLE)  # a file-wide question: its first records answer it, in bounded work
                kw = np.frombuffer(self.keyword, dtype=np.int8)[:m].astype(bool)
                stamped = np.concatenate([window_means(step[:m], rank[:m], time[:m], kw), np.full(n - m, np.nan)])[idx]
            if data_apart(duration[idx], phases["data"], stamped):  # the step is its compute and its wait
                duration = duration.copy()
                duration[idx] += np.nan_to_num(phases["data"])
        tokens = best_column(cols, roles, ("tokens",), idx)
        if not np.isfinite(tokens).any():
            tokens = best_column(cols, roles, ("token_rate",), idx) * duration[idx]
        work = best_column(cols, roles, ("tokens", "work", "batch"), idx)  # stated, never a rate times the duration
        if windowed:
            start = window_starts(step, rank, time, idx)  # a window mean starts where its window does
        else:  # a logged time is the end of its step
            start = time[idx].copy()
            stamped = start != NAT
            start[stamped] = start[stamped] - np.round(duration[idx][stamped] * 1e9).astype(np.int64)
        zero = int((cols[chosen] == 0).sum()) if roles.get(chosen, ("",))[0] == "rate" else 0  # under its digits
        out.update(step=step[idx], rank=rank[idx], line=line[idx], duration=duration[idx], start=start,
                   phases=phases, tokens=tokens, work=work, chosen=chosen, how=how, windowed=windowed, zero_rate=zero,
                   pos=pos[idx])  # each row's position within its epoch (-1 unknown): epoch_length.py
        if stated := stated_efficiency(cols, roles, idx):
            out["stated"] = stated
        return out
