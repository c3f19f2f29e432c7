"""The device efficiency a training log states of itself (held-out round 37's mechanism), on lines written here from
the frameworks' print statements, apart from tests/data/eval/heldout37: a model-FLOP rate per device (Megatron-LM's
`throughput per GPU (TFLOP/s/GPU)`, MaxText's `TFLOP/s/device`, torchtitan's `tflops`, GPT-NeoX's `approx flops per
GPU: ..TFLOPS`, nanotron's `model_tflops_per_gpu`) and a model-FLOP utilization (torchtitan's and nanoGPT's `mfu`).
Step times alone measure a run against its own pace: a steady pace with a stated MFU under a tenth of the peak, or a
stated rate no device peak places, is no evidence of health — unless the GPUs' utilization is measured (Megatron's
StragglerDetector report)."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.model import schema
from playbook.readers import rank_reports, read_file
from playbook.readers.step_log.vocab import classify


@pytest.mark.parametrize(("key", "unit", "role"), [
    ("throughput per GPU (TFLOP/s/GPU)", None, ("flops", None, 1.0)),  # Megatron-LM training_log
    ("TFLOP/s/device", None, ("flops", None, 1.0)),  # MaxText metric_logger
    ("tflops", None, ("flops", None, 1.0)),  # torchtitan, InternEvo
    ("approx flops per GPU", "TFLOPS", ("flops", None, 1.0)),  # GPT-NeoX: `112.9TFLOPS`
    ("approx flops per GPU", "PFLOPS", ("flops", None, 1e3)),
    ("model_tflops_per_gpu", None, ("flops", None, 1.0)),  # nanotron
    ("mfu", "%", ("mfu", None, 0.01)),  # torchtitan `mfu: 41.2%`, nanoGPT `mfu 31.20%`
    ("perf/mfu/actor", None, ("mfu", None, 1.0)),  # verl: a fraction
    ("hardware_tflops_per_gpu", None, None),  # recomputation counted: not the model's rate
    ("fwd FLOPS per GPU", "TFLOPS", None),  # the DeepSpeed flops profiler: the forward's rate, not the step's
    ("fwd flops per GPU", "G", None),  # a count of FLOPs, not a rate
    ("flops", None, None),  # a bare count
])
def test_a_stated_flop_rate_or_mfu_gets_its_role(key, unit, role):
    assert classify(key, unit) == role


def _megatron(tmp_path, tflops: float, straggler_util: tuple[int, int] | None = None, n: int = 12):
    out = []
    for i in range(n):
        it = 200 + 10 * i
        out.append(f" [2025-01-07 10:{i:02d}:05] iteration {it:8d}/   20000 | consumed samples: {it * 256:12d} | "
                   f"elapsed time per iteration (ms): {2201.3 + (i % 3) * 3.1:.1f} | throughput per GPU (TFLOP/s/GPU): "
                   f"{tflops + (i % 2) * 0.4:.1f} | learning rate: 1.500000E-04 | global batch size:   256 | "
                   "lm loss: 3.100000E+00 | loss scale: 1.0 |")
        if straggler_util:
            lo, hi = straggler_util
            out.append(f"[2025-01-07 10:{i:02d}:05] | MnRtt/Rnk: 2190.11ms/3 | MxRtt/Rnk: 2199.02ms/0 | MnPwr/Rnk: "
                       f"401200W/2 | MxPwr/Rnk: 455100W/7 | MnUtl/Rnk: {lo}%/5 | MxUtl/Rnk: {hi}%/1 | MnEtpt/Rnk: "
                       f"{tflops - 1:.2f}TF/4 | MxEtpt/Rnk: {tflops + 1:.2f}TF/6")
    log = tmp_path / "megatron.log"
    log.write_text("\n".join(out) + "\n")
    return read_file(log)


def test_the_stated_rate_is_read_as_the_median_of_its_rows(tmp_path):
    bundle = _megatron(tmp_path, 188.0)
    (_, stated), = schema.meta_sections(bundle.meta, schema.STATED_EFFICIENCY)
    assert stated["tflops"] == pytest.approx(188.2, abs=0.25) and stated["rows"] == 12 and "mfu" not in stated


def test_a_steady_pace_with_a_rate_no_peak_places_is_not_called_healthy(tmp_path):
    d = diagnose(_megatron(tmp_path, 188.0))
    assert d.verdict["id"] == "insufficient_data"
    assert "TFLOP/s per device" in " ".join(d.hypotheses[0]["evidence"])


def test_a_rate_above_the_floor_of_the_fastest_peak_needs_no_peak_to_place_it(tmp_path):
    """452 TFLOP/s per GPU is 18% of the fastest dense BF16 peak in service (~2,500), 46% of an H100's: above the
    MFU floor on any device, so the steady pace vouches for health; 188 TFLOP/s is 8% of the fastest, 19% of an
    H100's, 60% of an A100's: no peak stated, no verdict."""
    assert diagnose(_megatron(tmp_path, 452.0)).verdict["id"] == "healthy"
    assert diagnose(_megatron(tmp_path, 188.0)).verdict["id"] == "insufficient_data"


def test_the_straggler_reports_measured_utilization_vouches_for_the_pace(tmp_path):
    assert diagnose(_megatron(tmp_path, 188.0, straggler_util=(96, 100))).verdict["id"] == "healthy"
    # utilization that falls below the steady-busy floor on some rank vouches for nothing
    assert diagnose(_megatron(tmp_path, 188.0, straggler_util=(41, 100))).verdict["id"] == "insufficient_data"


def _titan(tmp_path, mfu: float, n: int = 12):
    lines = [f"[rank0]:[titan] 2025-02-03 09:00:{5 + 2 * i:02d},120 - root - INFO - step: {10 * (i + 1):3d}  loss: "
             f"{7.0 - 0.1 * i:7.4f}  memory: 41.20GiB(52.10%)  tps: 6,{100 + i % 3 * 7:03d}  tflops: "
             f"{mfu * 9.89:.2f}  mfu: {mfu + (i % 2) * 0.02:.2f}%" for i in range(n)]
    log = tmp_path / "titan.log"
    log.write_text("\n".join(lines) + "\n")
    return read_file(log)


def test_a_stated_mfu_is_read_as_a_fraction(tmp_path):
    (_, stated), = schema.meta_sections(_titan(tmp_path, 41.0).meta, schema.STATED_EFFICIENCY)
    assert stated["mfu"] == pytest.approx(0.4101, abs=1e-3) and stated["fields"] == ["tflops", "mfu"]


def test_a_stated_mfu_decides_whether_a_steady_pace_vouches_for_health(tmp_path):
    assert diagnose(_titan(tmp_path, 41.0)).verdict["id"] == "healthy"  # the MFU places the rate: enough
    low = diagnose(_titan(tmp_path, 2.5))
    assert low.verdict["id"] == "insufficient_data"
    assert "model-FLOP utilization of 2.5" in " ".join(low.hypotheses[0]["evidence"])


def test_nanogpt_placeholder_mfu_before_its_estimate_is_left_out(tmp_path):
    lines = ["iter 0: loss 10.9774, time 25117.76ms, mfu -100.00%"] + [
        f"iter {i}: loss {9.0 - 0.01 * i:.4f}, time {930.0 + (i % 3) * 2.5:.2f}ms, mfu {31.2 + (i % 2) * 0.05:.2f}%"
        for i in range(1, 30)]
    log = tmp_path / "nanogpt.log"
    log.write_text("\n".join(lines) + "\n")
    (_, stated), = schema.meta_sections(read_file(log).meta, schema.STATED_EFFICIENCY)
    assert stated["mfu"] == pytest.approx(0.312, abs=1e-3) and stated["rows"] == 29


def test_a_loss_the_steps_show_keeps_its_cause_beside_a_stated_rate(tmp_path):
    lines = [f"completed step: {i}, seconds: {18.5 if i % 10 == 0 else 2.01 + (i % 3) * 0.01:.3f}, TFLOP/s/device: "
             f"{140.2:.3f}, Tokens/s/device: 8100.5, loss: 4.1" for i in range(1, 41)]
    log = tmp_path / "maxtext.log"
    log.write_text("\n".join(lines) + "\n")
    assert diagnose(read_file(log)).verdict["id"] not in ("healthy", "insufficient_data")


def test_straggler_report_lines_are_summarized_least_and_most_with_their_ranks():
    r = rank_reports.StragglerReports()
    assert r.feed("[2024-05-01 12:00:00] | MnRtt/Rnk: 812.40ms/2 | MxRtt/Rnk: 1390.02ms/11 | MnUtl/Rnk: 61%/11 | "
                  "MxUtl/Rnk: 99%/0 | MnClk/Rnk: 1410MHz/11 | MxClk/Rnk: 1980MHz/3")
    assert r.feed("[2024-05-01 12:01:00] | MnRtt/Rnk: 820.00ms/5 | MxRtt/Rnk: 990.00ms/11 | MnUtl/Rnk: 88%/4 | "
                  "MxUtl/Rnk: 100%/1")
    s = r.summary()
    assert s["reports"] == 2 and s["Utl"] == {"unit": "%", "min": 61.0, "min_rank": 11, "max": 100.0, "max_rank": 1}
    assert s["Rtt"]["max_rank"] == 11 and s["Clk"]["min"] == 1410.0
    assert not rank_reports.StragglerReports().feed("see MnUtl/Rnk: 61%/11 in the report")  # one field: prose


def test_a_lone_timed_step_says_where_its_time_went(tmp_path):
    """One DeepSpeed wall_clock_breakdown line (a step with no pace to compare): not enough data, and the answer says
    which of its own timers holds most of it (an offloaded optimizer's update, here)."""
    log = tmp_path / "ds.log"
    log.write_text("[2024-02-01 08:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | forward: 512.40 | "
                   "backward: 1210.77 | backward_inner: 1101.02 | backward_allreduce: 109.75 | step: 9310.28\n")
    d = diagnose(read_file(log))
    assert d.verdict["id"] == "insufficient_data"
    assert "84% of it in the optimizer phase" in d.hypotheses[0]["evidence"][0]


def test_an_mfu_printed_with_its_percent_sign_is_taken_as_printed_above_100_too(tmp_path):
    """nanoGPT's estimate holds the run against an A100's 312 TFLOP/s: on an H100 it prints `mfu 104.21%`
    (karpathy/nanoGPT#464: "I was getting 104% MFU on h100"). That is 1.04, not 1.04% (the rescaling of an MFU that
    reads above 1 is for one printed without its `%`): a healthy steady pace stays healthy."""
    lines = ["iter 0: loss 10.9815, time 31522.32ms, mfu -100.00%"] + [
        f"iter {10 * i}: loss {9.0 - 0.01 * i:.4f}, time {110.5 + (i % 3) * 0.05:.2f}ms, mfu {104.2 + (i % 2) * 0.01:.2f}%"
        for i in range(1, 30)]
    log = tmp_path / "nanogpt_h100.log"
    log.write_text("\n".join(lines) + "\n")
    bundle = read_file(log)
    (_, stated), = schema.meta_sections(bundle.meta, schema.STATED_EFFICIENCY)
    assert stated["mfu"] == pytest.approx(1.042, abs=1e-3)
    assert diagnose(bundle).verdict["id"] == "healthy"
    # printed without its sign, a value above 1 is a percentage (`mfu: 41.3`): 0.413
    plain = tmp_path / "plain.log"
    plain.write_text("\n".join(f"step {i} | loss 2.1 | step_time 1.{i % 2}0 s | mfu: 41.3" for i in range(20)) + "\n")
    (_, stated), = schema.meta_sections(read_file(plain).meta, schema.STATED_EFFICIENCY)
    assert stated["mfu"] == pytest.approx(0.413)


def test_straggler_reports_alone_are_named_as_what_the_inputs_hold(tmp_path):
    """A paste of StragglerDetector report lines only (no iteration lines): read, and named as what the inputs hold
    (was 'the inputs hold nothing usable only')."""
    log = tmp_path / "straggler.log"
    log.write_text("".join(f"[2024-03-14 23:0{i}:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | MnUtl/Rnk: "
                           f"97%/8 | MxUtl/Rnk: 100%/6 | MnClk/Rnk: 1950MHz/28 | MxClk/Rnk: 1980MHz/0\n"
                           for i in range(3)))
    d = diagnose(read_file(log))
    assert d.verdict["id"] == "insufficient_data"
    why = " ".join(d.hypotheses[0]["evidence"])
    assert "Megatron straggler reports (3;" in why and "nothing usable" not in why


@pytest.mark.parametrize("key", ["mfu (%)", "MFU(%)", "throughput/device/MFU (%)", "mfu_pct", "mfu_percent", "MFU%"])
def test_an_mfu_whose_key_says_percent_is_a_percentage(key):
    assert classify(key, None) == ("mfu", None, 0.01)


def test_a_low_mfu_under_a_percent_key_is_not_read_as_a_fraction(tmp_path):
    """`mfu (%): 0.30` is 0.30% (RL trainers whose GPUs wait on rollouts state MFU under 1%): read without the key's
    percent it was 30%, over the floor, and the steady run was called healthy. Lines written apart (a torchtitan-style
    layout whose keys carry their units)."""
    log = tmp_path / "pct.log"
    log.write_text("\n".join(f"step: {10 * (i + 1):3d}  loss: {7.0 - 0.01 * i:7.4f}  tps: {881 + i % 3}  tflops: 2.97  "
                             f"mfu (%): {0.30 + (i % 2) * 0.01:.2f}  elapsed_time_per_step (s): {1.21 + (i % 2) * 0.01:.2f}"
                             for i in range(20)) + "\n")
    bundle = read_file(log)
    (_, stated), = schema.meta_sections(bundle.meta, schema.STATED_EFFICIENCY)
    assert stated["mfu"] == pytest.approx(0.00305, abs=1e-4)
    assert diagnose(bundle).verdict["id"] == "insufficient_data"
