"""Telemetry held in JSON or XML documents, read by the meaning of their keys (playbook.readers.headers), the
same way as a CSV header: `gpustat --json` (one document per poll, GPUs in a `gpus` list), W&B system-metric
events (JSON lines with `system.gpu.N.*` keys, one key per GPU), JSON arrays / JSON lines of flat records,
`nvtop --snapshot` / `--loop` (one array per poll, an object per GPU, readings as "96%", "388W", memory in bytes),
and `nvidia-smi -q -x` XML (one `<nvidia_smi_log>` per poll with `-l`; a `<gpu>` element per GPU).

A document is flattened into records: nested objects become dotted keys ("utilization.gpu_util"), a list of
objects (gpustat's `gpus`, the XML `<gpu>` elements) becomes one record per item carrying the document's own
fields (its time, its host name), and an item without a GPU-index key gets its position as `index`. An item that
is one named series held as arrays (CloudWatch `get-metric-data`: Label + Timestamps + Values; Graphite's target +
datapoints; Datadog's metric/scope + pointlist; VictoriaMetrics' `/api/v1/export` lines: a Prometheus label set
`metric` + values + timestamps) becomes a record per point keyed by the series' name. A top-level array is either
records (rows, series) or, when its objects carry neither a time nor a GPU key, one poll of GPUs in order.
Documents stream one at a time; one that does not parse, or an item that is not an object, is skipped and
counted.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow as pa

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import headers, textio
from playbook.readers.generic_csv import TableBuilder
from playbook.readers.long_csv import NAME_COLUMNS, VALUE_COLUMNS

FORMAT = "telemetry JSON / XML documents (gpustat --json, W&B system metrics, nvidia-smi -q -x)"

BLOCK_RECORDS = 20_000  # records converted per block (bounds the transient Python objects)
MAX_DOCUMENT_BYTES = 256 << 20  # one JSON document bigger than this is not a poll: refused
MAX_DEPTH = 24  # nesting followed when flattening; deeper parts of a record are ignored
_KEY = re.compile(r'"([^"\\]{1,80})"\s*:')  # bounded repeat: linear
_XML_START = re.compile(r"^\s*(<\?xml[^>]{0,200}\?>\s*)?(<!DOCTYPE[^>]{0,400}>\s*)?<nvidia_smi_log\b")


def sniff(head: str) -> bool:
    """An nvidia-smi XML log, or JSON whose keys name GPU metrics and a time, GPU or per-GPU column."""
    if _XML_START.match(head[:2048]):
        return True
    if not textio.looks_like_json(head):
        return False
    keys = list(dict.fromkeys(_KEY.findall(head[:1 << 16])))
    if not keys or '"traceEvents"' in head[:4096]:
        return False
    try:
        first, _end = textio.JSON_DECODER.raw_decode(head.lstrip())
    except (ValueError, RecursionError):
        first = _head_items(head.lstrip())  # an array longer than the head: its first whole items
    if isinstance(first, (dict, list)):
        recs = _records(first, {}, 0) if isinstance(first, dict) else _array_records(first[:8])
        keys = list(dict.fromkeys(k for r in recs[:50] for k in r))
    return headers.is_telemetry(keys)


def _head_items(text: str, most: int = 8) -> list | None:
    """The first whole items (at most `most`) of a top-level JSON array cut by the head; None when `text` does
    not open an array or its first item is cut too."""
    if not text.startswith("["):
        return None
    items, pos = [], 1
    while len(items) < most:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            item, pos = textio.raw_decode_at(text, pos, textio.JSON_DECODER)
        except (ValueError, RecursionError):
            break
        items.append(item)
    return items or None


def read(path: str | Path, interval_s: float | None = None, tz: str = "UTC", **_opts) -> schema.Bundle:
    """Read a JSON / XML telemetry document stream into a Bundle (telemetry)."""
    path = Path(path)
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    skips = schema.SkipCounter(src)
    with textio.open_text(path) as stream:
        first = stream.read(4096)
        stream._pending = first + stream._pending  # noqa: SLF001 - push the peeked bytes back
        docs = _xml_records(stream, skips) if _XML_START.match(textio.decode(first)) else _json_records(stream, skips)
        builder = _build(docs, src, textio.host_from_path(path), skips, tz)
    if builder is None:
        raise InputError(f"{src}: no GPU records in the document{'s' if skips.count != 1 else ''}"
                         + (f" ({skips.reasons[0]})" if skips.reasons else ""))
    bundle = builder.bundle(interval_s)
    bundle.warnings[:0] = stream.notes
    return bundle


def read_lines(path: str | Path, records, what: str, interval_s: float | None = None,
               tz: str = "UTC") -> schema.Bundle:
    """Read a line-oriented text format whose `records(lines, skips)` yields (line number, flat record) (the
    gpustat and nvidia-smi -q text readers) into a Bundle, records read by their keys' meaning like a document's.
    `what` names the records for the error when there are none."""
    import io

    path = Path(path)
    src = str(path)
    interval_s = textio.check_interval(interval_s)
    skips = schema.SkipCounter(src)
    with textio.open_text(path) as stream:
        builder = _build(records(io.BufferedReader(stream), skips), src, textio.host_from_path(path), skips, tz)
        notes = stream.notes
    if builder is None:
        raise InputError(f"{src}: no {what}")
    bundle = builder.bundle(interval_s)
    bundle.warnings[:0] = notes
    return bundle


def _build(docs, src: str, host: str, skips: schema.SkipCounter, tz: str) -> TableBuilder | None:
    builder: TableBuilder | None = None
    block: list[dict] = []
    numbers: list[int] = []

    def flush() -> None:
        nonlocal builder
        if not block:
            return
        _coalesce_points(block, numbers)
        if builder is None:
            names = list(dict.fromkeys(k for r in block for k in r))
            builder = TableBuilder(src, names, host, skips, tz)
            builder.where = "record"
            if not builder.metrics:
                raise InputError(f"{src}: no GPU metric among the keys {', '.join(names[:8])}")
        cols = {f"c{i}": pa.array([_text(r.get(n)) for r in block], pa.string())
                for i, n in enumerate(builder.names)}
        import numpy as np

        builder.add(pa.table(cols), np.asarray(numbers, dtype=np.int64))
        block.clear()
        numbers.clear()

    for number, record in docs:
        block.append(record)
        numbers.append(number)
        if len(block) >= BLOCK_RECORDS:
            flush()
    flush()
    return builder


# an ISO time's fraction of a second (bounded repeats: linear)
_SUBSECOND = re.compile(r"^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2})[.,]\d{1,9}(?=Z|[+-]\d{2}:?\d{2}$|$)")


def _coalesce_points(block: list[dict], numbers: list[int]) -> None:
    """Points of several series at one time (records {"time": t, <series>: v}, with the fields their document
    gives every point: VictoriaMetrics' or CloudWatch's series of several metrics, Cloud Monitoring's
    timeSeries) become one record in place, as the row of a wide table, so the GPU's metrics at that time are one
    sample, not rows repeating its timestamp. Two records merge when every field they share (but the time) is
    equal and the later adds a field; an ISO time is taken to the second (one collector's poll stamps its series
    microseconds apart) and the first record's time is kept. Within the block (bounded memory); points with the
    same series name at one time stay apart (a repeat, merged later with a warning)."""
    at: dict = {}
    keep = []
    for i, r in enumerate(block):
        t = r.get("time")
        if t is None or isinstance(t, (dict, list)):
            keep.append(i)
            continue
        key = _SUBSECOND.sub(r"\1", t) if isinstance(t, str) else t
        first = at.get(key)
        into = block[first] if first is not None else None
        if into is None or r.keys() <= into.keys() or any(
                into[k] != v for k, v in r.items() if k != "time" and k in into):
            at[key] = i
            keep.append(i)
            continue
        into.update((k, v) for k, v in r.items() if k != "time")
    if len(keep) < len(block):
        block[:] = [block[i] for i in keep]
        numbers[:] = [numbers[i] for i in keep]


def _text(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _records(obj: dict, inherited: dict, depth: int) -> list[dict]:
    """Flat records from one JSON object: its scalars (nested objects as dotted keys) plus, per item of a list
    of objects, one record with the item's fields (see the module docstring)."""
    points = _series_points(obj) if depth == 0 else None
    if points is not None:  # a document that is one named series (Graphite's render answer: a list of them)
        return [{**inherited, **p} for p in points]
    if depth == 0:
        named = _named_value(obj)
        if named is not None:  # one point of the long layout (Comet's get_metrics: metricName + metricValue)
            return [{**inherited, **named}] if named else []
        points = _keyed_series(obj, "", 0)
        if points:  # series named by their keys (ClearML's {title: {series: {"x": [...], "y": [...]}}})
            return [{**inherited, **p} for p in points]
    scalars: dict = {}
    lists: list[list] = []
    _flatten(obj, "", scalars, lists, depth)
    base = {**inherited, **scalars}
    if not lists:
        return [base]
    out = []
    for items in lists:
        records = []
        for pos, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            points = _series_points(item)
            if points is not None:  # one named series: a record per point, the series' name as its key
                records.extend({**base, **p} for p in points)
                continue
            flat: dict = {}
            devices: list[list] = []  # the item's objects keyed by device number (neuron-monitor's cores)
            _flatten(item, "", flat, None, depth + 1, devices)
            if not any(headers.meaning(k).role == "gpu" for k in flat):
                flat = {"index": pos, **flat}
            for device in (d for group in devices for d in group):
                inner: dict = {}
                _flatten(device, "", inner, None, depth + 2)
                records.append({**base, **flat, **inner})
            if not devices:
                records.append({**base, **flat})
        if records and headers.is_telemetry(list(records[0])):
            out.extend(records)
    return out or [base]


