"""Step logs: how long each training step took, per rank, from what training scripts already print or write.

Three shapes:
- CSV with a header: a step column (step, iteration, iter, global_step, ...) and a duration column (duration_s,
  step_time, iter_time, time_per_step, elapsed_ms, ..., unit from the suffix, default seconds) or a time column
  (time, timestamp, wall_time, end_time, ...; durations are the gaps between consecutive steps of a rank).
  Optional rank, tokens, host and phase columns.
- JSON Lines with the same keys.
- Text logs, line by line (torchrun's `[rank3]:` / `[default3]:` prefixes give the rank, a leading ISO or
  `[YYYY-MM-DD HH:MM:SS]` timestamp the time):
    `step 100 ... 0.512 sec/batch`                 (TensorFlow-style)
    `iteration 100/ 5000 | ... | elapsed time per iteration (ms): 1234.5 | ...`   (Megatron)
    `Iteration duration: 0.53` (s, or with ms)     (step from `iteration N` / `step N` on the line, else counted)
    `step 12 ... step_time: 0.5` / `iter_time=0.5s` / `dt 480ms`      (generic key: value)
    ` 45%|####5     | 450/1000 [02:13<02:43,  3.37it/s]` and `1.23s/it`   (tqdm / Hugging Face progress bars;
     the rate is tqdm's smoothed average, so one row per update, not an exact per-step time)
    `step: 10  loss: 9.87 ... tps: 7,410` with a timestamp and no duration on the line (torchtitan, DeepSpeed's
     `[Rank 0] step=10, ...`, most logging.info lines): the mean step time over the logging window, (time of
     this line - time of the previous logged step) / steps between them; one row per logged step
  Lines mentioning a checkpoint save, an evaluation/validation or a recompilation become events (kind
  checkpoint / eval / recompile), tied to the last step seen on that rank.

Output: the steps table (phase "step" unless a phase column says otherwise; time = step start when a timestamp
is known, else NaT) and the events table. Unreadable records are skipped and counted.
"""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from playbook import schema
from playbook.errors import InputError
from playbook.readers import generic_csv, textio

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

_EVENT_PATTERNS = (
    ("checkpoint", re.compile(r"sav(e|ing|ed)\b.{0,40}checkpoint|checkpoint.{0,40}\b(sav(e|ed|ing)|written|writ"
                              r"ing)|\bsaving model\b", re.IGNORECASE)),
    ("eval", re.compile(r"\bevaluat|\bvalidat(ion|ing)\b|\brunning eval", re.IGNORECASE)),
    ("recompile", re.compile(r"recompil", re.IGNORECASE)),
)
_RANK_PREFIX = re.compile(r"^\s*\[(?:rank|default|r)\s*(\d+)\]\s*:?\s*", re.IGNORECASE)
_TIME_PREFIX = re.compile(r"^\s*\[?\s*(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s*\]?")
# a timestamp after a short logger tag ("[titan] 2025-01-15 10:00:01,123 - root - INFO - step: 10 ...")
_TIME_TAGGED = re.compile(r"^\s*\[[\w.-]{1,20}\]\s*(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)")
_RANK_INLINE = re.compile(r"\[Rank\s+(\d+)\]")  # DeepSpeed's log_dist
_NUM = r"(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
_TF = re.compile(r"\bstep\s*[:=#]?\s*(\d+)\b.*?" + _NUM + r"\s*sec/batch", re.IGNORECASE)
_MEGATRON = re.compile(r"\biteration\s+(\d+)\s*/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*" + _NUM,
                       re.IGNORECASE)
_ITER_DURATION = re.compile(r"iteration\s+duration\s*[:=]?\s*" + _NUM + r"\s*(ms|s|sec|secs|seconds)?\b",
                            re.IGNORECASE)
_STEP_NUMBER = re.compile(r"\b(?:step|iteration|iter|global_step)\s*[:=#]?\s*(\d+)\b", re.IGNORECASE)
_KEY_DURATION = re.compile(r"\b(?:step[_ ]?time|time[_ /]?per[_ ]?step|iter(?:ation)?[_ ]?time|batch[_ ]?time|"
                           r"step[_ ]?duration|dt)\s*[:=]?\s*" + _NUM + r"\s*(ms|s|sec|secs|seconds)?\b",
                           re.IGNORECASE)
_TQDM = re.compile(r"(\d+)/(\d+)\s*\[[^\]]*?,\s*" + _NUM + r"\s*(it/s|s/it)")
_TOKENS = re.compile(r"\b(?:tokens|num_tokens|ntokens)\s*[:=]\s*(\d+)\b", re.IGNORECASE)
_EVENT_DURATION = re.compile(r"\b(?:in|took)\s+" + _NUM + r"\s*(ms|s|sec|secs|seconds)\b", re.IGNORECASE)


