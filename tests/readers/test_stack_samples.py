"""Host-side profiler texts (readers/stack_samples.py, readers/line_profile.py, analysis/text_profiles.py): folded
stacks priced as shares of samples, py-spy dumps by their main threads' innermost frames, line_profiler rows by the
source they time. LABELED SYNTHETIC texts written here in the layouts of py-spy's dump printer and raw output,
torch.profiler's export_stacks and line_profiler's show_func, apart from the held-out pastes (heldout25)."""

from __future__ import annotations

import pytest

from playbook.commands import info
from playbook.diagnosis import diagnose
from playbook.readers import read_file
from playbook.readers.stack_samples import FoldedStacks, split_frame

LOOP = "<module> (train.py:90);main (train.py:80)"
LOADER = ("__next__ (torch/utils/data/dataloader.py:631);_next_data (torch/utils/data/dataloader.py:675);"
          "fetch (torch/utils/data/_utils/fetch.py:51);__getitem__ (data.py:22);open (PIL/Image.py:3227)")


def _folded(tmp_path, lines):
    p = tmp_path / "profile.txt"
    p.write_text("\n".join(lines) + "\n")
    return diagnose(read_file(p))


def test_folded_stacks_price_the_loader_as_its_share_of_the_samples(tmp_path):
    d = _folded(tmp_path, [f"{LOOP};{LOADER} 600",  # batches built in the main process (num_workers=0)
                           f"{LOOP};forward (model.py:31);_conv_forward (torch/nn/modules/conv.py:456) 300",
                           f"{LOOP};backward (torch/_tensor.py:626) 100"])
    assert d.verdict["id"] == "data_starvation"
    assert any("60% of the 1,000 samples are in the DataLoader" in e for e in d.hypotheses[0]["evidence"])


def test_native_sync_frames_of_a_py_spy_native_record_are_host_sync(tmp_path):
    d = _folded(tmp_path, [f"{LOOP};forward (model.py:31) 500",
                           f"{LOOP};_local_scalar_dense_cuda (libtorch_cuda.so);cudaMemcpyAsync (libcudart.so.12) 300",
                           f"{LOOP};synchronize (torch/cuda/__init__.py:801) 200"])
    assert d.verdict["id"] == "host_sync"
    assert any("50% of the 1,000 samples" in e for e in d.hypotheses[0]["evidence"])


def test_folded_stacks_without_a_cause_never_vouch_for_health(tmp_path):
    # all samples in the model's own code: a sampler sees the host only, so this says nothing of the device
    d = _folded(tmp_path, [f"{LOOP};forward (model.py:31) 900", f"{LOOP};step (torch/optim/adam.py:210) 100"])
    assert d.verdict["id"] == "insufficient_data"
    assert "host-side profiler texts" in " ".join(d.hypotheses[0]["evidence"])


def test_export_stacks_frames_and_ops_are_read():
    assert split_frame("train.py(12):_<module>") == ("<module>", "train.py")
    assert split_frame("torch/utils/data/dataloader.py(631):___next__") == ("__next__",
                                                                            "torch/utils/data/dataloader.py")
    assert split_frame("run (threading.py:1010)") == ("run", "threading.py:1010".split(":")[0])
    assert split_frame("cudaStreamSynchronize") == ("cudaStreamSynchronize", "")
    scan = FoldedStacks()
    assert scan.feed("train.py(30):_main;torch/utils/data/dataloader.py(631):___next__;aten::empty 40")
    assert scan.feed("train.py(31):_main;aten::item;aten::_local_scalar_dense;cudaStreamSynchronize 60")
    s = scan.summary()
    assert (s["samples"], s["loader"], s["sync"]) == (100, 40, 60)


@pytest.mark.parametrize("line", ["lr=0.1; batch size 12", "epoch 3; step 12", "a;b 1.5", "a;;b 3", "; 4",
                                  "loss 0.31;acc 0.9 12"])
def test_sentences_with_a_semicolon_and_a_number_are_not_folded_stacks(line):
    assert not FoldedStacks().feed(line)


DUMP = """Process 31337: python train.py --workers 8
Python v3.10.12 (/usr/bin/python3.10)

Thread 31337 (idle): "MainThread"
    {frames}
Thread 31402 (idle): "Thread-2 (_pin_memory_loop)"
    get (queue.py:180)
    _pin_memory_loop (torch/utils/data/_utils/pin_memory.py:52)
    run (threading.py:953)
"""


def _dump(tmp_path, frames):
    p = tmp_path / "dump.txt"
    p.write_text(DUMP.format(frames="\n    ".join(frames)))
    return read_file(p), diagnose(read_file(p))