SERIES_NAMES = ("Label", "label", "metric", "name", "key", "series", "target", "legend")  # what names a series
SERIES_TIMES = ("Timestamps", "timestamps", "times", "time", "x")
SERIES_VALUES = ("Values", "values", "data", "y")
SERIES_PAIRS = ("datapoints", "pointlist", "points", "values")  # Graphite [[v, t]], Datadog [[t, v]], ...


def _series_points(item: dict) -> list[dict] | None:
    """The points of a named time series held as arrays (CloudWatch `get-metric-data`: Label + Timestamps +
    Values; Graphite render: target + datapoints [[value, time]]; Datadog: metric/scope + pointlist [[time,
    value]]; VictoriaMetrics export: metric {__name__, labels} + values + timestamps) as records {"time": t,
    <series name>: v}; None when `item` is not one. Of a pair, the time is the member that looks like an epoch
    (> 1e8 s, the other way round when both do) or a date string."""
    name = next((item[k] for k in SERIES_NAMES if isinstance(item.get(k), str) and item[k]), None)
    if name is None:
        name = _label_set_name(item.get("metric"))
    if name is None:
        return None
    objects = next((item[k] for k in SERIES_OBJECTS if isinstance(item.get(k), list) and item[k]
                    and isinstance(item[k][0], dict)), None)
    if objects is not None:  # CloudWatch get-metric-statistics' Datapoints, Cloud Monitoring's points
        return [p for p in (_object_point(x, name) for x in objects) if p is not None] or None
    if isinstance(item.get("scope"), str) and item["scope"] not in ("", "*"):
        name = f"{name} {item['scope'].replace(':', '=')}"  # Datadog's scope "gpu:0,host:n1" -> labels
    times = next((item[k] for k in SERIES_TIMES if isinstance(item.get(k), list)), None)
    values = next((item[k] for k in SERIES_VALUES if isinstance(item.get(k), list) and item[k] is not times), None)
    if times is not None and values is not None and len(times) == len(values) and times:
        return [{"time": t, name: v} for t, v in zip(times, values, strict=True)]
    pairs = next((item[k] for k in SERIES_PAIRS if isinstance(item.get(k), list) and item[k]), None)
    if pairs is None or not all(isinstance(p, list) and len(p) == 2 for p in pairs[:8]):
        return None

    def epochish(x) -> bool:
        return isinstance(x, str) or (isinstance(x, (int, float)) and abs(x) > 1e8)

    first = pairs[0]
    swap = epochish(first[1]) and not epochish(first[0])  # Graphite: [value, time]
    return [{"time": p[1] if swap else p[0], name: p[0] if swap else p[1]} for p in pairs
            if isinstance(p, list) and len(p) == 2]


