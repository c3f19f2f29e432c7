"""The line grammar (readers/lines.py, step_grammar.py) on one hand-written log per training framework
(tests/data/formats, sources in SOURCES.md), and on generated logs that recombine counters, keys, units,
separators, running averages, cumulative fields and noise lines in ways no corpus file holds."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from playbook.readers import detect, lines, read_file

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"
EXPECTED = json.loads((FORMATS / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_family_reads_with_its_durations_phases_and_events(name):
    want = EXPECTED[name]
    path = FORMATS / name
    assert detect.detect(path) == "lines"
    b = read_file(path)
    s = b.steps
    whole = s[s["phase"] == "step"]
    assert len(s) == want["records"]
    assert whole["step"].tolist() == want["steps"]
    assert whole["duration_s"].tolist() == pytest.approx(want["durations_s"], abs=6e-5)  # 4 decimals kept
    assert sorted(set(s["phase"]) - {"step"}) == want["phases"]
    assert [[k, int(st)] for k, st in zip(b.events["kind"], b.events["step"], strict=True)] == want["events"]
    assert len(b.nccl) == want["nccl_rows"]
    assert b.meta["lines"][str(path)]["markers"] == want["markers"]


def test_a_mixed_log_counts_what_each_scanner_understood_and_what_was_skipped():
    path = FORMATS / "mixed.log"
    info = read_file(path).meta["lines"][str(path)]
    assert info["understood"] == {"steps": 4, "nccl": 5, "recompile": 3, "events": 3}  # the OOM line is an event
    assert info["skipped"] == {"blank": 3, "traceback": 3, "code": 8, "banner": 1}
    assert info["unread"] == 1 and info["unread_examples"] == ["line 31: some line nobody understands"]
    ev = read_file(path).events
    assert "guard: tensor 'L['x']' size mismatch at index 0" in ev[ev["kind"] == "recompile"]["detail"].iloc[0]


def test_without_a_time_field_samples_per_second_and_the_batch_size_give_the_step_time(tmp_path):
    p = tmp_path / "megatron.log"
    p.write_text("".join(f" iteration {i:8d}/ 1000 | global batch size:  2048 | lm loss: 2.4E+00 | "
                         f"samples per second: {rate} |\n" for i, rate in ((10, 20.48), (20, 10.24))))
    assert read_file(p).steps["duration_s"].tolist() == pytest.approx([100.0, 200.0])


def test_steps_within_epochs_count_on_and_launcher_prefixes_give_the_rank(tmp_path):
    p = tmp_path / "epochs.log"
    p.write_text("0: Epoch 1/2 | Step 50/100 | loss 2.1 | step_time 0.20s\n"
                 "1: Epoch 1/2 | Step 50/100 | loss 2.1 | step_time 0.30s\n"
                 "0: Epoch 2/2 | Step 50/100 | loss 1.9 | step_time 0.25s\n"
                 '[1,0]<stdout>:{"iteration": 7, "step_time_ms": 120.0}\n')
    s = read_file(p).steps.sort_values(["rank", "step"])
    assert s[["rank", "step", "duration_s"]].values.tolist() == [[0, 7, 0.12], [0, 50, 0.2], [0, 150, 0.25],
                                                                  [1, 50, 0.3]]


def test_a_text_with_no_line_understood_is_refused(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("dear diary\nnothing to see\n")
    with pytest.raises(Exception, match="not telemetry this playbook can read"):
        read_file(p)


def test_a_log_that_starts_with_a_long_script_still_reads(tmp_path):
    code = "".join(f"x{i} = compute({i})  # a long training script pasted into the log\n" for i in range(2000))
    p = tmp_path / "run.log"
    p.write_text(code + "".join(f"iter {i}: loss 2.0, time {500 + i}.00ms\n" for i in range(5)))
    b = read_file(p)
    assert b.steps["duration_s"].tolist() == pytest.approx([0.5, 0.501, 0.502, 0.503, 0.504])
    assert b.meta["lines"][str(p)]["skipped"]["code"] == 2000


# --- generated logs ----------------------------------------------------------------------------------------------

COUNTERS = ["step {i}", "iter {i}", "Iteration {i}/{n}", "step:{i}/{n}", "global_step={i}", "[{i}/{n}]",
            "Step {i} of {n}", "iteration {i:>6d}/{n:>6d} |", "it {i}:", "Epoch: [0][{i:>4d}/{n}]",
            "Epoch(train) [3][{i}/{n}]", "global_step={i}.00", "[batch={i}/{n}]", "[Epoch 0, batch {i}]",
            "completed step: {i},", "Train Epoch: 0 [{i:>6d}/{n} (0%)]", "Step {i} |", "| epoch 001 | num_updates {i}",
            "\x1b[1mstep {i}\x1b[0m", '{{"current_steps": {i}, "total_steps": {n},']
PREFIXES = ["", "[rank0]:", "[default0]: ", "[2024-01-15 10:00:00,000] ", "01/15/2024 10:00:00 - INFO - __main__ - ",
            "2024-01-15T10:00:00.123Z ", "[titan] 2024-01-15 10:00:00,123 - root - INFO - ",
            "2024-01-15,10:00:00 | INFO | ", "\x1b[32m[rank0]:\x1b[0m "]
KEYS = ["time", "step_time", "iter time", "dt", "batch_time", "Time", "duration", "time per step",
        "elapsed time per iteration", "seconds", "batch_cost", "train_step_timing"]
STATED = ["train_step_timing in s", "Batch (t)", "iter time (s)", "elapsed time per iteration (ms)", "step [ms]"]
CUMULATIVE = ["train_time", "elapsed", "runtime", "wall_time", "total_time", "wall_clock/train", "train_wall"]
RATES = ["ups", "it/s", "s/it", "steps_per_sec", "global_step/sec"]
SEPS = [": ", "=", " ", ":", " = "]
DELIMS = [", ", " | ", "\t", "  ", " ; "]
EXTRA = ["loss {v:.4f}", "lr {e:.2e}", "grad_norm: {v:.3f}", "mfu {p:.2f}%", "tokens/s: {t:,}", "memory: {p:.1f}GiB",
         "wps {t}", "TFLOP/s/device: {v:.3f}", "Tokens/s/device: {p:.3f}", "Data (t): {d:.4f}", "{p:.0f}%|██████    |",
         "━━━━━━━━━━━━━━━━━━━━", "throughput per GPU (TFLOP/s/GPU): {p:.1f}", "time/batch: {t}", "Loss: {v:.4f} ({v:.4f})"]
NOISE = ["Traceback (most recent call last):", '  File "train.py", line 12, in <module>', "    main()",
         "ValueError: boom", "import torch", "def main():", "    return x", "=" * 40,
         "node1:12:12 [0] NCCL INFO Channel 00/02 :    0   1", "NCCL INFO Using network Socket",
         "hello from the launcher"]


def _field(rng, mode, key, sep, unit, dur, total, avg, rate) -> tuple[str, float]:
    """One duration field and the per-step seconds it states."""
    ms = unit.strip() == "ms"
    if mode == "cumulative":
        return f"{key}{sep}{total * (1e3 if ms else 1):.4f}{unit.rstrip()}", dur
    if mode == "rate":
        if rate in ("s/it", "it/s") and rng.random() < 0.5:
            return f"{dur:.4f}s/it", dur
        shown = round(1 / dur, 6)
        return (f"{shown:.6f}it/s" if rate in ("s/it", "it/s") else f"{rate}{sep}{shown:.6f}"), round(1 / shown, 9)
    if mode == "stated":  # the unit in the key, the value bare
        scale = 1e3 if "ms" in key else 1
        return f"{key}{sep}{dur * scale:.4f}", dur
    shown = dur * (1e3 if ms else 1)
    field = f"{key}{sep}{shown:.3f}{unit.rstrip() if unit.strip() != 's' or rng.random() < 0.7 else ''}"
    return field + (f" ({shown * 1.1:.3f})" if avg else ""), dur


def _generate(rng: random.Random) -> tuple[str, list[int], list[float]]:
    """One log and its truth: logged steps and their per-step seconds."""
    counter = rng.choice(COUNTERS)
    every = rng.choice([1, 1, 2, 5, 10])
    n_lines = rng.randint(4, 24)
    steps = [every * (k + 1) for k in range(n_lines)]
    true = [round(rng.lognormvariate(np.log(rng.choice([0.02, 0.3, 2.0])), 0.3), 4) for _ in steps]
    mode = rng.choice(["interval", "interval", "cumulative", "rate", "stated"])
    unit = rng.choice(["s", "ms", "ms ", " s", "sec"])
    key = rng.choice({"cumulative": CUMULATIVE, "stated": STATED}.get(mode, KEYS))
    sep, delim, prefix = rng.choice(SEPS), rng.choice(DELIMS), rng.choice(PREFIXES)
    if counter.startswith("{"):  # a JSON Lines record: "key": value, nothing else
        sep, delim, prefix, mode = ": ", ", ", "", rng.choice(["stated", "cumulative"])
        key, unit = rng.choice(["step_time", "iter_time_ms", "step_time_s"] if mode == "stated" else
                               ["elapsed_s", "train_runtime_s"]), ""
    block = rng.random() < 0.1 and not counter.startswith("{")  # `[batch=3/10]:` then indented `key: value` lines
    box = not block and rng.random() < 0.05 and not counter.startswith("{")  # then a box-drawn table (Ray Train)
    avg = rng.random() < 0.3
    rate = rng.choice(RATES)  # one rate field per file (it/s and s/it alternate, as tqdm's bar does)
    extras = rng.sample(EXTRA, rng.randint(0, 3)) if not counter.startswith("{") else []
    out, total = [], 0.0
    logged_true = []
    for step, dur in zip(steps, true, strict=True):
        total += dur * every
        field, stated = _field(rng, mode, key, sep, unit, dur, total, avg, rate)
        logged_true.append(stated)
        parts = [field]
        for x in extras:  # (the draws in the order they always were: the same logs from the same seed)
            v, e, p, t = rng.random() * 5, rng.random() * 1e-3, rng.random() * 50, rng.randint(1000, 99999)
            # a data wait is a part of its step (`v` scaled under the step's time): one longer than its step would
            # say the step time leaves it out, and the step would be both (columns.data_apart)
            parts.append(x.format(v=v, e=e, p=p, t=t, d=dur * v / 5 * 0.9))
        rng.shuffle(parts)
        head = prefix + counter.format(i=step, n=every * n_lines)
        if counter.startswith("{"):
            out.append(head + " " + ", ".join(f'"{k}": {v}' for k, v in (p.split(": ", 1) for p in parts)) + "}")
        elif box:
            out.append(head)
            out.append("╭" + "─" * 30 + "╮")
            out.extend(f"│ {p.replace(sep, '   ', 1) if sep.strip() in (':', '=') else p}   │" for p in parts)
            out.append("╰" + "─" * 30 + "╯")
        elif block:
            out.append(head.rstrip(" |,:") + ":")
            out.extend(f"\t {p.replace(sep, ': ', 1) if sep.strip() in ('', '=') else p}" for p in parts)
        else:
            out.append(head + delim + delim.join(parts))
        if rng.random() < 0.3:
            out.append(rng.choice(NOISE))
    if mode == "cumulative":
        steps, logged_true = steps[1:], logged_true[1:]  # the first reading has nothing to subtract
    return "\n".join(out) + "\n", steps, logged_true


def test_generated_logs_read_with_the_generators_durations():
    rng = random.Random(20240115)
    passed, failures = 0, []
    total = 2000
    for _ in range(total):
        text, steps, truth = _generate(rng)
        try:
            res = lines.scan_steps(text.split("\n"))
            ok = res["step"].tolist() == steps and np.allclose(res["duration"], truth, rtol=2e-3, atol=6e-4)
        except Exception:  # counted as a miss, shown below
            ok = False
        passed += ok
        if not ok and len(failures) < 3:
            failures.append(text[:300])
    rate = passed / total
    assert rate >= 0.99, f"{rate:.2%} of generated logs read right; e.g. {failures}"


def test_naive_timestamps_are_read_in_the_given_time_zone(tmp_path):
    from playbook.readers import read_paths

    p = tmp_path / "tz.log"
    p.write_text("2024-01-15 10:00:00 step 1 step_time: 0.5s\n2024-07-15 10:00:00 step 2 step_time: 0.5s\n")
    t = read_paths([p], tz="Europe/Berlin").steps["time"].tolist()
    assert [x.strftime("%H:%M:%S.%f") for x in t] == ["08:59:59.500000", "07:59:59.500000"]  # CET, CEST


def test_iter_lines_streams_gzip_crlf_across_chunks_progress_bar_cr_utf16_and_cuts_endless_lines(tmp_path):
    import gzip

    from playbook.readers import textio

    p = tmp_path / "log.gz"
    p.write_bytes(gzip.compress(b"\xef\xbb\xbfa\r\nb\rc\n" + b"x" * (textio.MAX_LINE_CHARS + 10) + b"\nd"))
    got = list(textio.iter_lines(p, chunk_bytes=2))
    assert got[:3] == ["a", "b", "c"] and len(got[3]) == textio.MAX_LINE_CHARS and got[4:] == ["d"]
    u = tmp_path / "u16.log"
    u.write_bytes("step 1 time 0.5s\r\nstep 2 time 0.6s\r\n".encode("utf-16"))
    assert list(textio.iter_lines(u, chunk_bytes=3)) == ["step 1 time 0.5s", "step 2 time 0.6s"]


def test_per_phase_fields_become_phase_rows_and_graph_breaks_become_recompile_events(tmp_path):
    p = tmp_path / "phases.log"
    p.write_text("step 1 | fwd_time: 10ms | bwd_time: 20ms | optimizer_time: 5ms | allreduce: 4ms | step_time: 41ms\n"
                 "step 2 | fwd_time: 11ms | bwd_time: 21ms | optimizer_time: 5ms | allreduce: 30ms | step_time: 70ms\n"
                 "V0101 10:00:00.000000 42 torch/_dynamo/symbolic_convert.py:444] [1/0] [__graph_breaks] "
                 "Graph break in user code at /work/model.py:12\n")
    b = read_file(p)
    by = b.steps.pivot(index="step", columns="phase", values="duration_s")
    assert by.loc[2].to_dict() == pytest.approx({"bwd": 0.021, "collective": 0.03, "fwd": 0.011, "optimizer": 0.005,
                                                 "step": 0.07})
    ev = b.events
    assert ev["kind"].tolist() == ["recompile"] and "graph break" in ev["detail"].iloc[0] and ev["step"].iloc[0] == 2


def test_token_soup_never_raises_only_refuses():
    """Lines of random grammar tokens (huge numbers, box characters, stray units, colour escapes): every file is
    read or refused with a clear error, never a traceback."""
    from playbook.core.errors import InputError

    toks = ["step", "iter", "batch", "[", "]", "/", ":", "=", "(", ")", "│", "╭", "  ", "\t", "1", "12", "1.5", "1e9",
            "K", "M", "ms", "s", "it/s", "s/it", "time", "elapsed", "%", "|", ",", "━", "█", "•", "0:00:12", "{", "}",
            '"', "-", "in s", "(t)", "per", "sec", "tokens", "samples", "\x1b[1m", "9" * 21, "nan", "inf", "Epoch",
            "val", "saving checkpoint", "NCCL INFO"]
    rng = random.Random(7)
    for _ in range(60):
        text = ["".join(rng.choice(toks) + rng.choice(["", " "]) for _ in range(rng.randint(0, 30)))
                for _ in range(rng.randint(1, 40))]
        try:
            lines.scan("soup.log", lines=text)
        except InputError:
            pass  # refused: no line understood, or nothing usable


def test_a_timer_table_under_a_step_line_gives_its_phases_the_max_across_ranks():
    b = read_file(FORMATS / "megatron_timers.log")  # forward-backward spans two phases: left out
    by = b.steps.pivot(index="step", columns="phase", values="duration_s")
    assert by.loc[20].to_dict() == pytest.approx({"bwd": 0.676, "collective": 0.08, "data": 0.21, "fwd": 0.391,
                                                  "optimizer": 0.111, "step": 1.2})  # optimizer: the outer timer


def test_a_utf16_step_log_with_latin1_noise_reads_with_the_decoders_note(tmp_path):
    """PowerShell's `>` writes UTF-16 with a BOM; a stray byte that is not UTF-8 is read as Latin-1 and said so."""
    from playbook.readers import read_file

    text = "".join(f"step {i} loss 2.0 time {500 + i}ms\r\n" for i in range(1, 6))
    (tmp_path / "ps.log").write_bytes(text.encode("utf-16"))
    assert sorted(read_file(tmp_path / "ps.log").steps["step"]) == [1, 2, 3, 4, 5]
    (tmp_path / "l1.log").write_bytes(text.encode() + b"note caf\xe9\n")
    bundle = read_file(tmp_path / "l1.log")
    assert len(bundle.steps) == 5 and any("Latin-1" in w for w in bundle.warnings), bundle.warnings


