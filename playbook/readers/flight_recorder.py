"""PyTorch NCCL flight-recorder dumps (one file per rank) → per-rank collective records, read without trusting them.

The exact recipe (every rank; the dump is written when a collective times out, or when another rank's watchdog
asks for it):

    export TORCH_NCCL_TRACE_BUFFER_SIZE=2000          # records kept per rank (ring buffer); 0 disables recording
    export TORCH_NCCL_DUMP_ON_TIMEOUT=1               # write the buffer when the watchdog sees a timeout
    export TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/shared/fr/nccl_trace_rank_   # rank R writes <prefix>R
    export TORCH_NCCL_ENABLE_TIMING=1                 # record start events: entries say "started", not just
                                                      # "scheduled", and carry duration_ms
    torchrun ... train.py
    playbook diagnose /shared/fr/                     # or: python -m torch.distributed.flight_recorder.fr_trace

A dump is a pickled dict (torch's C++ pickler, protocol 2, plain containers only) with keys "version" ("2.10"),
"comm_lib_version", "pg_config" ({pg name: {"name", "desc", "ranks": "[0, 1, ...]"}}), "pg_status" ({pg id:
{"last_enqueued_collective", "last_started_collective", "last_completed_collective"}}), "entries" and optionally
"nccl_comm_state". Each entry: record_id, pg_id, process_group (name, desc), collective_seq_id, p2p_seq_id, op_id,
profiling_name ("nccl:all_reduce"), time_created_ns, time_discovered_started_ns, time_discovered_completed_ns (None
until seen; epoch ns), duration_ms (with timing), state ("scheduled" | "started" | "completed"), input_sizes /
output_sizes (one list of dims per tensor), input_dtypes / output_dtypes ("Float", "BFloat16", ...), timeout_ms,
retired, is_p2p, thread_name, thread_id, frames ([{name, filename, line}], with stack traces). The JSON form
(`torch._C._distributed_c10d._dump_nccl_trace_json()`, or the control-plane handler `dump_nccl_trace_json`) has
the same keys, with 0 for times not yet seen and strings in pg_status.

Safety: a pickle can run any code when loaded. This reader never calls `pickle.load`: `SafeUnpickler` interprets
the plain-data opcodes itself and refuses every global, persistent id and object-building opcode, so only dicts,
lists, tuples, strings, numbers, bools, None (and, in protocol 4+ pickles, bytes and sets) can be built; anything
else raises InputError naming the file, before any object is created. Bounded: dict keys are scalars or small
tuples (no hash bombs), shared references may not expand past one value per opcode (no `a = [a, a]` bombs), and
values nested deeper than MAX_DEPTH are dropped with a warning. Files over MAX_BYTES, or over an eighth of the
byte budget (textio.max_bytes(): the parsed objects take ~OBJECT_EXPANSION times the file), are refused.

The rank is the file name's trailing number (`nccl_trace_rank_3` → 3, as fr_trace infers it), or read(rank=R).
Output: no table rows; bundle.meta["flight_recorder:<file>"] = {"rank", "version", "comm_lib_version",
"pg_config" {name: {"desc", "ranks": [int]}}, "pg_status" {pg_id: {enqueued, started, completed}}, "entries"
[records as below]} (one key per file, so that the dumps of all ranks merge). `dumps(bundle)` gathers them and
`entries_frame(bundle)` gives one row per entry: rank, pg_id, pg_name, pg_desc, record_id, collective_seq_id,
p2p_seq_id, op_id, is_p2p, name (profiling_name), state, created_ns, started_ns, completed_ns (NaN when unseen),
duration_ms, timeout_ms, input_sizes, output_sizes (text), input_dtypes, output_dtypes, nbytes (input bytes),
frame ("file:line function" of the innermost frame outside torch, "" without stacks).
Analysis: playbook.analysis.collective_hangs.summarize.
"""

from __future__ import annotations

import io
import json
import math
import pickle
import re
from pathlib import Path
from typing import Any

import pandas as pd

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import textio

FORMAT = "PyTorch NCCL flight recorder dump (pickle or JSON)"
META_PREFIX = "flight_recorder:"
MAX_BYTES = 1 << 30
OBJECT_EXPANSION = 8  # a parsed dump (dicts, lists, str) takes about this many times its file's bytes
STATES = ("scheduled", "started", "completed")
_TRAILING_RANK = re.compile(r"(\d+)(?:\.(?:json|pkl|pickle|bin))?$", re.IGNORECASE)
# bytes per element of the dtype names c10::toString prints
DTYPE_BYTES = {"Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2, "Char": 1,
               "Byte": 1, "Bool": 1, "ComplexFloat": 8, "ComplexDouble": 16, "Float8_e4m3fn": 1,
               "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1, "UInt16": 2, "UInt32": 4,
               "UInt64": 8}