def _named_value(obj: dict) -> dict | None:
    """A record of the long layout, a series' name field beside its value field (the column pairs the long CSV
    reader takes, readers.long_csv: Comet's `metricName` + `metricValue`, `key` + `value`), as {its other scalar
    fields, <series name>: value}; {} for a point of a series that is no GPU metric (a loss, the host's CPU);
    None when `obj` is not one."""
    words = {k: set(headers.tokens(k)) for k in obj if isinstance(k, str)}
    names = [k for k, w in words.items() if w in NAME_COLUMNS and isinstance(obj[k], str) and obj[k]]
    value = next((k for k, w in words.items() if w in VALUE_COLUMNS and isinstance(obj[k], (int, float, str))
                  and not isinstance(obj[k], bool)), None)
    if not names or value is None:
        return None
    # of two name fields, the one naming a GPU metric (InfluxDB's `_field` beside telegraf's tag `name`, the product)
    name = next((k for k in names if _is_metric(headers.series_name(obj[k]))), names[0])
    series = headers.series_name(obj[name])
    if not _is_metric(series):
        # a wide record that only happens to hold a name and a value field reads its GPU metrics from their own fields
        return None if any(_is_metric(k) for k in obj if k not in (name, value)) else {}
    rest = {k: v for k, v in obj.items() if k not in (name, value) and not isinstance(v, (dict, list))}
    times = sorted((headers.meaning(k).rank, k) for k, v in rest.items() if v is not None
                   and headers.meaning(k).role == "time")
    if times:  # as "time": the points of one poll become one row (_coalesce_points)
        rest["time"] = rest.pop(times[0][1])
    return {**rest, series: obj[value]}


