"""TensorBoard event files (`events.out.tfevents.*`, written by PyTorch's SummaryWriter, Lightning's and Hugging
Face's TensorBoard loggers, tensorboardX, Keras and tf.summary): the scalars a training logged, read by what their
tags mean. Every scalar carries the wall time it was written at and its step, so the training's own clock gives
the step times (the gaps between a tag's consecutive points, as in TensorBoard's CSV export); a tag that names a
step or phase time (`train/time`, `train/data_time`, `perf/step_time`) gives them outright, one that names a GPU
reading (`gpu0/utilization`, `system/gpu_0_power_watts`) becomes telemetry.

The format (tensorflow/tensorboard, compat/proto/event.proto, summary.proto, tensor.proto; TFRecord framing):
each record is a little-endian uint64 length, the masked CRC-32C of those 8 bytes, the Event, and the Event's
masked CRC-32C. The length's checksum is checked (a record whose length fails it, or one cut short, ends the
readable part: counted, never guessed past); the Event's is not (a damaged Event fails to parse and is counted).
An Event holds wall_time (field 1, double, Unix seconds), step (2, int64) and a summary (5): values with a tag (1)
and simple_value (2, float32: PyTorch's add_scalar) or a tensor (8) holding one number (TF2 summaries, new-style
scalars: float_val / double_val / int_val / int64_val / half_val or tensor_content, by its dtype). Histograms,
images, audio, text, graphs and hparams are not scalars: counted in a note, not read.
"""

from __future__ import annotations

import functools
import io
import os
import re
import struct
from array import array
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import generic_csv, headers, textio
from playbook.readers.tfrecord import fields as _fields
from playbook.readers.tfrecord import records as _records
from playbook.readers.tfrecord import signed as _signed
from playbook.readers.tfrecord import varint as _varint

FORMAT = "TensorBoard event file (events.out.tfevents.*: scalars with their wall times and steps)"

_VERSIONS = ("brain.Event:", "tensorflow.Event:")  # event.proto: "All versions start with brain.Event:"
# A tag of an evaluation split: a word of it (split at / _ . - and spaces) names one ("eval/loss", "val_acc",
# "Loss/validation", "test/accuracy"); Hugging Face's `eval/runtime` (`{split}_runtime`) is its seconds
_EVAL_WORDS = frozenset({"eval", "evaluation", "val", "valid", "validation", "test"})
_WORDS = re.compile(r"[/_.\- ]+")


def sniff(head: str) -> bool:
    """The first record is the file-version Event ("brain.Event:2", in the file's first ~30 bytes) behind a length
    whose high bytes are zero (no text log holds NULs)."""
    return "\x00\x00\x00\x00" in head[:12] and any(v in head[:96] for v in _VERSIONS)


# TensorProto dtypes (types.proto) a scalar may have: the packed field holding it and how to read its content
_DT_FLOAT, _DT_DOUBLE, _DT_INT32, _DT_STRING, _DT_INT64, _DT_HALF, _DT_BFLOAT16 = 1, 2, 3, 7, 9, 19, 14
_CONTENT = {_DT_FLOAT: "<f", _DT_DOUBLE: "<d", _DT_INT32: "<i", _DT_INT64: "<q", _DT_HALF: "<e"}