def _norm(name: str) -> str:
    return generic_csv.normalize(str(name))[0]


def _find(keys: list[str], wanted: tuple[str, ...]) -> str | None:
    norm = {_norm(k): k for k in keys}
    return next((norm[w] for w in wanted if w in norm), None)


def _is_table(keys: list[str]) -> bool:
    return _find(keys, STEP_KEYS) is not None and (
        _find(keys, DURATION_KEYS) is not None or _find(keys, TIME_KEYS) is not None)


def _text_hits(lines: list[str]) -> int:
    hits = 0
    for line in lines:
        body = _RANK_PREFIX.sub("", line)
        if _MEGATRON.search(body):
            hits += 2
        elif _TF.search(body) or _ITER_DURATION.search(body) or _TQDM.search(body) or (
                _KEY_DURATION.search(body) and _STEP_NUMBER.search(body)):
            hits += 1
        elif (_TIME_PREFIX.match(body) or _TIME_TAGGED.match(body)) and _STEP_NUMBER.search(body):
            hits += 1  # a timestamped line naming a step: durations from consecutive lines
    return hits


def _table_shape(first: str, head: str) -> tuple[str, Any] | None:
    """("jsonl", None) when the first line is a JSON object naming a step and a duration or time; ("csv", header)
    when the header does; None otherwise (text)."""
    if first.startswith("{"):
        try:
            obj = json.loads(first)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and _is_table(list(obj)):
            return "jsonl", None
    found = generic_csv._header(head)
    if found is not None and _is_table(found[2]):
        return "csv", found
    return None


def sniff(head: str) -> bool:
    """A CSV/JSONL whose fields name a step and a duration or time, or text with step-timing lines."""
    lines = [ln for ln in head.split("\n")[:400] if ln.strip()]
    if len(head) >= textio.HEAD_BYTES - 4 and len(lines) > 1:
        lines = lines[:-1]
    if not lines:
        return False
    return _table_shape(lines[0].strip(), head) is not None or _text_hits(lines) >= 2