def test_a_plain_time_is_read_against_the_line_time_stamps():
    """`Time 60s` every 100 steps whose values match the gaps between the stamped lines is the window's time (per
    step: / 100); one whose differences match them is a running total; without time stamps it stays the step's own."""
    stamps = ["10:00:00", "10:01:00", "10:02:30", "10:03:30"]
    window = [f"[2024-01-15 {t}] Up. {100 * (k + 1)} : Time {g}s"
              for k, (t, g) in enumerate(zip(stamps, (5, 60, 90, 60), strict=True))]
    assert lines.scan_steps(window)["duration"].tolist() == pytest.approx([0.6, 0.9, 0.6])
    running = [f"[2024-01-15 {t}] Step {100 * (k + 1)}; {s} sec"
               for k, (t, s) in enumerate(zip(stamps, (5, 65, 155, 215), strict=True))]
    assert lines.scan_steps(running)["duration"].tolist() == pytest.approx([0.6, 0.9, 0.6])
    bare = [x.split("] ", 1)[1] for x in window]
    assert lines.scan_steps(bare)["duration"].tolist() == pytest.approx([5.0, 60.0, 90.0, 60.0])


def test_without_time_stamps_a_files_batch_size_line_and_samples_per_second_give_the_step_time():
    """MXNet's Speedometer under basicConfig's `INFO:root:` (no time stamp) logs samples/sec only; the batch size is in
    the `Namespace(batch_size=...)` line the script logs first. With time stamps, their window means win."""
    text = ["INFO:root:start with arguments Namespace(batch_size=100, gpus=None, num_epochs=5)",
            "INFO:root:Epoch[0] Batch [100]\tSpeed: 40000.00 samples/sec\taccuracy=0.837921",
            "INFO:root:Epoch[0] Batch [200]\tSpeed: 25000.00 samples/sec\taccuracy=0.919700",
            "INFO:root:Epoch[0] Time cost=1.494"]
    res = lines.scan_steps(text)
    assert res["step"].tolist() == [100, 200] and res["duration"].tolist() == pytest.approx([0.0025, 0.004])
    stamped = [f"2024-01-15 10:00:0{k} {t}" for k, t in enumerate(text)]
    assert lines.scan_steps(stamped)["duration"].tolist() == pytest.approx([0.01])  # 1 s over 100 batches


