"""Folder benchmark: reading a folder of many small files is linear in the number of files (issue 17).

The exact command
    python benchmarks/folders.py                 # 500 and 2,000 files of 5 nvidia-smi rows each
    python benchmarks/folders.py --files 1000 10000

How to read the result
    One line per folder size: wall time read in one process and by the pool of forked processes read_paths uses
    past readers.PARALLEL_FILES files (side by side, same folder), time per file, and the pooled per-file time as a
    ratio to the smallest folder's (≈ 1 when linear; it grew with N when every file was concatenated and sorted
    into the bundle on its own). Then the merge alone: N one-file bundles merged one at a time (Bundle.extend) vs
    at once (extend_all). The load average is printed: on a busy machine the pool has fewer free cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def make(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        rows = "".join(f"2024/01/15 10:{i // 60 % 60:02d}:{k:02d}.000, {i % 8}, {50 + k} %\n" for k in range(5))
        (folder / f"n{i:05d}.csv").write_text("timestamp, index, utilization.gpu [%]\n" + rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--files", type=int, nargs="+", default=[500, 2000])
    args = ap.parse_args()
    import playbook.readers as readers
    from playbook.model import schema
    from playbook.readers import read_file, read_paths

    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.files:
            folder = Path(tmp) / f"f{n}"
            make(folder, n)
            walls = {}
            for how, threshold in (("one process", 1 << 62), ("pool", readers.PARALLEL_FILES)):
                readers.PARALLEL_FILES = threshold
                t0 = time.perf_counter()
                b = read_paths([folder])
                walls[how] = time.perf_counter() - t0
            per = walls["pool"] / n
            base = base or per
            print(f"{n:>6} files: one process {walls['one process']:6.1f} s, pool {walls['pool']:6.1f} s "
                  f"(x{walls['one process'] / walls['pool']:.2f}), {per * 1e3:5.2f} ms/file, x{per / base:.2f} the "
                  f"smallest's per file ({len(b.telemetry)} rows, load {os.getloadavg()[0]:.1f} on "
                  f"{os.cpu_count()} CPUs)")
        one = read_file(Path(tmp) / f"f{args.files[0]}" / "n00000.csv")
        n = args.files[0]
        pieces = [schema.Bundle(inputs=[f"f{i}"], telemetry=one.telemetry.assign(host=f"h{i}")) for i in range(n)]
        t0 = time.perf_counter()
        acc = schema.Bundle()
        for p in pieces:
            acc.extend(p)
        each = time.perf_counter() - t0
        t0 = time.perf_counter()
        schema.Bundle().extend_all(pieces)
        once = time.perf_counter() - t0
        print(f"merge of {n} bundles: one at a time {each:.2f} s, at once {once:.2f} s (x{each / once:.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
