"""Load-test result blocks and model placements read by what their fields mean (readers/load_report.py,
readers/model_placement.py) and what they show (analysis/serving_capacity.py). Every input here is written apart from
the held-out files (tests/data/eval/heldout44), in the other layouts the tools print: perf_analyzer's ensemble and
response-cache lines and a request-rate block without the tool's warning (triton client inference_profiler.cc), a
client that prints the server's breakdown on the line after its total (CMSSW's TritonClient), latencies in ms,
`ollama ps` with its CONTEXT column and a `100% CPU` row (ollama cmd/cmd.go), llama.cpp's loader line, Ollama's offload
line unwrapped on two GPUs; numbers are made up (LABELED SYNTHETIC)."""

from __future__ import annotations

from pathlib import Path

import pytest

from playbook.analysis import serving_capacity
from playbook.core.errors import UnknownFormatError
from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.load_report import LoadReport, parts
from playbook.readers.model_placement import Placements


def _write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text.strip("\n") + "\n", encoding="utf-8")
    return str(p)


def _diagnose(path: str):
    return diagnose(read_paths([path]))


def _feed(reader, text: str):
    for line in text.splitlines():
        if line.strip():
            reader.feed(line)
    return reader.summary()


ENSEMBLE = """
Request concurrency: 8
  Client:
    Request count: 4000
    Throughput: 800 infer/sec
    Avg latency: 9.8 ms (standard deviation 1.2 ms)
    p99 latency: 14.1 ms
    Avg HTTP time: 9.7 ms (send/recv 0.2 ms + response wait 9.5 ms)
  Server:
    Inference count: 4000
    Execution count: 1000
    Successful request count: 4000
    Avg request latency: 2100 usec (overhead 100 usec + queue 200 usec + compute 1800 usec)
"""


def test_a_block_is_read_by_meaning_in_ms_and_with_one_compute_part():
    (b,) = _feed(LoadReport(), ENSEMBLE)
    assert b["load"] == ("concurrency", 8.0)
    assert b["throughput"] == 800 and b["client_us"] == pytest.approx(9800)
    assert b["server_us"] == 2100 and b["server_parts"] == {"overhead": 100, "queue": 200, "compute": 1800}
    assert (b["inferences"], b["executions"]) == (4000, 1000)


def test_a_breakdown_on_the_line_after_its_total_belongs_to_it():
    text = ("Request concurrency: 2\nThroughput: 120 infer/sec\nAvg latency: 16000 usec\n"
            "  Avg request latency: 3000 usec\n  (overhead 40 usec + queue 60 usec + compute input 300 usec + "
            "compute infer 2500 usec + compute output 100 usec)\n")
    (b,) = _feed(LoadReport(), text)
    assert b["server_us"] == 3000  # `request latency` with no `Server:` section is the server's
    assert b["server_parts"]["compute infer"] == 2500 and b["client_us"] == 16000
    assert parts("(queue 1 ms + compute 2 sec)") == {"queue": 1000.0, "compute": 2e6}


def test_lines_that_only_look_like_a_load_heading_open_no_block():
    text = ("rate: 0.001\nloss: 0.52\ntime: 12.0 s\nConcurrency: 1, throughput: 219.6 infer/sec, latency 4553 usec\n"
            "Learning Rate: 3e-4\n")
    assert _feed(LoadReport(), text) == []


def test_requests_waiting_outside_the_server_leave_its_gpu_waiting(tmp_path):
    # the server's queue + compute is 21% of what the client sees at both loads: the client / network hold the rest
    path = _write(tmp_path, "pa.txt", ENSEMBLE + ENSEMBLE.replace("concurrency: 8", "concurrency: 16")
                  .replace("800 infer", "820 infer").replace("9.8 ms", "19.5 ms"))
    d = _diagnose(path)
    assert d.verdict["id"] == "data_starvation"
    assert d.hypotheses[0]["names"] == []
    assert any("Little's law" in e for e in d.hypotheses[0]["evidence"])


def test_an_overloaded_server_whose_queue_holds_the_requests_is_not_starved():
    # the requests wait inside the server (queue 240 ms of its 247 ms): no starvation, whatever the client adds
    blocks = _feed(LoadReport(), "Request concurrency: 1000\n  Client:\n    Throughput: 4005 infer/sec\n"
                                 "    Avg latency: 600000 usec (standard deviation 9319 usec)\n  Server:\n"
                                 "    Avg request latency: 247496 usec (overhead 844 usec + queue 242704 usec + "
                                 "compute input 2241 usec + compute infer 1613 usec + compute output 94 usec)\n")
    assert serving_capacity.outside(blocks) is None


def test_a_client_that_sends_less_than_the_rate_asked_is_the_limit(tmp_path):
    # no warning line: the numbers alone (sent 900/s of 1200/s asked) say the load generator fell short
    text = ("Request Rate: 1200 inference requests per second\n  Client:\n    Request count: 4500\n"
            "    Avg send request rate: 900.00 infer/sec\n    Throughput: 899.5 infer/sec\n"
            "    Avg latency: 2100 usec (standard deviation 300 usec)\n")
    path = _write(tmp_path, "rate.txt", text)
    d = _diagnose(path)
    assert d.verdict["id"] == "data_starvation"
    assert any("900/s of the 1,200/s asked (75%)" in e for e in d.hypotheses[0]["evidence"])
    kept = _write(tmp_path, "kept.txt", text.replace("900.00", "1199.8").replace("899.5", "1199.0"))
    assert _diagnose(kept).verdict["id"] != "data_starvation"  # a client that keeps up is no limit