def test_a_batch_count_restarting_each_epoch_counts_on_and_loses_no_line():
    """icefall's `Epoch 2, batch 0` after `Epoch 1, batch 100` (no total printed): epoch 2 counts on from epoch 1's
    last batch plus the logging interval, so no line of epoch 1 is overwritten; a count that keeps rising across epochs
    (`epoch 2 | step 1300`) is global and keeps its value."""
    stamp = "2024-03-11 13:00:{:02d},000 INFO [train.py:1085] (0/4) Epoch {}, batch {}, loss[loss=0.5], lr: 2.25e-02"
    text = [stamp.format(2 * k, e, b) for k, (e, b) in enumerate([(1, 0), (1, 50), (1, 100), (2, 0), (2, 50)])]
    res = lines.scan_steps(text)
    assert res["step"].tolist() == [50, 100, 150, 200] and res["duration"].tolist() == pytest.approx([0.04] * 4)
    rising = [f"epoch {e} | step {s} | step_time 0.5s" for e, s in [(1, 100), (1, 200), (2, 300), (2, 400)]]
    assert lines.scan_steps(rising)["step"].tolist() == [100, 200, 300, 400]


def test_a_step_line_without_a_time_takes_it_from_the_counterless_lines_below(tmp_path):
    """DeepSpeed-Chat's shape in other words: a bare step line, then lines of times without a counter; the line
    naming the whole step (end-to-end) gives its time, a time per token or per sequence never does, and a count
    of steps (`Total optimization steps = 60`) is no counter."""
    p = tmp_path / "rlhf.log"
    p.write_text("Total optimization steps = 60\n" + "".join(
        f"Round: 1 | Step: {i} | Policy Loss: 0.1\n"
        f"Rollout => Latency: {t - 2:.2f}s, Per-token Latency 40.00 ms, Time/seq 0.10s\n"
        f"E2E => Latency: {t:.2f}s, Samples/sec: 3.0\n" for i, t in ((1, 9.0), (2, 30.0), (3, 9.5)))
        + "Round: 1 | Step: 4 | Policy Loss: 0.1\n" + "a note on the run\n" * 9 + "E2E => Latency: 99.00s\n")
    s = read_file(p).steps
    whole = s[(s["phase"] == "step") & s["duration_s"].notna()]
    assert whole["step"].tolist() == [1, 2, 3]  # the time nine lines below step 4 is no longer its own
    assert whole["duration_s"].tolist() == pytest.approx([9.0, 30.0, 9.5])