ENTRY_COLUMNS = ("rank", "pg_id", "pg_name", "pg_desc", "record_id", "collective_seq_id", "p2p_seq_id", "op_id",
                 "is_p2p", "name", "state", "created_ns", "started_ns", "completed_ns", "duration_ms",
                 "timeout_ms", "input_sizes", "output_sizes", "input_dtypes", "output_dtypes", "nbytes", "frame",
                 "source")


class RefusedError(pickle.UnpicklingError):
    """The pickle asked for something other than plain data (a global, a persistent id, an object key)."""


class SafeUnpickler:
    """Builds plain data from a pickle's opcodes, one at a time, refusing every other opcode.

    pickle.Unpickler is not used at all: even with find_class refused, it hashes dict keys and set members as it
    builds them, and a key made of shared tuples (`t = (t, t)` 40 times, 333 bytes) hashes 2**40 nodes. Here a
    key or set member must be a scalar (str, bytes, int, float, bool, None) or a tuple of at most MAX_KEY_NODES
    of them. Globals (so every class and function), persistent ids and the object-building opcodes raise
    RefusedError before anything is created. `load()` then copies the result into a tree (no shared references),
    refusing more than one value per opcode (+ 1024): without shared containers a pickle cannot hold more
    values than opcodes, so only expansion bombs are refused; containers nested deeper than MAX_DEPTH become
    None (counted in `cut`)."""

    def __init__(self, data: bytes):
        self.data = data
        self.cut = 0

    def load(self) -> Any:
        import pickletools

        stack: list[Any] = []
        marks: list[int] = []
        memo: dict[int, Any] = {}
        n_ops = 0
        # the opcodes plain data is built from stay inline (one dispatch per opcode); the rare ones and the
        # refusals go to _rare_op
        for op, arg, _pos in pickletools.genops(io.BytesIO(self.data)):
            n_ops += 1
            name = op.name
            if name in _SCALAR_OPS:
                stack.append(bytes(arg) if name == "BYTEARRAY8" else arg)
            elif name in ("NONE", "NEWTRUE", "NEWFALSE"):
                stack.append({"NONE": None, "NEWTRUE": True, "NEWFALSE": False}[name])
            elif name in ("PROTO", "FRAME"):
                continue
            elif name == "STOP":
                tree, self.cut = bounded_tree(stack.pop(), n_ops + 1024)
                return tree
            elif name == "MARK":
                marks.append(len(stack))
            elif name == "EMPTY_LIST":
                stack.append([])
            elif name == "EMPTY_DICT":
                stack.append({})
            elif name == "EMPTY_TUPLE":
                stack.append(())
            elif name == "LIST":
                stack.append(_pop_mark(stack, marks))
            elif name == "TUPLE":
                stack.append(tuple(_pop_mark(stack, marks)))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                k = int(name[-1])
                if len(stack) < k:
                    raise pickle.UnpicklingError("stack underflow")
                items = tuple(stack[-k:])
                del stack[-k:]
                stack.append(items)
            elif name == "DICT":
                items = _pop_mark(stack, marks)
                stack.append({_key(k): v for k, v in zip(items[::2], items[1::2], strict=False)})
            elif name == "APPEND":
                v = stack.pop()
                _container(stack, list).append(v)
            elif name == "APPENDS":
                items = _pop_mark(stack, marks)
                _container(stack, list).extend(items)
            elif name == "SETITEM":
                v, k = stack.pop(), stack.pop()
                _container(stack, dict)[_key(k)] = v
            elif name == "SETITEMS":
                items = _pop_mark(stack, marks)
                d = _container(stack, dict)
                for k, v in zip(items[::2], items[1::2], strict=False):
                    d[_key(k)] = v
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[int(arg)] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo[int(arg)])
            else:
                _rare_op(name, arg, stack, marks)
        raise pickle.UnpicklingError("pickle ended before STOP")


def _pop_mark(stack: list[Any], marks: list[int]) -> list[Any]:
    """The items above the last MARK, taken off `stack`."""
    if not marks:
        raise pickle.UnpicklingError("MARK missing")
    at = marks.pop()
    items = stack[at:]
    del stack[at:]
    return items


