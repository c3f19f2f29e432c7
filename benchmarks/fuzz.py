"""Fuzz benchmark: every reader, run directories, `compare` inputs and the shard loader on hostile input.

What it checks
    Issue 17's target: on damaged or generated input the playbook raises only its own errors (PlaybookError) or
    returns with warnings: 0 escaped exceptions (any other type), 0 hangs, 0 cases over the memory budget.

The exact command
    python benchmarks/fuzz.py                          # 100,000 cases over every target, 2 worker processes
    python benchmarks/fuzz.py --cases 2000 --jobs 1    # a quick run
    python benchmarks/fuzz.py --targets rundir,shards --seed 7 --show 20

Cases
    mutation   a file of tests/data (or a run directory / shard built from them) with 1-8 byte-level mutations:
               bit flips, byte inserts/deletes, a chunk duplicated or dropped, a cut, a splice of another
               fixture, a token of the formats (a number, a date, "[N/A]", a header) dropped in.
    growth     (readers and read_file) a mutation case with one shape grown (`grow`): a header thousands of
               columns wide, a line of up to 2 MB of digits, brackets or separators, a data line repeated
               10k-100k times, nesting 100k deep, or a tar of hundreds of members: the size attacks that byte
               mutations of ≤ 64 KB fixtures cannot reach. GROW_SHARE of those targets' cases; a grown input
               stops at GROW_MAX_BYTES (a 1 GB input fills the worker's memory cap in the harness itself; the
               readers' refusal of files past their byte budget has its own tests).
    structure  hypothesis-generated inputs (seeded, derandomised): text built from format tokens per reader,
               JSON documents for meta.json and shard indexes, plain-data pickles for the flight recorder.
    Targets: reader:<name> (each reader's read(), past read_file's safety net), read_file, folder (read_paths on a
    folder of 2-8 fixtures, some damaged), rundir (read_paths on a damaged run directory), compare (`playbook compare` on a damaged BAD run), shards (decode_shard +
    decode_fields on a damaged shard, ShardIndex.from_dict on a generated index).

Limits
    Cases run in batches, each batch in a worker process forked from the parent once it has imported the
    playbook and loaded the fixtures; the worker's address space is capped at its size at fork + --mem-mib
    (resource.setrlimit(RLIMIT_AS)); each case has --case-s seconds plus HANG_S_PER_MB seconds per MB of the
    input it writes (setitimer: a Python-level hang raises in the case): a grown 70 MB input read linearly at
    1-2 MB/s is large, not hung, while superlinear work (55 s for a 64k-character line) still runs past it. A worker that does not finish its batch in time is killed: the case it was on
    counts as a hang (C-level loops that the timer cannot interrupt).

How to read the result
    One line per target: cases, seconds spent in them and in generating the structure cases (where the run's
    time goes), project errors (PlaybookError: the intended outcome for bad input), escapes
    (other exception types, by innermost playbook file), hangs, over budget (MemoryError), crashes, stderr
    (tracebacks printed as "Exception ignored in ...", e.g. from a library callback: not escapes, but a user sees
    them), and the peak RSS of the workers; then the first --show escapes with the case to reproduce them
    (`--replay TARGET:KIND:SEED:I`).
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import math
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
PLAYBOOK = ROOT / "playbook"
_SAFETY_NET = " reader failed ("  # playbook.readers.files.call_reader's words for an exception a reader let out
MAX_FIXTURE_BYTES = 64 << 10  # fixtures mutated; larger ones (HTA traces) make cases slow without new shapes
TOKENS = [b", ", b",", b"\n", b"\r\n", b" %", b" MiB", b"[N/A]", b"[Not Supported]", b"NaN", b"1e309", b"-1",
          b"99999999999999999999", b"\x00", b"\xff\xfe", b"2024/01/15 10:00:00.000", b"2024-01-15T10:00:00Z",
          b"1705312800000", b'{"', b'"}', b"[", b"]", b"{", b"}", b'"time"', b"step ", b"NCCL INFO ", b"#",
          b"\t", b"\"", b"\\", b"0x0000000000000004", b"timestamp, index, utilization.gpu [%]\n", b"PAR1"]


# ---------------------------------------------------------------- case generation (deterministic per seed)

def fixtures() -> list[Path]:
    """Small files of tests/data (README/make_*.py excluded), in a stable order."""
    out = []
    for p in sorted(DATA.rglob("*")):
        if p.is_file() and p.stat().st_size <= MAX_FIXTURE_BYTES and not p.name.lower().startswith(
                ("readme", "make_")) and p.suffix != ".py":
            out.append(p)
    return out


def mutate(data: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    """1-8 byte-level mutations of `data`."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(8)
        at = rng.randrange(len(b) + 1)
        if op == 0 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 2:
            del b[at:at + rng.randint(1, 64)]
        elif op == 3 and b:
            n = rng.randint(1, min(len(b), 4096))
            s = rng.randrange(len(b) - n + 1)
            b[at:at] = b[s:s + n] * rng.randint(1, 4)
        elif op == 4:
            del b[rng.randrange(len(b) + 1):]
        elif op == 5 and others:
            o = rng.choice(others)
            s = rng.randrange(len(o) + 1)
            b[at:at] = o[s:s + rng.randint(1, 512)]
        elif op == 6:
            b[at:at] = rng.choice(TOKENS) * rng.choice((1, 1, 1, 3, 50))
        else:
            i = rng.randrange(len(b) + 1)
            b[i:i + rng.randint(0, 16)] = rng.choice(TOKENS)
    return bytes(b)


