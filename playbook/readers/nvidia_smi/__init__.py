"""nvidia-smi `--query-gpu=... --format=csv[,noheader][,nounits]` logs, and `---`-separated polling loops.

Handles: units or nounits; a header or none (then `fields`, the comma list given to --query-gpu, names the
columns; without it they are guessed from the units, with a warning); an `index` column or none (then GPUs are
numbered by their order within each polling tick; ticks are separated by `---` lines or by gaps between
timestamps); logs appended across restarts (repeated headers, possibly with other fields); CRLF; `[N/A]`,
`[Not Supported]`, `[Unknown Error]` (NaN); nvidia-smi's own error lines ("Unable to determine the device handle
for GPU...") interleaved, which become events (`gpu_lost` where the line says the GPU is lost, else `gpu_error`); a truncated last line. Every skipped line is counted.

nvidia-smi writes its timestamps ("2024/01/15 10:23:45.123") in the machine's local time zone; they are read
as `tz` (default UTC). Without timestamps, ticks get synthetic times `interval_s` apart (default 1 s).

The file is streamed in blocks of whole lines (BLOCK_BYTES), so memory holds a few blocks plus the numeric
columns, never the text. In each block special lines are found in one pass over the bytes (numpy over the
newlines; a regular expression when data lines do not start with a digit); the clean remainder is parsed by
pyarrow.csv and its columns converted with Arrow compute kernels on WORKERS threads, while the main thread reads
and scans the next block. Pieces pyarrow cannot parse cleanly are re-read line by line, so the result is the same
either way. A segment (the span after one header) is assembled from its pieces before its ticks are split, so
block edges change nothing. Lines before the first header are judged on the first block (its first MiB): stray
lines are counted, data is read with the fields given, guessed or taken from a header in that block.
"""

from __future__ import annotations

import codecs
import os
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import frames, native, textio
from playbook.readers.nvidia_smi.convert import (
    Columns,
    Piece,
    Special,
    gpu_models,
    merge,
    parse_fast,
    parse_lines,
)
from playbook.readers.nvidia_smi.events import segment_events
from playbook.readers.nvidia_smi.fields import (
    ERROR_LINE,
    NA,
    SEPARATOR,
    TIMESTAMP,
    UNITS_IN_VALUES,
    guess_fields,
    looks_like_value,
    parse_fields,
    parse_header,
)

FORMAT = "nvidia-smi --query-gpu CSV"

BLOCK_BYTES = 8 << 20  # text scanned and parsed per block: bounds the transient memory (~10x a block, not the file)
MAX_LINE_BYTES = 64 << 20  # a longer line is not nvidia-smi output
SAMPLE_BYTES = 1 << 20  # the first block holds at least this much: the lines before a header are judged on it
FAST_MIN_BYTES = 16 << 10  # a smaller piece is split in Python (parse_lines): pyarrow's reader costs ~1 ms to set up
WORKERS = min(2, os.cpu_count() or 1)  # threads parsing pieces while the main thread reads and scans the next block


def sniff(head: str) -> bool:
    """True when the text looks like nvidia-smi --query-gpu CSV output (with or without header/units)."""
    lines = head.split("\n")
    if len(head) >= textio.HEAD_BYTES - 4 and len(lines) > 1:
        lines = lines[:-1]  # the last line of a head may be cut
    data_like = 0
    smi_specific = 0
    widths: set[int] = set()
    for raw in lines[:400]:
        line = raw.strip()
        if not line or SEPARATOR.match(line):
            continue
        if parse_header(line) is not None:
            return True
        if ERROR_LINE.match(line):
            smi_specific += 1
            continue
        if ", " not in line:
            if data_like:
                continue  # a stray line among data is damage, not a different format
            return False
        cells = line.split(", ")
        if any(("[" in c) != ("]" in c) for c in cells):
            return False  # a bracket left open or closed: nvidia-smi brackets only whole values (`[N/A]`)
        good = sum(looks_like_value(c) for c in cells)
        if good < len(cells) - (1 if len(cells) > 2 else 0):
            return False
        if any(UNITS_IN_VALUES.match(c) or TIMESTAMP.match(c.strip()) for c in cells):
            smi_specific += 1
        widths.add(len(cells))
        data_like += 1
    if not data_like:
        return smi_specific > 0 and all(not ln.strip() or ERROR_LINE.match(ln.strip()) or SEPARATOR.match(ln)
                                        for ln in lines[:400])
    # Comma-space separated numbers of one width: nvidia-smi noheader,nounits output.
    return smi_specific > 0 or (len(widths) <= 2 and max(widths) >= 2)


