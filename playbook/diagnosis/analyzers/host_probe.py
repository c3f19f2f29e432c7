"""Analyzers: host-probe activity (disk, CPU, network) during the utilization drops; a host whose every core is
busy while its GPUs idle."""

from __future__ import annotations

import numpy as np

from playbook.analysis.coincidence import host_during_dips
from playbook.analysis.stats import binom_sf, effective_n, lag1
from playbook.diagnosis.analyzers.base import Analyzer
from playbook.diagnosis.context import STEADY_BUSY_MIN, Run
from playbook.diagnosis.evidence import from_coincidence as coincidence
from playbook.diagnosis.ranking import confidence, impact, support

SATURATED_CPU_PCT = 90.0  # all cores busy (vmstat us + sy, mpstat's all row): no CPU left for the input pipeline


class HostInDips(Analyzer):
    """Host-probe activity (disk, CPU, network) during the utilization drops."""

    name = "host-probe comparison"

    def analyze(self, run: Run) -> None:
        osc = run.osc
        if osc is None or not osc.detected or not len(run.bundle.host):
            return
        metrics = host_during_dips(run.bundle.host, osc.dips_s, osc.t0)
        evidence = coincidence.from_host(metrics, osc.lost_fraction)
        run.findings += evidence
        run.detail["host_in_dips"] = metrics
        run.detail["drop_causes"] = sorted({e.hypothesis for e in evidence})  # measured at the drops themselves


class HostSaturated(Analyzer):
    """GPUs below a fed loop's level (STEADY_BUSY_MIN) while their host's CPUs are all busy (SATURATED_CPU_PCT) over
    the same span: a sign test that the host's samples sit saturated more often than not, their count deflated
    by lag-1 autocorrelation. The loop waits on host work: an input pipeline that is CPU-bound (decoding,
    augmentation, DataLoader workers whose threads oversubscribe the cores, Hy2DL#48) or other programs taking the
    CPUs (CenterNet#604)."""

    name = "host CPU saturation"

    def analyze(self, run: Run) -> None:
        host, report, tele = run.bundle.host, run.gpu_report, run.bundle.telemetry
        if not len(host) or report is None or not len(report.table) or not len(tele) or "cpu_pct" not in host:
            return
        util = report.table["mean_util_pct"].astype(float)
        if not util.notna().any() or util.mean() >= STEADY_BUSY_MIN:
            return
        span = host["time"].between(tele["time"].min(), tele["time"].max())
        cpu = host.loc[span, "cpu_pct"].astype(float).dropna().to_numpy()
        if len(cpu) < 8:
            return
        n = int(round(effective_n(len(cpu), lag1(cpu), floor=3.0)))
        share = float(np.mean(cpu >= SATURATED_CPU_PCT))
        p = binom_sf(int(round(share * n)), n, 0.5)
        if share <= 0.5:
            return
        lost = float(1 - util.mean() / 100.0)
        run.findings += support("host_cpu_saturated", confidence(p), impact(lost), (
            f"the host's CPUs are all busy (≥ {SATURATED_CPU_PCT:.0f}%, mean {np.mean(cpu):.0f}%) in {share:.0%} of "
            f"{len(cpu)} samples while the GPUs run at {util.mean():.0f}%: the loop waits on host work — a CPU-bound "
            "input pipeline (decoding, augmentation, DataLoader workers whose threads oversubscribe the cores: set "
            "OMP_NUM_THREADS / torch.set_num_threads(1) in worker_init_fn) or other programs taking the CPUs"),
            p_value=p, lost=lost)
