"""The mechanisms the sixth held-out round (tests/data/eval/heldout6/SOURCES.md) asked for, each on inputs written
here (LABELED SYNTHETIC), apart from the round's own files: waits a log timed apart from its step, CamelCase keys,
copies and allocator calls in a torch.profiler table, Lightning's profiler report, thermal throttling read from
power without a clock, sections inside progress-bar windows, and a host whose CPUs are all busy while its GPUs idle."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from playbook.analysis import step_pace as sp
from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths
from playbook.readers.step_log.vocab import norm_key


def _steps(step_s: list[float], data_s: list[float]) -> pd.DataFrame:
    n = len(step_s)
    return pd.DataFrame({"rank": -1, "step": np.r_[np.arange(n), np.arange(n)],
                         "phase": ["step"] * n + ["data"] * n, "duration_s": np.r_[step_s, data_s]})


def test_waits_that_outlast_their_steps_were_timed_apart():
    d = np.full(40, 0.3)
    apart = [6.0 if i % 8 == 1 else 0.001 for i in range(40)]
    gaps = sp.waits_beside_timer(_steps(list(d), apart), -1, np.arange(40), d, 0)
    assert gaps.sum() == np.sum(apart[1:])  # every wait after the first line fills the gap before its line
    nested = [0.25 if i % 8 == 1 else 0.001 for i in range(40)]  # imagenet's Data inside Time: never longer
    assert not sp.waits_beside_timer(_steps(list(d), nested), -1, np.arange(40), d, 0).any()
    # a running mean printed as the step time lags a few long waits, but the waits sum to less than it
    lagging = [1.0 if i in (20, 21, 22) else 0.01 for i in range(40)]
    assert not sp.waits_beside_timer(_steps(list(d), lagging), -1, np.arange(40), d, 0).any()


def test_loader_time_beside_step_time_is_lost_time(tmp_path):
    path = tmp_path / "encoder.log"
    lines = [f"   | > Step:{s}  Loss:0.50000  AvgLoss:0.50000  GradNorm:30.00000  StepTime:1.00  "
             f"LoaderTime:{20.0 if s % 4 == 1 else 0.0:.2f}  AvGLoaderTime:5.00  LR:0.000100" for s in range(1, 81)]
    path.write_text("\n".join(lines) + "\n")
    d = diagnose(read_paths([str(path)]))
    assert d.verdict["id"] == ids.DATA_STARVATION
    assert d.accounting["lost_share"] > 0.8  # 20 s of every 24 s waits for the loader


def test_camel_case_keys_read_as_their_words():
    assert norm_key("StepTime") == "step_time"
    assert norm_key("CurrSamplesPerSec") == "curr_samples_per_sec"
    assert norm_key("LR") == "lr" and norm_key("data_time") == "data_time"


def _profile(path, rows: list[tuple[str, float, float]]) -> str:
    """A torch.profiler key_averages() table (CPU and CUDA columns): rows (name, self CPU s, self CUDA s)."""
    cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self CUDA", "Self CUDA %",
            "CUDA total", "CUDA time avg", "# of Calls"]
    rule = "-" * 45 + "  " + "  ".join("-" * 12 for _ in cols)
    cpu, cuda = sum(r[1] for r in rows), sum(r[2] for r in rows)
    out = [rule, f"{'Name':>45}  " + "  ".join(f"{c:>12}" for c in cols), rule]
    for name, c, g in rows:
        cells = [f"{100 * c / cpu:.2f}%", f"{c:.3f}s", f"{100 * c / cpu:.2f}%", f"{c:.3f}s", f"{c / 100:.3f}s",
                 f"{g:.3f}s", f"{100 * g / cuda:.2f}%", f"{g:.3f}s", f"{g / 100:.3f}s", "100"]
        out.append(f"{name:>45}  " + "  ".join(f"{x:>12}" for x in cells))
    path.write_text("\n".join(out + [rule, f"Self CPU time total: {cpu:.3f}s", f"Self CUDA time total: {cuda:.3f}s"])
                    + "\n")
    return str(path)


def test_profiled_copies_host_to_device_are_h2d_and_allocator_calls_memory_pressure(tmp_path):
    work = [("aten::mm", 1.0, 0.0), ("sm80_xmma_gemm_f32f32", 0.0, 3.0), ("cudaLaunchKernel", 0.5, 0.0)]
    h2d = diagnose(read_paths([_profile(tmp_path / "h2d.txt", work + [
        ("cudaMemcpyAsync", 12.0, 0.0), ("Memcpy HtoD (Pageable -> Device)", 0.0, 2.0), ("cudaMalloc", 2.0, 0.0)])]))
    assert h2d.verdict["id"] == ids.H2D_COPY
    assert ids.MEMORY_PRESSURE in [h["id"] for h in h2d.hypotheses]
    assert h2d.accounting["lost_share"] > 0.5  # the GPU busy 5 s of a 15.5 s profiled window at most
    # the same CPU time waiting on copies back to the host is the host asking for results: no pinning fixes it
    d2h = diagnose(read_paths([_profile(tmp_path / "d2h.txt", work + [
        ("cudaMemcpyAsync", 12.0, 0.0), ("Memcpy DtoH (Device -> Pageable)", 0.0, 0.5)])]))
    assert ids.H2D_COPY not in [h["id"] for h in d2h.hypotheses]


def _fit_report(path, loader_s: float) -> str:
    rows = [("run_training_epoch", 1, 100.0), ("[_TrainingEpochLoop].train_dataloader_next", 50, loader_s),
            ("[Strategy]SingleDeviceStrategy.training_step", 50, 30.0)]
    w = max(len(a) for a, _, _ in rows)

    def row(a, m, n, t, p):
        return f"|  {a:<{w}s}\t|  {m:<15}\t|  {n:<15}\t|  {t:<15}\t|  {p:<15}\t|"

    head = row("Action", "Mean duration (s)", "Num calls", "Total time (s)", "Percentage %")
    sep = "-" * len(head.expandtabs())
    body = [row(a, f"{t / n:.5}", str(n), f"{t:.5}", f"{t:.5}") for a, n, t in rows]
    path.write_text("\n".join(["FIT Profiler Report", "", sep, head, sep, row("Total", "-", "101", "101.0", "100 %"),
                               sep, *body, sep, ""]))
    return str(path)


def test_lightning_report_waiting_for_batches_is_starvation(tmp_path):
    starved = diagnose(read_paths([_fit_report(tmp_path / "starved.txt", 60.0)]))
    assert starved.verdict["id"] == ids.DATA_STARVATION
    fed = diagnose(read_paths([_fit_report(tmp_path / "fed.txt", 1.0)]))
    assert ids.DATA_STARVATION not in [h["id"] for h in fed.hypotheses]


def _smi(path, temp, power, limit=250.0) -> str:
    t0 = datetime(2024, 5, 1, 12, 0, 0)
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W], temperature.gpu"]
    for k, (c, w) in enumerate(zip(temp, power, strict=True)):
        rows.append(f"{t0 + timedelta(seconds=5 * k):%Y/%m/%d %H:%M:%S}.000, 0, 99 %, {w:.2f} W, {limit:.2f} W, {c:.0f}")
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_busy_power_falling_at_the_top_temperature_is_thermal_throttling(tmp_path):
    rng = np.random.default_rng(6)
    heat = np.r_[np.linspace(45, 84, 30), np.full(90, 84.0)] + rng.choice([-1, 0, 0, 1], 120) * (np.arange(120) >= 30)
    power = np.r_[np.full(30, 236.0), np.full(90, 180.0)] + rng.normal(0, 3, 120)
    held = diagnose(read_paths([_smi(tmp_path / "held.csv", heat, power)]))
    assert held.verdict["id"] == ids.THROTTLING
    # the same power fall with the GPU cooling: a lighter load, not a limiter
    cooling = np.r_[np.linspace(45, 84, 30), np.linspace(84, 60, 90)]
    lighter = diagnose(read_paths([_smi(tmp_path / "lighter.csv", cooling, power)]))
    assert lighter.verdict["id"] != ids.THROTTLING


def test_an_evaluation_inside_a_progress_bar_window_is_not_training(tmp_path):
    lines, t = [], 0.0
    for step in range(10, 410, 10):
        t += 10 * 1.5
        lines.append(f" {step // 4:2d}%|██        | {step}/400 [{int(t) // 60:02d}:{int(t) % 60:02d}<10:00, {t / step:.2f}s/it]")
        lines.append("{'loss': 1.2, 'learning_rate': 1e-05, 'epoch': 0.1}")
        t += 6.0
        lines.append("{'eval_loss': 1.3, 'eval_runtime': 6.0, 'eval_samples_per_second': 80.0, 'epoch': 0.1}")
    path = tmp_path / "trainer.log"
    path.write_text("\n".join(lines) + "\n")
    d = diagnose(read_paths([str(path)]))
    assert d.verdict["id"] == ids.PERIODIC_STALL
    assert 0.2 < d.accounting["lost_share"] < 0.35  # 6 s of every 21 s


def _host(path, cpu_busy: int) -> str:
    t0 = datetime(2024, 5, 1, 12, 0, 0)
    rows = ["procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu----- -----timestamp-----",
            " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st                 UTC"]
    for k in range(60):
        us = cpu_busy - 8
        rows.append(f"40  0      0 3800000  10000 6200000    0    0  2000    20 45000 200000 {us:2d}  8 "
                    f"{100 - us - 8:2d}  0  0 {t0 + timedelta(seconds=5 * k):%Y-%m-%d %H:%M:%S}")
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_gpus_idle_while_every_core_is_busy_wait_on_the_host(tmp_path):
    gpu = tmp_path / "gpu.csv"
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W]"]
    t0 = datetime(2024, 5, 1, 12, 0, 0)
    rows += [f"{t0 + timedelta(seconds=5 * k):%Y/%m/%d %H:%M:%S}.000, 0, {8 + k % 3} %, 110.00 W, 700.00 W"
             for k in range(60)]
    gpu.write_text("\n".join(rows) + "\n")
    saturated = diagnose(read_paths([str(gpu), _host(tmp_path / "busy.txt", 97)]))
    assert saturated.verdict["id"] == ids.DATA_STARVATION
    spare = diagnose(read_paths([str(gpu), _host(tmp_path / "spare.txt", 30)]))
    assert spare.verdict["id"] == ids.UNEXPLAINED_SLOWDOWN  # CPUs to spare: telemetry cannot say why
