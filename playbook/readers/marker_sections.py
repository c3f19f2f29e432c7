"""How long an evaluation or checkpoint section of a text log lasted when its lines state no duration: the time
between its marker line and the training steps around it (readers/lines.py calls these once a log's events and
steps are read).

- `since_training`: a line that reports a save as done (`Saved checkpoint to "model/dnn-0001.params"`, `[Torch] Saved
  ...`, `successfully saved checkpoint ...`), with no line before it that opened the save, closes a save that began
  when its rank's last training step ended: MXNet's fit logs `Epoch[0] Time cost=7.821` when the epoch's batches
  are done, then `do_checkpoint` writes the params and logs the saved line (apache/mxnet#2669: 150 s later on each of
  four nodes). Only where the log times every step of the rank (or every epoch): in a logging window's log the steps
  between the last line and the save are not logged, and their time is training.
- `until_training`: a line that opens a section (`Saving checkpoint ...`, `Running evaluation`) lasts until the next
  training step of its rank starts (the next step 40 s later: a 40 s checkpoint stall). A line that reports the
  save as done is not the start of anything: it is left to `since_training`.
- `in_windows`: step times that are a window's wall time per step (a progress bar's rate, a logging window's mean
  from consecutive time stamps) count all that ran between two lines: an evaluation or checkpoint with a duration
  logged there is inside the next line's window, and becomes a phase of that line's steps (its seconds spread over
  the steps the line stands for), so the window's time is not all taken for training.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from playbook.model import schema

# a checkpoint line that reports the save done, in the words the savers print: MXNet `Saved checkpoint to "..."`,
# DeepSpeed `[Torch] Saved <path>.`, Megatron `successfully saved checkpoint from iteration N`, torchtitan `Finished
# saving the checkpoint`, Keras ModelCheckpoint `saving model to` (present tense: not this), TF `Saved checkpoint
# for step N`; a line that also says it is saving now (`Saving ...`) opens a section instead
# (`Checkpoint saving done`, `Writing checkpoint done`: the present tense with its end is done, not opening)
_END = r"(?: \w{1,40})? (?:done|complete[d]?|finished)\b"
DONE = re.compile(r"\b(?:saved|written|wrote)\b|\bfinished (?:saving|writing)\b|\b(?:saving|save|writing|write)"
                  + _END, re.IGNORECASE)
OPENS = re.compile(r"(?<!finished )(?<!done )\b(?:saving|writing|storing)\b(?!" + _END + ")", re.IGNORECASE)


def reports_done(detail: str) -> bool:
    """Whether a checkpoint line (its event detail, `line N: <text>`) reports the save as done, not begun."""
    text = detail.split(": ", 1)[-1]
    return bool(DONE.search(text)) and not OPENS.search(text)


def _step_ends(steps: pd.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per rank: (start ns, end ns) of its whole training steps, by start."""
    whole = steps[(steps["phase"] == "step") & steps["time"].notna()]
    out = {}
    for rank, g in whole.groupby("rank", sort=False):
        start = g["time"].to_numpy(dtype="datetime64[ns]").view(np.int64)
        end = start + np.nan_to_num(g["duration_s"].to_numpy(dtype=float) * 1e9).astype(np.int64)
        order = np.argsort(start, kind="stable")
        out[int(rank)] = (start[order], end[order])
    return out


def _every_step(bundle: schema.Bundle, rank: int) -> bool:
    """Whether each of the rank's step rows stands for one step or one epoch: its step numbers run on by one (no
    step ran unlogged between two of its lines), or the log's records are its epochs (a lone epoch row). A lone
    step row may be a logging window's mean (fairseq's line every 100 updates): it is not taken for one step."""
    steps = bundle.steps
    nums = np.unique(steps.loc[(steps["rank"] == rank) & (steps["phase"] == "step"), "step"].to_numpy(dtype=np.int64))
    if len(nums) < 2:
        return schema.record_unit(bundle) == "epoch"
    return bool((np.diff(nums) == 1).all())


