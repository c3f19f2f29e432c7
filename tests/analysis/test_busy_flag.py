"""A busy share its own memory clock and draw contradict is read as idle (playbook.analysis.busy_flag), on inputs
written apart from the held-out round 47 pastes (LABELED SYNTHETIC): a rocm-smi concise loop in the rocm_smi.py
`showAllConcise` layout, an `amd-smi monitor` loop in the ROCm 6.x heading spelling, and frames built directly. A
GPU at work (its memory clock stepped up, or its draw near its limit, or a fixed HBM clock) is never judged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from playbook.analysis import busy_flag
from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.model import schema
from playbook.readers import read_paths


def _frame(util, mclk, power=None, limit=None) -> pd.DataFrame:
    n = len(util)
    cols = {"time": pd.date_range("2026-01-01", periods=n, freq="1s", tz="UTC"), "host": "n1", "gpu": 0,
            "util_pct": util, "mem_clock_mhz": mclk, "source": "t"}
    if power is not None:
        cols["power_w"] = power
    if limit is not None:
        cols["power_limit_w"] = limit
    return schema.telemetry_frame(cols)


@pytest.mark.parametrize(("util", "mclk", "power", "limit", "want"), [
    (100.0, 96.0, 40.0, 300.0, True),    # pinned flag: memory at its idle floor, 13% of the limit
    (99.0, 167.0, None, None, False),    # no draw recorded: the memory clock alone does not decide
    (100.0, 96.0, 290.0, 300.0, False),  # at its limit: real compute that needs no memory traffic
    (100.0, 1000.0, 60.0, 300.0, False),  # memory stepped up: work (a light, memory-bound load)
    (100.0, 1600.0, 40.0, 300.0, False),  # a fixed HBM clock (MI210 prints 1600 MHz idle or busy): never judged
    (100.0, 405.0, 30.0, 300.0, False),  # NVIDIA's P8 memory clock is above the floor: not judged by this test
    (60.0, 96.0, 40.0, 300.0, False),    # not a busy reading
    (100.0, np.nan, 40.0, 300.0, False),  # no memory clock: no evidence, no judgement
])
def test_a_busy_reading_is_contradicted_only_by_an_idle_memory_clock_and_a_low_draw(util, mclk, power, limit, want):
    f = _frame([util], [mclk], None if power is None else [power], None if limit is None else [limit])
    assert bool(busy_flag.contradicted(f)[0]) is want


def test_reconcile_reads_the_contradicted_polls_as_idle_and_says_which_gpu():
    f = _frame([0.0, 100.0, 100.0], [96.0, 96.0, 1200.0], [20.0, 45.0, 250.0], [300.0, 300.0, 300.0])
    out, note = busy_flag.reconcile(f)
    assert out["util_pct"].tolist() == [0.0, 0.0, 100.0]  # the poll with its memory stepped up is work
    assert note.startswith("n1:0: the busy share reads 100% in 1 of 3 polls") and "96 MHz" in note
    assert f["util_pct"].tolist() == [0.0, 100.0, 100.0]  # the caller's frame is left as it was
    same, none = busy_flag.reconcile(f.iloc[[2]])
    assert none is None and same is not None


def _concise_loop(polls: int) -> str:
    """rocm-smi's legacy concise table, `watch`-style, one banner per poll, laid out as rocm_smi.py showAllConcise
    prints it (every cell left-justified to the widest of its heading and values, headings GPU Temp AvgPwr SCLK MCLK
    Fan Perf PwrCap VRAM% GPU%): GPU 0 holds a context and idles (flag 100 %, memory at 96 MHz, 38 W of 300 W);
    GPU 1 works (100 %, memory at 1000 MHz, 270-288 W)."""
    header = ["GPU", "Temp", "AvgPwr", "SCLK", "MCLK", "Fan", "Perf", "PwrCap", "VRAM%", "GPU%"]
    out = []
    for i in range(polls):
        values = [["0", "45.0c", f"{38 + i % 2}.0W", "2500Mhz", "96Mhz", "20.0%", "auto", "300.0W", "41%", "100%"],
                  ["1", "71.0c", f"{270 + 2 * (i % 10)}.0W", "2400Mhz", "1000Mhz", "45.0%", "auto", "300.0W", "88%",
                   "100%"]]
        widths = [max(len(w) + 2, *(len(v[c]) + 2 for v in values)) for c, w in enumerate(header)]
        out += ["======================= ROCm System Management Interface =======================",
                "================================= Concise Info =================================",
                "".join(w.ljust(widths[c]) for c, w in enumerate(header)).rstrip(),
                *("".join(x.ljust(widths[c]) for c, x in enumerate(v)).rstrip() for v in values),
                "================================================================================",
                "============================= End of ROCm SMI Log =============================="]
    return "\n".join(out) + "\n"


def test_a_rocm_smi_loop_with_one_pinned_gpu_is_not_read_as_two_busy_gpus(tmp_path):
    p = tmp_path / "rocm_smi_loop.txt"
    p.write_text(_concise_loop(30))
    bundle = read_paths([str(p)])
    assert "mem_util_pct" not in bundle.telemetry or bundle.telemetry["mem_util_pct"].isna().all()  # VRAM% is a size
    d = diagnose(bundle)
    by_index = {g["index"]: g for g in d.gpus}
    assert by_index[0]["mean_util_pct"] == 0.0 and by_index[1]["mean_util_pct"] == 100.0
    pinned = [w for w in d.warnings if "busy flag without work" in w]
    assert len(pinned) == 1 and pinned[0].startswith("rocm_smi_loop:0: ") and "in 30 of 60 polls" in pinned[0]
    assert d.verdict["id"] != ids.HEALTHY  # one of the two GPUs does nothing the whole time


def test_an_amd_smi_monitor_loop_whose_memory_clock_steps_up_is_work(tmp_path):
    """`while true; do amd-smi monitor -putm; sleep 1; done` (ROCm 6.x headings: GFX_UTIL, GFX_CLOCK, MEM_UTIL,
    MEM_CLOCK): a flag pinned while the memory idles is read as idle; the same GPU at work (memory at 1300 MHz)
    keeps its reading."""
    heads = ["GPU", "POWER", "GPU_TEMP", "MEM_TEMP", "GFX_UTIL", "GFX_CLOCK", "MEM_UTIL", "MEM_CLOCK"]
    rows = []
    for i in range(24):  # a shell loop of `amd-smi monitor`: a header per poll, values right-aligned under it
        working = i >= 12
        rows.append("  ".join(heads))
        cells = ["0", "410 W" if working else "95 W", "70 °C" if working else "40 °C", "50 °C", "100 %", "2100 MHz",
                 "35 %" if working else "0 %", "1300 MHz" if working else "96 MHz"]
        rows.append("  ".join(c.rjust(len(h)) for c, h in zip(cells, heads, strict=True)))
    p = tmp_path / "amd_smi_monitor.txt"
    p.write_text("\n".join(rows) + "\n")
    tele = read_paths([str(p)]).telemetry
    assert tele["mem_clock_mhz"].tolist()[:2] == [96.0, 96.0]
    out, note = busy_flag.reconcile(tele)
    assert out["util_pct"].tolist() == [0.0] * 12 + [100.0] * 12
    assert note is not None and "in 12 of 24 polls" in note


def test_a_busy_gpu_whose_memory_clock_sits_at_its_floor_is_not_judged_without_its_draw():
    """RDNA3's memory clock can sit at its 96 MHz floor under intense compute (marazmista/radeon-profile#294: a
    7900 XTX "during intense ML workloads", core above 3.1 GHz, "the memory clocks ... underclocking themselves to
    96MHz"; its 96 MB Infinity Cache serves the traffic): the memory clock alone cannot tell that work from AMD's
    pinned flag; only a draw well under what the GPU draws at work can. A recording without the draw, or without
    anything to weigh it against, is not judged (LABELED SYNTHETIC figures)."""
    busy = _frame([100.0] * 4, [96.0] * 4)  # gpu_busy_percent and pp_dpm_mclk only
    assert not busy_flag.contradicted(busy).any()
    out, note = busy_flag.reconcile(busy)
    assert note is None and out["util_pct"].tolist() == [100.0] * 4
    steady = _frame([100.0] * 4, [96.0] * 4, [300.0, 310.0, 305.0, 300.0])  # its draw, no limit: nothing to weigh
    assert not busy_flag.contradicted(steady).any()


def test_without_a_limit_the_gpus_own_peak_draw_weighs_a_poll():
    """The most a GPU drew in the recording is at most its limit: a poll drawing at most half of it is at most half
    of the limit too. Two GPUs of one file are weighed each against its own peak."""
    f = pd.concat([_frame([100.0, 100.0], [96.0, 1249.0], [95.0, 410.0]),
                   _frame([100.0, 100.0], [96.0, 96.0], [120.0, 125.0]).assign(gpu=1)], ignore_index=True)
    assert busy_flag.contradicted(f).tolist() == [True, False, False, False]


def test_the_warning_names_what_the_draw_was_weighed_against():
    out, note = busy_flag.reconcile(_frame([100.0, 100.0], [96.0, 1249.0], [95.0, 410.0]))
    assert out["util_pct"].tolist() == [0.0, 100.0]
    assert "drawing at most 23% of the GPU's peak draw in the recording" in note and "power limit" not in note