# --------------------------------------------------------------------------------------------------------------
# Scanning: special lines (headers, separators, blanks, error messages, junk) found in one pass over the bytes.

def _classify(text: str) -> str:
    s = text.strip()
    if not s:
        return "blank"
    if SEPARATOR.match(s):
        return "separator"
    if parse_header(s) is not None:
        return "header"
    if ERROR_LINE.match(s):
        return "error"
    return "junk"



def _digit_mode(data: bytes) -> bool:
    """True when data lines start with a digit (the first field is a timestamp, an index or a number), from the
    first data line of the file's first 64 KiB."""
    first_data = next((ln for ln in data[:65536].split(b"\n") if ln.strip() and _classify(
        ln.decode("utf-8", "replace")) == "junk"), b"0")
    return first_data[:1].isdigit()


def _newlines(data: bytes) -> np.ndarray:
    """Byte offsets of the newlines in `data`: the C parser's memchr loop, or one vectorised numpy pass (both
    release the GIL)."""
    if native.C is not None:
        return np.frombuffer(native.C.newlines(data), dtype=np.int64)
    return np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)


def _scan(data: bytes, digit_mode: bool, first_line: int = 1, newlines: np.ndarray | None = None) -> list[Special]:
    """Special lines of `data`, a block of whole lines whose first is line `first_line` of the file; `newlines`:
    its newline offsets (`_newlines`), when known.

    In digit mode any line that does not start with a digit is a candidate; otherwise (name, uuid, pstate first)
    only lowercase starts, dashes, blanks and error phrases are."""
    newlines = _newlines(data) if newlines is None else newlines
    if digit_mode:
        starts = newlines + 1
        starts = starts[starts < len(data)]
        first = np.frombuffer(data, dtype=np.uint8)[starts]
        after_newline = starts[(first < 48) | (first > 57)].tolist()  # lines that do not start with a digit
    else:
        pattern = re.compile(rb"\n(?=[a-z\n\-=\s]|Unable|Failed|No devices|Unknown|NVIDIA-SMI|Error|ERROR|GPU is)")
        after_newline = [m.end() for m in pattern.finditer(data)]
    specials: list[Special] = []
    for off in ([0] if data else []) + after_newline:
        if off >= len(data) or (off == 0 and digit_mode and data[:1].isdigit()):
            continue
        line = first_line + int(np.searchsorted(newlines, off))  # the newlines before it
        end = data.find(b"\n", off)
        end = len(data) if end < 0 else end
        text = data[off:end].decode("utf-8", errors="replace")
        kind = _classify(text)
        if kind == "junk" and "," in text and (not digit_mode or looks_like_value(text.split(",", 1)[0])):
            continue  # a data line whose first field is text or N/A
        specials.append(Special(line, off, end, kind, text))
    return specials


def _last_line_start(buf: bytes) -> int:
    """Where the last non-empty complete line of `buf` starts, when a newline before it lies within `buf`
    (else -1: the answer depends on what precedes `buf`). Blank lines after it stay with it."""
    end = buf.rfind(b"\n") + 1
    while end and buf[end - 1] == 10:
        end -= 1
    return buf.rfind(b"\n", 0, end) + 1 if end else -1