def test_an_evaluation_or_checkpoint_timed_inside_a_step_is_also_an_event(tmp_path):
    p = tmp_path / "rl.log"
    p.write_text("".join(f"step:{i} - timing_s/gen:5.0 - timing_s/testing:{3.0 if i == 2 else 0} - "
                         f"timing_s/save_checkpoint:{4.0 if i == 3 else 0} - timing_s/step:{8 + i}.0\n"
                         for i in (1, 2, 3)))
    ev = read_file(p).events
    assert [[k, int(st), d] for k, st, d in zip(ev["kind"], ev["step"], ev["duration_s"], strict=True)] == [
        ["eval", 2, 3.0], ["checkpoint", 3, 4.0]]


def test_a_time_written_as_a_rising_clock_is_the_wall_clock_and_a_steady_one_the_steps():
    """torch_xla's `Time=10:00:52` is when the line was printed: its differences over the steps between lines are
    the step times; a clock-form time that does not keep rising (`time 0:00:02`) is each step's own."""
    clock = [f"| Training Epoch=1 Step={s} Loss=6.9 Time=10:0{m}:{sec:02d}"
             for s, m, sec in ((0, 0, 40), (20, 0, 52), (40, 1, 0), (60, 1, 8), (80, 1, 38))]
    assert lines.scan_steps(clock)["duration"].tolist() == pytest.approx([0.6, 0.4, 0.4, 1.5])
    steady = [f"step {s} | loss 2.0 | time 0:00:0{t}" for s, t in ((1, 2), (2, 3), (3, 2), (4, 2), (5, 3))]
    assert lines.scan_steps(steady)["duration"].tolist() == pytest.approx([2, 3, 2, 2, 3])