def _is_metric(series: str) -> bool:
    """Whether a series' name means a GPU metric (a series' values are readings, never a time, host or GPU id)."""
    return headers.meaning(series).role in schema.TELEMETRY_METRICS


def _keyed_series(obj: dict, prefix: str, depth: int) -> list[dict]:
    """The points of the series in `obj` held as parallel time / value arrays without a name field, each named
    by its path of keys ("title/series"), as records {"time": t, <path>: v} (ClearML's
    `get_reported_scalars(x_axis="timestamp")`); [] when there are none."""
    out: list[dict] = []
    for key, value in obj.items():
        if not isinstance(value, dict) or depth >= MAX_DEPTH:
            continue
        path = f"{prefix}/{key}" if prefix else str(key)
        times = next((value[k] for k in SERIES_TIMES if isinstance(value.get(k), list)), None)
        values = next((value[k] for k in SERIES_VALUES if isinstance(value.get(k), list) and value[k] is not times),
                      None)
        if times is not None and values is not None and len(times) == len(values):
            name = headers.series_name(path)
            if _is_metric(name):
                out.extend({"time": t, name: v} for t, v in zip(times, values, strict=True))
        else:
            out.extend(_keyed_series(value, path, depth + 1))
    return out


def _label_set_name(labels) -> str | None:
    """A Prometheus label set with its `__name__` as the series' name text, `name{label="value", ...}` (the form
    headers.meaning reads a labelled series in); Cloud Monitoring's metric descriptor {"type": name, "labels":
    {...}} the same way; None when `labels` is neither."""
    if not isinstance(labels, dict):
        return None
    if isinstance(labels.get("type"), str) and labels["type"] and isinstance(labels.get("labels", {}), dict):
        labels = {"__name__": labels["type"], **labels.get("labels", {})}
    if not isinstance(labels.get("__name__"), str) or not labels["__name__"]:
        return None
    rest = ", ".join(f'{k}="{v}"' for k, v in labels.items() if k != "__name__" and isinstance(v, (str, int, float)))
    return f"{labels['__name__']}{{{rest}}}" if rest else labels["__name__"]


