"""Epoch times for a log that times no step (readers/step_log/grammar.py): nnU-Net's `Epoch 3` line, then `Epoch
time: 120.38 s` five lines below; DGL's `Epoch Time(s): 12.3`; MXNet's `Epoch[0] Time cost=1.494`; GluonTS's
`Epoch[0] Elapsed time 2.344 seconds`. When the file's step lines give no step time (or there are none), its epochs
are its records: one row per epoch, the epoch's number as the step."""

from __future__ import annotations

import numpy as np

from playbook.readers.step_log.columns import CLOCK_FLOOR_S, per_step_diff
from playbook.readers.step_log.vocab import AVERAGE, CUMULATIVE, EPOCH_WORD, NAT

ROWS = "(epoch time)"  # the result's "chosen" field when the epochs are the file's records
MAX_EPOCHS = 1_000_000  # epoch rows kept per file: a file of ever-new epoch numbers cannot grow memory


class EpochTimes:
    """Feed lines that mention an epoch; `result` gives the epoch rows (the grammar's result keys)."""

    def __init__(self):
        self.current: dict[int, int] = {}  # rank -> the epoch its last line named
        self.rows: dict[tuple[int, int], tuple[float, int, int]] = {}  # (rank, epoch) -> (seconds, time, line)
        self.restated: dict[tuple[int, int], int] = {}  # (rank, epoch) -> lines that changed its time
        self.stamps: dict[tuple[int, int], tuple[int, int]] = {}  # (rank, epoch) -> (time, line) of its last line
        self.since_start: set[tuple[int, int]] = set()  # (rank, epoch) whose time is a clock since the start

    def feed(self, body: str, ctx, fields: dict) -> bool:
        """Read one line holding "poch": the epoch it names (remembered for the lines below it) and the epoch's
        time, when it states one (a time field named for the epoch, or any time on a line naming the epoch).
        Whether the line gave an epoch time. `fields` is the grammar's name -> (value, role) of the line."""
        named = EPOCH_WORD.search(body)
        if named:
            self.current[ctx.rank] = int(named[1])
        epoch = self.current.get(ctx.rank)
        if epoch is None:
            return False
        if named and ctx.time != NAT and len(self.stamps) < MAX_EPOCHS:
            self.stamps[(ctx.rank, epoch)] = (ctx.time, ctx.lineno)
        for name, (value, role) in fields.items():
            if role[0] == "dur" and role[1] != AVERAGE and (named or "epoch" in name.split("_")) and \
                    0 <= value * role[2] < CLOCK_FLOOR_S:  # past it a clock (MLPerf's `time_ms`), no epoch
                key = (ctx.rank, epoch)
                if key in self.rows and self.rows[key][0] != value * role[2]:
                    self.restated[key] = self.restated.get(key, 0) + 1
                if len(self.rows) < MAX_EPOCHS:
                    self.rows[key] = (value * role[2], ctx.time, ctx.lineno)
                    if role[1] == CUMULATIVE:  # a time since the start (`Epoch #3 at 244.6s`): read apart below
                        self.since_start.add(key)
                return True
        return False

    def result(self, out: dict) -> dict:
        """`out` updated with the epoch rows (step = the epoch), or unchanged when no epoch time was read."""
        # an epoch whose time changes from line to line within it (minimind's `epoch_Time:1612.0min:` on every
        # logged step: the minutes left) times no epoch: 2 changes or more (one may be a corrected restatement)
        keys = sorted((k for k in self.rows if self.restated.get(k, 0) < 2), key=lambda k: self.rows[k][2])
        seconds = np.array([self.rows[k][0] for k in keys])
        if keys and set(keys) <= self.since_start:
            # each epoch's clock since the start less the one before it (its rank's, epoch after epoch); the first
            # epoch has no reading before it (the clock may have started before its first step) and is left out
            step, rank = (np.array([k[i] for k in keys], dtype=np.int64) for i in (1, 0))
            seconds = per_step_diff(step, rank, seconds)
            keys, seconds = [k for k, s in zip(keys, seconds, strict=True) if s > 0], seconds[seconds > 0]
        if not keys:
            return self._stamped(out)
        time = np.array([self.rows[k][1] for k in keys], dtype=np.int64)
        start = time.copy()
        stamped = time != NAT
        start[stamped] = time[stamped] - np.round(seconds[stamped] * 1e9).astype(np.int64)
        n = len(keys)
        out.update(step=np.array([k[1] for k in keys], dtype=np.int64),
                   rank=np.array([k[0] for k in keys], dtype=np.int64),
                   line=np.array([self.rows[k][2] for k in keys], dtype=np.int64), duration=seconds, start=start,
                   phases={}, tokens=np.full(n, np.nan), work=np.full(n, np.nan), chosen=ROWS,
                   how="epoch times (no step time in the file: one row per epoch)", windowed=False)
        return out

    def _stamped(self, out: dict) -> dict:
        """Epochs timed by their lines' stamps, in a file that times neither a step nor an epoch (VITS's `====>
        Epoch: 42` as each epoch ends, `Train Epoch: 45 [83%]` within it): an epoch ends with the last line naming
        it, so its time is that stamp less the previous epoch's; the file's last epoch may be unfinished and is left
        out, the first has no start. Needs three epochs, each one after the other."""
        rows = []
        for rank in sorted({r for r, _ in self.stamps}):
            mine = sorted((e, t, ln) for (r, e), (t, ln) in self.stamps.items() if r == rank)
            rows += [(rank, e, (t - t0) / 1e9, t, ln) for (e0, t0, _), (e, t, ln) in zip(mine[:-2], mine[1:-1], strict=True)
                     if e == e0 + 1 and t > t0]
        if len(rows) < 2:
            return out
        n = len(rows)
        out.update(step=np.array([r[1] for r in rows], dtype=np.int64), rank=np.array([r[0] for r in rows],
                   dtype=np.int64), line=np.array([r[4] for r in rows], dtype=np.int64),
                   duration=np.array([r[2] for r in rows]), start=np.array([r[3] - round(r[2] * 1e9) for r in rows],
                   dtype=np.int64), phases={}, tokens=np.full(n, np.nan), work=np.full(n, np.nan), chosen=ROWS,
                   how="epoch lines' time stamps (no step or epoch time in the file: one row per epoch)",
                   windowed=False)
        return out