def _rare_op(name: str, arg: Any, stack: list[Any], marks: list[int]) -> None:
    """SafeUnpickler's less common opcodes (POP, DUP, sets); RefusedError for globals, persistent ids and the
    object-building opcodes."""
    if name == "POP":
        if stack and (not marks or marks[-1] < len(stack)):
            stack.pop()
        else:
            _pop_mark(stack, marks)
    elif name == "POP_MARK":
        _pop_mark(stack, marks)
    elif name == "DUP":
        stack.append(stack[-1])
    elif name == "EMPTY_SET":
        stack.append(set())
    elif name == "FROZENSET":
        stack.append(frozenset(_key(x) for x in _pop_mark(stack, marks)))
    elif name == "ADDITEMS":
        items = _pop_mark(stack, marks)
        _container(stack, set).update(_key(x) for x in items)
    elif name == "GLOBAL":
        raise RefusedError(f"refused to load global {str(arg).replace(' ', '.')}")
    elif name == "STACK_GLOBAL":
        qual, module = (stack.pop(), stack.pop()) if len(stack) > 1 else ("?", "?")
        raise RefusedError(f"refused to load global {module}.{qual}")
    elif name in ("PERSID", "BINPERSID"):
        raise RefusedError("refused a persistent id")
    else:
        raise RefusedError(f"refused pickle opcode {name}")


def bounded_tree(root: Any, budget: int) -> tuple[Any, int]:
    """`root` copied without shared references, at most `budget` values (else RefusedError); containers deeper
    than MAX_DEPTH become None. Returns (tree, number of containers cut)."""
    left, cut = [budget], [0]

    def walk(obj: Any, depth: int) -> Any:
        left[0] -= 1
        if left[0] < 0:
            raise RefusedError(f"expands to more than {budget} values (shared references)")
        if isinstance(obj, (list, tuple, dict)):
            if depth >= MAX_DEPTH:
                cut[0] += 1
                return None
            if isinstance(obj, dict):
                return {k: walk(v, depth + 1) for k, v in obj.items()}
            items = [walk(x, depth + 1) for x in obj]
            return tuple(items) if isinstance(obj, tuple) else items
        if isinstance(obj, (set, frozenset)):
            left[0] -= len(obj)
        return obj

    return walk(root, 0), cut[0]


