"""Profiler outputs beyond nsys stats CSV and Kineto (tests/data/profiler_outputs, see its SOURCES.md): rocprof v1
and rocprofv3 CSV files (real excerpts), nsys SQLite exports and a cuda_kern_exec_sum report (generated from the
documented schema by make_fixtures.py). Each case's correct reading is in expected.json; every case is scored the
same way: detection, the profile summary (playbook.analysis.nsys_profiles) and the trace table."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from playbook.analysis import nsys_profiles
from playbook.core.errors import InputError
from playbook.knowledge import ids as cause_ids
from playbook.readers import detect, read_paths

RUNTIME = {"cuda_runtime", "cuda_driver", "hip_runtime", "Runtime"}
SRC = Path(__file__).parents[1] / "data" / "profiler_outputs"
EXPECTED = json.loads((SRC / "expected.json").read_text())["cases"]


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory):
    return build_cases(tmp_path_factory.mktemp("profiler_outputs"))


def build_cases(out: Path) -> Path:
    """The committed cases plus the generated ones (make_fixtures.py) in one folder, `out`."""
    shutil.copytree(SRC, out, dirs_exist_ok=True)
    spec = importlib.util.spec_from_file_location("pf_make_fixtures", SRC / "make_fixtures.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    gen = out / "generated"
    (gen / "nsys_stats").mkdir(parents=True)
    make.write_sqlite(gen / "train_2024.sqlite", "2024")
    make.write_sqlite(gen / "train_2021.sqlite", "2021")
    make.write_json(gen / "train.json")
    make.write_json(gen / "train_separate_strings.json", separate_strings=True)
    (gen / "nsys_stats" / "train_cuda_kern_exec_sum.csv").write_text(make.kern_exec_sum_csv())
    (gen / "4242_results.json").write_text(make.rocprofv3_json())
    (gen / "rocpd").mkdir()
    make.write_rocpd(gen / "rocpd" / "4242_results.db")
    whole = (gen / "train_2024.sqlite").read_bytes()
    (gen / "damaged.sqlite").write_bytes(whole[:100] + b"\x00garbage" * 64)  # header kept, pages gone
    db = sqlite3.connect(gen / "other.sqlite")
    db.execute("CREATE TABLE results (x INTEGER)")
    db.commit()
    db.close()
    return out


def _path(root, p):
    return root / "generated" / p[1:] if p.startswith("@") else root / p


def _busy_ms(trace) -> float:
    """Union of the GPU work intervals (kernels, copies, memsets) per rank, ms."""
    work = trace[trace["cat"].astype(str).isin({"kernel", "gpu_memcpy", "gpu_memset"})]
    total = 0.0
    for _, g in work.groupby("rank"):
        iv = sorted(zip(g["ts_us"].to_numpy(), (g["ts_us"] + g["dur_us"]).to_numpy(), strict=True))
        end = -math.inf
        for a, b in iv:
            if b <= end:
                continue
            total += b - max(a, end)
            end = b
    return total / 1e3


def measure(root, case: dict) -> dict:
    """The figures the project reads from a case (the keys of expected.json)."""
    paths = [_path(root, p) for p in case["paths"]]
    got: dict = {"reader": {}}
    for p in paths:
        for f in ([p] if p.is_file() else sorted(x for x in p.iterdir() if x.is_file())):
            try:
                got["reader"][f.name] = detect.detect(f)
            except Exception as exc:  # noqa: BLE001 - scored, not raised
                got["reader"][f.name] = type(exc).__name__
    bundle = read_paths(paths)
    s = nsys_profiles.summarize(bundle) or {"profiles": [], "findings": []}
    kern = [p["kernels"] for p in s["profiles"] if p.get("kernels")]
    if kern:
        got["kernel_ms"] = sum(k["total_ms"] for k in kern)
        got["kernel_instances"] = sum(k["instances"] for k in kern)
        got["top_kernel"] = max(kern, key=lambda k: k["total_ms"])["top"][0]["name"]
    api = [p["api"] for p in s["profiles"] if p.get("api")]
    if api:
        got["launches"] = sum(a["launches"] for a in api)
        got["launch_ms"] = sum(a["launch_ms"] for a in api)
        got["api_top"] = api[0]["top"][0]["name"]
    mem = [p["memops"] for p in s["profiles"] if p.get("memops")]
    for key in ("htod_ms", "dtoh_ms", "pageable_copies"):
        vals = [m[key] for m in mem if m.get(key) is not None]
        if vals:
            got[key] = sum(vals)
    steps = [p["nvtx"].get("steps") for p in s["profiles"] if p.get("nvtx")]
    if any(steps):
        got["steps"] = sum(x or 0 for x in steps)
    t = bundle.trace
    cat = t["cat"].astype(str)
    got["trace_kernels"] = int((cat == "kernel").sum())
    got["trace_copies"] = int((cat == "gpu_memcpy").sum())
    got["trace_api"] = int(cat.isin(RUNTIME).sum())
    got["gpu_busy_ms"] = _busy_ms(t) if len(t) else 0.0
    got["findings"] = sorted({f["hypothesis"] for f in s["findings"]})
    got["profiles"] = len(s["profiles"])
    return got


def check(root, case: dict) -> list[str]:
    """What the reading got wrong (empty: the case passes)."""
    if "error" in case:
        try:
            read_paths([_path(root, p) for p in case["paths"]])
        except InputError as exc:
            msg = str(exc)
            return [] if case["error"] in msg and "\n" not in msg and "Traceback" not in msg else [f"error {msg!r}"]
        except Exception as exc:  # noqa: BLE001 - a traceback is a failure
            return [f"{type(exc).__name__}: {exc}"]
        return ["no error raised"]
    try:
        got = measure(root, case)
    except Exception as exc:  # noqa: BLE001
        return [f"{type(exc).__name__}: {str(exc)[:200]}"]
    wrong = []
    for key, want in case.items():
        if key in ("paths", "generated"):
            continue
        if key == "reader":
            bad = {k: got["reader"].get(k) for k, v in want.items() if got["reader"].get(k) != v}
            if bad:
                wrong.append(f"reader {bad}")
        elif key == "findings":
            missing = set(want) - set(got["findings"])
            if missing:
                wrong.append(f"findings missing {sorted(missing)} (got {got['findings']})")
        elif key == "absent":
            there = [k for k in want if got.get(k) is not None]
            if there:
                wrong.append(f"read what the file does not hold: {there}")
        elif key == "no_findings":
            extra = set(want) & set(got["findings"])
            if extra:
                wrong.append(f"unexpected findings {sorted(extra)}")
        elif isinstance(want, str):
            if want not in str(got.get(key, "")):
                wrong.append(f"{key}: {got.get(key)!r}, want {want!r}")
        elif got.get(key) is None or not np.isclose(got[key], want, rtol=1e-3, atol=1e-3):  # summaries print µs
            wrong.append(f"{key}: {got.get(key)!r}, want {want!r}")
    return wrong


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_case_is_read_as_expected(cases_dir, name):
    assert check(cases_dir, EXPECTED[name]) == []


def test_sqlite_is_read_in_bounded_chunks(cases_dir, monkeypatch):
    """Small chunks give the same reading; past the row cap the trace is cut with a counted warning while the SQL
    summaries still cover every kernel."""
    from playbook.readers import nsys_sqlite
    db = cases_dir / "generated" / "train_2024.sqlite"
    whole = nsys_sqlite.read(db)
    monkeypatch.setattr(nsys_sqlite, "CHUNK", 7)
    chunked = nsys_sqlite.read(db)
    assert chunked.trace[["cat", "name", "ts_us", "dur_us", "rank"]].equals(
        whole.trace[["cat", "name", "ts_us", "dur_us", "rank"]])
    monkeypatch.setattr(nsys_sqlite, "MAX_TRACE_ROWS", 100)
    cut = nsys_sqlite.read(db)
    assert (cut.trace["cat"].astype(str) == "kernel").sum() == 100
    assert any("4,500 rows" in w and "first 100" in w for w in cut.warnings)
    kern = cut.meta[next(iter(cut.meta))]["reports"]["cuda_gpu_kern_sum"]
    assert sum(r["count"] for r in kern) == 4500


def test_rocprof_bad_rows_are_counted_not_dropped_silently(tmp_path):
    text = (SRC / "rocprofv3_jacobi" / "5201_kernel_trace.csv").read_text().splitlines()
    text[2] = text[2].rsplit(",", 3)[0]  # a row cut short
    text[3] = text[3].replace(",5329321979199278,", ",5329320000000000,")  # ends before it starts
    p = tmp_path / "77_kernel_trace.csv"
    p.write_text("\n".join(text) + "\n")
    b = read_paths([p])
    assert (b.trace["cat"].astype(str) == "kernel").sum() == 7
    assert any("skipped 2 of 9 rows" in w for w in b.warnings)


def test_a_plain_table_with_name_count_total_is_not_taken_for_rocprof(tmp_path):
    """rocprof's stats header is told by its unit-suffixed durations (TotalDurationNs), not by the words alone."""
    from playbook.readers import rocprof
    assert not rocprof.sniff("name,count,total\nfoo,3,4\n")
    assert rocprof.sniff('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n"k",1,2,2,100.0\n')


