"""What local inference runtimes print about where a model runs and how fast it answers (readers/token_rates.py,
readers/model_placement.py, analysis/serving_capacity.py), and a tqdm bar's closing postfix read as a loop, not a
step (readers/step_log/span_line.py). Every input here is written apart from the round-60 files (LABELED SYNTHETIC:
other models, other numbers, the other wordings of each tool as its source prints them, prose that must not match)."""

from __future__ import annotations

import pytest

from playbook.analysis.serving_capacity import offloaded
from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths
from playbook.readers.model_placement import Placements, describe
from playbook.readers.token_rates import TokenRates
from playbook.readers.token_rates import describe as describe_rates


def _rates(lines):
    t = TokenRates()
    fed = [t.feed(line) for line in lines]
    return t.summary(), fed


def _placed(lines):
    p = Placements()
    fed = [p.feed(line) for line in lines]
    return p.summary(), fed


def _verdict(tmp_path, text, name="run.log"):
    path = tmp_path / name
    path.write_text(text)
    return diagnose(read_paths([str(path)])).hypotheses[0]


def test_llama_cpp_timings_in_every_wording_give_the_same_figures():
    recs, fed = _rates([
        "llama_print_timings:      sample time =    12.50 ms /   100 runs   (    0.13 ms per token)",  # 2023: no rate
        "llama_print_timings: prompt eval time =   400.00 ms /    80 tokens (    5.00 ms per token,   200.00 tokens "
        "per second)",
        "llama_perf_context_print:        eval time =    2500.00 ms /   199 runs   (   12.56 ms per token,    79.60 "
        "tokens per second)",
        "slot print_timing: id  1 | task 7 | prompt eval time =     120.00 ms /    30 tokens (    4.00 ms per token, "
        "  250.00 tokens per second)",
        "       eval time =    1000.00 ms /    50 tokens (   20.00 ms per token,    50.00 tokens per second)",
        "llama_perf_context_print:        load time =     812.41 ms",
        "llama_perf_context_print:       total time =    3312.41 ms /   279 tokens",
    ])
    assert fed == [True] * 7
    assert [(r["phase"], r["tps"]) for r in recs] == [("sample", 8000.0), ("prompt", 200.0), ("decode", 79.6),
                                                      ("prompt", 250.0), ("decode", 50.0)]
    assert recs[0]["ms_per_token"] == 0.125 and recs[2]["tokens"] == 199 and recs[2]["seconds"] == 2.5


def test_a_phase_without_tokens_and_prose_are_no_record():
    recs, fed = _rates([
        "llama_perf_context_print: prompt eval time =       0.00 ms /     0 tokens (     nan ms per token,      nan "
        "tokens per second)",
        "the eval time was about 20 ms per token yesterday",
        "total time = 3 minutes",
    ])
    assert recs == [] and fed == [True, False, False]


def test_text_generation_webui_and_koboldcpp_in_their_three_wordings():
    recs, fed = _rates([
        "Output generated in 7.71 seconds (25.94 tokens/s, 200 tokens, context 1024, seed 42)",
        "[12:00:01] CtxLimit:2048/8192, Amt:256/512, Init:0.01s, Process:1.50s (1365.33T/s), Generate:8.00s "
        "(32.00T/s), Total:9.51s",
        "ContextLimit: 900/4096, Processing:3.00s (3.3ms/T), Generation:20.00s (100.0ms/T), Total:23.00s "
        "(130.0ms/T = 7.69T/s)",
        "Time Taken - Processing:1.0s (50ms/T), Generation:40.0s (400ms/T), Total:41.0s (2.4T/s)",
        "Generation was slow: about 2 T/s",
    ])
    assert fed == [True, True, True, True, False]
    assert [(r["tool"], r["phase"], round(r["tps"], 2)) for r in recs] == [
        ("text-generation-webui", "request", 25.94), ("KoboldCpp", "prompt", 1365.33), ("KoboldCpp", "decode", 32.0),
        ("KoboldCpp", "prompt", 303.03), ("KoboldCpp", "decode", 10.0), ("KoboldCpp", "prompt", 20.0),
        ("KoboldCpp", "decode", 2.5)]
    assert "decode 10 tokens/s (2.5-32) over 3 records" in describe_rates(recs)


def test_per_layer_devices_count_the_layers_the_gpu_holds():
    lines = [f"load_tensors: layer {i:3d} assigned to device {'CPU' if i < 4 else 'CUDA0'}, is_swa = 0"
             for i in range(32)]
    recs, fed = _placed(lines)
    assert all(fed) and recs == [{"model": None, "cpu_share": 0.125, "how": "layers", "layers": [28, 32],
                                  "shown": True}]
    f = offloaded(recs, [{"phase": "decode", "tps": 18.5}])
    assert f["hypothesis"] == ids.PIPELINE_IMBALANCE and "4 of its 32 layers on the CPU" in f["evidence"]
    assert f["evidence"].endswith("it decodes 18.5 tokens/s")
    whole, _ = _placed([f"load_tensors: layer {i:3d} assigned to device CUDA{i % 2}" for i in range(24)])
    assert offloaded(whole) is None  # two GPUs, no layer on the CPU


@pytest.mark.parametrize(("state", "finding"), [("NO_VRAM", True), ("LOW_VRAM", True), ("NORMAL_VRAM", False),
                                                ("HIGH_VRAM", False), ("SHARED", False)])