SERIES_OBJECTS = ("Datapoints", "datapoints", "points")  # a series' points as objects
# a point object's level, first found: CloudWatch's statistics (a mean before an extreme; Sum and SampleCount are
# not levels), Cloud Monitoring's typed value (`value.doubleValue`, `value.int64Value` as a JSON string)
POINT_LEVELS = ("average", "mean", "value", "doublevalue", "int64value", "maximum", "max", "minimum", "min")


def _object_point(point: dict, name: str) -> dict | None:
    """{"time": t, name: v} of one point object, None without a time or a level. The time: a key meaning a time,
    an interval's end before its start (a gauge's reading is at its end time); the level: POINT_LEVELS."""
    flat: dict = {}
    _flatten(point, "", flat, None, MAX_DEPTH - 2)
    times = [k for k in flat if headers.meaning(k).role == "time" or k.lower().endswith(("endtime", "starttime"))]
    times.sort(key=lambda k: not k.lower().endswith("endtime"))
    by_word = {k.rsplit(".", 1)[-1].lower(): v for k, v in flat.items()}
    level = next((by_word[w] for w in POINT_LEVELS if w in by_word and not isinstance(by_word[w], bool)), None)
    if not times or level is None:
        return None
    return {"time": flat[times[0]], name: level}


def _array_records(items: list, skips: schema.SkipCounter | None = None, number: int = 0) -> list[dict]:
    """Records of a top-level JSON array: one poll of GPUs in order when its objects name neither a time nor a
    GPU and none is a series (nvtop --snapshot); else each object read as a document of its own (rows, series)."""
    objects = [x for x in items if isinstance(x, dict)]
    if len(objects) < len(items) and skips is not None:
        skips.skip(number, "a JSON list, not an object" if not objects
                   else f"{len(items) - len(objects)} of {len(items)} array items not an object")
        if objects:  # each item that is not an object counts, as it would streamed
            skips.count += len(items) - len(objects) - 1
    keys = {k for x in objects[:8] for k in x}
    roles = {headers.meaning(str(k)).role for k in keys}
    if objects and not roles & {"time", "gpu"} and not any(_series_points(x) is not None for x in objects[:8]):
        return _records({"": objects}, {}, 0)
    return [r for x in objects for r in _records(x, {}, 0)]


def _flatten(obj: dict, prefix: str, out: dict, lists: list | None, depth: int, devices: list | None = None) -> None:
    """obj's scalars into `out` under dotted keys; its lists of objects into `lists`; an object keyed by numbers
    whose values are objects ({"0": {...}, "1": {...}}: neuron-monitor's neuroncores_in_use, a per-CPU usage) is a
    list of items numbered by their keys, into `devices` (default: `lists`)."""
    if depth > MAX_DEPTH:
        return
    devices = lists if devices is None else devices
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and devices is not None and _numbered(v):
            devices.append([{"index": int(n), **item} for n, item in v.items()])
        elif isinstance(v, dict):
            _flatten(v, key + ".", out, lists, depth + 1, devices)
        elif isinstance(v, list):
            if lists is not None and v and isinstance(v[0], dict):
                lists.append(v)
        else:
            out[key] = v


