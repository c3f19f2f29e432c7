"""cProfile / pstats listings (readers/pstats_text.py, analysis/profiler_ops.py): columns from print_title, rows in
print_line's shape, the stated total as the base of every share. LABELED SYNTHETIC listings written here in the layout
of CPython's Lib/pstats.py (print_stats / print_title / print_line, f8 = "%8.3f"), apart from the held-out pastes;
one test reads what cProfile itself prints."""

from __future__ import annotations

import cProfile
import io
import pstats

import pytest

from playbook.commands import info
from playbook.core.errors import UnknownFormatError
from playbook.diagnosis import diagnose
from playbook.readers import read_file

TITLE = "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)"


def _line(ncalls, tottime, cumtime, name):
    """pstats.Stats.print_line for one function: `ncalls` as printed ("10" or "12/10")."""
    n = int(str(ncalls).split("/")[-1])
    per = lambda t: f"{t / n:8.3f}" if n else " " * 8  # noqa: E731
    return f"{str(ncalls).rjust(9)} {tottime:8.3f} {per(tottime)} {cumtime:8.3f} {per(cumtime)} {name}"


def _listing(rows, total_s=None, calls=5000, action=None, order="cumulative time"):
    head = [f"Profile stats for: {action}"] if action else []
    if total_s is not None:
        head += [f"         {calls} function calls ({calls - 10} primitive calls) in {total_s:.3f} seconds", "",
                 f"   Ordered by: {order}", ""]
    return "\n".join(head + [TITLE] + [_line(*r) for r in rows] + ["", ""]) + "\n"


GPU_STEP = [  # a training step on a GPU: the host held in the convolutions and backward, 8-13 ms per call
    (1, 0.010, 60.0, "train.py:20(main)"),
    (400, 0.004, 25.0, "/x/torch/nn/modules/module.py:1736(_call_impl)"),
    (2400, 22.0, 22.0, "{built-in method torch.conv2d}"),
    (400, 30.0, 30.4, "{method 'run_backward' of 'torch._C._EngineBase' objects}"),
    (2, 0.200, 0.200, "{method 'cuda' of 'torch._C.TensorBase' objects}"),
]


def test_a_print_stats_listing_is_read_by_its_title_and_stated_total(tmp_path):
    p = tmp_path / "prof.txt"
    p.write_text("epoch 1 done\n" + _listing([
        (401, 0.010, 12.0, "/x/torch/utils/data/dataloader.py:708(__next__)"),
        (400, 0.050, 11.5, "/x/torch/utils/data/_utils/fetch.py:46(fetch)"),
        ("800/400", 6.0, 9.0, "/x/data/dataset.py:30(__getitem__)"),
        (400, 4.0, 4.0, "{method 'item' of 'torch._C.TensorBase' objects}"),
        (0, 0.0, 0.0, "{built-in method builtins.len}"),
    ], total_s=40.0))
    b = read_file(p)
    prof = b.meta["lines"][str(p)]["profiler"]["pstats"]
    (s,) = prof["sections"]
    assert s["total_s"] == pytest.approx(40.0) and s["functions"] == 5
    assert s["loader_s"] == pytest.approx(12.0)  # the outermost of the nested loader rows, not their sum
    assert s["sync_s"] == pytest.approx(4.0) and s["sync_calls"] == 400 and s["sync_names"] == [".item()"]
    assert s["top"][0] == ("dataset.py:30(__getitem__)", pytest.approx(6.0))
    text = info.render(info.summarize(b))
    assert "cProfile listing: 5 functions, 40 s stated" in text


def test_a_loader_holding_30_percent_of_the_stated_total_is_data_starvation(tmp_path):
    p = tmp_path / "prof.txt"
    p.write_text(_listing([(201, 0.01, 12.0, "dataloader.py:633(__next__)"), *GPU_STEP[1:]], total_s=40.0))
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "data_starvation"
    assert any("30% of the 40.000 s the listing states" in e for e in d.hypotheses[0]["evidence"])


def test_item_calls_holding_a_quarter_of_the_stated_total_are_host_sync(tmp_path):
    p = tmp_path / "prof.txt"
    p.write_text(_listing([*GPU_STEP[:3], (5000, 10.0, 10.0, "{method 'item' of 'torch._C._TensorBase' objects}")],
                          total_s=40.0))
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "host_sync"
    assert any("25% of the 40.000 s the listing states" in e and "5,000 calls of .item()" in e
               for e in d.hypotheses[0]["evidence"])


def test_a_gpu_listing_whose_host_waits_in_the_device_calls_vouches_for_health(tmp_path):
    p = tmp_path / "prof.txt"
    p.write_text(_listing(GPU_STEP, total_s=60.0))
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "healthy"
    assert any("87% of the 60.000 s the listing states" in e for e in d.hypotheses[0]["evidence"])