def test_epoch_times_are_the_records_only_of_a_log_that_times_no_step():
    """An epoch's stated time is kept aside: a log whose steps carry a time keeps its steps (MXNet's `Epoch[0] Time
    cost=...` beside its batches); one whose step lines have none, or that has none, gets one row per epoch; an
    average over epochs is no epoch's time."""
    timed = ["Epoch[0] Batch [100]\tSpeed: 400.00 samples/sec\ttime=0.25", "Epoch[0] Batch [200]\ttime=0.25",
             "Epoch[0] Time cost=50.000"]
    assert lines.scan_steps(timed)["step"].tolist() == [100, 200]
    untimed = ["Epoch 00000 | Step 00020 | Loss 1.9", "Epoch Time(s): 14.2", "Epoch 00001 | Step 00020 | Loss 1.1",
               "Epoch Time(s): 12.9", "Avg epoch time: 13.5"]
    res = lines.scan_steps(untimed)
    assert res["step"].tolist() == [0, 1] and res["duration"].tolist() == pytest.approx([14.2, 12.9])


def test_a_clock_reading_is_neither_an_epoch_s_time_nor_a_step_s():
    """A Unix clock in a time field (MLPerf's `time_ms`, 1.68e9 s) is no epoch's time (it read as two 53-year
    epochs), and MLPerf BERT's log — `{'global_steps': N, ...}` lines between clock-stamped MLLOG lines — has no step
    time at all (its last record took the clock as a 53-year step)."""
    epochs = lines.scan_steps(["Epoch 1 done time_ms: 1684246072651", "Epoch 2 done time_ms: 1684246226535"])
    assert epochs.get("chosen") is None and not len(epochs.get("step", []))
    bert = (Path(__file__).resolve().parents[1] / "data" / "zoo" / "mlperf_bert_evals.txt").read_text()
    assert not len(lines.scan_steps(bert.splitlines()[17:]).get("step", []))