def _numbered(obj: dict) -> bool:
    """True for an object keyed by small numbers whose values are all objects."""
    return bool(obj) and all(isinstance(k, str) and k.isdecimal() and len(k) < 6 and isinstance(v, dict)
                             for k, v in obj.items())


# a JSON string (on one line: a raw newline ends it) or a bracket, for measuring how deep a text nests
_NESTING = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}]')
NEST_DEPTH = 500  # a value too deep to decode is passed up to where it nests this deep (the decoder stops near 1,000)


def _resync(buf: str, pos: int, exc: Exception) -> tuple[int, int]:
    """Where to try the next record after a bad value at `pos`, and how many more lines that skips: the line
    where decoding failed when the value ran over several lines (else the next line), so a value that runs on
    for many lines is read once, not once per line (100k lines of "[": 15 s before). A value too deep to decode
    (RecursionError: no position) is passed up to where it first nests NEST_DEPTH deep: half the decoder's limit,
    so each retry decodes about twice what it passes (lines that each open a level more: 7.8 s for 3 MB before,
    passing 100 openers at a time)."""
    at = getattr(exc, "pos", None)
    if at is None:
        at = _deep_at(buf, pos)
    start = buf.rfind("\n", pos, at) + 1  # the failing line's start, when past pos's line
    if start > 0:
        return start, buf.count("\n", pos, start) - 1
    nxt = buf.find("\n", pos + 1)
    return (len(buf) if nxt < 0 else nxt + 1), 0


def _deep_at(text: str, pos: int, depth: int = NEST_DEPTH) -> int:
    """Where the text from `pos` first nests `depth` brackets deep (strings passed over); `pos` if it never does."""
    level = 0
    for m in _NESTING.finditer(text, pos):
        c = m.group()
        if c in "[{":
            level += 1
            if level >= depth:
                return m.start()
        elif c in "]}":
            level = max(level - 1, 0)
    return pos


def _json_records(stream: textio.TextStream, skips: schema.SkipCounter):
    """(record number, flat record) for every record of a stream of JSON documents (concatenated, one per line,
    or one array of them). The read size doubles while a document is incomplete, so a big document is scanned
    O(log n) times, not once per chunk."""
    decoder = textio.JSON_DECODER
    buf, pos, want, eof, number, in_array = "", 0, 1 << 20, False, 0, False
    pending = b""
    while True:
        while pos < len(buf) and buf[pos] in " \t\r\n,":
            pos += 1
        if pos < len(buf) and buf[pos] == "]" and in_array:
            in_array, pos = False, pos + 1
            continue
        if pos < len(buf) and buf[pos] == "[" and not in_array and number == 0:
            try:  # an array the first read holds whole is one document (a poll of GPUs, or records)
                textio.raw_decode_at(buf, pos, decoder)
            except (ValueError, RecursionError):
                in_array, pos = True, pos + 1  # a longer one: its records streamed one by one
                continue
        if pos >= len(buf) and eof:
            return
        try:
            if pos >= len(buf):
                raise ValueError("need more")
            obj, end = textio.raw_decode_at(buf, pos, decoder)
        except (ValueError, RecursionError) as exc:
            if not eof and len(buf) - pos < MAX_DOCUMENT_BYTES:
                fresh = stream.read(want)
                eof = not fresh
                data = pending + fresh
                cut = len(data)
                while cut and (data[cut - 1] & 0xC0) == 0x80:  # keep a split UTF-8 character for the next read
                    cut -= 1
                if cut and data[cut - 1] >= 0xC0:
                    cut -= 1
                pending = data[cut:] if not eof else b""
                buf = buf[pos:] + data[:cut].decode("utf-8", errors="replace")
                pos = 0
                want = min(want * 2, MAX_DOCUMENT_BYTES)
                continue
            if len(buf) - pos >= MAX_DOCUMENT_BYTES:
                raise InputError(f"{stream.path}: a JSON document larger than {MAX_DOCUMENT_BYTES >> 20} MiB") from None
            number += 1
            skips.skip(number, f"not JSON ({getattr(exc, 'msg', None) or textio.json_error(exc)})")
            pos, lines = _resync(buf, pos, exc)
            number += lines  # lines the bad value ran over: records lost with it, counted
            skips.count += lines
            continue
        pos = end
        want = 1 << 20
        number += 1
        if not isinstance(obj, (dict, list)):
            skips.skip(number, f"a JSON {type(obj).__name__}, not an object")
            continue
        try:
            recs = _records(obj, {}, 0) if isinstance(obj, dict) else _array_records(obj, skips, number)
        except RecursionError:
            skips.skip(number, "nested too deeply")
            continue
        for r in recs:
            yield number, r
        if pos > (4 << 20):  # drop consumed text now and then (not per record: that would be quadratic)
            buf, pos = buf[pos:], 0