def _tensor_scalar(buf: bytes) -> float | None:
    """The one number a TensorProto holds, else None (a histogram, a text, an empty or multi-valued tensor)."""
    dtype, values, halves, content = 0, [], [], b""
    for number, wire, value in _fields(buf):
        if number == 1 and wire == 0:
            dtype = value
        elif number == 4 and wire == 2:
            content = value
        elif number == 5 and wire in (2, 5):  # float_val: packed (wire 2) or one fixed32
            values += struct.unpack(f"<{len(value) // 4}f", value)
        elif number == 6 and wire in (1, 2):  # double_val: packed or one fixed64
            values += struct.unpack(f"<{len(value) // 8}d", value)
        elif number in (7, 10) and wire in (0, 2):  # int_val, int64_val: varints
            values += [_signed(i) for i in ([value] if wire == 0 else _packed_varints(value))]
        elif number == 13 and wire in (0, 2):  # half_val: a DT_HALF's or DT_BFLOAT16's 16 bits in a varint
            halves += [value] if wire == 0 else _packed_varints(value)
    if halves:  # read by the dtype, which may stand after them
        values += [struct.unpack("<f", struct.pack("<I", (i & 0xFFFF) << 16))[0] if dtype == _DT_BFLOAT16
                   else struct.unpack("<e", struct.pack("<H", i & 0xFFFF))[0] for i in halves]
    if content and not values:
        if dtype == _DT_BFLOAT16 and len(content) == 2:
            return struct.unpack("<f", b"\x00\x00" + content)[0]
        fmt = _CONTENT.get(dtype)
        if fmt is None or len(content) != struct.calcsize(fmt):
            return None
        return float(struct.unpack(fmt, content)[0])
    return float(values[0]) if len(values) == 1 else None


def _dtype(buf: bytes) -> int:
    """A TensorProto's dtype (field 1; types.proto), 0 where it names none or does not parse."""
    try:
        return next((v for n, w, v in _fields(buf) if n == 1 and w == 0), 0)
    except (ValueError, IndexError):
        return 0