def test_a_key_ending_in_the_letters_ms_is_milliseconds_only_after_a_time_word():
    from playbook.readers.step_log.vocab import classify

    assert classify("l2_params", None) is None and classify("items", None) is None
    assert classify("steptimems", None)[2] == pytest.approx(1e-3) and classify("iter_time_ms", None)[2] == 1e-3


def test_the_data_wait_plus_the_compute_is_the_step_and_the_compute_alone_when_nothing_else_is_timed():
    both = [f'DLLL {{"type": "LOG", "step": [0, {i}], "data": {{"train.data_time": {d}, "train.compute_time": 0.2}}}}'
            for i, d in ((10, 0.05), (20, 0.3))]
    res = lines.scan_steps(both)
    assert res["step"].tolist() == [10, 20] and res["duration"].tolist() == pytest.approx([0.25, 0.5])
    assert res["phases"]["data"].tolist() == pytest.approx([0.05, 0.3])
    alone = lines.scan_steps(["step 1 | compute_time 0.5s", "step 2 | compute_time 0.6s"])
    assert alone["duration"].tolist() == pytest.approx([0.5, 0.6])


def test_an_epoch_number_past_nine_digits_is_no_epoch(tmp_path):
    # a damaged epoch number (20 digits) named the epoch of the time below it and overflowed the step column
    p = tmp_path / "epochs.log"
    p.write_text("Epoch 99999999999999999999 done\nEpoch time: 120.5 s\nEpoch 3\nEpoch time: 100 s\n")
    s = read_file(p).steps
    assert s["step"].tolist() == [3] and s["duration_s"].tolist() == pytest.approx([100.0])