def _xml_records(stream: textio.TextStream, skips: schema.SkipCounter):
    """(document number, flat record) per `<gpu>` of each `<nvidia_smi_log>` document, parsed incrementally."""
    number = 0
    parser: ET.XMLPullParser | None = None
    doc: dict = {}
    position = 0
    tail = b""

    def start() -> ET.XMLPullParser:
        nonlocal number, doc, position
        number += 1
        doc, position = {}, 0
        return ET.XMLPullParser(events=("start", "end"))

    def drain(p: ET.XMLPullParser):
        nonlocal position
        depth_stack = []
        for event, elem in p.read_events():
            if event == "start":
                depth_stack.append(elem.tag)
                continue
            if elem.tag == "gpu":
                flat = {"index": position}
                _flatten_xml(elem, "", flat, 0)
                position += 1
                yield {**doc, **flat}
                elem.clear()
            elif len(elem) == 0 and elem.text and elem.text.strip() and _is_top(elem, p):
                doc[elem.tag] = elem.text.strip()

    while True:
        data = stream.read(1 << 20)
        chunk = tail + data
        if b"<!ENTITY" in chunk:
            raise InputError(f"{stream.path}: XML entity declarations are not read (document {number or 1})")
        keep = 0 if not data else min(len(chunk), 8)
        body, tail = (chunk[:len(chunk) - keep], chunk[len(chunk) - keep:]) if keep else (chunk, b"")
        pieces = body.split(b"<?xml")
        for k, piece in enumerate(pieces):
            if k > 0 or parser is None:
                if parser is not None:
                    try:
                        parser.close()
                    except ET.ParseError:
                        pass
                    yield from ((number, r) for r in drain(parser))
                parser = start()
                if k > 0:
                    piece = b"<?xml" + piece
            try:
                parser.feed(piece)
                yield from ((number, r) for r in drain(parser))
            except ET.ParseError as exc:
                skips.skip(number, f"XML document {number}: {str(exc)[:60]}")
                parser = start()
        if not data:
            break
    if parser is not None:
        try:
            parser.close()
            yield from ((number, r) for r in drain(parser))
        except ET.ParseError:
            pass


def _is_top(elem: ET.Element, parser) -> bool:
    """Leaf children of <nvidia_smi_log> itself (timestamp, driver_version): tags that are not GPU fields."""
    return elem.tag in ("timestamp", "driver_version", "cuda_version", "attached_gpus", "hostname")


def _flatten_xml(elem: ET.Element, prefix: str, out: dict, depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    for child in elem:
        key = f"{prefix}{child.tag}"
        if len(child):
            _flatten_xml(child, key + ".", out, depth + 1)
        elif child.text is not None and child.text.strip():
            out.setdefault(key, child.text.strip())
