"""The forty-fourth held-out round (tests/data/eval/heldout44/SOURCES.md): real inference-serving evidence from
servers other than SGLang/vLLM, pasted in public threads with a stated cause — perf_client blocks whose requests spend
~92-94% of their latency outside one Triton server (its request path capped the GPUs), a perf_analyzer request-rate
block whose client could not keep up with the rate asked, a saturated server measured with CUDA shared memory (the
healthy case), two Ollama statements of a model split between CPU and GPU (`ollama ps`, the offload log line), and a
llama.cpp loader keeping 34 of 35 layers on the CPU by a plugin's setting (added after the fixes, labelled first).
Each file's verdict (one of the accepted ids) and that none names a rank or GPU (the mechanisms are tested apart:
tests/readers/test_serving_capacity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout44"

ACCEPTED = {
    "triton269_perf_client_two_gpus_grpc_cap.txt": ("data_starvation",),
    "triton6243_cudashm_c1_c4_saturated.txt": ("healthy", "insufficient_data"),
    "triton7986_pa_cannot_keep_up_request_rate.txt": ("data_starvation", "insufficient_data"),
    "ollama4531_ps_70b_partial_offload.txt": ("memory_pressure", "pipeline_imbalance"),
    "ollama10823_offload_49_of_63_layers.log": ("memory_pressure", "pipeline_imbalance"),
    "llm_llama_cpp19_offloaded_1_of_35.log": ("pipeline_imbalance",),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_no_rank_or_gpu_is_named(name):
    assert diagnose(read_paths([str(HERE / name)])).hypotheses[0]["names"] == []


def test_the_split_model_is_the_one_named_slow():
    ev = " ".join(diagnose(read_paths([str(HERE / "ollama4531_ps_70b_partial_offload.txt")])).hypotheses[0]["evidence"])
    assert "llama3:70b: 42% of it held in host memory" in ev and "llama3:latest fully on the GPU" in ev


def test_the_saturated_server_is_stated_as_such():
    d = diagnose(read_paths([str(HERE / "triton6243_cudashm_c1_c4_saturated.txt")]))
    assert "saturated at 1 request in flight" in " ".join(d.hypotheses[0]["evidence"])