def since_training(bundle: schema.Bundle, every_step: bool = True, previous: np.ndarray | None = None,
                   spanned: np.ndarray | None = None) -> dict[int, int]:
    """A checkpoint event without a duration whose line reports the save done lasts from the end of its rank's last
    training step before it (see the module docstring); `every_step` False (a log of windows) does nothing.
    `previous`: per event, the time (ns) of the last time-stamped line of its rank a scanner read before the event's
    line (an evaluation's last line, a step's): the save began no earlier. `spanned`: per event, whether its seconds
    are only its section's time stamps (MXNet's `Saved checkpoint to ...` then `Saved optimizer state to ...`): the
    save ran from the step's end to its last line. Returns {event row: the start (ns) it measured from}
    (after_last_step's `began_at`)."""
    ev, steps = bundle.events, bundle.steps
    starts: dict[int, int] = {}
    if not every_step or not len(ev) or not len(steps):
        return starts
    span = ev["duration_s"].notna().to_numpy() & (spanned if spanned is not None else False)
    todo = (ev["kind"] == "checkpoint") & (ev["duration_s"].isna() | span) & ev["time"].notna()
    todo &= ev["detail"].astype(str).map(reports_done)
    if not todo.any():
        return starts
    spans = _step_ends(steps)
    col = ev.columns.get_loc("duration_s")
    for i in np.flatnonzero(todo.to_numpy()):
        rank = int(ev["rank"].iloc[i])
        if rank not in spans or not _every_step(bundle, rank):
            continue
        start, end = spans[rank]
        t = ev["time"].iloc[i].value
        k = int(np.searchsorted(start, t, side="right"))  # the steps that began before the line
        if k and end[k - 1] <= t:
            began = max(end[k - 1], int(previous[i])) if previous is not None and previous[i] <= t else end[k - 1]
            last = t + (ev.iat[i, col] * 1e9 if span[i] else 0.0)  # the section's last line
            ev.iloc[i, col] = (last - began) / 1e9
            starts[int(i)] = int(began)
    return starts


def until_training(bundle: schema.Bundle) -> None:
    """An evaluation or checkpoint event without a duration of its own lasts until the next training step of its
    rank starts (`Saving checkpoint ...`, then the next step 40 s later: a 40 s checkpoint stall); a checkpoint line
    that reports the save done opens nothing."""
    ev, steps = bundle.events, bundle.steps
    todo = ev["kind"].isin(["eval", "checkpoint"]) & ev["duration_s"].isna() & ev["time"].notna()
    todo &= ~((ev["kind"] == "checkpoint") & ev["detail"].astype(str).map(reports_done))
    if not todo.any():
        return
    spans = _step_ends(steps)
    for i in np.flatnonzero(todo.to_numpy()):
        t = ev["time"].iloc[i].value
        if (span := spans.get(int(ev["rank"].iloc[i]))) is None:
            continue
        nxt = span[0]  # the rank's step starts, in order
        k = np.searchsorted(nxt, t, side="right")
        if k < len(nxt):
            ev.iloc[i, ev.columns.get_loc("duration_s")] = (nxt[k] - t) / 1e9


def in_windows(bundle: schema.Bundle) -> None:
    """An evaluation or checkpoint with a duration logged between two lines of a log of windows is a phase of the
    later line's steps (see the module docstring)."""
    ev, st = bundle.events, bundle.steps
    sec = ev[ev["kind"].isin(["eval", "checkpoint"]) & (ev["duration_s"] > 0)]
    rows = {k: [] for k in ("time", "host", "rank", "step", "phase", "duration_s", "source")}
    for rank, g in st[st["phase"] == "step"].groupby("rank", sort=False):
        lines = np.unique(g["step"].to_numpy(dtype=np.int64))
        for e in sec[sec["rank"] == rank].itertuples(index=False):
            k = int(np.searchsorted(lines, e.step, side="right"))
            if 0 < k < len(lines):  # between two lines: inside the later one's window
                for key, val in (("time", pd.NaT), ("host", g["host"].iloc[0]), ("rank", rank), ("step", lines[k]),
                                 ("phase", e.kind), ("duration_s", e.duration_s / (lines[k] - lines[k - 1])),
                                 ("source", g["source"].iloc[0])):
                    rows[key].append(val)
    if rows["step"]:
        both = pd.concat([st, pd.DataFrame(rows)], ignore_index=True)
        bundle.steps = schema.steps_frame({c: both[c].to_numpy() for c in both.columns})