@pytest.mark.parametrize("change", ["no device", "short calls", "no total"])
def test_a_listing_that_cannot_show_the_device_busy_is_not_healthy(tmp_path, change):
    rows = [r for r in GPU_STEP if "cuda" not in r[3]] if change == "no device" else GPU_STEP
    if change == "short calls":  # the same time in 100x more calls: 90-130 us each, launch-sized, not a wait
        rows = [(n * 100 if "torch" in name else n, t, c, name) for n, t, c, name in rows]
    p = tmp_path / "prof.txt"
    p.write_text(_listing(rows, total_s=None if change == "no total" else 60.0))
    assert diagnose(read_file(p)).verdict["id"] == "insufficient_data"


def test_rows_pasted_without_title_or_total_read_by_print_lines_shape(tmp_path):
    rows = [(9000, 20.0, 20.0, "{built-in method torch.as_tensor}"), (3000, 5.0, 9.0, "/x/env.py:88(step)"),
            (3000, 0.5, 0.5, "{method 'tolist' of 'torch._C.TensorBase' objects}")]
    p = tmp_path / "rows.txt"
    p.write_text("\n".join(_line(*r) for r in rows) + "\n")
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "host_sync"
    assert any("20.500 s in 12,000 calls of .tolist(), torch.as_tensor" in e and "share of the run is unknown" in e
               for e in d.hypotheses[0]["evidence"])
    # the same lines with two decimals are not print_line's: nothing read, the file refused with its name
    p.write_text("\n".join(_line(*r).replace(".000", ".00") for r in rows) + "\n")
    with pytest.raises(UnknownFormatError, match="rows.txt"):
        read_file(p)


def test_lightning_advanced_profiler_actions_join_the_report_vocabulary(tmp_path):
    loader = [(101, 0.01, 6.0, "dataloader.py:630(__next__)")]
    p = tmp_path / "fit.txt"
    p.write_text(_listing(loader, total_s=6.0, action="[_TrainingEpochLoop].train_dataloader_next")
                 + _listing(GPU_STEP[1:3], total_s=24.0, action="run_training_epoch"))
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "data_starvation"
    assert any("25% of the 24.000 s of training epochs" in e for e in d.hypotheses[0]["evidence"])
    p.write_text(_listing(loader, total_s=6.0, action="get_train_batch"))  # the loader's action alone: share unknown
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "data_starvation" and d.verdict.get("confidence") != "confirmed"
    assert any("states no epoch time" in e for e in d.hypotheses[0]["evidence"])


def test_what_cprofile_itself_prints_is_read(tmp_path):
    def _work():
        return sum(i * i for i in range(20_000))

    prof = cProfile.Profile()
    prof.runcall(_work)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats()
    p = tmp_path / "cprofile.txt"
    p.write_text(out.getvalue())
    lines = read_file(p).meta["lines"][str(p)]
    (s,) = lines["profiler"]["pstats"]["sections"]
    assert s["total_s"] is not None and s["functions"] >= 2  # _work and its generator, at least
    assert lines["unread"] == 0  # the total, `Ordered by`, the title and every row: each line is print_stats' own


def test_damaged_and_endless_listings_stay_bounded_and_never_raise(tmp_path):
    from playbook.readers import pstats_text

    p = tmp_path / "bad.txt"
    huge = "9" * 5000  # int() refuses more than 4,300 digits: such a row is not read, not a traceback
    p.write_text("".join(f"{i} function calls in 1.000 seconds\n" for i in range(pstats_text.MAX_SECTIONS + 50))
                 + f"{huge}    1.000    1.000    1.000    1.000 x.py:1(f)\n" + _line(10, 1.0, 1.0, "x.py:2(g)") + "\n")
    lines = read_file(p).meta["lines"][str(p)]
    assert lines["unread"] == 1 and lines["profiler"]["pstats"]["rows"] == 1


@pytest.mark.parametrize("row, cumtime", [
    # print_line leaves the first percall blank when the call count is 0 (and then the second: no primitive calls)
    ("        0    0.000             2.500          /x/torch/utils/data/dataloader.py:631(__next__)", 2.5),
    # and the second alone when the primitive count is 0: tottime, its percall, cumtime
    ("      3/0    0.300    0.100    4.000          /x/torch/utils/data/dataloader.py:631(__next__)", 4.0),
])
def test_a_row_with_a_blank_percall_reads_its_cumtime_not_tottime(tmp_path, row, cumtime):
    p = tmp_path / "prof.txt"
    p.write_text("\n".join([TITLE, row, _line(10, 1.0, 1.0, "/x/train.py:5(step)")]) + "\n")
    (s,) = read_file(p).meta["lines"][str(p)]["profiler"]["pstats"]["sections"]
    assert s["loader_s"] == pytest.approx(cumtime)