MAX_DEPTH = 32  # torch's dumps nest 5 deep (dump → entries → entry → frames → frame); 32 leaves room to spare
MAX_KEY_NODES = 64  # a dict key or set member: a scalar or a small tuple of them (torch's dumps use strings, ints)
_SCALAR_OPS = frozenset({"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "STRING", "BINSTRING",
                         "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8", "UNICODE",
                         "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "FLOAT", "BINFLOAT"})
_KEY_SCALARS = (str, bytes, int, float, bool, type(None))


def _key(k: Any) -> Any:
    """`k` if hashing it is cheap (a scalar, or a tuple of at most MAX_KEY_NODES scalars), else RefusedError."""
    if isinstance(k, _KEY_SCALARS):
        return k
    if isinstance(k, tuple):
        todo, seen = [k], 0
        while todo:
            t = todo.pop()
            seen += len(t)
            if seen > MAX_KEY_NODES:
                break
            for x in t:
                if isinstance(x, tuple):
                    todo.append(x)
                elif not isinstance(x, _KEY_SCALARS):
                    raise RefusedError(f"refused a {type(x).__name__} inside a dict key")
        else:
            return k
    raise RefusedError(f"refused a dict key or set member that is not plain data ({type(k).__name__})")


def _container(stack: list[Any], kind: type) -> Any:
    if not stack or not isinstance(stack[-1], kind):
        raise pickle.UnpicklingError(f"no {kind.__name__} to add to")
    return stack[-1]


def safe_loads(data: bytes) -> Any:
    """Unpickle `data` with SafeUnpickler (plain containers, strings, bytes, numbers, bools, None only)."""
    return SafeUnpickler(data).load()


def _looks_like_pickle(head: str) -> bool:
    # 0x80 (PROTO) decodes to U+FFFD; the protocol byte follows
    return len(head) > 2 and head[0] == "\ufffd" and head[1] in "\x02\x03\x04\x05"


def sniff(head: str) -> bool:
    """A pickle or JSON object whose keys are a flight-recorder dump's (entries / pg_config / pg_status)."""
    if _looks_like_pickle(head):
        return "pg_config" in head or ("entries" in head and "collective_seq_id" in head)
    stripped = head.lstrip()
    if stripped.startswith("{"):
        return '"pg_config"' in head and ('"pg_status"' in head or '"entries"' in head) or (
            '"entries"' in head and '"collective_seq_id"' in head and '"profiling_name"' in head)
    return False


def rank_from_name(path: str | Path) -> int | None:
    """The trailing number of a dump's file name (nccl_trace_rank_12 → 12), None when there is none."""
    m = _TRAILING_RANK.search(Path(path).name)
    return int(m.group(1)) if m else None


def load(path: str | Path) -> dict[str, Any]:
    """The dump as a dict (pickle through SafeUnpickler, or JSON). Raises InputError naming the file."""
    return _load(Path(path))[0]


def _load(path: Path) -> tuple[dict[str, Any], int]:
    """(the dump, how many containers nested deeper than MAX_DEPTH were cut)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    limit = min(MAX_BYTES, textio.max_bytes() // OBJECT_EXPANSION)
    if size > limit:
        raise InputError(f"{path}: {size / 2**20:.0f} MiB is more than a flight-recorder dump holds "
                         f"(limit {limit / 2**20:.0f} MiB: its objects take ~{OBJECT_EXPANSION}x the file; "
                         "PLAYBOOK_MAX_BYTES raises it); not read")
    raw = textio.read_bytes(path)
    if raw[:1] == b"\x80":
        unpickler = SafeUnpickler(raw)
        try:
            doc = unpickler.load()
            cut = unpickler.cut
        except RefusedError as exc:
            raise InputError(f"{path}: not a plain-data pickle, not loaded ({exc})") from None
        except Exception as exc:  # truncated or corrupt pickles raise many types
            raise InputError(f"{path}: damaged pickle ({type(exc).__name__}: {exc})"[:300]) from None
    else:
        try:
            doc, cut = bounded_tree(json.loads(textio.decode(raw)), len(raw) + 1024)
        except ValueError as exc:
            raise InputError(f"{path}: not a flight-recorder dump (invalid JSON: {exc})"[:300]) from None
        except RecursionError:
            raise InputError(f"{path}: not a flight-recorder dump (JSON nested too deep to read)") from None
    if not isinstance(doc, dict) or not ({"entries", "pg_config", "pg_status"} & set(map(str, doc))):
        raise InputError(f"{path}: not a flight-recorder dump (no entries / pg_config / pg_status keys)")
    return doc, cut


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v):
        return int(v)
    if isinstance(v, (str, bytes)):
        try:
            return int(v)
        except ValueError:
            return None
    return None


def _float(v: Any) -> float:
    """`v` as a float; NaN when it is not a number or beyond a float's range."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    try:
        return float(v)
    except OverflowError:
        return math.nan


def _time_ns(v: Any) -> float:
    """Epoch ns, NaN when unseen (None in pickles, 0 in JSON)."""
    i = _int(v)
    return _float(i) if i else math.nan


def _names(v: Any) -> str:
    """A list of dtype names as "Float,Float" (a lone value as itself)."""
    return ",".join(map(_text, v)) if isinstance(v, (list, tuple)) else _text(v)


def _text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    return "" if v is None else str(v)


def _ranks(v: Any) -> list[int]:
    """pg_config ranks: "[0, 1, 2]" (a string in dumps) or a list."""
    if isinstance(v, (list, tuple)):
        return [r for r in (_int(x) for x in v) if r is not None]
    return [int(x) for x in re.findall(r"-?\d+", _text(v))]


def _nbytes(sizes: Any, dtypes: Any) -> float:
    if not isinstance(sizes, (list, tuple)) or not isinstance(dtypes, (list, tuple)):
        return math.nan
    total = 0.0
    for dims, dt in zip(sizes, dtypes, strict=False):
        per = DTYPE_BYTES.get(_text(dt))
        if per is None or not isinstance(dims, (list, tuple)):
            return math.nan
        n = 1
        for d in dims:
            di = _int(d)
            if di is None:
                return math.nan
            n *= di
        total += _float(n * per)
    return total


def _frame(frames: Any) -> str:
    """The innermost frame outside torch's own files: "train.py:88 train_step"."""
    if not isinstance(frames, (list, tuple)):
        return ""
    for f in frames:
        if not isinstance(f, dict):
            continue
        fn = _text(f.get("filename"))
        if fn and "/torch/" not in fn and "\\torch\\" not in fn:
            return f"{fn}:{_int(f.get('line')) or 0} {_text(f.get('name'))}"
    return ""


def _sizes_text(v: Any) -> str:
    try:
        return json.dumps(v, default=str)
    except (TypeError, ValueError):
        return _text(v)


def entry_record(e: dict[str, Any], rank: int) -> dict[str, Any] | None:
    """One entry as a flat record (ENTRY_COLUMNS without source); None when it has no sequence ids."""
    coll, p2p = _int(e.get("collective_seq_id")), _int(e.get("p2p_seq_id"))
    if coll is None and p2p is None:
        return None
    pg = e.get("process_group")
    pg_name, pg_desc = (_text(pg[0]), _text(pg[1]) if len(pg) > 1 else "") if isinstance(pg, (list, tuple)) \
        and pg else (_text(pg), "")
    state = _text(e.get("state")).lower()
    dur = e.get("duration_ms")
    return {
        "rank": rank, "pg_id": _int(e.get("pg_id")) if _int(e.get("pg_id")) is not None else -1,
        "pg_name": pg_name or _text(e.get("pg_id")), "pg_desc": pg_desc,
        "record_id": _int(e.get("record_id")) if _int(e.get("record_id")) is not None else -1,
        "collective_seq_id": coll if coll is not None else -1, "p2p_seq_id": p2p if p2p is not None else -1,
        "op_id": _int(e.get("op_id")) if _int(e.get("op_id")) is not None else -1,
        "is_p2p": bool(e.get("is_p2p", False)), "name": _text(e.get("profiling_name")),
        "state": state if state in STATES else (state or "unknown"),
        "created_ns": _time_ns(e.get("time_created_ns")), "started_ns": _time_ns(e.get("time_discovered_started_ns")),
        "completed_ns": _time_ns(e.get("time_discovered_completed_ns")),
        "duration_ms": _float(dur), "timeout_ms": _float(_int(e.get("timeout_ms"))),
        "input_sizes": _sizes_text(e.get("input_sizes")), "output_sizes": _sizes_text(e.get("output_sizes")),
        "input_dtypes": _names(e.get("input_dtypes")), "output_dtypes": _names(e.get("output_dtypes")),
        "nbytes": _nbytes(e.get("input_sizes"), e.get("input_dtypes")), "frame": _frame(e.get("frames")),
    }


def read(path: str | Path, rank: int | None = None, **_opts) -> schema.Bundle:
    """Read one rank's dump (pickle or JSON) into a Bundle (meta only; see the module docstring)."""
    path = Path(path)
    src = str(path)
    doc, cut = _load(path)
    bundle = schema.Bundle(inputs=[src])
    if cut:
        bundle.warnings.append(f"{src}: {cut} value(s) nested deeper than {MAX_DEPTH} levels were dropped "
                               "(a dump nests 5 deep)")
    if rank is None:
        rank = rank_from_name(path)
    if rank is None:
        rank = -1
        bundle.warnings.append(f"{src}: no rank in the file name (expected <prefix><rank>, e.g. "
                               f"nccl_trace_rank_3); read as rank -1")
    raw_entries = doc.get("entries") or []
    if not isinstance(raw_entries, (list, tuple)):
        raise InputError(f"{src}: 'entries' is a {type(raw_entries).__name__}, not a list")
    skips = schema.SkipCounter(src)
    entries = []
    for i, e in enumerate(raw_entries):
        rec = entry_record(e, rank) if isinstance(e, dict) else None
        if rec is None:
            skips.skip(None, f"entry {i} has no sequence id")
            continue
        entries.append(rec)
    pg_config = {}
    for name, info in (doc.get("pg_config") or {}).items() if isinstance(doc.get("pg_config"), dict) else ():
        info = info if isinstance(info, dict) else {}
        pg_config[_text(name)] = {"desc": _text(info.get("desc")), "ranks": _ranks(info.get("ranks"))}
    pg_status = {}
    for pg, st in (doc.get("pg_status") or {}).items() if isinstance(doc.get("pg_status"), dict) else ():
        st = st if isinstance(st, dict) else {}
        pg_status[_text(pg)] = {k: _int(st.get(f"last_{k}_collective")) for k in ("enqueued", "started",
                                                                                   "completed")}
    bundle.meta[META_PREFIX + src] = {"rank": rank, "version": _text(doc.get("version")),
                                      "comm_lib_version": _text(doc.get("comm_lib_version")),
                                      "pg_config": pg_config, "pg_status": pg_status, "entries": entries}
    w = skips.warning(len(entries))
    if w:
        bundle.warnings.append(w)
    return bundle


def dumps(bundle: schema.Bundle) -> list[dict[str, Any]]:
    """Every dump read into `bundle` (the meta sections), each with its `source`, sorted by rank."""
    out = [{**value, "source": src} for src, value in schema.meta_sections(getattr(bundle, "meta", None), META_PREFIX)]
    return sorted(out, key=lambda d: (d.get("rank", -1), d["source"]))


def entries_frame(bundle: schema.Bundle) -> pd.DataFrame:
    """One row per entry of every dump (ENTRY_COLUMNS)."""
    rows = [{**e, "source": d["source"]} for d in dumps(bundle) for e in d.get("entries", [])]
    return pd.DataFrame(rows, columns=list(ENTRY_COLUMNS))
