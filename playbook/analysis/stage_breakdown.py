"""A record's time split into named stages (readers/stage_breakdown_text.py) → a finding for `playbook diagnose`.
The stages on the input side (sampling a graph's neighbourhoods, extracting or gathering features, loading,
transferring to the device) are time the model's work waits for its batch where the pipeline runs them in line —
as a GNN trainer that samples, gathers, then trains does. Their share of the records' time, pooled (their seconds
over the records' seconds), is data_starvation at that share (at profiler_ops' levels); the stage that weighs most is
named. A breakdown whose input side is small finds nothing."""

from __future__ import annotations

from collections.abc import Callable

from playbook.knowledge import ids as cause_ids


def findings(source: str, records: list[dict], out: list[dict], level: Callable[[float], str | None]) -> None:
    """Append the finding of one file's stage breakdowns (module docstring) to `out`."""
    total = sum(r["total_s"] for r in records)
    if not records or total <= 0:
        return
    by_stage: dict[str, float] = {}
    for r in records:
        for name, sec, side in r["stages"]:
            if side == "input":
                by_stage[name.lower()] = by_stage.get(name.lower(), 0.0) + sec
    share = min(sum(by_stage.values()) / total, 1.0)
    if not by_stage or not (lvl := level(share)):
        return
    model = sum(sec for r in records for _, sec, side in r["stages"] if side == "model")
    parts = ", ".join(f"{n} {s:.3g} s" for n, s in sorted(by_stage.items(), key=lambda x: -x[1]))
    out.append({"hypothesis": cause_ids.DATA_STARVATION, "level": lvl, "share": share, "evidence": (
        f"stage breakdowns in {source}: {len(records)} record(s) of {total:.3g} s in all, the input side ({parts}) "
        f"{share:.0%} of it" + (f", the model's work {model:.3g} s ({model / total:.0%})" if model else "")
        + ": the model waits while its batches are produced — sample and gather on the device or in parallel "
          "workers, keep features where the model runs, prefetch the next batch while this one trains")})