def test_rocprof_hostile_lines_are_skipped_with_a_count(tmp_path):
    """An over-long field (past csv's field limit) or a stray quote costs one counted row, never a traceback."""
    head = '"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    good = '"HIP_RUNTIME_API","hipLaunchKernel",1,1,{c},{a},{b}\n'
    text = head + good.format(c=1, a=100, b=200) + '"HIP_RUNTIME_API","' + "x" * 300_000 + '",1,1,2,300,400\n' \
        + '"HIP_RUNTIME_API,"hipFree",1,1,3,500,600\n' + good.format(c=4, a=700, b=800)
    p = tmp_path / "9_hip_api_trace.csv"
    p.write_text(text)
    b = read_paths([p])
    assert list(b.trace["correlation"]) == [1.0, 4.0]
    assert any("skipped 2 of 4 rows" in w for w in b.warnings)


def test_nsys_json_cut_string_table_and_row_cap_are_said(cases_dir, tmp_path, monkeypatch):
    """A string table cut short (longer than a line may be) leaves names as string ids, with a warning; past the
    row cap the trace is cut with a warning while the summaries still count every kernel."""
    from playbook.readers import nsys_json
    lines = (cases_dir / "generated" / "train.json").read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith('{"data":['))
    lines[at] = lines[at][: len(lines[at]) // 2]  # what textio.iter_lines leaves of a table past MAX_LINE_CHARS
    path = tmp_path / "cut.json"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(nsys_json, "MAX_TRACE_ROWS", 50)
    b = nsys_json.read(path)
    kern = b.meta[next(iter(b.meta))]["reports"]["cuda_gpu_kern_sum"]
    assert sum(r["count"] for r in kern) == 4500 and all(r["name"].startswith("#") for r in kern)
    assert len(b.trace) == 50
    assert any("names stay string ids" in w for w in b.warnings)
    assert any("first 50" in w for w in b.warnings)


def test_roctx_ranges_give_the_step_shares(tmp_path):
    """rocprofv3 --marker-trace rows (roctxRangePush "step N" / "data", the docs' layout) are the profile's ranges:
    3 steps of 10 ms, each after a 2 ms "data" wait, make the data phase 1/6 of the iteration."""
    head = '"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    rows, t = [], 1_000_000_000
    for i in range(3):
        rows.append(f'"MARKER_CORE_API","data",7,7,{2 * i + 1},{t},{t + 2_000_000}')
        rows.append(f'"MARKER_CORE_API","step {i + 1}",7,7,{2 * i + 2},{t + 2_000_000},{t + 12_000_000}')
        t += 12_000_000
    rows.append(f'"MARKER_CORE_API","checkpoint saved",7,7,9,{t},{t}')  # a mark: no length, not a range
    (tmp_path / "7_marker_api_trace.csv").write_text(head + "\n".join(rows) + "\n")
    s = nsys_profiles.summarize(read_paths([tmp_path]))
    (profile,) = s["profiles"]
    assert profile["tool"] == "rocprof" and profile["nvtx"]["steps"] == 3
    assert profile["nvtx"]["phase_share"]["data"] == pytest.approx(1 / 6, abs=1e-3)
    assert [f["hypothesis"] for f in s["findings"]] == [cause_ids.DATA_STARVATION]


def test_compressed_sqlite_is_a_one_line_error(cases_dir, tmp_path):
    """A gzipped database sniffs as SQLite (detection decompresses) but SQLite reads plain files: say so."""
    import gzip
    path = tmp_path / "train.sqlite.gz"
    path.write_bytes(gzip.compress((cases_dir / "generated" / "train_2024.sqlite").read_bytes()))
    with pytest.raises(InputError, match="compressed SQLite database") as err:
        read_paths([path])
    assert "\n" not in str(err.value)
