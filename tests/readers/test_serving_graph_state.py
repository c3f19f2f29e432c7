"""Whether a serving run captures CUDA graphs, as its launch command or the engine's configuration line states it
(readers/serving_metrics.py graphs_on), and what an eager run costs (analysis/serving_load.py _eager). Every input
here is written apart from the held-out file (tests/data/eval/heldout65, an aphrodite A/B), in the other layouts
the engines print: vLLM V1's `Initializing a V1 LLM engine ... with config: ..., enforce_eager=True, ...` line and
its `Engine 000:` interval lines, two `python -m vllm.entrypoints.openai.api_server` launches pasted one after the
other, `--enforce-eager=False`, SGLang's `server_args=ServerArgs(..., disable_cuda_graph=True, ...)` before its
`Decode batch.` lines; the numbers are made up (LABELED SYNTHETIC)."""

from __future__ import annotations

from pathlib import Path

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths
from playbook.readers.serving_metrics import graphs_on


def _diagnose(tmp_path: Path, text: str):
    p = tmp_path / "serve.log"
    p.write_text(text.strip("\n") + "\n", encoding="utf-8")
    return diagnose(read_paths([str(p)]))


def _launch(d) -> dict | None:
    return next((h for h in d.hypotheses if h["id"] == ids.LAUNCH_BOUND), None)


V1 = "INFO 05-01 10:0{i}:00 [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation " \
     "throughput: {tps} tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.1%, Prefix cache hit rate: 0.0%"


def test_the_engine_configuration_line_states_eager(tmp_path):
    text = "\n".join(["INFO 05-01 09:59:00 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: "
                      "model='m', speculative_config=None, tokenizer='m', enforce_eager=True, kv_cache_dtype=auto"]
                     + [V1.format(i=i, tps=t) for i, t in enumerate((88.1, 90.4, 87.9))])
    d = _diagnose(tmp_path, text)
    h = _launch(d)
    assert h is not None
    assert "without CUDA graphs" in " ".join(h["evidence"])


def test_two_launches_compare_eager_with_graphs(tmp_path):
    text = "\n".join(["$ python -m vllm.entrypoints.openai.api_server --model m --max-num-seqs 4 --enforce-eager"]
                     + [V1.format(i=i, tps=t) for i, t in enumerate((40.2, 41.0, 39.8))]
                     + ["$ python -m vllm.entrypoints.openai.api_server --model m --max-num-seqs 4"]
                     + [V1.format(i=i + 5, tps=t) for i, t in enumerate((101.3, 99.7, 100.4))])
    d = _diagnose(tmp_path, text)
    assert d.verdict["id"] == ids.LAUNCH_BOUND
    ev = " ".join(_launch(d)["evidence"])
    assert "100.4 tokens/s" in ev and "eager loses 60%" in ev


def test_graphs_stated_on_or_the_graphed_run_slower_is_no_launch_finding(tmp_path):
    on = "\n".join(["vllm serve m --enforce-eager=False --max-num-seqs 4"]
                   + [V1.format(i=i, tps=t) for i, t in enumerate((40.2, 41.0, 39.8))])
    assert _launch(_diagnose(tmp_path, on)) is None
    slower = "\n".join(["vllm serve m --enforce-eager"] + [V1.format(i=i, tps=t) for i, t in enumerate((90, 91, 92))]
                       + ["vllm serve m"] + [V1.format(i=i + 5, tps=t) for i, t in enumerate((60, 61, 59))])
    assert _launch(_diagnose(tmp_path, slower)) is None


SGL = "[2025-03-01 10:00:0{i}] Decode batch. #running-req: 2, #token: 900, token usage: 0.01, gen throughput " \
      "(token/s): {tps}, #queue-req: 0"


def test_sglang_server_args_disable_the_graphs(tmp_path):
    args = "[2025-03-01 09:59:00] server_args=ServerArgs(model_path='m', tp_size=1, disable_cuda_graph={}, " \
           "cuda_graph_max_bs=8, max_running_requests=8)"
    lines = [SGL.format(i=i, tps=t) for i, t in enumerate((55.0, 54.2, 56.1))]
    d = _diagnose(tmp_path, "\n".join([args.format("True")] + lines))
    assert _launch(d) is not None
    assert _launch(_diagnose(tmp_path, "\n".join([args.format("False")] + lines))) is None


def test_graphs_on_reads_the_flag_and_the_stated_field():
    assert graphs_on("aphrodite run m -tp 2 --enforce-eager") is False
    assert graphs_on("vllm serve m --enforce-eager false") is True
    assert graphs_on("python -m sglang.launch_server --model-path m --disable-cuda-graph") is False
    assert graphs_on("non-default args: {'model': 'm', 'enforce_eager': True}") is False
    assert graphs_on("disable_cuda_graph=False, cuda_graph_max_bs=8") is True
    assert graphs_on("a run of the mill line about serving") is None
    assert graphs_on("--enforce-eager-ish flag") is None
