"""Review r11 of rounds 71 / 68 (readers/pipe_table.py, readers/model_placement.py's Task Manager lines,
readers/trtexec_summary.py): inputs written apart from the rounds' files."""

from __future__ import annotations

import pytest

from playbook.readers import detect, read_paths


def _write(tmp_path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


LOG_WITH_INVENTORY = ("Environment:\n| GPU | Name | Memory (MiB) | Util (%) |\n|---|---|---|---|\n"
                      "| 0 | A100 | 40536 | 0 |\n| 1 | A100 | 40536 | 0 |\n"
                      + "".join(f"2024-01-15 10:00:{s:02d} INFO step {i} loss 2.{9 - i} step_time {t}s\n"
                                for i, (s, t) in enumerate([(1, 0.51), (2, 0.50), (3, 0.52), (4, 2.50), (7, 0.51),
                                                            (8, 0.51), (9, 0.50), (10, 0.52)], start=1)))


def test_a_training_log_that_printed_a_gpu_table_once_stays_the_line_scanners(tmp_path):
    # a pipe table of the GPUs at start-up, then the run's step lines: the steps are the input, not two idle polls
    path = _write(tmp_path, "train.log", LOG_WITH_INVENTORY)
    assert detect.detect(path) == "lines"
    assert len(read_paths([path]).steps) == 8


def test_a_pipe_tables_cells_keep_their_units(tmp_path):
    # the unit a cell states scales it as a CSV cell's does (GiB, GHz, kW): not its bare number in the header's unit
    text = ("| elapsed | GPU0 util | GPU0 memory used | GPU0 memory total | GPU0 SM clock | GPU0 power |\n"
            "|---|---|---|---|---|---|\n"
            + "".join(f"| {s} s | 97% | 15.5 GiB | 24 GiB | 1.98 GHz | 0.3 kW |\n" for s in (1, 2, 3)))
    t = read_paths([_write(tmp_path, "units.md", text)]).telemetry
    assert t["mem_used_mib"].tolist() == [15.5 * 1024] * 3 and t["mem_total_mib"].tolist() == [24 * 1024] * 3
    assert t["sm_clock_mhz"].tolist() == [1980.0] * 3 and t["power_w"].tolist() == [300.0] * 3
    draw = ("| elapsed | GPU0 | power (GPU0) |\n|---|---|---|\n"
            + "".join(f"| {s} s | 70 °C | 250/300 W |\n" for s in (1, 2, 3)))
    t = read_paths([_write(tmp_path, "draw.md", draw)]).telemetry
    assert t["power_w"].tolist() == [250.0] * 3 and t["temp_c"].tolist() == [70.0] * 3


def test_the_desktops_few_hundred_mib_of_shared_memory_is_no_spill(tmp_path):
    # TensorFlow takes nearly all the dedicated memory by default; the desktop and a browser keep a few hundred MiB
    # of shared memory on the same GPU: no spill of the job's
    from playbook.diagnosis import diagnose
    from playbook.knowledge import ids
    from playbook.readers.model_placement import Placements

    text = ("one epoch takes 40 s with TensorFlow on my 3070\n\nUtilisation 99%\nGPU memory 8.0/15.9GB\n"
            "Dedicated GPU memory 7.6/8.0GB\nShared GPU memory 0.4/7.9GB\n")
    pane = Placements()
    for line in text.split("\n"):
        pane.feed(line)
    assert pane.summary() == []
    spill = text.replace("0.4/7.9GB", "1.6/7.9GB")
    assert diagnose(read_paths([_write(tmp_path, "spill.txt", spill)])).verdict["id"] == ids.MEMORY_PRESSURE


def test_rows_past_the_cap_are_said_not_read(tmp_path, monkeypatch):
    from playbook.readers import pipe_table

    monkeypatch.setattr(pipe_table, "MAX_ROWS", 3)
    text = ("| elapsed | util (GPU0) | power (GPU0) |\n|---|---|---|\n"
            + "".join(f"| {s} s | 9{s}% | 250 W |\n" for s in range(5)))
    b = read_paths([_write(tmp_path, "long.md", text)])
    assert len(b.telemetry) == 3
    assert any("first 3 rows" in w and "the 2 after them" in w for w in b.warnings)


@pytest.mark.timeout(60)
def test_a_long_blank_run_in_a_cell_or_a_name_is_read_in_linear_time():
    """A cell (or a name) holding 200 kB of blanks before a character: the trailing-note and bracketed-GPU patterns
    gave the blanks to a leading `\\s*` from every start (quadratic: ~0.5 s at 20 kB per cell, ~3 s per name;
    minutes at 200 kB). Nothing is timed: the timeout only catches a runaway."""
    from playbook.readers import pipe_table

    blank = " " * 200_000
    assert pipe_table._clean(f"**97%**{blank}x") == f"97%{blank}x"
    assert pipe_table._clean("85 °C (peak)") == "85 °C" and pipe_table._clean("a (b (c)") == "a"
    assert pipe_table._clean("x (y) z") == "x (y) z"
    assert pipe_table._names([f"power{blank}(GPU1)", f"util{blank}x", "SM clock [gpu 0]"],
                             [["1 W", "2%", "3 MHz"]]) == ["GPU1 power", f"util{blank}x", "gpu0 SM clock"]


P = "[12/05/2023-10:00:00] [I] "


def test_an_enqueue_warning_without_the_compute_times_line_still_names_the_enqueue(tmp_path):
    # a paste that lost the `GPU Compute Time:` line: the totals and the tool's own warning still say it
    from playbook.diagnosis import diagnose
    from playbook.knowledge import ids

    text = (f"{P}=== Performance summary ===\n{P}Throughput: 300.2 qps\n"
            f"{P}Enqueue Time: min = 2.9 ms, max = 3.5 ms, mean = 3.1 ms, median = 3.0 ms, percentile(99%) = 3.4 ms\n"
            f"{P}Total Host Walltime: 3.0012 s\n{P}Total GPU Compute Time: 1.2 s\n"
            "[12/05/2023-10:00:00] [W] * Throughput may be bound by Enqueue Time rather than GPU Compute and the GPU "
            "may be under-utilized.\n")
    d = diagnose(read_paths([_write(tmp_path, "trtexec.log", text)]))
    assert not any("serving analysis skipped" in w for w in d.warnings)
    assert d.verdict["id"] == ids.LAUNCH_BOUND


def test_an_integrated_gpus_carve_out_is_no_dedicated_memory_to_spill_from():
    # an APU's / iGPU's pane: its few hundred MiB carved from system memory full, its work in shared memory by design
    # (no PCIe between them); a discrete GPU's full memory beside the same shared use still is a spill
    from playbook.readers.model_placement import Placements

    def pane(lines):
        p = Placements()
        for line in lines:
            p.feed(line)
        return p.summary()

    assert pane(["Dedicated GPU memory 0.5/0.5 GB", "Shared GPU memory 2.3/7.9 GB"]) == []
    assert pane(["Dedicated GPU memory 0.1/0.1 GB", "Shared GPU memory 1.4/15.9 GB"]) == []
    assert [r["how"] for r in pane(["Dedicated GPU memory 3.9/4.0 GB", "Shared GPU memory 2.3/7.9 GB"])] == ["shared"]


def test_a_time_column_of_each_rows_duration_is_no_clock(tmp_path):
    # `time` per epoch (44 s, 46 s, 45 s ...) is no time since the start: its rows are not merged as repeats of a
    # few seconds (a clock since the start never runs back); a rising one still is
    per_row = ("| # | time | GPU0 util | GPU0 power |\n|---|---|---|---|\n"
               + "".join(f"| {i} | {44 + i % 3} s | 9{i % 10}% | 250 W |\n" for i in range(20)))
    b = read_paths([_write(tmp_path, "epochs.md", per_row)])
    assert len(b.telemetry) == 20 and not any("repeat the timestamp" in w for w in b.warnings)
    clock = ("| elapsed | GPU0 util | GPU0 power |\n|---|---|---|\n"
             + "".join(f"| {10 * i} s | 9{i % 10}% | 250 W |\n" for i in range(20)))
    t = read_paths([_write(tmp_path, "clock.md", clock)]).telemetry
    assert len(t) == 20 and (t["time"].diff().dropna().dt.total_seconds() == 10).all()


def test_a_second_telemetry_table_is_said_not_read(tmp_path):
    # `before` and `after` tables pasted one after the other: the first is read, the other said, not dropped silently
    table = ("| elapsed | util (GPU0) | power (GPU0) |\n|---|---|---|\n"
             + "".join(f"| {s} s | {u}% | 250 W |\n" for s, u in ((1, 40), (2, 45), (3, 42))))
    b = read_paths([_write(tmp_path, "two.md", f"before:\n\n{table}\nafter:\n\n{table.replace('4', '9')}")])
    assert b.telemetry["util_pct"].tolist() == [40, 45, 42]
    assert any("1 more telemetry table" in w and "(line 11)" in w for w in b.warnings)


def test_a_row_with_fewer_cells_is_a_row_with_empty_cells(tmp_path):
    # GitHub's tables (GFM) fill a short row with empty cells: the table goes on past it, its later rows read
    text = ("| elapsed | util (GPU0) | power (GPU0) | SM clock (GPU0) |\n|---|---|---|---|\n"
            "| 1 s | 97% | 250 W | 1980 MHz |\n| 2 s | 98% | 251 W\n| 3 s | 99% | 252 W | 1975 MHz |\n"
            "| 4 s | 99% | 252 W | 1970 MHz |\n")
    t = read_paths([_write(tmp_path, "short.md", text)]).telemetry
    assert t["util_pct"].tolist() == [97, 98, 99, 99] and t["sm_clock_mhz"].isna().tolist() == [False, True, False,
                                                                                                  False]


def test_an_implicit_batchs_throughput_counts_samples_not_queries():
    # trtexec's Throughput is batch × queries / walltime (sampleReporting.cpp printEpilog; --batch=8 on an implicit-
    # batch engine): the queries are the total compute over each query's compute, so the per-query gap stays 0.9 ms
    from playbook.analysis import inference_bench
    from playbook.knowledge import ids

    run = {"qps": 8 * 1000 / 3.0, "walltime_ms": 3000.0, "compute_total_ms": 2100.0,
           "compute": {"mean": 2.1, "median": 2.1}, "h2d": {"mean": 0.6, "median": 0.6},
           "d2h": {"mean": 0.1, "median": 0.1}, "enqueue": {"mean": 0.2, "median": 0.2}}
    a = inference_bench.analyse(run)
    assert abs(a["gap_ms"] - 0.9) < 1e-9 and a["copy_bound"]
    assert inference_bench.findings([run])[0][0]["hypothesis"] == ids.H2D_COPY
