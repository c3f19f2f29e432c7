"""The accounting's data model: a `Bucket` of lost time and the run's `Accounting` (see playbook.analysis.accounting)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

# A loss under 1% of the basis is within the run-to-run repeatability of a training job's throughput (repeated
# runs of the same job on the same nodes vary by 1-2%): below it no loss is called, whatever the jitter says.
MIN_FLOOR = 0.01
MAX_WINDOWS = 8


@dataclass
class Bucket:
    """One slice of the lost time: `kind`, seconds (GPU-seconds on the GPU basis, wall-seconds on the wall
    basis), share of the basis (0-1), the GPUs/ranks involved, time windows (seconds since the run's start),
    the steps involved (step-based buckets) and a short phrase saying what it is."""

    kind: str
    seconds: float
    share: float = 0.0
    names: list[str] = field(default_factory=list)
    windows: list[tuple[float, float]] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    detail: str = ""
    cause: str = "unexplained"
    evidence: str = ""
    direct: bool = False  # the cause is measured on the bucket itself (its phase, events at it), not inferred
    tied: list[tuple[str, float]] = field(default_factory=list)  # unexplained: (cause, score) its findings support
    # alike, none on an observation of its own (diagnosis.attribution), best first

    def to_dict(self) -> dict:
        """The bucket as the JSON contract's object."""
        return {"kind": self.kind, "seconds": round(self.seconds, 3), "share": round(self.share, 4),
                "cause": self.cause, "names": list(self.names[:16]),
                "windows": [[round(a, 1), round(b, 1)] for a, b in self.windows[:MAX_WINDOWS]],
                "steps": list(self.steps[:16]), "detail": self.detail, "evidence": self.evidence}


@dataclass
class Accounting:
    """The run's time: `basis` "gpu" (GPU-seconds) or "wall" (rank wall-seconds), the total, the what-if
    (`ideal_s` = wall − lost − warm-up), the buckets, the noise floor (share, 0-1) and how it was measured."""

    basis: str
    wall_s: float
    buckets: list[Bucket]
    noise_floor_share: float
    noise_floor: str
    warmup_s: float = 0.0
    span_s: float = 0.0
    units: int = 1
    t0: pd.Timestamp | None = None  # the time windows count from (UTC), None without timestamps
    interval_s: float = 0.0  # the grid's or the steps' resolution: how near an event must be to a window
    step_gap: int = 1  # steps a logged step line stands for (the median gap between logged step numbers)
    busy_pct: float = float("nan")  # GPU basis: the busy level (%), what the what-if GPU reaches at work
    unit_names: list[str] = field(default_factory=list)  # GPU basis: the GPUs counted (ids), in order
    unit_models: list[str] = field(default_factory=list)  # their product names ("" where the input names none)
    figures: str = ""  # what the accounting reads when it is not samples over time (a job's usage figures)
    record: str = "step"  # wall basis: what one row stands for, "step" or "epoch" (schema.record_unit)
    after_end_s: float = 0.0  # GPU basis: seconds of the recording after the job's last work, not counted

    @property
    def lost_s(self) -> float:
        return float(sum(b.seconds for b in self.buckets))

    @property
    def lost_share(self) -> float:
        return float(self.lost_s / self.wall_s) if self.wall_s > 0 else 0.0

    @property
    def ideal_s(self) -> float:
        return max(self.wall_s - self.lost_s - self.warmup_s, 0.0)

    @property
    def significant(self) -> bool:
        """True when the loss is above the noise floor."""
        return self.lost_share > self.noise_floor_share

    def to_dict(self) -> dict:
        """The `accounting` object of the JSON contract."""
        return {"basis": self.basis, "wall_s": round(self.wall_s, 3), "ideal_s": round(self.ideal_s, 3),
                "lost_s": round(self.lost_s, 3), "lost_share": round(self.lost_share, 4),
                "noise_floor_share": round(self.noise_floor_share, 4), "noise_floor": self.noise_floor,
                "warmup_s": round(self.warmup_s, 3), "span_s": round(self.span_s, 3), "units": self.units,
                "after_end_s": round(self.after_end_s, 3),
                "buckets": [b.to_dict() for b in sorted(self.buckets, key=lambda b: -b.seconds)]}


def merged_windows(buckets: list[Bucket], tol: float) -> list[Bucket]:
    """The buckets with touching windows (within `tol` s) merged into stretches, at most MAX_WINDOWS kept (the
    longest)."""
    for b in buckets:
        out: list[list[float]] = []
        for a, z in sorted(b.windows):
            if out and a <= out[-1][1] + tol:
                out[-1][1] = max(out[-1][1], z)
            else:
                out.append([a, z])
        out.sort(key=lambda w: w[0] - w[1])
        b.windows = sorted((float(a), float(z)) for a, z in out[:MAX_WINDOWS])
    return buckets