def _packed_varints(buf: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(buf):
        v, pos = _varint(buf, pos)
        out.append(v)
    return out


@dataclass
class _Series:
    """One tag's scalars in file order."""
    step: array = field(default_factory=lambda: array("q"))
    wall: array = field(default_factory=lambda: array("d"))
    value: array = field(default_factory=lambda: array("d"))
    record: array = field(default_factory=lambda: array("q"))


@dataclass
class _Scalars:
    series: dict[str, _Series] = field(default_factory=dict)
    plugins: dict[str, str] = field(default_factory=dict)  # tag -> plugin_name of its first metadata
    others: dict[str, int] = field(default_factory=dict)   # values that are no scalar, by kind
    tag_text: dict[bytes, str] = field(default_factory=dict)  # each tag's bytes decoded once
    events: int = 0

    def add(self, tag: str, step: int, wall: float, value: float, number: int) -> None:
        """One scalar point of `tag` (record `number`)."""
        s = self.series.get(tag)
        if s is None:
            s = self.series[tag] = _Series()
        s.step.append(step)
        s.wall.append(wall)
        s.value.append(value)
        s.record.append(number)


_KINDS = {3: "old-style histograms", 4: "images", 5: "histograms", 6: "audio clips"}


def _event(data: bytes, number: int, out: _Scalars) -> None:
    """Add one Event's scalars to `out`. The layout every writer uses (wall_time, step, then the summary, each
    field once, values of a tag and a simple_value) is read directly; anything else field by field."""
    if _plain_event(data, number, out):
        return
    wall, step, summary = None, 0, None
    for num, wire, value in _fields(data):
        if num == 1 and wire == 1:
            wall = struct.unpack("<d", value)[0]
        elif num == 2 and wire == 0:
            step = _signed(value)
        elif num == 5 and wire == 2:
            summary = value
        elif num in (4, 9) and wire == 2:
            out.others["graphs"] = out.others.get("graphs", 0) + 1
    out.events += 1
    if summary is None:
        return
    if wall is None or not np.isfinite(wall):
        raise ValueError("a summary without a wall time")
    for num, wire, value in _fields(summary):
        if num == 1 and wire == 2:
            _value(value, wall, step, number, out)


_WALL = struct.Struct("<d")
_FLOAT = struct.Struct("<f")


def _plain_event(data: bytes, number: int, out: _Scalars) -> bool:
    """The common layout `09 <wall> [10 <step>] 2a <summary>` whose values are all `0a <tag> 15 <float>`: added
    to `out` (True), else nothing is added (False: the field-by-field path reads it)."""
    n = len(data)
    if n < 11 or data[0] != 0x09:
        return False
    wall = _WALL.unpack_from(data, 1)[0]
    pos, step = 9, 0
    if data[pos] == 0x10:
        step, pos = _varint(data, pos + 1)
        step = _signed(step)
    if pos >= n or data[pos] != 0x2A:
        return False
    size, pos = _varint(data, pos + 1)
    if pos + size != n or wall != wall:
        return False
    values = []
    while pos < n:
        if data[pos] != 0x0A:
            return False
        size, start = _varint(data, pos + 1)
        end = start + size
        tag_len = data[start + 1] if start + 1 < end and data[start] == 0x0A else 128
        if tag_len > 127 or end != start + 2 + tag_len + 5 or end > n or data[end - 5] != 0x15:
            return False
        values.append((data[start + 2:start + 2 + tag_len], _FLOAT.unpack_from(data, end - 4)[0]))
        pos = end
    tags = out.tag_text
    for raw, value in values:
        tag = tags.get(raw)
        if tag is None:
            tag = tags[raw] = raw.decode("utf-8", "backslashreplace")  # two tags stay two
        out.add(tag, step, wall, value, number)
    out.events += 1
    return True


def _value(buf: bytes, wall: float, step: int, number: int, out: _Scalars) -> None:
    tag, scalar, kind, plugin, tensor = None, None, None, None, b""
    for num, wire, value in _fields(buf):
        if num == 1 and wire == 2:
            tag = bytes(value).decode("utf-8", "backslashreplace")
        elif num == 2 and wire == 5:
            scalar = struct.unpack("<f", value)[0]
        elif num == 8 and wire == 2:
            kind, tensor = "tensor", value
            scalar = _tensor_scalar(value)
        elif num == 9 and wire == 2:
            plugin = _plugin_name(value)
        elif num in _KINDS:
            kind = _KINDS[num]
    if tag is None:
        return
    if plugin is not None:
        out.plugins.setdefault(tag, plugin)
    # a tensor of another plugin (text, histograms), or a value holding only its plugin's metadata (the hparams
    # plugin's session summaries: torch.utils.tensorboard.summary.hparams, Lightning's log_hyperparams), is that
    # plugin's
    if (kind == "tensor" or (kind is None and scalar is None)) and out.plugins.get(tag, "scalars") != "scalars":
        kind, scalar = f"{out.plugins[tag]} summaries", None
    if scalar is None and kind == "tensor" and _dtype(tensor) == _DT_STRING:
        kind = "string tensors"  # text without the text plugin's metadata (an Estimator's eval `checkpoint_path`)
    if scalar is None:
        name = kind if kind and kind != "tensor" else "tensors that hold no single number"
        out.others[name] = out.others.get(name, 0) + 1
        return
    out.add(tag, step, wall, scalar, number)


def _plugin_name(buf: bytes) -> str | None:
    for num, wire, value in _fields(buf):
        if num == 1 and wire == 2:  # plugin_data
            for n2, w2, v2 in _fields(value):
                if n2 == 1 and w2 == 2:
                    return bytes(v2).decode("utf-8", "replace")
    return None


def _open(path: str | Path):
    """The file's bytes as a binary stream; decompressed where it is compressed (an event file gzipped to attach
    it to an issue: detection reads it decompressed, so must the reader). InputError when it cannot be opened."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - the caller closes it
        kind = textio.compression(fh.read(6))
        fh.seek(0)
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from None
    if kind is None:
        return fh
    fh.close()
    return io.BufferedReader(textio.TextStream(path, convert=False), 1 << 20)


def scalars(path: str | Path) -> tuple[dict[str, _Series], list[str], int]:
    """(tag -> its scalars, notes on what was not read, records read) of one event file."""
    src = str(path)
    out = _Scalars()
    problems: list[str] = []
    damaged: list[str] = []
    n_damaged = 0
    records = 0
    with _open(path) as fh:
        for number, data in _records(fh, src, problems):
            records = number
            try:
                _event(data, number, out)
            except (ValueError, IndexError, struct.error, OverflowError) as exc:
                n_damaged += 1
                if len(damaged) < 3:
                    damaged.append(f"record {number}: {exc}")
    notes = [f"{src}: {p}" for p in problems]
    if n_damaged:
        more = f"; +{n_damaged - len(damaged)} more" if n_damaged > len(damaged) else ""
        notes.append(f"{src}: skipped {n_damaged} of {records} records that do not parse as an Event "
                     f"({'; '.join(damaged)}{more})")
    if out.others:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(out.others.items(), key=lambda kv: -kv[1]))
        notes.append(f"{src}: not scalars, not read: {kinds}")
    return out.series, notes, records


# --------------------------------------------------------------------------------------------------------------
# Into the data model

def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read one TensorBoard event file into a Bundle: steps from the most-logged tag's points (the other tags
    logged at its steps beside them, so a tag naming a step or phase time is read as one), telemetry from the
    tags that name a GPU reading, the file's run folder as the host."""
    from playbook.readers import marker_sections, step_log

    path = Path(path)
    src = str(path)
    series, notes, records = scalars(path)
    if not series:
        raise InputError(f"{src}: a TensorBoard event file with no scalar values in its {records} records "
                         f"({'; '.join(n.split(': ', 1)[1] for n in notes) or 'nothing logged'})")
    run = host = run_name(path)
    writer = _beside(path, series, notes)
    if writer is not None:  # another process wrote this folder at the same time (DDP without a rank-0 guard)
        host = f"{run} ({writer})"
        notes.append(f"{src}: another event file in its folder was written at the same time by another process: "
                     f"this file's points are read as writer {writer} of run {run}, not merged with it")
    parts: list[schema.Bundle] = []
    gpu_tags = [t for t in series if headers.meaning(headers.series_name(t)).role in schema.TELEMETRY_METRICS]
    for tag in gpu_tags:
        parts.append(_telemetry(src, tag, series[tag], host, tz, interval_s))
    evaluation = split(path) == "eval"  # Keras' validation/ beside train/: every tag is the evaluation's
    eval_tags = [t for t in series if t not in gpu_tags and (evaluation or _is_eval(t))]
    train_tags = [t for t in series if t not in gpu_tags and t not in eval_tags]
    eval_clock = not train_tags and not evaluation  # an evaluation's tags alone: they are the clock, not events
    if eval_clock:
        train_tags = eval_tags
    if evaluation and eval_tags:
        parts.insert(0, schema.Bundle(events=_eval_events(series, eval_tags, host, src, notes)))
        notes.append(f"{src}: its folder {path.parent.name} is an evaluation split of run {host}: its scalars are "
                     "read as evaluation events, not as steps")
    if train_tags:
        records_frame, line_of = _step_records(series, train_tags, host)
        if len(records_frame) > 1 and records_frame["step"].nunique() == 1:
            # add_scalar / add_summary without a step (global_step=None): every point at one step; the clock's
            # points are then the records, numbered in their order
            notes.append(f"{src}: every point of {len(records_frame)} was logged at step "
                         f"{records_frame['step'].iloc[0]} (no step given): numbered in their order")
            records_frame["step"] = np.arange(len(records_frame), dtype=np.int64)
        skips = schema.SkipCounter(src, unit="record")
        try:
            steps = step_log._table_bundle(path, records_frame, line_of, skips, tz)
        except InputError:
            steps = None
            if not gpu_tags:
                raise
        if steps is not None:
            if _per_epoch(train_tags) and not _windowed(steps):  # the step is the epoch's number: rows are epochs
                steps.meta[schema.RECORD_UNITS] = {src: "epoch"}
            if eval_tags and not eval_clock:
                steps.events = _eval_events(series, eval_tags, host, src, notes)
                if _windowed(steps):
                    marker_sections.in_windows(steps)
            restart = _restart(path, records_frame, host)
            if restart is not None:
                steps.events = pd.concat([e for e in (steps.events, restart) if len(e)], ignore_index=True)
            parts.insert(0, steps)
    bundle = parts[0].extend_all(parts[1:]) if len(parts) > 1 else parts[0]
    bundle.inputs = [src]
    bundle.warnings[:0] = notes
    return bundle


def _windowed(bundle: schema.Bundle) -> bool:
    """Whether the clock tag was logged every few steps (Hugging Face's logging_steps, Lightning's
    log_every_n_steps): its step times are a window's means, and an evaluation timed between two of its points (its
    `runtime`) ran inside the later one's window, a phase of those steps rather than training, as in a text log's
    windows (readers/marker_sections.in_windows). Logged every step, the pause is one step's gap already."""
    steps = np.unique(bundle.steps["step"].to_numpy(dtype=np.int64))
    return len(steps) > 1 and float(np.median(np.diff(steps))) > 1


def _per_epoch(tags: list[str]) -> bool:
    """Whether the training's points are epochs: every training tag named per epoch by its first word, Keras's
    TensorBoard callback's `epoch_loss`, `epoch_accuracy` (keras/callbacks.py: "epoch_" + the metric, written once
    an epoch with the epoch as the step; `batch_` + the metric when it logs batches)."""
    words = [_WORDS.split(t.lower()) for t in tags]
    return bool(words) and all(len(w) > 1 and w[0] == "epoch" for w in words)


def run_name(path: Path) -> str:
    """TensorBoard's run: the folder holding the event file (a resumed run's files share it), the run's own where
    that folder is one split of the run (`split`); at the top of a path, the host the writer named in the file's
    name (events.out.tfevents.<time>.<host>.<pid>.<n>[.v2])."""
    if path.parent.name:
        kind, run = _split(path)
        return run if kind else path.parent.name
    m = _FILE_NAME.match(path.name)
    return m.group(1) if m else textio.host_from_path(path)


_TRAIN_WORDS = frozenset({"train", "training"})


def split(path: Path) -> str | None:
    """'train' or 'eval' when the file's folder is one split of a run whose splits are folders, else None (a run
    merely named `test`): Keras' TensorBoard callback writes <run>/train/ and <run>/validation/ (its tags alike:
    `epoch_loss` in both), tf.estimator <model_dir>/eval/ beside the training's own event files; PyTorch's
    add_scalars(main, {"train": ..., "val": ...}) one folder a key inside the run's, <run>/<main>_<key>/
    (tensorboardX <run>/<main>/<key>/), the key's series there (an evaluation split's read as its events)."""
    return _split(path)[0]


def _split(path: Path) -> tuple[str | None, str]:
    """(`split`, the run's name: the folder above the split's, or the nearest holding event files of its own)."""
    folder = Path(path).absolute().parent  # `validation/x` named from the run's folder: the run is the cwd
    name = folder.name.lower()
    exact = name in _TRAIN_WORDS or name in _EVAL_WORDS
    last = _WORDS.split(name)[-1]
    if exact:
        try:
            beside = [(p.name.lower(), p.is_dir()) for p in folder.parent.iterdir() if p.name != folder.name]
        except OSError:
            return None, folder.name
        up = folder.parent.parent  # tensorboardX's <run>/<main>/<key>/: the run two levels up
        above = any(not d and n.startswith("events.out.tfevents.") for n, d in beside)
        run = up.name if not above and up.name and _holds_events(up) else folder.parent.name
        if name in _TRAIN_WORDS:  # (where the run has event files of its own, a train key's are another series)
            keras = any(d and n in _EVAL_WORDS for n, d in beside) and not above and run == folder.parent.name
            return ("train", run) if keras else (None, folder.name)
        if any(d and n in _TRAIN_WORDS for n, d in beside) or above or run != folder.parent.name:
            return "eval", run
    elif last in _EVAL_WORDS and folder.parent.name and _holds_events(folder.parent):  # PyTorch <run>/<main>_<key>/
        return "eval", folder.parent.name
    return None, folder.name


def _holds_events(folder: Path) -> bool:
    try:
        return any(p.name.startswith("events.out.tfevents.") and p.is_file() for p in folder.iterdir())
    except OSError:
        return False


_FILE_NAME = re.compile(r"events\.out\.tfevents\.\d+\.(.+?)\.(\d+)\.\d+(?:\.v2)?$")  # host, the writer's pid


_SUFFIXED = re.compile(r"events\.out\.tfevents\.\d+\.(.+?)\.(\d+)\.\d+[._-].+$")  # + SummaryWriter's filename_suffix


def _process(name: str) -> tuple[str, str] | None:
    """The process that wrote an event file, from its name: (host, pid), a writer's filename_suffix after them
    (tensorboard's EventFileWriter: "events.out.tfevents.%010d.%s.%s.%s" % (time, host, pid, uid) + suffix); None
    where the name has no pid. A pid alone names no process: ranks on different nodes (containers above all) often
    share one."""
    m = _FILE_NAME.match(name) or _SUFFIXED.match(name)
    return (m.group(1), m.group(2)) if m else None


def _restart(path: Path, records: pd.DataFrame, host: str) -> pd.DataFrame | None:
    """A `restart` event when this file continues a run its folder's earlier event file wrote: every writer
    (SummaryWriter, tf.summary, tensorboardX) starts a new file, so a run resumed from its checkpoint is a second
    file in the run's folder, read on its own. TensorBoard reads a folder's files in name order as one run; here
    the last file before this one (by name) holding a summary counts when it ended before this one's first point (a writer running
    beside this one is none) and, where both names carry the writer's host and process id, another process wrote
    it. The time between them is the run down and starting again, as a step counter that goes back in one log is
    (step_log: the steps' accounting measures each run on its own); None otherwise."""
    try:
        earlier = sorted(p.name for p in path.parent.glob("events.out.tfevents.*") if p.name < path.name)
    except OSError:
        return None
    wall = records["wall_time"].to_numpy(dtype=np.float64)
    if not earlier or not np.isfinite(wall).any():
        return None
    first = int(np.nanargmin(wall))
    ended, before = None, earlier[-1]
    for before in reversed(earlier[-MAX_SIBLINGS:]):  # the last holding a summary (TF's `.profile-empty` holds none)
        if (ended := _span(path.parent / before)[1]) is not None:
            break
    if (theirs := _process(before)) is not None and theirs == _process(path.name):
        return None  # the same process opened another writer: no restart
    if ended is None or not ended <= wall[first]:
        return None
    step = int(records["step"].iloc[first])
    return schema.events_frame({
        "time": pd.to_datetime([round(wall[first] * 1e9)], utc=True), "host": [host], "rank": [-1],
        "step": [max(step, 0)], "kind": ["restart"], "duration_s": [wall[first] - ended],
        "detail": [f"{path.name} began {wall[first] - ended:.0f} s after {before} ended (its last record): "
                   f"the run restarted into a new event file, at step {step}"], "source": [str(path)]})


MAX_SIBLINGS = 64  # event files in one folder checked for a writer beside this one (each read once per folder)


def _beside(path: Path, series: dict[str, _Series], notes: list[str]) -> str | None:
    """The writer of this file ("host pid N", from its name) when another process wrote an event file of the same
    folder while this one was written (their spans, the first summary to the last, share over half of the shorter
    one): every DDP rank that logs opens its own file, and their points read as one series would merge (silently
    de-duplicate) different ranks' steps. None otherwise, or past MAX_SIBLINGS files (said in `notes`)."""
    mine = _process(path.name)
    walls = [np.frombuffer(s.wall, dtype=np.float64) for s in series.values()]
    walls = [w[np.isfinite(w)] for w in walls]
    walls = [w for w in walls if len(w)]
    if mine is None or not walls:
        return None
    first, last = min(float(w.min()) for w in walls), max(float(w.max()) for w in walls)
    try:
        others = sorted(p for p in path.parent.glob("events.out.tfevents.*") if p.name != path.name and p.is_file())
    except OSError:
        return None
    if len(others) > MAX_SIBLINGS:
        notes.append(f"{path}: its folder holds {len(others) + 1} event files, more than {MAX_SIBLINGS + 1}: not checked "
                     "for writers beside this one (files written at once by other processes read as one series)")
    if not others or len(others) > MAX_SIBLINGS:
        return None
    for other in others:
        their = _process(other.name)
        if their is None or their == mine:
            continue
        began, ended = _span(other)
        if began is None or ended is None:
            continue
        # writers beside each other share most of the shorter one's span; a run resumed into a new file (on another
        # host: another clock) may overlap the one before it by the clocks' skew alone
        overlap = min(last, ended) - max(first, began)
        if overlap > 0 and overlap > 0.5 * min(last - first, ended - began):
            return f"{mine[0]} pid {mine[1]}"
    return None


def _span(path: Path) -> tuple[float | None, float | None]:
    """(`_first_wall`, `_last_wall`) of an event file, read once however many of its folder's files ask: each file
    of a folder read checks its siblings, and reading every sibling to its end for each was n² reads."""
    try:
        st = os.stat(path)
    except OSError:
        return None, None
    return _span_of(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4 * MAX_SIBLINGS)
def _span_of(path: str, _mtime_ns: int, _size: int) -> tuple[float | None, float | None]:
    return _first_wall(Path(path)), _last_wall(Path(path))


def _first_wall(path: Path, most: int = 64) -> float | None:
    """The wall time of an event file's first summary within its first `most` records (None if none)."""
    try:
        with _open(path) as fh:
            for number, data in _records(fh, str(path), []):
                if number > most:
                    break
                if (wall := _summary_wall(data)) is not None:
                    return wall if np.isfinite(wall) else None
    except (OSError, InputError):
        return None
    return None


def _summary_wall(data: bytes) -> float | None:
    """The wall time of an Event that holds a summary (None for any other, or a damaged one)."""
    try:
        fields = {num: value for num, wire, value in _fields(data) if (num, wire) in ((1, 1), (5, 2))}
    except (ValueError, IndexError):
        return None
    return _WALL.unpack(fields[1])[0] if 1 in fields and 5 in fields else None


def _last_wall(path: Path) -> float | None:
    """The wall time of an event file's last readable summary (None if it holds none: a file of a graph or of
    the version record alone is no run's part)."""
    try:
        with _open(path) as fh:
            tail = deque((data for _number, data in _records(fh, str(path), [])), maxlen=64)  # framing only
    except (OSError, InputError):
        return None
    for data in reversed(tail):
        if (last := _summary_wall(data)) is not None:
            return last if np.isfinite(last) else None
    return None


def _step_records(series: dict[str, _Series], tags: list[str], host: str) -> tuple[pd.DataFrame, np.ndarray]:
    """The clock tag's points (the tag with the most distinct steps; the first logged on a tie) as records of
    step, wall time and the run as the host, with every other tag's value at the same step beside them (its last
    at that step). A tag whose name is one of those keys (a scalar called `step` or `time`) is left out, and so is
    one logged at fewer than half of the clock's points."""
    from playbook.readers import step_log

    clock = max(tags, key=lambda t: (len(set(series[t].step)), -tags.index(t)))
    base = series[clock]
    step = np.frombuffer(base.step, dtype=np.int64)
    frame = {"step": step, "wall_time": np.frombuffer(base.wall, dtype=np.float64),
             "host": np.full(len(step), host, dtype=object)}
    reserved = set(step_log.STEP_KEYS + step_log.TIME_KEYS + step_log.HOST_KEYS + step_log.RANK_KEYS +
                   step_log.PHASE_KEYS)
    for tag in [clock] + tags:
        if tag in frame or generic_csv.normalize(tag)[0] in reserved:
            continue
        s = series[tag]
        their = pd.Series(np.frombuffer(s.value, dtype=np.float64), index=np.frombuffer(s.step, dtype=np.int64))
        their = their[~their.index.duplicated(keep="last")]
        if 2 * int(np.isin(step, their.index.to_numpy()).sum()) < len(step):
            continue  # logged at under half the clock's points: no per-step figure (Hugging Face's run summary
            # `train/train_runtime`, the whole training's seconds, at the last step only, read as the step time)
        frame[tag] = their.reindex(step).to_numpy()
    return pd.DataFrame(frame), np.frombuffer(base.record, dtype=np.int64)


def _is_eval(tag: str) -> bool:
    return not _EVAL_WORDS.isdisjoint(_WORDS.split(tag.lower()))


_MAX_WALL = 9.2e9  # |Unix seconds| a timestamp in nanoseconds holds (years 1678-2261)


def _eval_events(series: dict[str, _Series], tags: list[str], host: str, src: str,
                 notes: list[str]) -> pd.DataFrame:
    """One `eval` event per step an evaluation split's tags were logged at: it ended by the earliest of their wall
    times; a `runtime` tag among them (Hugging Face's eval/runtime, seconds) gives its length and start. A point
    whose wall time is no time (NaN, inf, past a timestamp's range) is left out, counted in `notes`."""
    end: dict[int, float] = {}
    runtime: dict[int, float] = {}
    logged: dict[int, list[str]] = {}  # the tags logged at each step, in the order of `tags`
    timeless = 0
    for tag in tags:
        s = series[tag]
        timed = "runtime" in _WORDS.split(tag.lower())
        for step, wall, value in zip(s.step, s.wall, s.value, strict=True):
            if not -_MAX_WALL < wall < _MAX_WALL:
                timeless += 1
                continue
            end[step] = min(end.get(step, wall), wall)
            at = logged.setdefault(step, [])
            if not at or at[-1] != tag:
                at.append(tag)
            if timed and np.isfinite(value) and 0 <= value < schema.MAX_STEP_S:
                runtime[step] = value
    if timeless:
        notes.append(f"{src}: {timeless} evaluation values with a wall time that is no time (NaN, inf or out of "
                     "range) left out")
    steps = sorted(end)
    seconds = np.array([runtime.get(k, np.nan) for k in steps], dtype=np.float64)
    ends = np.array([end[k] for k in steps], dtype=np.float64)
    starts = ends - np.nan_to_num(seconds)
    return schema.events_frame({
        "time": pd.to_datetime(np.round(starts * 1e9).astype(np.int64), utc=True), "host": [host] * len(steps),
        "rank": [-1] * len(steps), "step": steps, "kind": ["eval"] * len(steps), "duration_s": seconds,
        "detail": [f"evaluation logged at step {k} ({', '.join(logged[k])[:120]})"
                   for k in steps],
        "source": [src] * len(steps)})


def _telemetry(src: str, tag: str, s: _Series, host: str, tz: str, interval_s: float | None) -> schema.Bundle:
    """One GPU-reading tag's points as telemetry (its name read like a column header)."""
    skips = schema.SkipCounter(src, unit="record")
    builder = generic_csv.TableBuilder(src, ["timestamp", headers.series_name(tag)], host, skips, tz)
    builder.where = "record"
    wall = np.frombuffer(s.wall, dtype=np.float64)
    values = np.frombuffer(s.value, dtype=np.float64)
    builder.add(pa.table({"c0": pa.array([repr(float(w)) for w in wall], pa.string()),
                          "c1": pa.array([repr(float(v)) for v in values], pa.string())}),
                np.frombuffer(s.record, dtype=np.int64))
    return builder.bundle(textio.check_interval(interval_s))
