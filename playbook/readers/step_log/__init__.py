"""Step logs: how long each training step took, per rank, from what training scripts already print or write.

Three shapes:
- CSV with a header: a step column (step, iteration, iter, global_step, ...) and a duration column (duration_s,
  step_time, iter_time, time_per_step, elapsed_ms, ..., unit from the suffix, default seconds) or a time column
  (time, timestamp, wall_time, end_time, ...; durations are the gaps between consecutive steps of a rank).
  Optional rank, tokens and host columns; phases from a long table's `phase` column, or from a wide table's
  per-phase time columns (`data_time`, `fwd_ms`, `allreduce_s`) named in the step grammar's vocabulary.
- JSON Lines with the same keys (a record whose `time` is a number too small for a clock, detectron2's metrics.json
  and MMCV's log.json, goes to the line grammar: there `time` is the iteration's seconds).
- Text logs are read line by line by readers/lines.py (the step grammar of readers/step_log/grammar.py, with NCCL,
  recompile and event lines in the same pass); `read` hands them there.

Output: the steps table (phase "step" unless a phase column says otherwise; time = step start when a timestamp
is known, else NaT) and the events table. Unreadable records are skipped and counted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import generic_csv, local_time, textio
from playbook.readers.step_log.columns import (
    CLOCK_FLOOR_S,
    epoch_clock,
    per_step_diff,
    phase_fields,
    rise_shares,
)
from playbook.readers.step_log.table_gaps import time_gaps
from playbook.readers.step_log.vocab import CUMULATIVE, classify, clock_seconds

FORMAT = "step log (CSV / JSONL / text)"

STEP_KEYS = ("step", "iteration", "iter", "global_step", "it", "step_idx", "step_id", "train_step", "batch_idx",
             "iteration_idx", "steps")
DURATION_KEYS = ("duration_s", "step_time_s", "step_time", "iter_time", "iter_time_s", "iteration_time",
                 "time_per_step", "time_per_iteration", "elapsed_s", "elapsed", "dt", "duration", "step_duration",
                 "batch_time", "sec_per_step", "seconds_per_step", "step_seconds", "step_time_ms", "iter_time_ms",
                 "duration_ms", "elapsed_ms", "dt_ms", "elapsed_time_per_iteration_ms", "step_ms", "latency_ms",
                 "time_ms", "step_duration_ms", "iteration_time_ms", "batch_time_ms", "duration_us", "step_time_us")
TIME_KEYS = ("time", "timestamp", "ts", "wall_time", "walltime", "end_time", "datetime", "date_time", "epoch",
             "unix_time", "time_s", "timestamp_ms", "time_ms_epoch", "start_time", "logged_at")
RANK_KEYS = ("rank", "global_rank", "process_rank", "worker", "rank_id")
TOKEN_KEYS = ("tokens", "num_tokens", "ntokens", "n_tokens", "tokens_per_step", "batch_tokens", "step_tokens",
              "tokens_in_batch")
HOST_KEYS = ("host", "hostname", "node", "node_name")
PHASE_KEYS = ("phase",)
EPOCH_KEYS = ("epoch",)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_ ./()-]{0,63}")  # a column's name as tables write them


def _norm(name: str) -> str:
    return generic_csv.normalize(str(name))[0]


def _find(keys: list[str], wanted: tuple[str, ...]) -> str | None:
    norm = {_norm(k): k for k in keys}
    return next((norm[w] for w in wanted if w in norm), None)


def _duration_key(keys: list[str]) -> tuple[str | None, float]:
    """The step-time column and its seconds per unit: a name of DURATION_KEYS (unit from its suffix), else the
    first column the step grammar's vocabulary calls a time (`elapsed_sec`, `time_taken`, `runtime`; not a
    phase such as `data_time`: vocab.classify), else (None, 1.0)."""
    key = _find(keys, DURATION_KEYS)
    if key is not None:
        return key, _seconds_factor(key)
    for k in keys:  # a header's name (a text line split at its commas is no header: `per_step_time: 412ms`)
        if _norm(k) in TIME_KEYS or not _NAME.fullmatch(str(k)):
            continue
        role = classify(str(k), None)
        if role is not None and role[0] == "dur":
            return k, role[2]
    return None, 1.0


def _record_keys(keys: list[str]) -> tuple[str | None, str | None]:
    """(step key, time key): a step column (STEP_KEYS), else an `epoch` column — then the epochs are the records
    (Ultralytics' results.csv: `epoch,time,...` once an epoch) and no time key; a time column (TIME_KEYS; `epoch`
    is one only when its values are a clock, which _table_bundle checks)."""
    step = _find(keys, STEP_KEYS)
    if step is None and (step := _find(keys, EPOCH_KEYS)) is not None:
        keys = [k for k in keys if k != step]
    return step, _find(keys, TIME_KEYS)


def _is_table(keys: list[str]) -> bool:
    step, time = _record_keys(keys)
    return step is not None and (_duration_key(keys)[0] is not None or time is not None)


def _time_is_no_clock(obj: dict) -> bool:
    """A record whose only time is a number too small for a Unix clock (detectron2's metrics.json and MMCV's
    log.json write `"time": 0.35`, the iteration's seconds): the line grammar reads such fields by their meaning."""
    keys = list(obj)
    time_key = _find(keys, TIME_KEYS)
    if _find(keys, DURATION_KEYS) is not None or time_key is None:
        return False
    value = obj[time_key]
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < CLOCK_FLOOR_S


def _table_shape(first: str, head: str) -> tuple[str, Any] | None:
    """("jsonl", None) when the first line is a JSON object naming a step and a duration or time; ("csv", header)
    when the header does; None otherwise (text)."""
    if first.startswith("{"):
        try:
            obj = textio.json_loads(first)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and _is_table(list(obj)) and not _time_is_no_clock(obj):
            return "jsonl", None
    found = generic_csv._header(head)
    if found is not None and _is_table(found[2]):
        return "csv", found
    return None


def sniff(head: str) -> bool:
    """A CSV/JSONL whose fields name a step and a duration or time (text logs go to readers/lines.py)."""
    first = next((ln.strip() for ln in head.split("\n") if ln.strip()), None)
    return first is not None and _table_shape(first, head) is not None


def read(path: str | Path, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read a step log (CSV, JSON Lines; text through readers/lines.py) into a Bundle (steps, events)."""
    path = Path(path)
    head = textio.read_head(path)
    first = next((ln.strip() for ln in head.split("\n") if ln.strip()), None)
    if first is None:
        raise InputError(f"{path}: empty step log")
    shape = _table_shape(first, head)
    if shape is None:
        from playbook.readers import lines

        try:
            return lines.scan(path, tz=tz)
        except InputError as exc:
            raise InputError(f"{path}: no step timings or training events found in this text ({exc})") from None
    notes: list[str] = []  # a truncated gzip stream, said once
    text = textio.read_text(path, warnings=notes)
    bundle = _read_jsonl(path, text, tz) if shape[0] == "jsonl" else _read_csv(path, text, shape[1], tz)
    bundle.warnings[:0] = notes
    return bundle


# --------------------------------------------------------------------------------------------------------------
# Tables (CSV, JSONL)

def _seconds_factor(key: str) -> float:
    k = _norm(key)
    if k.endswith("_ms") or k.startswith("ms_") or "_ms_" in k:
        return 1e-3
    if k.endswith("_us"):
        return 1e-6
    if k.endswith("_ns"):
        return 1e-9
    return 1.0


def _repeated_rows(records: pd.DataFrame) -> np.ndarray:
    """True for a record that repeats an earlier one exactly (as text). Rows are hashed first (pandas' per-column
    hash: a 100k x 10 table in 0.01 s, where turning it all into text took 1.1 s); only rows whose hash repeats are
    compared as text, so a hash collision drops nothing."""
    try:
        hashes = pd.Series(pd.util.hash_pandas_object(records, index=False).to_numpy())
    except TypeError:  # a cell holding a list or a dict (a JSON record's nested value): compare all as text
        return records.astype(str).duplicated(keep="first").to_numpy().copy()
    out = np.zeros(len(records), dtype=bool)
    maybe = hashes.duplicated(keep=False).to_numpy()
    if maybe.any():
        out[maybe] = records[maybe].astype(str).duplicated(keep="first").to_numpy()
    return out


def _table_bundle(path: Path, records: pd.DataFrame, line_of: np.ndarray, skips: schema.SkipCounter,
                  tz: str) -> schema.Bundle:
    """Steps from a frame of raw records (strings or numbers) whose columns are the log's own keys."""
    src = str(path)
    keys = list(records.columns)
    step_key, time_key = _record_keys(keys)
    dur_key, dur_factor = _duration_key([k for k in keys if k != step_key])
    rank_key, tok_key = _find(keys, RANK_KEYS), _find(keys, TOKEN_KEYS)
    host_key, phase_key = _find(keys, HOST_KEYS), _find(keys, PHASE_KEYS)
    n = len(records)
    bundle = schema.Bundle(inputs=[src])
    # a record written twice (two log handlers, a file concatenated to itself) is one step, not a 0 s one
    bad = _repeated_rows(records)
    if bad.any():
        bundle.warnings.append(f"{src}: {int(bad.sum())} rows repeat an earlier row exactly (first at line "
                               f"{int(line_of[np.argmax(bad)])}); each read once")

    def drop(mask: np.ndarray, why) -> None:
        new = mask & ~bad
        idx = np.flatnonzero(new)
        for i in idx[: skips.keep]:
            skips.skip(int(line_of[i]), why(int(i)))
        skips.count += max(0, len(idx) - skips.keep)
        bad[:] |= new

    def numeric(key: str) -> np.ndarray:
        return pd.to_numeric(records[key], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)

    step = numeric(step_key)
    drop(~(np.abs(step) < 2.0**62), lambda i: f"bad {step_key} {str(records[step_key].iloc[i])[:30]!r}")
    rank = numeric(rank_key) if rank_key else np.full(n, -1.0)
    rank = np.where(np.abs(rank) < 2.0**31, rank, -1)  # NaN, inf and damage: unknown
    tokens = numeric(tok_key) if tok_key else np.full(n, np.nan)
    host = (records[host_key].astype(str).to_numpy() if host_key
            else np.full(n, textio.host_from_path(path), dtype=object))
    phase = records[phase_key].astype(str).to_numpy() if phase_key else np.full(n, "step", dtype=object)
    start = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    if time_key and _norm(time_key) in EPOCH_KEYS and not epoch_clock(numeric(time_key)):
        time_key = None  # `epoch,step,loss,elapsed_s`: the epoch's number, not a Unix time
    seconds = None  # the duration column's values, in its unit
    if time_key and dur_key is None and _seconds_factor(time_key) == 1.0 and \
            len(secs := _seconds(records[time_key])) and np.isfinite(secs).mean() >= 0.5 and not epoch_clock(secs):
        # `step,loss,time` with 0.41, 0.39, ... or 0.41, 0.80, ...: numbers too small for a clock are a duration
        # (each step's, or a running total since the start: read below by their values); so is fastai's `04:39`
        dur_key, dur_factor, time_key, seconds = time_key, 1.0, None, secs
    if time_key is None and dur_key is None:  # `step,epoch,loss`: the epoch's number was its only time
        raise InputError(f"{src}: a table of {step_key} with no step time and no clock column (columns "
                         f"{', '.join(map(str, keys[:6]))}): nothing says how long a step took")
    if time_key:
        t_ns = _to_ns(records[time_key], _norm(time_key), tz)
        missing = t_ns == np.iinfo(np.int64).min
        if dur_key is None:
            drop(missing, lambda i: f"bad {time_key} {str(records[time_key].iloc[i])[:30]!r}")
    if dur_key:
        duration = (_seconds(records[dur_key]) if seconds is None else seconds) * dur_factor
        if _running_total(step, rank, duration, classify(str(dur_key), None)):
            # the time since the start (`elapsed`, a `time` that only grows), as the line grammar reads such a
            # field (duration_field.choose_duration): its differences are the steps' times
            total = duration
            duration = per_step_diff(step, rank, total)
            firsts = ~bad & np.isfinite(total) & np.isnan(duration)
            bad[:] |= firsts
            bundle.warnings.append(f"{src}: {dur_key} only rises (to {np.nanmax(total):.6g} s): a running total, "
                                   f"each step's time the difference; the first record of each rank has none "
                                   f"({int(firsts.sum())})")
        drop(~np.isfinite(duration) | (duration < 0),
             lambda i: f"bad {dur_key} {str(records[dur_key].iloc[i])[:30]!r}")
        if time_key:
            # a logged time is taken as the end of the step
            ok = ~missing
            start[ok] = t_ns[ok] - np.round(np.nan_to_num(duration[ok]) * 1e9).astype(np.int64)
    else:  # the gaps between a rank's records in time order, per step (table_gaps.py)
        gaps = time_gaps(step, rank, t_ns, ~bad)
        duration, start, step = gaps.seconds, gaps.start, gaps.step.astype(np.float64)
        firsts = ~bad & np.isnan(duration)
        bad[:] |= firsts  # the first record of each rank (and of each run after a restart) closes no window
        runs = " (and of each run after its counter went back)" if gaps.returns else ""
        bundle.warnings.append(f"{src}: step durations are the gaps between consecutive {time_key} values; "
                               f"the first record of each rank{runs} has none and is left out ({int(firsts.sum())})")
        if gaps.span > 1:
            bundle.warnings.append(f"{src}: {int((~bad).sum())} step times are means over logging windows "
                                   f"(typically {gaps.span:g} steps), from the {time_key} of consecutive records; "
                                   "a one-step stall is spread over its window")
        if gaps.returns and not gaps.restarts:
            bundle.warnings.append(f"{src}: {step_key} starts over {gaps.returns} times (a count per epoch): "
                                   "numbered on across")
        bundle.events = _restart_events(gaps.restarts, step_key, t_ns, rank, host, line_of, src)
    good = ~bad
    warning = skips.warning(rows_read=int(good.sum()))
    if warning:
        bundle.warnings.append(warning)
    rows = {"start": start[good], "host": host[good], "rank": rank[good].astype(np.int64),
            "step": step[good].astype(np.int64)}
    blocks = [{**rows, "phase": phase[good], "duration_s": duration[good], "tokens": tokens[good]}]
    # a wide table's phase columns (`data_time`, `fwd_ms`, `allreduce_s`), by the step grammar's vocabulary and its
    # rule for two columns of one phase (columns.phase_fields): one more row per step and phase
    taken = {step_key, dur_key, time_key, rank_key, tok_key, host_key, phase_key}
    roles = {} if phase_key else {k: r for k in keys if k not in taken
                                  and (r := classify(str(k), None)) is not None and r[0] == "phase"}
    seconds = {k: numeric(k)[good] * r[2] for k, r in roles.items()}
    for name, key in phase_fields(seconds, roles, dur_key).items():
        ok = np.isfinite(seconds[key]) & (seconds[key] >= 0)
        blocks.append({**{c: v[ok] for c, v in rows.items()}, "phase": np.full(int(ok.sum()), name, dtype=object),
                       "duration_s": seconds[key][ok], "tokens": np.full(int(ok.sum()), np.nan)})
    data = {c: np.concatenate([blk[c] for blk in blocks]) for c in blocks[0]}
    start_ns = data.pop("start")
    data["time"] = pd.to_datetime(np.where(start_ns == np.iinfo(np.int64).min, np.datetime64("NaT"),
                                           start_ns.view("datetime64[ns]")), utc=True)
    bundle.steps = schema.steps_frame({**data, "work": np.where(data["phase"] == "step", data["tokens"], np.nan),
                                       "source": src})
    if _norm(step_key) in EPOCH_KEYS:  # no step column: the records are the epochs
        bundle.meta[schema.RECORD_UNITS] = {src: "epoch"}
    return bundle


def _restart_events(restarts: list, step_key: str, t_ns: np.ndarray, rank: np.ndarray, host: np.ndarray,
                    line_of: np.ndarray, src: str) -> pd.DataFrame:
    """A `restart` event per counter return table_gaps read as a restart (an empty table without any); its duration
    is the time since the record before it (the run down and starting again, with its first steps)."""
    if not restarts:
        return schema.events_frame()
    i = np.array([r[0] for r in restarts])
    return schema.events_frame({
        "time": pd.to_datetime(t_ns[i].view("datetime64[ns]"), utc=True), "host": host[i],
        "rank": rank[i].astype(np.int64), "step": [r[3] for r in restarts], "kind": "restart",
        "duration_s": [r[4] for r in restarts], "source": src,
        "detail": [f"line {int(line_of[j])}: {step_key} went back from {before} to {logged} after {gap:.0f} s (the "
                   f"run restarted into this log; its steps numbered on from {numbered})"
                   for j, (_, before, logged, numbered, gap) in zip(i, restarts, strict=True)]})


_CLOCK_TEXT = re.compile(r"(?:\d{1,5} days?, )?\d{1,3}(?::\d{2}){1,2}(?:\.\d+)?")  # fullmatch, stripped


def _clock_text(values: pd.Series) -> np.ndarray | None:
    """Seconds of a column written as clock-form durations (fastai's epoch `time` `04:39`, `1:17:42`, `1 day,
    0:02:55`: vocab.clock_seconds), NaN where a value is not one; None unless most values are (4 in 5)."""
    if values.dtype.kind in "biuf":  # numbers: no `:` in their text
        return None
    text = values.astype(str).str.strip()
    form = text.str.fullmatch(_CLOCK_TEXT)
    if not len(text) or form.mean() < 0.8:
        return None
    return np.array([clock_seconds(v) if ok else np.nan for v, ok in zip(text, form, strict=True)], dtype=np.float64)


def _seconds(values: pd.Series) -> np.ndarray:
    """A column's numbers, or the seconds of its clock-form durations (`04:39`: _clock_text); NaN elsewhere."""
    clock = _clock_text(values)
    if clock is not None:
        return clock
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def _running_total(step: np.ndarray, rank: np.ndarray, values: np.ndarray, role) -> bool:
    """Whether a duration column is the time since the start: never falling (columns.monotone: at most one drop in
    20, a resume) and either named so in the step grammar's vocabulary (`elapsed`, class CUMULATIVE) or, named
    plainly (`time`, `time_seconds`), rising on most rows and spanning half its largest value: a step's own time
    that jitters falls on about half the rows, and one that only creeps does not double."""
    pairs, held, up = rise_shares(step, rank, values)
    if pairs < 3 or held < 0.95:  # columns.monotone
        return False
    if role is not None and role[1] == CUMULATIVE:
        return True
    v = values[np.isfinite(values)]
    return bool(up >= 0.5 and np.ptp(v) >= 0.5 * np.max(v) > 0)


def _to_ns(values: pd.Series, key: str, tz: str) -> np.ndarray:
    """Times (epoch numbers, date strings, or a mix) to int64 ns UTC; INT64_MIN where unreadable."""
    nat = np.iinfo(np.int64).min
    out = np.full(len(values), nat, dtype=np.int64)
    try:
        numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    except OverflowError:  # a JSON integer past a float's range (pandas does not coerce it): that value no time
        numbers = np.array([float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e300
                            else np.nan for v in values], dtype=np.float64)
    is_num = np.isfinite(numbers)
    if is_num.any():
        unit = next((u for u in ("ns", "us", "ms", "s") if key.endswith("_" + u)), None)
        ns, ok = textio.epoch_to_ns(numbers[is_num], unit)
        out[is_num] = np.where(ok, ns, nat)
    rest = ~is_num & values.notna().to_numpy()
    if rest.any():
        texts = values[rest].astype(str)
        try:
            parsed = pd.to_datetime(texts, errors="coerce", format="mixed")
        except (ValueError, TypeError):
            parsed = pd.to_datetime(texts, errors="coerce", format="mixed", utc=True)
        if isinstance(parsed.dtype, pd.DatetimeTZDtype):
            parsed = parsed.dt.tz_convert("UTC")
        else:
            parsed = local_time.localize(parsed, tz)
        out[rest] = textio.datetime_ns(parsed)
    return out


def _read_csv(path: Path, text: str, found: tuple[int, str, list[str]], tz: str) -> schema.Bundle:
    skip_lines, sep, names = found
    generic_csv.check_width(str(path), len(names), skip_lines + 1)
    skips = schema.SkipCounter(str(path))
    table, line_of = generic_csv._parse(text.encode("utf-8"), sep, names, skip_lines, skips, str(path))
    records = pd.DataFrame({name: table.column(i).to_pandas() for i, name in enumerate(names)})
    return _table_bundle(path, records, line_of, skips, tz)


def _read_jsonl(path: Path, text: str, tz: str) -> schema.Bundle:
    skips = schema.SkipCounter(str(path))
    rows: list[dict] = []
    line_of: list[int] = []
    for no, line in enumerate(text.split("\n"), start=1):
        s = line.strip()
        if not s:
            continue
        try:
            obj = textio.json_loads(s)
        except ValueError:
            skips.skip(no, f"not JSON {s[:50]!r}")
            continue
        if not isinstance(obj, dict):
            skips.skip(no, f"not a JSON object {s[:50]!r}")
            continue
        rows.append({k: v for k, v in obj.items() if not isinstance(v, (dict, list))})
        line_of.append(no)
    if not rows:
        raise InputError(f"{path}: no JSON records with a step")
    records = pd.DataFrame(rows)
    keep = [c for c in records.columns]
    if _find(keep, STEP_KEYS) is None:
        raise InputError(f"{path}: JSON records without a step key")
    return _table_bundle(path, records, np.asarray(line_of), skips, tz)