def test_a_memory_mode_that_streams_the_weights_is_memory_pressure(state, finding):
    recs, fed = _placed(["Total VRAM 4096 MB, total RAM 32011 MB", f"Set vram state to: {state}",
                         "Device: cuda:0 NVIDIA GeForce GTX 1650 : cudaMallocAsync"])
    assert fed[:2] == [True, True]
    f = offloaded(recs)
    assert (f is not None) == finding
    if finding:
        assert f["hypothesis"] == ids.MEMORY_PRESSURE and f"{state} mode on a GPU of 4096 MiB" in f["evidence"]


def test_a_low_vram_mode_whose_models_all_loaded_completely_raises_nothing():
    recs, _ = _placed(["Set vram state to: LOW_VRAM", "Requested to load SD1ClipModel",
                       "loaded completely 3000.0 235.84423828125 True"])
    assert offloaded(recs) is None
    streamed, _ = _placed(["Set vram state to: LOW_VRAM", "Requested to load BaseModel",
                           "loading in lowvram mode 1200.0"])
    assert offloaded(streamed)["hypothesis"] == ids.MEMORY_PRESSURE


def test_a_device_warning_states_the_cpu_but_no_gpu_to_blame(tmp_path):
    recs, fed = _placed([
        "/opt/venv/lib/python3.11/site-packages/whisper/transcribe.py:126: UserWarning: FP16 is not supported on CPU; "
        "using FP32 instead",
        '  warnings.warn("FP16 is not supported on CPU; using FP32 instead")',
        "Set vram state to: DISABLED"])
    assert fed == [True, True, True]
    assert [(r["model"], r["how"], r["cpu_share"]) for r in recs] == [("whisper", "device", 1.0),
                                                                       (None, "device", 1.0)]
    assert offloaded(recs) is None  # whether a GPU was there to use is not stated
    assert "whisper: on the CPU" in describe(recs)
    hyp = _verdict(tmp_path, "Detecting language using up to the first 30 seconds.\n"
                             "/usr/lib/python3/site-packages/whisper/transcribe.py:115: UserWarning: FP16 is not "
                             "supported on CPU; using FP32 instead\n")
    assert hyp["id"] == ids.INSUFFICIENT_DATA


def test_ctranslate2s_precision_warning_names_no_device(tmp_path):
    line = ("[2025-02-11 09:00:00.000] [ctranslate2] [thread 4410] [warning] The compute type inferred from the saved "
            "model is bfloat16, but the target device or backend do not support efficient bfloat16 computation. The "
            "model weights have been automatically converted to use the float32 compute type instead.")
    recs, fed = _placed([line, "bfloat16 is not supported on this card, it said"])
    assert fed == [True, False]
    assert recs == [{"model": None, "cpu_share": None, "how": "precision", "from": "bfloat16", "to": "float32"}]
    assert offloaded(recs) is None and "the line does not say which" in describe(recs)
    assert _verdict(tmp_path, line + "\n")["id"] == ids.INSUFFICIENT_DATA


def test_closing_bar_postfixes_are_loops_not_steps(tmp_path):
    text = ("Euler a, 512x768:\n[00:31<00:00,  1.55s/it]\n\nDPM++ 2M, 512x768:\n[00:25<00:00,  1.26s/it]\n\n"
            "UniPC:\n[00:12<00:00,  1.66it/s]\n")
    path = tmp_path / "bars.log"
    path.write_text(text)
    run = read_paths([str(path)])
    assert run.steps is None or len(run.steps) == 0  # three loops, each its own: no step series
    recs, _ = _rates(text.splitlines())
    assert [(r["s_per_it"], r["seconds"]) for r in recs] == [(1.55, 31), (1.26, 25), (0.60241, 12)]
    assert "3 bars closing at 1.55 s/it, 1.26 s/it, 0.6024 s/it" in describe_rates(recs)


def test_a_whole_bar_is_still_read_as_steps(tmp_path):
    text = "".join(f"Training: {p}%|####      | {i}/50 [00:{i * 2:02d}<00:{100 - i * 2:02d},  2.00s/it]\n"
                   for i, p in ((10, 20), (20, 40), (30, 60), (40, 80)))
    path = tmp_path / "bar.log"
    path.write_text(text)
    steps = read_paths([str(path)]).steps
    assert steps is not None and len(steps) >= 4


def test_the_layers_asked_and_the_gpu_build_are_said_beside_the_placement():
    recs, _ = _placed(["./main -m models/13B/q4.gguf -ngl 99 -c 2048",
                       "llm_load_tensors: offloaded 0/41 layers to GPU"])
    assert recs[0]["asked"] == 99
    assert "99 layers were asked for the GPU: the setting did not reach the loader" in offloaded(recs)["evidence"]
    fewer, _ = _placed(["Namespace(gpulayers=60, threads=8)", "load_tensors: offloaded 30/61 layers to GPU",
                        "system_info: n_threads = 8 | Vulkan : COOPMAT = 1 | CPU : AVX2 = 1 |"])
    ev = offloaded(fewer)["evidence"]
    assert "60 layers were asked for the GPU: the runtime placed fewer" in ev and "built with Vulkan" in ev
    none, _ = _placed(["llm = Llama(model_path='m.gguf', n_gpu_layers=20)", "offloaded 20/33 layers to GPU"])
    assert "asked" not in offloaded(none)["evidence"]  # the 20 asked were placed: the setting is the split
