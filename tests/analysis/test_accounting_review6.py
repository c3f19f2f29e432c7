"""review6: adversarial per-rank step logs for the straggler waits (playbook.analysis.rank_waits), LABELED SYNTHETIC,
each with a known truth: healthy runs that must stay healthy, and a losing run's size."""

from __future__ import annotations

import datetime as dt

import numpy as np

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths

T0 = dt.datetime(2026, 12, 4, 3, 0, 0)


def _write(tmp_path, work: np.ndarray, ends: np.ndarray | None = None, every: int = 1):
    """One log per rank: a line per `every` steps with the mean of their times (`work`, steps x ranks, seconds of
    each rank's own work: the timer leaves the wait out), stamped at `ends` (seconds since T0) when given."""
    for r in range(work.shape[1]):
        lines = []
        for s in range(every - 1, len(work), every):
            stamp = "" if ends is None else (T0 + dt.timedelta(seconds=float(ends[s, r]))).strftime(
                "%Y-%m-%d %H:%M:%S,%f")[:-3] + " INFO "
            lines.append(f"{stamp}[rank{r}] step {s + 1} loss 2.31 compute_time "
                         f"{work[s - every + 1:s + 1, r].mean():.3f}s\n")
        (tmp_path / f"rank{r}.log").write_text("".join(lines))
    return diagnose(read_paths([str(tmp_path)]))


def _kinds(d) -> set[str]:
    return {b["kind"] for b in d.accounting["buckets"]}


def test_a_small_bias_under_jitter_is_not_a_straggler(tmp_path):
    # 8 equal ranks with 4% step-to-step jitter, rank 0 1.5% slower (it also logs): rank 0 is slowest more often than
    # rotation explains, but its own excess is 1.5%, under the 5% a straggler needs; the per-step spread of the
    # slowest of 8 (~6%) is jitter. First try: collective_straggler naming the seven ranks that waited, 5.6% lost.
    rng = np.random.default_rng(7)
    work = np.array([1.015] + [1.0] * 7)[None] * rng.normal(1.0, 0.04, (1000, 8))
    d = _write(tmp_path, work)
    assert d.verdict["id"] == ids.HEALTHY, d.verdict
    assert not _kinds(d) & {"phase:collective", "slow_rank"}


def test_stamps_that_show_no_rank_waited_add_no_wait(tmp_path):
    # four independent processes (no collective between them), rank 2 1.35x: each rank's lines advance at its own
    # pace, so no faster rank waited. First try: collective_straggler, 26% lost.
    rng = np.random.default_rng(7)
    work = np.array([1.0, 1.0, 1.35, 1.0])[None] * rng.normal(1.0, 0.02, (400, 4))
    d = _write(tmp_path, work, ends=np.cumsum(work, axis=0))
    assert d.verdict["id"] == ids.HEALTHY, d.verdict
    assert not _kinds(d) & {"phase:collective", "slow_rank"}


def test_stamps_that_show_the_ranks_waited_keep_the_wait(tmp_path):
    # the same straggler in a synchronous job: every rank's line is stamped when the slowest rank's step ends
    rng = np.random.default_rng(7)
    work = np.array([1.0, 1.0, 1.35, 1.0])[None] * rng.normal(1.0, 0.02, (400, 4))
    ends = np.cumsum(work.max(axis=1))[:, None].repeat(4, axis=1)
    d = _write(tmp_path, work, ends=ends)
    truth = 1.0 - float(np.median(work, axis=1).sum() / work.max(axis=1).sum())
    assert d.verdict["id"] == ids.COLLECTIVE_STRAGGLER, d.verdict
    assert abs(d.accounting["lost_share"] - truth) < 0.02, (d.accounting["lost_share"], truth)


def test_the_straggler_s_own_excess_counts_every_step_a_line_stands_for(tmp_path):
    # the 1.35x straggler logged every 10th step (each line the mean of its 10 steps): truth as when logged every
    # step (25%). First try: 20% (slow_rank counted one step per line: 0.6% instead of 6.3%).
    rng = np.random.default_rng(7)
    work = np.array([1.0, 1.0, 1.35, 1.0])[None] * rng.normal(1.0, 0.02, (1000, 4))
    d = _write(tmp_path, work, every=10)
    truth = 1.0 - float(np.median(work, axis=1).sum() / work.max(axis=1).sum())
    assert d.verdict["id"] == ids.COLLECTIVE_STRAGGLER, d.verdict
    assert abs(d.accounting["lost_share"] - truth) < 0.02, (d.accounting["lost_share"], truth)