def test_a_held_step_banner_past_the_step_range_leaves_its_timing_lines_to_no_record():
    """NeMo-RL's banner held for its `Total step time` (pending.py) with a damaged 20-digit step is no record; its
    timing lines below must then join no record either: they were merged into the record before it (step 1 took the
    damaged step's 5 s of data processing), or, with none before it, the lines reader failed with IndexError."""
    def block(step, total, data=None):
        return [f"========================= Step {step}/3 =========================", "⏱️  Timing:",
                f"  • Total step time: {total}s"] + ([f"  • data_processing: {data}s (2.5%)"] if data else [])

    damaged = block("9" * 20, "99.00", "5.00")
    res = lines.scan_steps(block(1, "62.40") + damaged + block(3, "60.00", "1.50"))
    assert res["step"].tolist() == [1, 3] and res["duration"].tolist() == pytest.approx([62.40, 60.00])
    assert np.isnan(res["phases"]["data"][0]) and res["phases"]["data"][1] == pytest.approx(1.50)
    res = lines.scan_steps(damaged + block(3, "60.00", "1.50"))  # was IndexError
    assert res["step"].tolist() == [3] and res["duration"].tolist() == pytest.approx([60.00])


def test_a_glued_data_word_is_the_data_phase(tmp_path):
    """`dataload_ms` (data + load glued): the loader's wait, as `data_load_ms` is; a stall every 30 steps sat in it
    and the run read periodic_stall instead of input starvation."""
    path = tmp_path / "train.log"
    path.write_text("".join(f"2024-05-01T10:00:{s:02d}.000Z [worker-0] train step={s} dt_ms=512.3 "
                            f"dataload_ms={2400.0 if s % 30 == 0 else 12.1} loss=2.9\n" for s in range(1, 60)))
    steps = read_file(path).steps
    data = steps[steps["phase"] == "data"].set_index("step")["duration_s"]
    assert len(data) == 59 and data[30] == pytest.approx(2.4) and data[1] == pytest.approx(0.0121)