HANG_S_PER_MB = 1.0  # a case's time limit grows by this per MB of its input: 1 MB/s is the slowest read allowed
GROW_SHARE = 0.2  # of a reader's cases: growth cases (the rest half mutation, half structure)
LONG_BODIES = (b"1", b"9.", b"[", b"[1/", b"[1][2]", b"1:", b"| 1 ", b"a=1 ", b" ", b"step 1 ", b"{", b'"', b",")


GROW_MAX_BYTES = 64 << 20


def grow(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """`data` with one shape grown past what a real file has (see Cases), and a file-name suffix the grown shape
    needs ("" or ".tar"); at most about GROW_MAX_BYTES."""
    def times(unit: bytes, n: int) -> int:  # n copies of `unit`, fewer past GROW_MAX_BYTES
        return max(1, min(n, GROW_MAX_BYTES // max(1, len(unit))))

    lines = data.split(b"\n")
    op = rng.randrange(5)
    if op == 0:  # a wide header: the first line's last field repeated thousands of times
        head = lines[0]
        sep = next((s for s in (b",", b"\t", b";", b" ") if s in head), b",")
        field = sep + head.split(sep)[-1]
        lines[0] = head + field * times(field, rng.choice((5_000, 50_000, 200_000)))
    elif op == 1:  # one long line
        body = rng.choice(LONG_BODIES)
        lines.insert(rng.randrange(len(lines) + 1), body * (rng.choice((64 << 10, 1 << 20, 2 << 20)) // len(body)))
    elif op == 2:  # many rows: one line repeated
        k = rng.randrange(len(lines))
        lines[k + 1:k + 1] = [lines[k]] * times(lines[k] + b"\n", rng.choice((10_000, 100_000)))
    elif op == 3:  # deep nesting
        depth = rng.choice((1_000, 100_000))
        return rng.choice((b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth)), ""
    else:  # a tar of many members, each the data (the trace reader opens archives)
        import tarfile

        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for m in range(times(data + bytes(1024), rng.choice((100, 1000)))):
                info = tarfile.TarInfo(f"rank{m}.pt.trace.json")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return buf.getvalue(), ".tar"
    return b"\n".join(lines), ""


def _hypothesis_cases(strategy, seed: int, n: int) -> list:
    """n values drawn by hypothesis from `strategy`, reproducibly for `seed` (no database, generation only)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    drawn: list = []

    @with_seed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value):
        drawn.append(value)

    collect()
    out = drawn[:n]
    while out and len(out) < n:  # hypothesis stops early when the space is small: cycle
        out += drawn[: n - len(out)]
    return out


def text_strategy():
    from hypothesis import strategies as st

    return st.lists(st.sampled_from([t.decode("latin-1") for t in TOKENS]) | st.text(max_size=12),
                    max_size=60).map("".join).map(lambda t: t.encode("utf-8", "surrogatepass"))


def json_strategy():
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["playbook_run", "env", "torch", "nvidia", "gpus", "cpu", "command", "shards", "name",
                         "bytes", "samples", "sha256", "entries", "pg_config", "pg_status", "probes", "x"])
        | st.text(max_size=6), inner, max_size=5), max_leaves=30)


# ---------------------------------------------------------------- targets (run inside a worker)

_LOADED: tuple | None = None


def loaded_fixtures() -> tuple[list[Path], list[bytes], dict[str, list[int]]]:
    """fixtures(), their bytes and which reader each is detected as: computed once per process (~1 s for ~300
    files), so batches forked from the parent start with it."""
    global _LOADED
    if _LOADED is None:
        from playbook.readers import detect

        files = fixtures()
        by_reader: dict[str, list[int]] = collections.defaultdict(list)
        for i, p in enumerate(files):
            try:
                by_reader[detect.detect(p)].append(i)
            except Exception:
                pass
        _LOADED = files, [p.read_bytes() for p in files], dict(by_reader)
    return _LOADED


class Worker:
    """One batch's state: fixtures loaded once, a scratch folder, the readers."""

    def __init__(self, case_s: float | None = None):
        from playbook.readers import detect

        self.detect = detect
        self.case_s = case_s  # None: no time limit (a replay)
        self.files, self.blobs, self.by_reader = loaded_fixtures()
        self.tmp = Path(tempfile.mkdtemp(prefix="fuzz-"))

    def write(self, path: Path, data: bytes) -> None:
        """The case's input, and its time limit from here: case_s + HANG_S_PER_MB per MB (the extra is printed
        for the parent, which kills a worker only past the limits of its cases)."""
        path.write_bytes(data)
        self.started = (len(data), time.perf_counter())
        if self.case_s is not None:
            extra = HANG_S_PER_MB * len(data) / 1e6
            signal.setitimer(signal.ITIMER_REAL, self.case_s + extra)
            print(json.dumps({"extra_s": extra}), flush=True)

    def scratch(self) -> Path:
        d = self.tmp / "case"
        if d.exists():
            shutil.rmtree(d)
        d.mkdir()
        return d

    def mutated_fixture(self, rng: random.Random, pool: list[int] | None = None,
                        grown: bool = False) -> tuple[Path, bytes]:
        """A fixture (its path, for the name) mutated byte-wise and, when `grown`, with a shape grown (`grow`)."""
        i = rng.choice(pool or range(len(self.files)))
        data = mutate(self.blobs[i], rng, self.blobs)
        if grown:
            data, suffix = grow(data, rng)
            return self.files[i].with_name(self.files[i].name + suffix), data
        return self.files[i], data

    def reader(self, name: str, kind: str, rng: random.Random, value) -> None:
        from playbook.model import schema

        module = self.detect.module(name)
        d = self.scratch()
        if kind in ("mutation", "growth"):
            src, data = self.mutated_fixture(rng, self.by_reader.get(name), grown=kind == "growth")
            path = d / src.name
        else:
            data, path = value, d / ("nccl_trace_rank_0" if name == "flight_recorder" else "input.txt")
        self.write(path, data)
        module.sniff(data[:65536].decode("utf-8", "replace"))
        b = module.read(path)
        assert isinstance(b, schema.Bundle)

    def read_file(self, kind: str, rng: random.Random, value) -> None:
        from playbook.readers import read_file

        d = self.scratch()
        if kind in ("mutation", "growth"):
            src, data = self.mutated_fixture(rng, grown=kind == "growth")
            path = d / src.name
        else:
            data, path = value, d / "input.txt"
        self.write(path, data)
        read_file(path)

    def folder(self, kind: str, rng: random.Random, value) -> None:
        """A folder of 2-8 fixtures, some damaged (or one grown, or one generated text), read by read_paths: the
        folder path, whose small telemetry tables are built together (readers.frames.deferred_tables)."""
        from playbook.readers import read_paths

        d = self.scratch()
        picks = [rng.randrange(len(self.files)) for _ in range(rng.randint(2, 8))]
        for k, i in enumerate(picks[:-1]):
            data = mutate(self.blobs[i], rng, self.blobs) if rng.random() < 0.5 else self.blobs[i]
            (d / f"{k}_{self.files[i].name}").write_bytes(data)
        if kind == "structure":
            path, data = d / "input.txt", value
        else:
            src, data = self.mutated_fixture(rng, [picks[-1]], grown=kind == "growth")
            path = d / f"last_{src.name}"
        self.write(path, data)
        read_paths([d])

    def _damaged_run(self, kind: str, rng: random.Random, value, side: str = "bad") -> Path:
        run = self.scratch() / side
        shutil.copytree(DATA / "compare" / "data_starvation" / side, run)
        files = sorted(p for p in run.rglob("*") if p.is_file())
        target = rng.choice(files)
        if kind == "mutation":
            target.write_bytes(mutate(target.read_bytes(), rng, self.blobs))
        else:
            meta = rng.choice([p for p in files if p.name == "meta.json"])
            doc = value if rng.random() < 0.5 else {**json.loads(meta.read_text()), "env": value}
            meta.write_text(json.dumps(doc, allow_nan=True))
        return run

    def rundir(self, kind: str, rng: random.Random, value) -> None:
        from playbook.readers import read_paths

        read_paths([self._damaged_run(kind, rng, value)])

    def compare(self, kind: str, rng: random.Random, value) -> None:
        import contextlib

        from playbook import cli

        bad = self._damaged_run(kind, rng, value)
        args = cli.build_parser().parse_args(["compare", str(DATA / "compare" / "data_starvation" / "good"),
                                              str(bad)])
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args._run(args)

    def shards(self, kind: str, rng: random.Random, value) -> None:
        import warnings

        from playbook.labs.fixes import shards as sh

        warnings.simplefilter("ignore", RuntimeWarning)
        if kind == "structure":
            sh.ShardIndex.from_dict("http://127.0.0.1:1", value)
            return
        shard = self.shard_bytes()
        for s in sh.decode_shard(mutate(shard, rng, []) if rng.random() < 0.7 else
                                 self._retar(shard, rng), "fuzz.tar.zst"):
            sh.decode_fields(s, "fuzz.tar.zst")

    def _retar(self, shard: bytes, rng: random.Random) -> bytes:
        """The shard's tar damaged under a valid zstd frame (reaches tar and field decoding)."""
        import zstandard

        raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(shard)).read()
        return zstandard.ZstdCompressor(write_checksum=True).compress(mutate(raw, rng, []))

    def shard_bytes(self) -> bytes:
        if not hasattr(self, "_shard"):
            import numpy as np

            from playbook.labs.workloads.objstore import write_shards

            d = self.tmp / "shard"
            index = write_shards(({"__key__": f"k{i}", "npy": np.arange(6) * i, "cls": i, "txt": f"t{i}",
                                   "json": json.dumps({"i": i})} for i in range(6)), d, samples_per_shard=6)
            self._shard = (d / index["shards"][0]["name"]).read_bytes()
        return self._shard


def structure_strategy(target: str):
    from hypothesis import strategies as st

    if target == "reader:flight_recorder":
        import pickle

        doc = st.fixed_dictionaries({"version": st.text(max_size=4), "entries": st.lists(st.dictionaries(
            st.sampled_from(["collective_seq_id", "pg_id", "profiling_name", "input_sizes", "input_dtypes",
                             "state", "frames", "time_created_ns", "duration_ms", "process_group"]),
            json_strategy(), max_size=8), max_size=5)}, optional={"pg_config": json_strategy(),
                                                                  "pg_status": json_strategy()})
        return st.tuples(doc, st.sampled_from([2, 4, 5])).map(lambda dp: pickle.dumps(dp[0], protocol=dp[1]))
    if target in ("rundir", "compare", "shards"):
        return json_strategy() if target != "shards" else st.fixed_dictionaries(
            {"shards": st.lists(json_strategy(), max_size=4)}) | json_strategy()
    return text_strategy()


def run_batch(target: str, kind: str, seed: int, n: int, case_s: float) -> dict:
    """Run n cases of (target, kind) from `seed` in this process; counts and the first escapes."""
    import resource

    from playbook.core.errors import PlaybookError

    w = Worker(case_s)
    started = time.perf_counter()
    values = _hypothesis_cases(structure_strategy(target), seed, n) if kind == "structure" else [None] * n
    generate_s = time.perf_counter() - started
    print(json.dumps({"generated": n}), flush=True)  # generation is the harness's time, not a case's
    counts = collections.Counter()
    escapes = []
    seconds = 0.0  # in the cases (not generation): the per-target "s" column

    def alarm(signum, frame):
        raise _CaseTimeout()

    def unraisable(u):  # "Exception ignored in ...": a traceback on the user's stderr; counted apart from escapes
        counts["stderr_tracebacks"] += 1
        escapes.append(_escape(target, kind, seed, i, f"stderr traceback {type(u.exc_value).__name__}",
                               "".join(traceback.format_exception(u.exc_type, u.exc_value, u.exc_traceback))))

    signal.signal(signal.SIGALRM, alarm)
    hook, sys.unraisablehook = sys.unraisablehook, unraisable
    for i in range(n):
        rng = random.Random(f"{target}:{kind}:{seed}:{i}")
        counts["cases"] += 1
        started = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, case_s)
        try:
            if target.startswith("reader:"):
                w.reader(target.split(":", 1)[1], kind, rng, values[i])
            else:
                getattr(w, target)(kind, rng, values[i])
            counts["ok"] += 1
        except PlaybookError as exc:
            if _SAFETY_NET in str(exc):  # read_file's net over a reader's own bug: one line for the user, an escape here
                hung = isinstance(exc.__cause__, _CaseTimeout)  # the case's time ran out inside the reader
                counts["hangs" if hung else "escapes"] += 1
                escapes.append(_escape(target, kind, seed, i, "hang" if hung else str(exc).split(_SAFETY_NET, 1)[1][:200],
                                       "".join(traceback.format_exception(exc.__cause__ or exc))))
            else:
                counts["project_errors"] += 1
                counts["multi_line"] += "\n" in str(exc)
        except _CaseTimeout:
            counts["hangs"] += 1
            escapes.append(_escape(target, kind, seed, i, "hang", traceback.format_exc()))
        except MemoryError:
            counts["over_budget"] += 1
            escapes.append(_escape(target, kind, seed, i, "MemoryError", traceback.format_exc()))
        except BaseException as exc:  # noqa: BLE001 - counting what escapes is the point
            if isinstance(exc, KeyboardInterrupt):
                raise
            counts["escapes"] += 1
            escapes.append(_escape(target, kind, seed, i, type(exc).__name__ + f": {exc}"[:200],
                                   traceback.format_exc()))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            seconds += time.perf_counter() - started
        print(json.dumps({"progress": i}), flush=True)
    sys.unraisablehook = hook
    shutil.rmtree(w.tmp, ignore_errors=True)
    return {"counts": dict(counts), "seconds": seconds, "generate_s": generate_s, "escapes": escapes[:20],
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


class _CaseTimeout(Exception):
    pass


def _escape(target, kind, seed, i, what, tb) -> dict:
    """Where it escaped: the innermost frame inside playbook/ (the module to fix)."""
    where = ""
    for line in tb.splitlines():
        if str(PLAYBOOK) in line and 'File "' in line:
            f = line.split('File "', 1)[1].split('"', 1)[0]
            lineno = line.split("line ", 1)[1].split(",", 1)[0] if "line " in line else "?"
            where = f"{os.path.relpath(f, ROOT)}:{lineno}"
    return {"case": f"{target}:{kind}:{seed}:{i}", "what": what, "where": where}


# ---------------------------------------------------------------- the parent: batches in capped subprocesses

def targets() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from playbook.readers import detect

    return [f"reader:{n}" for n in detect.READERS] + ["read_file", "folder", "rundir", "compare", "shards"]


# relative weight of each target's cases: compare runs a whole analysis (~50x a reader case)
WEIGHT = {"compare": 0.1, "rundir": 0.5}


def plan(total: int, names: list[str], batch: int, seed: int) -> list[tuple[str, str, int, int]]:
    """(target, kind, seed, n) batches: total cases split over targets by WEIGHT; for readers and read_file
    GROW_SHARE growth cases, the rest (all of the other targets') half mutation, half structure."""
    w = {t: WEIGHT.get(t, 1.0) for t in names}
    per = {t: max(2, math.ceil(total * w[t] / sum(w.values()))) for t in names}  # at least `total` in all
    out = []
    for t in names:
        grown = round(per[t] * GROW_SHARE) if t.startswith("reader:") or t in ("read_file", "folder") else 0
        rest = per[t] - grown
        for kind, n in (("mutation", rest - rest // 2), ("structure", rest // 2), ("growth", grown)):
            k = 0
            while n > 0:
                out.append((t, kind, seed * 100_003 + k, min(batch, n)))
                n -= batch
                k += 1
    return out


def run(total: int = 100_000, jobs: int = 2, names: list[str] | None = None, batch: int = 400,
        seed: int = 0, case_s: float = 10.0, mem_mib: int = 1024, quiet: bool = False) -> dict:
    """Run the fuzz campaign; returns {"targets": {name: counts}, "escapes": [...], "peak_rss_mib"}."""
    names = names or targets()
    todo = collections.deque(plan(total, names, batch, seed))
    running: list[tuple[ForkedWorker, tuple, float, list]] = []
    per: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    escapes, peak = [], 0.0
    t0 = shown = time.time()
    preload(names)
    stopped = False
    try:
        while todo or running:
            while todo and len(running) < jobs:
                job = todo.popleft()
                p = ForkedWorker(job, case_s, mem_mib)
                running.append((p, job, time.time(), ["", None]))
            time.sleep(0.05)
            for entry in list(running):
                p, job, started, buf = entry
                exited = p.poll() is not None  # before the drain: all it wrote is in the pipe by then
                buf[0] += _drain(p.stdout.fileno())
                lines = buf[0].splitlines()
                done_cases = sum(1 for ln in lines if ln.startswith('{"progress"'))
                extra = sum(json.loads(ln)["extra_s"] for ln in lines if ln.startswith('{"extra_s"'))
                last = json.loads(lines[-1]) if lines and lines[-1].startswith('{"counts"') else None
                if buf[1] is None and '{"generated"' in buf[0]:
                    buf[1] = time.time()
                # startup and generation (hypothesis may take minutes on a loaded machine): 900 s; from then on the
                # cases done and the one running, with slack
                late = time.time() - buf[1] > 30 + case_s * (done_cases + 2) + extra if buf[1] else \
                    time.time() - started > 900
                if last is None and not exited and not late:
                    continue
                running.remove(entry)
                target = job[0]
                if last is not None:
                    p.wait()
                    per[target].update(last["counts"])
                    per[target]["seconds"] += last["seconds"]
                    per[target]["generate_s"] += last["generate_s"]
                    escapes += last["escapes"]
                    peak = max(peak, last["peak_rss_mib"])
                    continue
                p.kill()
                p.wait()
                per[target]["cases"] += done_cases + 1  # the case it was on hung (or killed the worker)
                per[target]["hangs" if p.returncode in (-9, None) else "crashes"] += 1
                escapes.append({"case": f"{job[0]}:{job[1]}:{job[2]}:{done_cases}", "what": "hang or crash",
                                "where": ""})
                rest = job[3] - done_cases - 1
                if rest > 0:  # the rest of that batch, in a fresh worker
                    todo.appendleft((job[0], job[1], job[2] + 50_000_000 + done_cases, rest))
            if not quiet and time.time() - shown > 30:
                shown = time.time()
                n = sum(c["cases"] for c in per.values())
                print(f"  ... {n} cases, {shown - t0:.0f} s", file=sys.stderr, flush=True)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the counts of the batches that finished, marked partial
        stopped = True
        for p, *_ in running:
            p.kill()
            p.wait()
    return {"targets": {t: dict(c) for t, c in sorted(per.items())}, "escapes": escapes, "peak_rss_mib": peak,
            "wall_s": time.time() - t0, "partial": stopped}


def _stop(signum, frame):
    raise KeyboardInterrupt


def _drain(fd: int) -> str:
    out = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            break
        if not chunk:
            break
        out += chunk
    return out.decode("utf-8", "replace")


def preload(names: list[str]) -> None:
    """What every batch needs, imported and loaded once in the parent before it forks them (a fresh interpreter
    per batch spent ~2-4 s on imports and fixture detection: most of a small run's time)."""
    sys.path.insert(0, str(ROOT))
    import hypothesis.strategies  # noqa: F401
    import pandas  # noqa: F401

    import playbook.readers  # noqa: F401
    from playbook.readers import detect

    for name in detect.READERS:  # and what the targets import lazily (a cold import costs each batch ~1 s)
        detect.module(name)
    import pyarrow.csv  # noqa: F401
    import scipy.stats  # noqa: F401

    if "compare" in names:
        import playbook.cli
        import playbook.commands.compare  # noqa: F401
        import playbook.diagnosis.regression.verdict  # noqa: F401

        playbook.cli.build_parser()
    if "shards" in names:
        import torch  # noqa: F401
        import zstandard  # noqa: F401

        import playbook.labs.fixes.shards  # noqa: F401
        import playbook.labs.workloads.objstore  # noqa: F401
    loaded_fixtures()
    for name in names:
        _hypothesis_cases(structure_strategy(name), 0, 1)  # hypothesis's first draw in a process costs ~0.8 s: once, here


class ForkedWorker:
    """One batch in a child forked from the preloaded parent (Popen's poll/kill/wait/returncode and a stdout
    pipe): its own address space, capped at its size at fork + mem_mib (RLIMIT_AS), so the cap is what the cases
    add; a hang is killed by the parent."""

    def __init__(self, job: tuple, case_s: float, mem_mib: int):
        import resource

        r, w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the parent's loop
            code = 1
            try:
                os.close(r)
                os.dup2(w, 1)
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 2)
                with open("/proc/self/status") as fh:
                    vm = next(int(ln.split()[1]) for ln in fh if ln.startswith("VmSize")) * 1024
                cap = vm + int(mem_mib) * 2**20
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
                target, kind, seed, n = job
                print(json.dumps(run_batch(target, kind, int(seed), int(n), float(case_s))), flush=True)
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        os.set_blocking(r, False)
        self.pid, self.returncode = pid, None
        self.stdout = os.fdopen(r, "rb", buffering=0)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        self.stdout.close()
        return self.returncode


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="example:\n  python benchmarks/fuzz.py --cases 2000 --jobs 1")
    ap.add_argument("--cases", type=int, default=100_000, help="total cases (default 100,000)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes at once (default 2)")
    ap.add_argument("--targets", help="comma-separated targets (default: all; see the docstring)")
    ap.add_argument("--batch", type=int, default=400, help="cases per worker subprocess")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--case-s", type=float, default=10.0, help="time limit per case (s), plus HANG_S_PER_MB per MB of its input")
    ap.add_argument("--mem-mib", type=int, default=1024, help="address space a case may add (MiB)")
    ap.add_argument("--show", type=int, default=10, help="escapes listed")
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--replay", help="run one case TARGET:KIND:SEED:I here, with its traceback")
    args = ap.parse_args(argv)
    if args.replay:
        target, kind, seed, i = args.replay.rsplit(":", 3)
        sys.path.insert(0, str(ROOT))
        w = Worker()
        values = _hypothesis_cases(structure_strategy(target), int(seed), int(i) + 1) if kind == "structure" \
            else [None] * (int(i) + 1)
        rng = random.Random(f"{target}:{kind}:{seed}:{i}")
        try:
            if target.startswith("reader:"):
                w.reader(target.split(":", 1)[1], kind, rng, values[int(i)])
            else:
                getattr(w, target)(kind, rng, values[int(i)])
        finally:
            size, t0 = getattr(w, "started", (0, time.perf_counter()))
            print(f"input {size / 1e6:.2f} MB, {time.perf_counter() - t0:.2f} s from its write "
                  f"(limit {args.case_s + HANG_S_PER_MB * size / 1e6:.1f} s)")
        print("no exception")
        return 0
    names = args.targets.split(",") if args.targets else None
    signal.signal(signal.SIGTERM, _stop)
    res = run(args.cases, args.jobs, names, args.batch, args.seed, args.case_s, args.mem_mib)
    total = collections.Counter()
    print(f"\nfuzz: {sum(c.get('cases', 0) for c in res['targets'].values())} cases in {res['wall_s']:.0f} s, "
          f"peak worker RSS {res['peak_rss_mib']:.0f} MiB"
          + (f" (PARTIAL: stopped before the {args.cases} asked; batches not finished are not counted)"
             if res["partial"] else ""))
    cols = ("cases", "seconds", "generate_s", "project_errors", "escapes", "hangs", "over_budget", "crashes",
            "stderr_tracebacks")
    print(f"  {'target':<26} {'cases':>7} {'s':>6} {'gen s':>6} {'project':>8} {'escapes':>8} {'hangs':>6} {'over':>5} "
          f"{'crash':>6} {'stderr':>6}")
    for t, c in [*res["targets"].items(), ("all", total)]:
        if t != "all":
            total.update(c)
        cases, secs, gen, proj, esc, hangs, over, crash, tbs = (c.get(k, 0) for k in cols)
        print(f"  {t:<26} {cases:>7} {secs:>6.0f} {gen:>6.0f} {proj:>8} {esc:>8} {hangs:>6} {over:>5} {crash:>6} "
              f"{tbs:>6}")
    where = collections.Counter((e["where"] or "?", e["what"].split(":")[0]) for e in res["escapes"])
    for (w, what), k in where.most_common(args.show):
        ex = next(e["case"] for e in res["escapes"] if (e["where"] or "?") == w and e["what"].startswith(what))
        print(f"  {k:>4} x {what} at {w}   (--replay {ex})")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