def test_one_recompile_each_of_many_frames_of_one_name_is_not_a_storm(tmp_path):
    # LABELED SYNTHETIC TORCH_LOGS=recompiles (format of pytorch#130043's example): nine modules' `forward` (nine
    # frames, compile ids [1/1] .. [9/1]) each compiled again once when the sequence length first changed, the
    # dynamic-shape warm-up of a healthy run; no step times. First try: 'recompilation, likely 0.72' (nine
    # recompiles of 'forward', counted as one frame); one frame recompiled nine times stays recompilation.
    def log(frames: list[tuple[int, int, str]]) -> str:
        p = "V1204 03:10:{:02d}.273000 140345997743104 torch/_dynamo/guards.py:2590] [{}/{}] [__recompiles]"
        return "".join(
            f"{p.format(i, fr, att)} Recompiling function {fn} in /opt/conda/lib/python3.11/site-packages/"
            f"transformers/models/llama/modeling_llama.py:{100 * fr}\n{p.format(i, fr, att)}     triggered by the "
            f"following guard failure(s):\n{p.format(i, fr, att)}     - {fr}/{att - 1}: tensor 'L['x']' size "
            f"mismatch at index 1. expected 512, actual 384\n" for i, (fr, att, fn) in enumerate(frames))
    (tmp_path / "frames.log").write_text(log([(fr, 1, "forward") for fr in range(1, 10)]))
    d = diagnose(read_paths([str(tmp_path / "frames.log")]))
    assert d.verdict["id"] != ids.RECOMPILATION, d.verdict
    (tmp_path / "storm.log").write_text(log([(1, att, "forward") for att in range(1, 10)]))
    d = diagnose(read_paths([str(tmp_path / "storm.log")]))
    assert d.verdict["id"] == ids.RECOMPILATION, d.verdict


def test_a_reading_twice_as_likely_as_the_others_of_the_same_observation_takes_its_bucket(tmp_path):
    # LABELED SYNTHETIC nvidia-smi CSV: GPU 1 busy at 1000 MHz (its peers and its own first 400 s at 1980 MHz) as it
    # heats to 84 C. The low busy clock reads throttling at 0.75 and hardware_fault at 0.3 (signatures.slow_clock):
    # one observation, but 2.5x likelier as throttling. First try: the slow_clock bucket 'unexplained' (neither cited
    # a line of its own) beside a verdict naming throttling.
    rows = ["timestamp, index, utilization.gpu [%], power.draw [W], power.limit [W], clocks.sm [MHz], temperature.gpu"]
    for s in range(1200):
        for g in range(4):
            slow = g == 1 and s >= 400
            stamp = (T0 + dt.timedelta(seconds=s)).strftime("%Y/%m/%d %H:%M:%S.000")
            rows.append(f"{stamp}, {g}, {97 + (s + g) % 3 - 1} %, {330 if slow else 640}.00 W, 700.00 W, "
                        f"{1000 if slow else 1980} MHz, {84 if slow else 70}")
    (tmp_path / "gpu.csv").write_text("\n".join(rows) + "\n")
    d = diagnose(read_paths([str(tmp_path / "gpu.csv")]))
    assert d.verdict["id"] == ids.THROTTLING, d.verdict
    causes = {b["kind"]: b["cause"] for b in d.accounting["buckets"]}
    assert causes.get("slow_clock") == ids.THROTTLING, causes


def test_a_total_that_restarts_every_epoch_is_a_running_total(tmp_path):
    # LABELED SYNTHETIC: 'elapsed' counts the seconds since the epoch began (a line every 100 of 500 steps, 0.35 s a
    # step, no stamps): it rises line after line and falls to one window's time at each epoch, so its rises are the
    # steps' time. First try: 'Loses 52% of wall time in 30 stalls' (each reading taken as the window's time).
    rng = np.random.default_rng(3)
    lines = []
    for ep in range(1, 11):
        elapsed = np.cumsum(rng.normal(0.35, 0.01, 500))
        lines += [f"Epoch [{ep}/10] Step [{it}/500] loss {2.3 - 0.1 * ep:.4f} elapsed: {elapsed[it - 1]:.2f}s\n"
                  for it in range(100, 501, 100)]
    (tmp_path / "train.log").write_text("".join(lines))
    d = diagnose(read_paths([str(tmp_path / "train.log")]))
    assert d.verdict["id"] == ids.HEALTHY, d.verdict
    assert d.accounting["lost_share"] < 0.02, d.accounting["lost_share"]