def _between(ev: pd.DataFrame, rank: int, kind: str, first: int, last: int) -> bool:
    """Whether a `kind` section of `rank` has its line between the rank's first step's start and last step's end."""
    t = ev.loc[(ev["rank"] == rank) & (ev["kind"] == kind) & ev["time"].notna(), "time"]
    t = t.to_numpy(dtype="datetime64[ns]").view(np.int64)
    return bool(((t > first) & (t < last)).any())


def after_last_step(bundle: schema.Bundle, began_at: dict[int, int] | None = None) -> None:
    """An evaluation or checkpoint with a duration that begins after its rank's last timed step ended is time no
    step row holds and no gap between two rows shows (a rank's wall time ends with its last row): where each row is
    one step or one epoch (_every_step), it becomes a phase of that last step, whose time grows by it — the step's
    wall time up to the next step, as a log of windows or a wall clock would count it (MXNet's `Epoch[0] Time
    cost=7.821`, then `Saved checkpoint` 157 s later: a 165 s epoch, 157 s of it the save). Only a section that
    recurs (one of its kind also between the rank's rows) or follows a lone row: after many rows with none between
    them it is the run's end (a final test evaluation, the final save), not a stall of its steps. Sections between
    two steps are left to the gaps between their rows. `began_at`: {event row: its start}, as since_training
    measured it."""
    ev, st = bundle.events, bundle.steps
    if not len(ev) or not len(st):
        return
    sec = ev[ev["kind"].isin(["eval", "checkpoint"]) & (ev["duration_s"] > 0) & ev["time"].notna()]
    spans = _step_ends(st)
    rows = {k: [] for k in ("time", "host", "rank", "step", "phase", "duration_s", "source")}
    grow: dict[int, float] = {}
    for rank, g in sec.groupby("rank", sort=False):
        if int(rank) not in spans or not _every_step(bundle, int(rank)):
            continue
        start, end = spans[int(rank)]
        t = g["time"].to_numpy(dtype="datetime64[ns]").view(np.int64)
        # the section's own start: its line's time less its duration when the line reports it done (since_training
        # measured back from it), else its line's time
        done = g["detail"].astype(str).map(reports_done).to_numpy()
        began = np.where(done, t - (g["duration_s"].to_numpy(dtype=float) * 1e9).astype(np.int64), t)
        began = np.array([(began_at or {}).get(int(ev.index.get_loc(i)), b)
                          for i, b in zip(g.index, began, strict=True)], dtype=np.int64)
        after = began >= end.max() - 1_000_000  # (within a millisecond of the stamps' rounding)
        # one section after many rows, none of its kind between them, is the run's end (a final evaluation or save),
        # no stall its steps paid: only a section that recurs (or follows a lone epoch row) is taken
        recurs = {kind: len(start) < 2 or _between(ev, int(rank), kind, start[0], end.max()) for kind in set(g["kind"])}
        after &= g["kind"].map(recurs).to_numpy(dtype=bool)
        if not after.any():
            continue
        whole = st[(st["rank"] == rank) & (st["phase"] == "step") & st["time"].notna()]
        last = whole.index[whole["time"].to_numpy(dtype="datetime64[ns]").view(np.int64).argmax()]
        for e in g[after].itertuples(index=False):
            grow[last] = grow.get(last, 0.0) + float(e.duration_s)
            for key, val in (("time", pd.NaT), ("host", st.at[last, "host"]), ("rank", rank),
                             ("step", st.at[last, "step"]), ("phase", e.kind), ("duration_s", float(e.duration_s)),
                             ("source", st.at[last, "source"])):
                rows[key].append(val)
    if not rows["step"]:
        return
    st = st.copy()
    for i, extra in grow.items():
        st.at[i, "duration_s"] = float(st.at[i, "duration_s"]) + extra
    both = pd.concat([st, pd.DataFrame(rows)], ignore_index=True)
    bundle.steps = schema.steps_frame({c: both[c].to_numpy() for c in both.columns})