def test_a_dump_whose_main_thread_waits_in_the_dataloader_names_the_loader(tmp_path):
    b, d = _dump(tmp_path, ["wait (threading.py:320)", "get (queue.py:180)",
                            "_try_get_data (torch/utils/data/dataloader.py:1133)",
                            "__next__ (torch/utils/data/dataloader.py:631)", "evaluate (train.py:140)",
                            "<module> (train.py:200)"])
    assert d.verdict["id"] == "data_starvation"
    assert any("1 of 1 main thread is in the DataLoader" in e and "one instant" in e
               for e in d.hypotheses[0]["evidence"])
    assert not len(b.events)  # `evaluate (train.py:140)` is a frame, not an evaluation event
    assert "py-spy dump: 2 threads; main threads in: loader 1" in info.render(info.summarize(b))


def test_a_dump_in_torch_cuda_synchronize_is_host_sync(tmp_path):
    _, d = _dump(tmp_path, ["synchronize (torch/cuda/__init__.py:801)", "train_step (train.py:77)",
                            "<module> (train.py:200)"])
    assert d.verdict["id"] == "host_sync"


def test_a_dump_in_the_model_names_nothing_and_is_not_healthy(tmp_path):
    _, d = _dump(tmp_path, ["forward (model.py:31)", "train_step (train.py:70)", "<module> (train.py:200)"])
    assert d.verdict["id"] == "insufficient_data"


def test_thread_headers_pasted_back_to_back_share_the_stack_below(tmp_path):
    p = tmp_path / "ranks.txt"
    p.write_text('\n'.join(['Thread 11 (active): "MainThread"', 'Thread 12 (active): "MainThread"',
                            "    all_reduce (torch/distributed/distributed_c10d.py:2050)",
                            "    train_step (train.py:214)", 'Thread 13 (idle): "MainThread"',
                            "    __next__ (torch/utils/data/dataloader.py:631)", "    train_step (train.py:207)"]))
    dump = read_file(p).meta["lines"][str(p)]["profiler"]["dump"]
    assert [m["kind"] for m in dump["main"]] == ["collective", "collective", "loader"]
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "data_starvation"
    assert any("2 other main threads wait in a collective" in e for e in d.hypotheses[0]["evidence"])


def _lprof(rows, total="12.5"):
    head = ["Timer unit: 1e-06 s", "", f"Total time: {total} s", "File: train.py", "Function: train at line 40", "",
            "Line #      Hits         Time  Per Hit   % Time  Line Contents",
            "=============================================================="]
    return "\n".join(head + [f"{n:>6} {h:>9} {t:>12.1f} {t / h:>8.1f} {pct:>8.1f}      {src}"
                             for n, h, t, pct, src in rows]) + "\n"


def test_line_profiler_prices_the_loop_lines_by_their_share_of_the_function(tmp_path):
    p = tmp_path / "lprof.txt"
    p.write_text(_lprof([(41, 101, 5_625_000.0, 45.0, "for i, (x, y) in enumerate(train_loader):"),
                         (42, 100, 250_000.0, 2.0, "x, y = x.to(device), y.to(device)"),
                         (43, 100, 2_500_000.0, 20.0, "loss = criterion(model(x), y)"),
                         (44, 100, 3_000_000.0, 24.0, "loss.backward()"),
                         (45, 100, 1_125_000.0, 9.0, "running += loss.item()")]))
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "data_starvation"
    assert any("45% of the profiled function's time of its 12.500 s" in e for e in d.hypotheses[0]["evidence"])
    assert any(h["id"] == "host_sync" for h in d.hypotheses)  # `.to()` 2% + `.item()` 9%: moderate


def test_line_profiler_rows_without_a_cause_are_not_healthy(tmp_path):
    p = tmp_path / "lprof.txt"
    p.write_text(_lprof([(41, 101, 125_000.0, 1.0, "for batch in loader:"),
                         (43, 100, 12_375_000.0, 99.0, "loss = step(model, batch)")]))
    assert diagnose(read_file(p)).verdict["id"] == "insufficient_data"


TFPROF = """Doc:
op: The nodes are operation kernel type, such as MatMul, Conv2D. Graph nodes belonging to the same type are aggregated together.
accelerator execution time: Time spent executing on the accelerator. This is normally measured by the actual hardware library.
cpu execution time: The time from the start to the end of the operation.

Profile:
node name | accelerator execution time | cpu execution time
MatMul                       120.00ms (100.00%, 60.00%),       20.00ms (100.00%, 40.00%)
BiasAdd                       80.00ms (40.00%, 40.00%),        30.00ms (60.00%, 60.00%)
"""