def test_wide_unimodal_jitter_is_not_an_interleaved_slow_mode(tmp_path):
    # LABELED SYNTHETIC: one rank whose step time varies with its batches' lengths (no work column), unimodal:
    # normal 15% / 20%, lognormal 0.2, uniform +-25%. Split in two at its best cut, a normal's halves sit 2.7 pooled
    # sds apart and a uniform's 3.5, past Ashman's D > 2 (a bound for two normal components, not for a split's
    # halves): half the steps read as a slow mode. First try: normal 15% 'Loses 14% ... stalls' (unexplained).
    from playbook.analysis.step_times import interleaved_slow_mode

    rng = np.random.default_rng(11)
    shapes = {"normal 15%": rng.normal(1.0, 0.15, 2000), "normal 20%": rng.normal(1.0, 0.2, 2000).clip(0.3),
              "lognormal 0.2": rng.lognormal(0.0, 0.2, 2000), "uniform 25%": rng.uniform(0.75, 1.25, 200)}
    assert {k: float(interleaved_slow_mode(v).mean()) for k, v in shapes.items()} == dict.fromkeys(shapes, 0.0)
    (tmp_path / "train.log").write_text("".join(f"step {i + 1} loss 2.31 step_time {x:.3f}s\n"
                                                for i, x in enumerate(shapes["normal 15%"])))
    d = diagnose(read_paths([str(tmp_path / "train.log")]))
    assert d.verdict["id"] == ids.HEALTHY, (d.verdict, d.accounting["lost_share"])
    # two interleaved levels 1.3x apart with 5% jitter (5.2 sds) stay a slow mode
    two = rng.normal(1.0, 0.05, 400) * np.where(np.arange(400) % 2, 1.3, 1.0)
    assert interleaved_slow_mode(two).tolist() == (np.arange(400) % 2 == 1).tolist()


def test_two_ranks_straggler_counts_against_its_peer(tmp_path):
    # two ranks, rank 1 on a GPU 1.2x slower, timers leaving the wait out: rank 0 waits 0.2 s a step and rank 1 takes
    # 0.2 s more than its peer for the same work: against both at the peer's pace, 1/6 of the wall time. First try:
    # 12.5% (the straggler's own excess taken over the median of the two ranks, its own time half of it).
    rng = np.random.default_rng(7)
    work = np.array([1.0, 1.2])[None] * rng.normal(1.0, 0.02, (300, 2))
    d = _write(tmp_path, work)
    truth = 1.0 - float(work[:, 0].sum() / work.max(axis=1).sum())
    assert d.verdict["id"] == ids.COLLECTIVE_STRAGGLER, d.verdict
    assert abs(d.accounting["lost_share"] - truth) < 0.02, (d.accounting["lost_share"], truth)


def test_one_recompile_on_each_of_eight_ranks_is_not_a_storm(tmp_path):
    # LABELED SYNTHETIC torchrun output (each line behind its '[rankN]:' prefix): eight ranks each compile the same
    # frame again once, each at its first new sequence length; torch's recompile limit counts per process. First
    # try: 'recompilation, likely 0.72' (eight recompiles of one frame, counted across the ranks).
    lines = []
    for r in range(8):
        p = f"[rank{r}]:V1204 03:10:{10 + r:02d}.273000 14034599{r} torch/_dynamo/guards.py:2590] [0/1] [__recompiles]"
        lines += [f"{p} Recompiling function forward in /src/model.py:40",
                  f"{p}     triggered by the following guard failure(s):",
                  f"{p}     - 0/0: tensor 'L['x']' size mismatch at index 1. expected 512, actual 384"]
    (tmp_path / "out.log").write_text("\n".join(lines) + "\n")
    d = diagnose(read_paths([str(tmp_path / "out.log")]))
    assert d.verdict["id"] != ids.RECOMPILATION, d.verdict


def _average_rate_bar(tmp_path, durations: np.ndarray) -> str:
    """LABELED SYNTHETIC: a tqdm 4 bar drawn with smoothing=0 (Lightning's: the rate is n / elapsed) on a fake clock,
    every update a refresh, as a log file holds it (refreshes separated by carriage returns)."""
    import io

    import tqdm.std

    clock, out = [1000.0], io.StringIO()
    bar = tqdm.std.tqdm(total=len(durations), file=out, mininterval=0.1, smoothing=0, desc="Epoch 0", ncols=100)
    bar._time = lambda: clock[0]
    bar.start_t = bar.last_print_t = clock[0]
    for x in durations:
        clock[0] += float(x)
        bar.update(1)
    bar.close()
    (tmp_path / "bar.log").write_text(out.getvalue())
    return str(tmp_path / "bar.log")


def test_an_average_rate_resolves_windows_its_rounding_allows(tmp_path):
    # n / rate is the bar's time since it started, known to the rate's 2 decimals: 3000 steps at 0.25 s give it
    # +-0.9 s at the end, more than a refresh's own 0.25 s, so refresh-to-refresh differences are rounding. First
    # try: a healthy bar 'Loses 2% ... in 23 stalls, up to 5.9x' (unexplained_slowdown); a 10 s stall every 300 steps
    # read 19% lost (truth 12%) beside 10 spurious stalls.
    rng = np.random.default_rng(21)
    d = diagnose(read_paths([_average_rate_bar(tmp_path, rng.normal(0.25, 0.01, 3000).clip(0.1))]))
    assert d.verdict["id"] == ids.HEALTHY, d.verdict
    work = rng.normal(0.25, 0.01, 3000)
    work[299::300] += 10.0
    d = diagnose(read_paths([_average_rate_bar(tmp_path, work)]))
    truth = 100.0 / work.sum()
    assert d.verdict["id"] == ids.PERIODIC_STALL, d.verdict
    assert abs(d.accounting["lost_share"] - truth) < 0.02, (d.accounting["lost_share"], truth)