def _blocks(stream, src: str, block_bytes: int | None = None):
    """Yield (block, number of its first line, its newline offsets, final, next_is_header): the text in blocks of
    whole lines with CRLF and lone CR turned into LF. A block stops before its last non-empty line, which is carried
    into the next one, so a segment's last line (the one a cut can damage) is judged knowing what follows:
    `next_is_header` tells whether the line after the block starts a new segment. A block is copied once: the
    carried line joined to the new read up to its cut."""
    size = block_bytes or BLOCK_BYTES
    rest, line = b"", 1
    more = stream.read(max(size, SAMPLE_BYTES))
    if more.startswith(codecs.BOM_UTF8):
        more = more[len(codecs.BOM_UTF8):]
    while True:
        ahead = stream.read(size) if more else b""  # read one block ahead: the last block is parsed whole
        hold = b""
        if ahead and more.endswith(b"\r"):
            more, hold = more[:-1], b"\r"  # a CRLF may straddle the read
        if b"\r" in more or b"\r" in rest:
            rest, more = b"", (rest + more).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not ahead:
            data = rest + more
            if data:
                yield data, line, _newlines(data), True, False
            return
        cut = _last_line_start(more)
        if cut > 0:  # the usual case: the cut lies in the new read
            block, src_buf = b"".join((rest, memoryview(more)[:cut])), more
        else:
            src_buf = rest + more
            whole = src_buf.rfind(b"\n") + 1
            body = src_buf[:whole].rstrip(b"\n")
            cut = body.rfind(b"\n") + 1 if body else whole
            if cut == 0:  # one line so far: read on
                if len(src_buf) > MAX_LINE_BYTES:
                    raise InputError(f"{src}: line {line} is longer than {MAX_LINE_BYTES >> 20} MiB: "
                                     "not nvidia-smi output")
                rest, more = src_buf + hold, ahead
                continue
            block = src_buf[:cut]
        nxt = src_buf.find(b"\n", cut)
        follows = _classify(src_buf[cut:nxt if nxt >= 0 else len(src_buf)].decode("utf-8", "replace")) == "header"
        newlines = _newlines(block)
        yield block, line, newlines, False, follows
        line += len(newlines)
        rest, more = src_buf[cut:] + hold, ahead


# --------------------------------------------------------------------------------------------------------------

def _tick_split(time_ns: np.ndarray) -> np.ndarray:
    """Tick boundaries of index-less timestamped rows: True where a row starts a new polling tick.

    Rows of one tick carry (nearly) the same timestamp; ticks are separated by the polling interval. The
    threshold is the widest gap in the sorted log-differences, so it adapts to any polling rate.
    """
    n = len(time_ns)
    starts = np.zeros(n, dtype=bool)
    if n == 0:
        return starts
    starts[0] = True
    if n == 1:
        return starts
    dt = np.diff(time_ns).astype(np.float64)
    logs = np.log10(np.maximum(np.abs(dt), 1e5))  # differences below 0.1 ms count as "same tick"
    uniq = np.unique(logs)
    if len(uniq) == 1:
        same_tick = uniq[0] <= 5.0 + 1e-9
        starts[1:] = not same_tick
        return starts
    gaps = np.diff(uniq)
    k = int(np.argmax(gaps))
    if gaps[k] < np.log10(3):  # no clear two-level structure: every row is its own tick
        starts[1:] = True
        return starts
    threshold = (uniq[k] + uniq[k + 1]) / 2
    starts[1:] = (logs > threshold) | (dt < 0)
    return starts


