"""GPU-time accounting of an inference benchmark's summary (readers/trtexec_summary.py, analysis/inference_bench.py): no
time axis, only totals — the queries' summed GPU compute against the run's walltime, one GPU per run; the idle rest
is one `profile_idle` bucket (the causes a profile's idle time can have), its cause given by the findings the same
figures support."""

from __future__ import annotations

from playbook.analysis.accounting.buckets import MIN_FLOOR, Accounting, Bucket
from playbook.model import schema


def bench_accounting(bundle: schema.Bundle) -> Accounting | None:
    """The benchmark runs' walltime against their GPU compute (inference_bench.busy); the noise floor MIN_FLOOR, or
    the share of a run its first query's copy-in and last query's copy-out take (trtexec's walltime runs from the
    first H2D to the last D2H: those two no pipelining overlaps), whichever is larger. None without a run stating
    both."""
    from playbook.analysis.inference_bench import busy

    wall = comp = fill = 0.0
    names = []
    for src, served in schema.meta_sections(bundle.meta, schema.SERVING):
        for run in served.get("trtexec") or []:
            b = busy(run) if isinstance(run, dict) else None
            if b is None:
                continue
            wall, comp = wall + b[0], comp + b[1]
            ends = sum(float((run.get(k) or {}).get("mean") or 0.0) for k in ("h2d", "d2h"))
            fill = max(fill, ends / b[0])
            names.append(src.rsplit("/", 1)[-1])
    if wall <= 0:
        return None
    idle = wall - comp
    bucket = Bucket("profile_idle", idle / 1e3, share=idle / wall, names=names if len(names) > 1 else [],
                    detail=f"the GPU idle {idle / wall:.1%} of the benchmark's walltime (GPU compute "
                           f"{comp / 1e3:.4g} s of {wall / 1e3:.4g} s)")
    floor = max(MIN_FLOOR, fill)
    return Accounting("gpu", wall / 1e3, [bucket] if idle > 0 else [], floor,
                      f"run-to-run repeatability ({MIN_FLOOR:.0%}) or the copies at the run's two ends, "
                      "whichever is larger", span_s=wall / 1e3, figures="the benchmark's totals (trtexec)")