def test_a_saturated_server_is_a_fact_not_a_cause(tmp_path):
    # throughput flat from 1 to 8 in flight, the server busy with the request 95% of the client's latency at 1
    blocks = []
    for c, tput, lat in ((1, 100.0, 10000), (2, 104.0, 19200), (4, 106.0, 37700), (8, 107.0, 74800)):
        blocks.append(f"Request concurrency: {c}\n  Client:\n    Throughput: {tput} infer/sec\n"
                      f"    Avg latency: {lat} usec (standard deviation 100 usec)\n  Server:\n"
                      f"    Avg request latency: {int(lat * 0.95)} usec (overhead 10 usec + queue "
                      f"{int(lat * 0.95) - 9510} usec + compute input 100 usec + compute infer 9300 usec + "
                      f"compute output 100 usec)\n")
    path = _write(tmp_path, "sat.txt", "".join(blocks))
    d = _diagnose(path)
    assert d.verdict["id"] in ("healthy", "insufficient_data")
    assert "saturated at 1 request in flight" in " ".join(d.hypotheses[0]["evidence"])
    assert serving_capacity.saturation([]) is None


PS = """
NAME                 ID              SIZE      PROCESSOR          CONTEXT    UNTIL
qwen3:32b            030ee887880f    24 GB     100% CPU           4096       4 minutes from now
gemma3:4b            a2af6cc3eb7f    6.3 GB    100% GPU           4096       Forever
"""


def test_ollama_ps_rows_with_the_context_column(tmp_path):
    got = _feed(Placements(), PS)
    assert [(r["model"], r["cpu_share"]) for r in got] == [("qwen3:32b", 1.0), ("gemma3:4b", 0.0)]
    d = _diagnose(_write(tmp_path, "ps.txt", PS))
    assert d.verdict["id"] == "memory_pressure" and d.hypotheses[0]["names"] == []
    ev = " ".join(d.hypotheses[0]["evidence"])
    assert "qwen3:32b: 100% of it held in host memory" in ev and "gemma3:4b fully on the GPU" in ev


def test_a_share_pair_is_read_in_the_order_its_label_gives():
    assert _feed(Placements(), "mistral  abc  9 GB  70%/30% GPU/CPU  Forever")[0]["cpu_share"] == 0.3
    assert _feed(Placements(), "100% GPU") == []  # a bare `100% GPU` outside a `ollama ps` table says nothing


def test_llama_cpp_loader_lines_state_the_layers_on_the_gpu(tmp_path):
    assert _feed(Placements(), "llm_load_tensors: offloaded 33/33 layers to GPU")[0]["cpu_share"] == 0.0
    path = _write(tmp_path, "llama.log", "load_tensors: offloading 20 repeating layers to GPU\n"
                                         "load_tensors: offloaded 20/41 layers to GPU\n")
    d = _diagnose(path)
    assert d.verdict["id"] == "pipeline_imbalance"  # a layer count, no memory shortage stated: the setting splits it
    assert "21 of its 41 layers on the CPU; nothing in the input says" in " ".join(d.hypotheses[0]["evidence"])
    whole = _write(tmp_path, "whole.log", "load_tensors: offloaded 41/41 layers to GPU\n")
    assert _diagnose(whole).verdict["id"] == "insufficient_data"  # wholly on the GPU: read, a fact, no cause


def test_a_file_of_unrelated_text_is_still_refused(tmp_path):
    with pytest.raises(UnknownFormatError):
        read_paths([_write(tmp_path, "notes.txt", "we ran the server today\nit felt slow at 100% GPU\n")])


def test_ollama_offload_line_on_two_gpus_unwrapped():
    line = ('time=2025-06-01T10:00:00.000Z level=INFO source=server.go:168 msg=offload library=cuda '
            'layers.requested=-1 layers.model=81 layers.offload=70 layers.split=35,35 '
            'memory.available="[11.5 GiB 11.5 GiB]" memory.gpu_overhead="0 B" memory.required.full="41.2 GiB"')
    (r,) = _feed(Placements(), line)
    assert r["layers"] == [70, 81] and r["available_gib"] == 23.0 and r["required_gib"] == 41.2
    f = serving_capacity.offloaded([r])
    assert f["hypothesis"] == "memory_pressure" and f["level"] == "high"
    assert "23 GiB of GPU memory free, 41.2 GiB needed" in f["evidence"]
    # the same line with room for the whole model: the layers held back are a setting (num_gpu), not memory
    (r,) = _feed(Placements(), line.replace("[11.5 GiB 11.5 GiB]", "[24 GiB 24 GiB]"))
    f = serving_capacity.offloaded([r])
    assert f["hypothesis"] == "pipeline_imbalance" and "48 GiB of GPU memory is free for the 41.2 GiB" in f["evidence"]
