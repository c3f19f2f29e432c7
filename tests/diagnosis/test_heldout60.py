"""The sixtieth held-out round (tests/data/eval/heldout60/SOURCES.md): what local inference runtimes print about
runs that leave the GPU idle (or not) — llama.cpp's loader placing every layer on the CPU (the 2023 count and the
2025 per-layer lines with llama_perf timings), forge's LOW_VRAM mode on a 2 GB GPU with three closing bars,
whisper's "FP16 is not supported on CPU", text-generation-webui's `Output generated` lines of a healthy benchmark,
and CTranslate2's float16→float32 warning that names no device. Each file's verdict (one of the accepted ids) and
what it must not claim (the fixes are tested apart: tests/readers/test_inference_runtime_lines.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout60"

ACCEPTED = {
    "llamacpp3616_llava_offloaded_0_of_35.log": ("pipeline_imbalance", "insufficient_data"),
    "llama_cpp_python1939_every_layer_on_cpu.log": ("pipeline_imbalance", "insufficient_data"),
    "forge213_mx150_forced_lowvram.log": ("memory_pressure", "insufficient_data"),
    "decipher8_whisper_fp16_on_cpu.log": ("pipeline_imbalance", "insufficient_data"),
    "textgen5296_prompt_lookup_healthy.log": ("healthy", "insufficient_data", "workload_change"),
    "fasterwhisper727_ct2_float16_to_float32.log": ("insufficient_data", "slower_compute", "healthy"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_no_gpu_is_named_guilty(name):
    assert diagnose(read_paths([str(HERE / name)])).hypotheses[0]["names"] == []


def test_the_closing_bars_are_three_loops_not_three_steps():
    run = read_paths([str(HERE / "forge213_mx150_forced_lowvram.log")])
    assert run.steps is None or len(run.steps) == 0


def test_the_ctranslate2_warning_is_not_read_as_the_cpu():
    top = diagnose(read_paths([str(HERE / "fasterwhisper727_ct2_float16_to_float32.log")])).hypotheses[0]
    assert top["id"] != "pipeline_imbalance" and "on the CPU" not in str(top)