def _repeats(gpu: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """True where a row starts a new tick: at a forced break, or when its GPU was already seen in this tick."""
    out = breaks.copy()
    seen: set[int] = set()
    for i, g in enumerate(gpu.tolist()):
        if out[i] or g in seen:
            out[i] = True
            seen = set()
        seen.add(g)
    return out


def _place(seps: np.ndarray, cols: Columns, clock: dict, interval_s: float | None, bundle: schema.Bundle,
           src: str) -> dict[str, np.ndarray]:
    """GPU numbers and times for a segment's rows (drops the rows marked bad): the columns of one part.
    `seps`: the line numbers of the segment's `---` separators, in order."""
    good = ~cols.bad
    all_good = bool(good.all())
    lines = cols.lines if all_good else cols.lines[good]

    def kept(a):
        return a if all_good else np.asarray(a)[good]

    n = len(lines)
    sep_tick = np.searchsorted(seps, lines) if len(seps) else np.zeros(n, dtype=np.int64)
    time_ns = kept(cols.time_ns) if cols.time_ns is not None else None
    if cols.gpu is not None:
        gpu = kept(cols.gpu)
        if time_ns is None:  # a tick ends at a separator, or where the index starts again / a GPU repeats
            sep_break = np.r_[True, sep_tick[1:] != sep_tick[:-1]] if n else np.zeros(0, dtype=bool)
            if cols.gpu_from == "index":
                new_tick = sep_break | np.r_[True, gpu[1:] <= gpu[:-1]] if n else sep_break
            else:
                new_tick = _repeats(gpu, sep_break)
            tick = np.cumsum(new_tick) - 1
    else:
        # GPUs in order within each tick; a tick ends at a separator or at a gap between timestamps.
        if time_ns is not None:
            new_tick = _tick_split(time_ns) | (np.r_[True, sep_tick[1:] != sep_tick[:-1]] if n else False)
        elif len(seps):
            new_tick = np.r_[True, sep_tick[1:] != sep_tick[:-1]] if n else np.zeros(0, dtype=bool)
        else:
            bundle.warnings.append(f"{src}: no index column, no timestamps and no '---' separators: read as one "
                                   "GPU, one row per tick")
            new_tick = np.ones(n, dtype=bool)
        tick = np.cumsum(new_tick) - 1
        idx = np.arange(n)
        gpu = idx - np.maximum.accumulate(np.where(new_tick, idx, 0)) if n else idx
    if time_ns is None:
        clock["synthetic"] = True
        ticks = clock["tick_base"] + tick
        clock["tick_base"] = int(ticks[-1]) + 1 if n else clock["tick_base"]
        time_ns = textio.synthetic_times(ticks, interval_s).astype(np.int64)
    part = {"time": time_ns, "gpu": gpu, "_lines": lines}
    for column in list(cols.metrics):
        part[column] = kept(cols.metrics.pop(column))
    return part



@dataclass
class _Segment:
    """The span after one header (or the lines before the first header), assembled over the blocks."""
    fields: list[str] | None
    units: list[str | None]
    header: Special | None
    chunks: list[Columns] = field(default_factory=list)   # the columns of its pieces
    errors: list[Special] = field(default_factory=list)   # nvidia-smi error lines (gpu_error events)
    separators: list[int] = field(default_factory=list)   # line numbers of `---` lines
    damaged: int = 0                                      # error, junk and truncated lines
    junk: bool = False                                    # lines before the first header read as stray lines
    refusal: str | None = None                            # the error raised if no header follows them


class _Reader:
    """Reads one log block by block: pieces are parsed as they come, a segment is placed when the next header
    (or the end) closes it.

    Pieces are parsed on `pool` (pyarrow and Arrow kernels release the GIL) while the main thread reads and scans
    the next block. Each piece counts its skips apart; they join the file's count in file order as its result is
    taken, so the warnings are the same as a serial read's."""

    def __init__(self, path: Path, user_fields: list[str] | None, interval_s: float | None, tz: str,
                 pool: ThreadPoolExecutor) -> None:
        self.path, self.src, self.user_fields, self.interval_s, self.tz = path, str(path), user_fields, interval_s, tz
        self.host = textio.host_from_path(path)
        self.bundle = schema.Bundle(inputs=[self.src])
        self.skips = schema.SkipCounter(self.src)
        self.digit_mode: bool | None = None
        self.seg: _Segment | None = None
        self.blocks = 0
        self.prev_line = b""  # the last line of the previous block
        self.parts: list[dict[str, np.ndarray]] = []
        self.events: list[dict] = []
        self.models: dict[int, str] = {}  # GPU number -> product name (the `name` field)
        self.clock = {"tick_base": 0, "synthetic": False}
        self.shifted_warning = False
        self.pool = pool
        self.pending: list[tuple[Future | None, schema.SkipCounter, _Segment]] = []  # pieces in file order

    def block(self, data: bytes, first_line: int, newlines: np.ndarray, ends_segment: bool) -> None:
        """One block of whole lines; `newlines`: the offsets of its newline bytes; `ends_segment`: the open segment
        ends with it (a header or the end follows)."""
        if self.digit_mode is None:
            self.digit_mode = _digit_mode(data)
        specials = self._repeats_as_separators(_scan(data, self.digit_mode, first_line, newlines))
        heads = [sp for sp in specials if sp.kind == "header"]
        n_lines = len(newlines) + (0 if data.endswith(b"\n") or not data else 1)
        group: list[Special] = []
        start, start_line = 0, first_line
        for sp in specials:
            if sp.kind != "header":
                group.append(sp)
                continue
            self._piece(data, Piece(None, [], None, start, sp.start, start_line, sp.line - 1, group), True, heads)
            self._open(sp)
            group, start, start_line = [], min(sp.end + 1, len(data)), sp.line + 1
        self._piece(data, Piece(None, [], None, start, len(data), start_line, first_line + n_lines - 1, group),
                    ends_segment, heads)
        self.blocks += 1
        self.prev_line = data[data.rfind(b"\n", 0, max(len(data) - 1, 0)) + 1:].rstrip(b"\n")

    def _repeats_as_separators(self, specials: list[Special]) -> list[Special]:
        """A header that repeats the open segment's (a loop that runs `nvidia-smi --format=csv` once a poll) marks
        the next poll, like a `---` line: the segment goes on instead of a new one per poll (one segment per poll
        cost ~0.3 ms each: 10k polls took 15x the time of the same rows under one header)."""
        current = self.seg.header.text.strip() if self.seg is not None and self.seg.header is not None else None
        out = []
        for sp in specials:
            if sp.kind == "header":
                if sp.text.strip() == current:
                    sp = Special(sp.line, sp.start, sp.end, "separator", sp.text)
                else:
                    current = sp.text.strip()
            out.append(sp)
        return out

    def _piece(self, data: bytes, piece: Piece, ends: bool, heads: list[Special]) -> None:
        if piece.start >= piece.end:
            return  # a header at the start of the block
        if self.seg is None:
            self.seg = self._lead(data, piece, heads)
        seg = self.seg
        if seg.refusal is not None and self.blocks:
            raise InputError(seg.refusal)  # a whole block of headerless lines that cannot be read
        piece.fields, piece.units = seg.fields, seg.units
        skips = schema.SkipCounter(self.src, keep=self.skips.keep)  # this piece's, joined in file order by _take
        if seg.junk:
            _lines_to_junk(data, piece)
        elif ends:
            _mark_truncated(data, piece, self.prev_line if piece.start == 0 else b"")
        for sp in piece.specials:
            if sp.kind in ("error", "junk", "truncated"):
                what = {"error": "nvidia-smi error", "junk": "not a data line", "truncated": "truncated line"}[sp.kind]
                skips.skip(sp.line, f"{what} {sp.text.strip()[:60]!r}")
                seg.damaged += 1
            if sp.kind == "error":
                seg.errors.append(Special(sp.line, 0, 0, "error", sp.text.strip()[:200]))
            elif sp.kind == "separator":
                seg.separators.append(sp.line)
        if seg.fields is None or seg.junk:
            job = None
        elif piece.end - piece.start > FAST_MIN_BYTES:
            job = self.pool.submit(_parse_piece, data, piece, skips, self.tz)
        else:  # parsed in Python under the GIL: a thread gains nothing, and starting one cost a small file 0.7 ms
            job = Future()
            try:
                job.set_result(_parse_piece(data, piece, skips, self.tz))
            except Exception as exc:  # raised in file order by _take, as a worker's is
                job.set_exception(exc)
        self.pending.append((job, skips, seg))
        self._take(WORKERS)

    def _take(self, keep: int) -> None:
        """Collect parsed pieces in file order until at most `keep` are in flight (bounding the blocks held)."""
        while len(self.pending) > keep:
            job, skips, seg = self.pending.pop(0)
            if job is not None:
                seg.chunks.append(job.result())  # a worker's error is raised here, as it was raised there
            self.skips.count += skips.count
            self.skips.reasons += skips.reasons[: max(0, self.skips.keep - len(self.skips.reasons))]

    def _lead(self, data: bytes, piece: Piece, heads: list[Special]) -> _Segment:
        """The lines before the first header: read with --fields, a later header's fields or guessed ones; a few
        stray lines before a header are counted; otherwise the log cannot be read."""
        fields = self.user_fields
        seg = _Segment(fields, [None] * len(fields or []), None)
        sample = _sample_rows(data, piece)
        if not sample:
            seg.fields = None
            return seg
        width = len(sample[0])
        if fields is not None:
            if len(fields) != width:
                raise InputError(f"{self.path}: --fields names {len(fields)} fields but the data has {width} columns")
            return seg
        later = next((h for h in heads if len(parse_header(h.text.strip())[0]) == width), None)
        if later is not None:
            seg.fields, seg.units = parse_header(later.text.strip())
            self.bundle.warnings.append(f"{self.path}: lines 1-{heads[0].line - 1} have no header; read with the "
                                        f"fields of the header at line {later.line}")
            return seg
        guessed = guess_fields(sample)
        if guessed is not None:
            seg.fields, note = guessed
            seg.units = [None] * len(seg.fields)
            self.bundle.warnings.append(f"{self.path}: guessed fields {note}; pass --fields to be sure")
            return seg
        seg.junk = True  # a few stray lines before the first header: counted, not fatal
        if not heads:
            seg.refusal = (
                f"{self.path}: headerless nvidia-smi CSV whose columns cannot be told from their units; pass "
                "--fields with the list given to --query-gpu (e.g. --fields index,utilization.gpu,memory.used)")
        return seg

    def _open(self, head: Special) -> None:
        """A header: close the open segment, start the next."""
        self._close()
        fields, units = parse_header(head.text.strip())
        if self.user_fields and self.user_fields != fields:
            self.bundle.warnings.append(f"{self.path}: line {head.line}: the header's fields differ from --fields; "
                                        "the header wins")
        self.seg = _Segment(fields, units, head)

    def _close(self) -> None:
        self._take(0)
        seg, self.seg = self.seg, None
        if seg is None:
            return
        if seg.refusal is not None:
            raise InputError(seg.refusal)  # headerless lines and no header anywhere
        if seg.fields is None or seg.junk:
            return
        if not seg.chunks:  # a segment without rows still has its columns (none of them long)
            seg.chunks.append(parse_lines(b"", Piece(seg.fields, seg.units, None, 0, 0, 1, 0), self.skips, self.tz))
        cols = merge(seg.chunks, self.skips)
        if cols.gpu is None and seg.damaged and not self.shifted_warning:
            self.shifted_warning = True
            self.bundle.warnings.append(f"{self.src}: no index column and nvidia-smi error lines: GPUs after a "
                                        "failed one may be numbered one too low; add index to --query-gpu")
        part = _place(np.asarray(seg.separators, dtype=np.int64), cols, self.clock, self.interval_s, self.bundle,
                      self.src)
        self.events += segment_events(seg.errors, seg.header, part.pop("_lines"), part["time"], part["gpu"],
                                      self.host, self.src)
        self.models.update(gpu_models(part, cols.model_ids))
        self.parts.append(part)

    def finish(self, notes: list[str]) -> schema.Bundle:
        """Close the last segment and assemble the Bundle; `notes` (the stream's) lead its warnings."""
        self._close()
        bundle = self.bundle
        bundle.warnings[:0] = notes
        synthetic = self.clock["synthetic"]
        if synthetic:
            bundle.warnings.append(textio.synthetic_warning(self.src, "polling ticks", self.interval_s))
        warning = self.skips.warning(rows_read=sum(len(p["time"]) for p in self.parts))
        if warning:
            bundle.warnings.append(warning)
        bundle.telemetry = _telemetry(self.parts, self.host, self.src, self.interval_s if synthetic else None)
        if self.models:
            bundle.meta[schema.GPU_MODELS] = {schema.gpu_id(self.host, g): m for g, m in self.models.items()}
        if self.events:
            events = self.events
            bundle.events = schema.events_frame({k: [e[k] for e in events] for k in events[0]})
        return bundle


def read(path: str | Path, fields: str | list[str] | None = None, interval_s: float | None = None,
         tz: str = "UTC", block_bytes: int | None = None, **_opts) -> schema.Bundle:
    """Read an nvidia-smi --query-gpu CSV log into a Bundle (telemetry; gpu_error/restart events), streaming it
    in blocks of `block_bytes` (default BLOCK_BYTES)."""
    path = Path(path)
    with frames.small_pages(), ThreadPoolExecutor(WORKERS, thread_name_prefix="nvidia-smi") as pool:
        reader = _Reader(path, parse_fields(fields), textio.check_interval(interval_s), tz, pool)
        try:
            with textio.open_text(path) as stream:
                for data, first_line, newlines, final, next_header in _blocks(stream, str(path), block_bytes):
                    reader.block(data, first_line, newlines, final or next_header)
            return reader.finish(stream.notes)
        finally:
            pool.shutdown(cancel_futures=True)  # after an error: the queued pieces are not parsed


def _parse_piece(data: bytes, piece: Piece, skips: schema.SkipCounter, tz: str) -> Columns:
    """A piece's columns: pyarrow over its clean lines, or line by line when it is small or damaged."""
    cols = parse_fast(data, piece, skips, tz) if piece.end - piece.start > FAST_MIN_BYTES else None
    return cols if cols is not None else parse_lines(data, piece, skips, tz)


def _lines_to_junk(data: bytes, piece: Piece) -> None:
    """Mark every non-blank line of the piece that is not special yet as junk."""
    special = {sp.line for sp in piece.specials}
    pos = piece.start
    for no in range(piece.first_line, piece.last_line + 1):
        if pos >= piece.end:
            break
        end = data.find(b"\n", pos, piece.end)
        end = piece.end if end < 0 else end
        text = data[pos:end].decode("utf-8", errors="replace")
        if no not in special and text.strip():
            piece.specials.append(Special(no, pos, end, "junk", text))
        pos = end + 1
    piece.specials.sort(key=lambda sp: sp.line)


def _sample_rows(data: bytes, piece: Piece, limit: int = 200) -> list[list[str]]:
    """Up to `limit` data rows (split at commas) of the piece's first MiB, of their most common width."""
    special = {sp.line for sp in piece.specials}
    out: list[list[str]] = []
    chunk = data[piece.start:min(piece.end, piece.start + SAMPLE_BYTES)].decode("utf-8", errors="replace")
    for k, line in enumerate(chunk.split("\n")):
        if piece.first_line + k in special or not line.strip() or piece.first_line + k > piece.last_line:
            continue
        out.append(line.split(","))
        if len(out) >= limit:
            break
    if out:
        width = max(set(len(r) for r in out), key=[len(r) for r in out].count)
        out = [r for r in out if len(r) == width]
    return out


def _mark_truncated(data: bytes, piece: Piece, prev_line: bytes) -> None:
    """Mark the last non-empty line of a segment's last piece as truncated when it was cut short: fields
    missing, or a unit-bearing last value (the line before carries units) that lost its unit mid-number.
    `prev_line`: the line before the piece (the previous block's last) when the piece starts its block."""
    if piece.fields is None or piece.start >= piece.end:
        return
    end = piece.end
    while end > piece.start and data[end - 1:end] == b"\n":
        end -= 1
    start = max(data.rfind(b"\n", piece.start, end) + 1, piece.start)
    if start >= end:
        return
    line_no = piece.first_line + data.count(b"\n", piece.start, start)
    if line_no in {sp.line for sp in piece.specials}:
        return
    text = data[start:end].decode("utf-8", errors="replace")
    cells = text.split(",")
    cut = len(cells) != len(piece.fields)
    unit = None
    if not cut:  # do the values carry units (header units alone say nothing: `--format=csv,nounits`)?
        if start > piece.start:
            prev_start = max(data.rfind(b"\n", piece.start, start - 1) + 1, piece.start)
            prev_line = data[prev_start:start - 1]
        prev = prev_line.decode("utf-8", errors="replace").split(",")
        m = UNITS_IN_VALUES.match(prev[-1]) if len(prev) == len(cells) else None
        unit = m.group(2) if m else None
    if not cut and unit and not NA.match(cells[-1]) and not cells[-1].strip().endswith(unit.strip()):
        cut = True  # a unit-bearing last value that lost its unit was cut mid-number
    if cut:
        piece.specials.append(Special(line_no, start, end, "truncated", text))
        piece.specials.sort(key=lambda sp: sp.line)


def _telemetry(parts: list[dict[str, np.ndarray]], host: str, src: str, interval_s: float | None) -> pd.DataFrame:
    """Concatenate the parts (emptying the list, so each array is held once) into the telemetry table."""
    if not sum(len(p["time"]) for p in parts):
        parts.clear()
        return schema.telemetry_frame()
    names = list(dict.fromkeys(k for p in parts for k in p))
    sizes = [len(p["time"]) for p in parts]
    merged: dict[str, np.ndarray] = {}
    for c in names:
        chunks = [p.pop(c) if c in p else np.full(size, np.nan) for p, size in zip(parts, sizes, strict=True)]
        merged[c] = frames.joined(chunks)
    parts.clear()
    return frames.build_telemetry(merged, host, src, interval_s)