def read(path: str | Path, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read a step log (CSV, JSON Lines or text) into a Bundle (steps, events)."""
    path = Path(path)
    text = textio.read_text(path)
    first = next((ln.strip() for ln in text.split("\n") if ln.strip()), None)
    if first is None:
        raise InputError(f"{path}: empty step log")
    shape = _table_shape(first, text[: textio.HEAD_BYTES])
    if shape is None:
        return _read_text(path, text, tz)
    return _read_jsonl(path, text, tz) if shape[0] == "jsonl" else _read_csv(path, text, shape[1], tz)


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


def _table_bundle(path: Path, records: pd.DataFrame, line_of: np.ndarray, skips: schema.SkipCounter,
                  tz: str) -> schema.Bundle:
    """Steps from a frame of raw records (strings or numbers) whose columns are the log's own keys."""
    src = str(path)
    keys = list(records.columns)
    step_key = _find(keys, STEP_KEYS)
    dur_key = _find(keys, DURATION_KEYS)
    time_key = _find(keys, TIME_KEYS)
    rank_key, tok_key = _find(keys, RANK_KEYS), _find(keys, TOKEN_KEYS)
    host_key, phase_key = _find(keys, HOST_KEYS), _find(keys, PHASE_KEYS)
    n = len(records)
    bad = np.zeros(n, dtype=bool)

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
    drop(~np.isfinite(step), lambda i: f"bad {step_key} {str(records[step_key].iloc[i])[:30]!r}")
    rank = numeric(rank_key) if rank_key else np.full(n, -1.0)
    rank = np.where(np.isfinite(rank), rank, -1)
    tokens = numeric(tok_key) if tok_key else np.full(n, np.nan)
    host = (records[host_key].astype(str).to_numpy() if host_key
            else np.full(n, textio.host_from_path(path), dtype=object))
    phase = records[phase_key].astype(str).to_numpy() if phase_key else np.full(n, "step", dtype=object)
    start = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    bundle = schema.Bundle(inputs=[src])
    if time_key:
        t_ns = _to_ns(records[time_key], _norm(time_key), tz)
        missing = t_ns == np.iinfo(np.int64).min
        if dur_key is None:
            drop(missing, lambda i: f"bad {time_key} {str(records[time_key].iloc[i])[:30]!r}")
    if dur_key:
        duration = numeric(dur_key) * _seconds_factor(dur_key)
        drop(~np.isfinite(duration) | (duration < 0),
             lambda i: f"bad {dur_key} {str(records[dur_key].iloc[i])[:30]!r}")
        if time_key:
            # a logged time is taken as the end of the step
            ok = ~missing
            start[ok] = t_ns[ok] - np.round(np.nan_to_num(duration[ok]) * 1e9).astype(np.int64)
    else:
        duration = np.full(n, np.nan)
        order = np.lexsort((t_ns, step, rank))
        idx = order[~bad[order]]
        same = rank[idx[1:]] == rank[idx[:-1]]
        cur, prev = idx[1:][same], idx[:-1][same]
        duration[cur] = (t_ns[cur] - t_ns[prev]) / 1e9
        start[cur] = t_ns[prev]
        drop(duration < 0, lambda i: f"{time_key} goes backwards at step {int(step[i])}")
        firsts = ~bad & np.isnan(duration)
        bad[:] |= firsts  # the first step of each rank has no previous timestamp to measure from
        bundle.warnings.append(f"{src}: step durations are the gaps between consecutive {time_key} values; "
                               f"the first step of each rank ({int(firsts.sum())}) has none and is left out")
    good = ~bad
    warning = skips.warning(rows_read=int(good.sum()))
    if warning:
        bundle.warnings.append(warning)
    times = pd.to_datetime(np.where(start[good] == np.iinfo(np.int64).min, np.datetime64("NaT"),
                                    start[good].view("datetime64[ns]")), utc=True)
    bundle.steps = schema.steps_frame({
        "time": times, "host": host[good], "rank": rank[good].astype(np.int64), "step": step[good].astype(np.int64),
        "phase": phase[good], "duration_s": duration[good], "tokens": tokens[good], "source": src,
    })
    return bundle


def _to_ns(values: pd.Series, key: str, tz: str) -> np.ndarray:
    """Times (epoch numbers, date strings, or a mix) to int64 ns UTC; INT64_MIN where unreadable."""
    nat = np.iinfo(np.int64).min
    out = np.full(len(values), nat, dtype=np.int64)
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
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
            parsed = parsed.dt.tz_localize(tz or "UTC", ambiguous="NaT", nonexistent="NaT").dt.tz_convert("UTC")
        out[rest] = pd.DatetimeIndex(parsed).as_unit("ns").asi8
    return out


def _read_csv(path: Path, text: str, found: tuple[int, str, list[str]], tz: str) -> schema.Bundle:
    skip_lines, sep, names = found
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
            obj = json.loads(s)
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


# --------------------------------------------------------------------------------------------------------------
# Text logs

def _seconds(value: str, unit: str | None, default: float = 1.0) -> float:
    v = float(value)
    if unit is None:
        return v * default
    return v * (1e-3 if unit.lower() == "ms" else 1.0)


def _read_text(path: Path, text: str, tz: str) -> schema.Bundle:
    src = str(path)
    host = textio.host_from_path(path)
    steps: list[dict] = []
    events: list[dict] = []
    last_step: dict[int, int] = {}
    tqdm_rows = 0
    tqdm_seen: dict[tuple[int, int], int] = {}
    stamped: dict[int, dict[int, pd.Timestamp]] = {}  # rank -> step -> time of a line naming it, no duration
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        rank, t = -1, None
        for _ in range(2):  # "[rank3]: [2024-...] ..." or "[2024-...] [rank3]: ..."
            if (m := _RANK_PREFIX.match(line)) and rank < 0:
                rank, line = int(m.group(1)), line[m.end():]
            if (m := _TIME_PREFIX.match(line) or _TIME_TAGGED.match(line)) and t is None:
                t, line = _parse_time(m.group(1), tz), line[m.end():]
        if rank < 0 and (m := _RANK_INLINE.search(line)):
            rank = int(m.group(1))
        step = duration = None
        tokens = np.nan
        if (m := _MEGATRON.search(line)):
            step, duration = int(m.group(1)), float(m.group(2)) / 1e3
        elif (m := _TF.search(line)):
            step, duration = int(m.group(1)), float(m.group(2))
        elif (m := _ITER_DURATION.search(line)):
            duration = _seconds(m.group(1), m.group(2))
            n = _STEP_NUMBER.search(line)
            step = int(n.group(1)) if n else last_step.get(rank, 0) + 1  # unnumbered: the next step
        elif (m := _TQDM.search(line)):
            n, rate, unit = int(m.group(1)), float(m.group(3)), m.group(4)
            if n == 0 or rate <= 0:
                continue
            step, duration = n, (1.0 / rate if unit == "it/s" else rate)
            if (rank, step) in tqdm_seen:  # the same update printed again: keep the last
                steps[tqdm_seen[(rank, step)]]["duration_s"] = duration
                continue
            tqdm_seen[(rank, step)] = len(steps)
            tqdm_rows += 1
        elif (m := _KEY_DURATION.search(line)) and (n := _STEP_NUMBER.search(line)):
            step, duration = int(n.group(1)), _seconds(m.group(1), m.group(2))
        if step is not None:
            tm = _TOKENS.search(line)
            if tm:
                tokens = float(tm.group(1))
            start = t - pd.Timedelta(seconds=duration) if t is not None else pd.NaT
            steps.append({"time": start, "host": host, "rank": rank, "step": step, "phase": "step",
                          "duration_s": duration, "tokens": tokens, "source": src})
            last_step[rank] = step
            continue
        kind = next((k for k, pattern in _EVENT_PATTERNS if pattern.search(line)), None)
        if kind is not None:
            dm = _EVENT_DURATION.search(line)
            events.append({"time": t if t is not None else pd.NaT, "host": host, "rank": rank,
                           "step": last_step.get(rank, -1), "kind": kind,
                           "duration_s": _seconds(dm.group(1), dm.group(2)) if dm else np.nan,
                           "detail": f"line {no}: {line[:200]}", "source": src})
        elif t is not None and (n := _STEP_NUMBER.search(line)):
            stamped.setdefault(rank, {}).setdefault(int(n.group(1)), t)  # the first line of a step
            last_step[rank] = int(n.group(1))
    timed = {row["rank"] for row in steps}  # ranks whose lines carry their own durations keep those
    windows, widths = _windowed({r: v for r, v in stamped.items() if r not in timed}, host, src)
    steps += windows
    if not steps and not events:
        raise InputError(f"{src}: no step timings or training events found in this text")
    bundle = schema.Bundle(inputs=[src])
    if steps:
        bundle.steps = schema.steps_frame({k: [s[k] for s in steps] for k in steps[0]})
    if events:
        bundle.events = schema.events_frame({k: [e[k] for e in events] for k in events[0]})
    if tqdm_rows:
        bundle.warnings.append(f"{src}: {tqdm_rows} step times come from progress-bar rates (tqdm's smoothed "
                               "average per update), not from exact per-step timings")
    if windows:
        every = int(np.median(widths))
        bundle.warnings.append(f"{src}: {len(windows)} step times are means over logging windows (typically "
                               f"{every} step{'s' if every != 1 else ''}), from the timestamps of consecutive log "
                               "lines; a one-step stall is spread over its window")
    return bundle


def _windowed(stamped: dict[int, dict[int, pd.Timestamp]], host: str, src: str) -> tuple[list[dict], list[int]]:
    """Step rows from timestamped log lines that name a step but give no duration: per rank, each logged step's
    duration is the mean over the window since the previous logged step (its `time`: the window's start).
    Returns (rows, the windows' widths in steps)."""
    rows, widths = [], []
    untagged = set(stamped.get(-1, {}))
    if untagged and any(len(untagged & set(v)) * 2 >= len(untagged) for r, v in stamped.items() if r >= 0):
        stamped = {r: v for r, v in stamped.items() if r >= 0}  # a second logger repeating a rank's steps
    for rank, by_step in stamped.items():
        order = sorted(by_step)
        for prev, step in pairwise(order):
            seconds = (by_step[step] - by_step[prev]).total_seconds()
            if seconds <= 0:
                continue
            rows.append({"time": by_step[prev], "host": host, "rank": rank, "step": step, "phase": "step",
                         "duration_s": seconds / (step - prev), "tokens": np.nan, "source": src})
            widths.append(step - prev)
    return rows, widths


def _parse_time(text: str, tz: str) -> pd.Timestamp | None:
    try:
        t = pd.Timestamp(text.replace(",", "."))
    except (ValueError, TypeError):
        return None
    if t is pd.NaT:
        return None
    if t.tzinfo is None:
        try:
            t = t.tz_localize(tz or "UTC")
        except Exception:  # nonexistent / ambiguous local time
            return None
    return t.tz_convert("UTC")


def table_keys() -> dict[str, tuple[str, ...]]:
    """The column names recognised in step tables, by role (for documentation and `playbook info`)."""
    return {"step": STEP_KEYS, "duration": DURATION_KEYS, "time": TIME_KEYS, "rank": RANK_KEYS,
            "tokens": TOKEN_KEYS, "host": HOST_KEYS, "phase": PHASE_KEYS}