def test_a_command_lines_options_are_no_step_and_no_evaluation(tmp_path):
    # DeepSpeed's launcher echoes the command (`cmd = ... --eval-iters 10 --train-iters 500 ...`): the options
    # configure the run; read as a counter, `--eval-iters 10` made an evaluation event at no step (zoo's
    # megatron_deepspeed_moe.log once `iters` counted steps)
    p = tmp_path / "train.log"
    p.write_text("[INFO] [runner.py:504:main] cmd = python pretrain_gpt.py --eval-iters 10 --train-iters 500 "
                 "--eval-interval 100 --log-validation-ppl-to-tensorboard\n"
                 + "".join(f" iteration {i:8d}/ 500 | elapsed time per iteration (ms): 250.0 | lm loss: 2.4E+00 |\n"
                           for i in range(10, 60, 10)))
    b = read_file(p)
    assert b.steps["step"].tolist() == [10, 20, 30, 40, 50]
    assert b.events.empty, b.events


def test_epoch_times_outnumbering_the_timed_steps_are_the_records():
    """A log whose one iteration line times one step, beside an epoch time for each of many epochs (an epoch of a
    few iterations, the iteration line every 250): the epochs are the denser series and become the records."""
    body = ["<epoch: 40, iter:     100, lr:2.000e-04, t:130.5000s, td:1.2000s> l_pix: 1.0e-03"]
    body += [f"End of epoch {e} / 90000 \t Time Taken: {t:.4f} sec" for e, t in
             zip(range(40, 48), (21.0, 2.1, 2.2, 2.1, 2.0, 2.1, 2.2, 2.1), strict=True)]
    res = lines.scan_steps(body)
    assert res["step"].tolist() == list(range(40, 48)) and res["duration"][0] == pytest.approx(21.0)
    few = body[:1] + [f"Epoch time: {t} s" for t in (2.0,)]  # one epoch beside one step: the step stays
    assert lines.scan_steps(few)["step"].tolist() == [100]


@pytest.mark.parametrize("line", [
    "Time for epoch {e} is {t} sec",          # TensorFlow's DCGAN / pix2pix tutorials
    "time for epoch {e}: {t} s",
    "Elapsed time for iteration {e} was {t}s",
    "Training time for epoch {e} is {t} sec",
    "Elapsed time at epoch {e}: {t}s",        # read right before the counter word needed for/of before it
    "time spent during epoch {e}: {t}s",
])
def test_the_number_after_a_times_counter_word_is_the_counter_not_the_time(tmp_path, line):
    times = [15.2, 15.9, 15.4, 41.0, 15.6, 15.3]
    path = tmp_path / "run.log"
    path.write_text("".join(line.format(e=k + 1, t=t) + "\n" for k, t in enumerate(times)))
    steps = read_file(path).steps
    assert steps["step"].tolist() == [1, 2, 3, 4, 5, 6]
    assert steps["duration_s"].tolist() == pytest.approx(times)