def test_a_tfprof_op_table_is_read_and_names_no_cause_without_a_window(tmp_path):
    # LABELED SYNTHETIC: tfprof's op view layout (Doc block, `node name | ...` header, `value (cum%, own%)` cells)
    p = tmp_path / "tfprof.txt"
    p.write_text(TFPROF)
    b = read_file(p)
    tf = b.meta["lines"][str(p)]["profiler"]["tfprof"]
    assert tf["ops"] == 2 and tf["accelerator_s"] == pytest.approx(0.2) and tf["cpu_s"] == pytest.approx(0.05)
    d = diagnose(b)
    assert d.verdict["id"] == "insufficient_data"
    assert "TensorFlow profiler op tables" in " ".join(d.hypotheses[0]["evidence"])


def test_a_total_time_line_of_another_log_is_not_taken_for_a_line_profiler_heading():
    from playbook.readers.line_profile import LineProfile

    scan = LineProfile()
    assert not scan.feed("Total time: 12.5 s") and not scan.feed("File: train.log")
    assert scan.feed("Timer unit: 1e-06 s") and scan.feed("Total time: 12.5 s")


WORKER = ("_worker_loop (torch/utils/data/_utils/worker.py:308);fetch (torch/utils/data/_utils/fetch.py:51);"
          "__getitem__ (data.py:22)")


def test_dataloader_worker_processes_are_not_the_training_loop(tmp_path):
    """`py-spy record --subprocesses`: the workers' stacks are always in the loader — left out of the shares, so
    a loop busy in its model is not called starved (review of heldout25)."""
    d = _folded(tmp_path, [f"{LOOP};forward (model.py:31) 900", f"{WORKER} 900", f"{WORKER} 900",
                           f"{LOOP};{LOADER} 100"])
    assert d.verdict["id"] != "data_starvation" or any("10% of the 1,000 samples" in e
                                                       for e in d.hypotheses[0]["evidence"])
    scan = FoldedStacks()
    for line in (f"{LOOP};forward (model.py:31) 900", f"{WORKER} 900"):
        assert scan.feed(line)
    assert scan.summary()["samples"] == 900.0 and scan.summary()["loader"] == 0.0


def test_a_project_fetch_py_is_not_the_dataloader_but_its_dataloader_py_is():
    from playbook.readers import host_calls

    assert host_calls.frame_kind("fetch", "myproj/net/fetch.py") is None
    assert host_calls.frame_kind("fetch", "/usr/lib/python3/site-packages/torch/utils/data/_utils/fetch.py") == "loader"
    assert host_calls.frame_kind("__iter__", "myproj/dataloader.py") == "loader"


def test_a_listing_ends_where_its_source_lines_stop_counting_up():
    """Rows are every line of the function, numbered in order: `100 steps done` after a listing is the log's line,
    and a later `File:` line is not a heading once another text came between (review of heldout25)."""
    from playbook.readers.line_profile import LineProfile

    scan = LineProfile()
    for line in _lprof([(41, 101, 125_000.0, 1.0, "for batch in loader:"),
                        (42, 100, 250_000.0, 2.0, "step(batch)")]).splitlines():
        if line.strip():
            assert scan.feed(line), line
    assert not scan.feed("100 steps done, loss 0.3") and not scan.feed("12 workers started")
    assert not scan.feed("File: config.yaml loaded")


def test_an_async_copy_and_a_cast_are_no_sync_lines():
    from playbook.readers.line_profile import LineProfile

    scan = LineProfile()
    for line in _lprof([(41, 100, 5_000_000.0, 50.0, "x = batch.to(dev, non_blocking=True)"),
                        (42, 100, 2_500_000.0, 25.0, "y = x.to(torch.float16)"),
                        (43, 100, 2_500_000.0, 25.0, "loss = model(y).mean().item()")]).splitlines():
        if line.strip():
            scan.feed(line)
    (f,) = scan.summary()
    assert f["sync_pct"] == 25.0


def test_tfprof_byte_cells_are_bytes_in_its_decimal_units():
    """tfprof prints memory as B, KB (1,000 B) or MB (tfprof_utils.cc FormatMemory): read into bytes."""
    from playbook.readers.tfprof_text import TfprofTable

    scan = TfprofTable()
    for line in ("node name | requested bytes | accelerator execution time",
                 "Conv2D    12.34MB (100.00%, 60.00%),   120.00ms (100.00%, 60.00%)",
                 "BiasAdd   512B (40.00%, 0.01%),        80.00ms (40.00%, 40.00%)",
                 "Relu      2.50KB (39.99%, 0.02%),      1.00ms (1.00%, 1.00%)"):
        assert scan.feed(line), line
    assert [op["requested bytes"] for op in scan.ops] == pytest.approx([12.34e6, 512.0, 2500.0])
