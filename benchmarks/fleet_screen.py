"""Fleet screen vs raw pull, side by side, against a real Prometheus holding a backfilled fleet.

(docstring completed below)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

END = 1_767_225_600.0  # 2026-01-01T00:00Z: fixed, so the cached TSDB stays valid
COLUMNS = ("util_pct", "power_w", "sm_clock_mhz")


def build(cache: Path, gpus: int, hours: float, step: float) -> Path:
    """The backfilled TSDB of promserver.culprit_fleet (kept in `cache`; rebuilt only when absent)."""
    from promserver import backfill, culprit_fleet, write_openmetrics

    tsdb = cache / "tsdb"
    if (tsdb / "done").exists():
        return tsdb
    cache.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    frame, _truth, xids = culprit_fleet(max(1, gpus // 8), hours * 3600.0, step, END)
    text = write_openmetrics(cache / "fleet.om", [(frame, {"job": "dcgm"})], xids=xids, columns=COLUMNS)
    del frame
    t_write = time.perf_counter() - t
    t = time.perf_counter()
    backfill(text, tsdb, timeout_s=7200)
    text.unlink()
    (tsdb / "done").write_text("ok")
    print(f"backfill: OpenMetrics written in {t_write:.0f} s, promtool {time.perf_counter() - t:.0f} s", flush=True)
    return tsdb


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", type=int, default=1024)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--step", type=float, default=30.0)
    ap.add_argument("--cache", default="/tmp/playbook-bench-fleet-screen")
    ap.add_argument("--build-only", action="store_true")
    args = ap.parse_args(argv)
    tag = f"{args.gpus}gpu-{args.hours:g}h-{args.step:g}s"
    tsdb = build(Path(args.cache) / tag, args.gpus, args.hours, args.step)
    if args.build_only:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
