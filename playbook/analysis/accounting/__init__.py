"""What-if accounting: every second of a run set against the same work at the run's own healthy pace.

    from playbook.analysis.accounting import account
    acc = account(bundle)          # Accounting | None
    acc.lost_share, [(b.kind, b.seconds) for b in acc.buckets]

Lost time = actual − what-if, split into buckets that add up to `lost_s`. The basis is the input's own time axis:
- **GPU time** (telemetry with utilization, or SM activity): G GPUs × the recorded span. The what-if GPU is busy at
  the level the same GPUs reach at work (the 90th percentile over time of the peers' median, the run's "busy
  level"); a GPU's shortfall is cut into buckets by where it sits: all GPUs below the busy level at the same
  moments (`fleet_drops`), one GPU below its peers at the same moments (`idle_gpu` when it idles throughout,
  `underused_gpu` when its deficit is significant, else jitter), a GPU that stops reporting while its peers report
  (`lost_gpu`), a steady level far below what a fed GPU reads (`steady_idle`: the busy level itself under
  STEADY_FED_PCT), polls at ≥ 90% utilization at under half the power the same GPU draws at work (`busy_wait`: a
  kernel spinning in a collective, not work) and busy polls at a clock well below the clock the same GPU reaches
  (`slow_clock`; on a GPU a limiter test named — throttle reasons, heat, a power cap — every busy poll below it,
  or, with no clock recorded, the clock its power implies).
  The buckets partition the basis: a GPU-second (one GPU, one grid bin) is its busy part (its utilization) and its
  idle part (the rest; all of it without a reading). `busy_wait` and `slow_clock` charge only work missing from the
  busy part (and never the same poll); every other bucket claims the idle part, and each cell's idle part is charged
  once, to the first claim in this order, later claims getting what is left: `lost_gpu` (nothing else is measured on
  a GPU that stopped), warm-up, `fleet_drops`, the GPU's own shortfall against its peers (`gpu_drops`, `idle_gpu`,
  `underused_gpu`), `steady_idle` last, as the run-wide level is what remains once the moments are explained. So
  ideal + warm-up + buckets == the basis, and the lost share is at most 1.
- **Wall time** (step logs without GPU telemetry), per rank: the what-if step is the rank's robust steady step
  time (the median of its steps after warm-up, the faster side of a level shift). Excess over it is cut into
  slow steps on a lattice (`recurring_slow`), other slow steps (`stalls`), the steps after a level shift
  (`level_shift`), time between steps the step timer does not see (`outside_timer`: start-to-start gaps against
  the durations), time in waiting phases of ordinary steps (`phase:data`, `phase:collective`, ...; waits are not
  work) and, for a loop of several named work stages that overlap (their sum past the step: a pipeline), the idle
  time of the pipeline (`stage_imbalance`: 1 − mean stage ÷ slowest stage); stages that add up to the step ran one
  after another (a colocated RL loop: every GPU in every stage) and are no loss. Ranks whose own timers leave out the wait for a persistent
  straggler (analysis/rank_waits.py) get that wait as their `phase:collective`, and the straggler's steady excess
  over its peers on the same work is `slow_rank`. Warm-up/compile is shown apart (`warmup_s`), not lost.
  These partition the basis too: a slow step's or a stretch's excess is at most the step's own time, an ordinary
  step's waits are charged at most its own time (in the order logged) and the stage imbalance at most what they
  left, and `outside_timer` per gap at most what the timed steps leave of it (a rank's wall time is its timed steps
  plus those untimed rests, at least its span). Waits a log timed outside the step (a loader timed before the step
  timer starts: the gaps' untimed rest tracks them) are charged to their phase from that rest, not to the step's
  time nor again to `outside_timer`.

The noise floor is the run's own jitter: the share of the basis that ordinary polls/steps spend below the busy
level / above the steady step while nothing is flagged (GPU time: OK GPUs' deficit against their peers; wall time:
unflagged steps' excess over the steady step), with a minimum of MIN_FLOOR. Nothing here names a cause: buckets
carry names, windows and the evidence a diagnosis attributes them with (playbook.diagnosis.attribution).
"""

from __future__ import annotations

from playbook.analysis.accounting.bench_time import bench_accounting
from playbook.analysis.accounting.buckets import MAX_WINDOWS, MIN_FLOOR, Accounting, Bucket
from playbook.analysis.accounting.gpu_time import (
    BUSY_Q,
    FED_PCT,
    SPIN_POWER,
    SPIN_UTIL,
    STEADY_FED_PCT,
    WORK_POWER_FLOOR,
    gpu_accounting,
    job_usage_accounting,
    profile_accounting,
)
from playbook.analysis.accounting.wall_time import epoch_wording, step_accounting
from playbook.analysis.gpu_limits import sm_basis, sm_wording
from playbook.analysis.rank_waits import COLLECTIVE_PHASES
from playbook.analysis.series import GpuSeries, gpu_series
from playbook.model import schema

__all__ = ["Accounting", "Bucket", "BUSY_Q", "COLLECTIVE_PHASES", "MAX_WINDOWS", "MIN_FLOOR", "SPIN_POWER",
           "SPIN_UTIL", "FED_PCT", "STEADY_FED_PCT", "WORK_POWER_FLOOR", "account", "bench_accounting", "gpu_accounting", "job_usage_accounting", "profile_accounting",
           "step_accounting"]


def account(bundle: schema.Bundle, interval_s: float | None = None,
            series: GpuSeries | None = None, marked_steps=(), clock_limited=None) -> Accounting | None:
    """The accounting of `bundle` on its best time axis: GPU telemetry, else step times; None without either.
    `marked_steps`: steps where an event that measures a cause was logged (step_times.warmup_steps); GPU time is
    counted on SM activity where gpu_limits.sm_basis says so; `clock_limited`: {GPU id: the share of its busy
    work its clock limiter costs} for the GPUs a limiter test named (gpu_accounting)."""
    tele = bundle.telemetry
    if len(tele):
        tele, on_sm = sm_basis(tele)
        series = None if tele is not bundle.telemetry else series  # (re)built on the basis counted
        if tele["util_pct"].notna().any():
            if series is None:
                cols = tuple(c for c in ("util_pct", "power_w", "power_limit_w", "sm_clock_mhz", "mem_used_mib")
                             if c in tele)
                series = gpu_series(tele, cols, interval_s=interval_s, models=bundle.meta.get(schema.GPU_MODELS))
            acc = gpu_accounting(series, bundle.events, clock_limited)
            if acc is not None and on_sm:
                sm_wording(acc, on_sm)
            if acc is not None:
                return acc
    if len(bundle.steps):
        epochs = schema.record_unit(bundle) == "epoch"
        acc = step_accounting(bundle.steps, marked_steps, bundle.events, epochs)
        if acc is not None and epochs:
            epoch_wording(acc)
        return acc
    return profile_accounting(bundle) or job_usage_accounting(bundle) or bench_accounting(bundle)
