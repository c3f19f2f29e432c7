"""Healthy load tests and pasted prose that the serving-capacity rules (analysis/serving_capacity.py) must not call a
cause. The blocks follow perf_analyzer's print statements (triton-inference-server/perf_analyzer
src/inference_profiler.cc ReportClientSideStats / ReportServerSideStats: the delay warning is printed, with the send
rate, once more than DELAY_PCT_THRESHOLD = 1% of the requests left over 1 ms late, request_rate_worker.cc); the
`ollama ps` table follows ollama cmd/cmd.go. Numbers made up (LABELED SYNTHETIC)."""

from __future__ import annotations

from pathlib import Path

from playbook.analysis import serving_capacity
from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.load_report import LoadReport
from playbook.readers.model_placement import Placements


def _feed(reader, text: str):
    for line in text.splitlines():
        if line.strip():
            reader.feed(line)
    return reader.summary()


def _verdict(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return diagnose(read_paths([str(p)])).verdict["id"]


def _block(load: str, tput: float, client: int, server: int, queue: int, infer: int, client_extra: str = "") -> str:
    return (f"{load}\n  Client: \n    Request count: 5000\n{client_extra}    Throughput: {tput} infer/sec\n"
            f"    Avg latency: {client} usec (standard deviation 100 usec)\n  Server: \n    Inference count: 5000\n"
            f"    Execution count: 5000\n    Successful request count: 5000\n"
            f"    Avg request latency: {server} usec (overhead 20 usec + queue {queue} usec + compute input 50 usec + "
            f"compute infer {infer} usec + compute output 30 usec)\n")


def test_a_sweep_that_fills_the_server_is_not_starved(tmp_path):
    # at 1 in flight the round trip outside the server dominates; at 8 the requests queue inside it (6.6 ms of 7.6):
    # this client can fill the server, so the first block's idle time is the load asked, not a starved GPU
    text = (_block("Request concurrency: 1", 330, 3000, 1000, 20, 900)
            + _block("Request concurrency: 8", 1000, 8000, 7600, 6600, 900))
    assert serving_capacity.outside(_feed(LoadReport(), text)) is None
    assert _verdict(tmp_path, "sweep.txt", text) != "data_starvation"


LATE = ("    Avg send request rate: {sent} infer/sec\n    [WARNING] Perf Analyzer was not able to keep up with the "
        "desired request rate. {pct}% of the requests were delayed. \n")


def test_a_few_late_requests_at_the_asked_rate_are_no_limit(tmp_path):
    # 3.2% of the requests over 1 ms late, but 1496 of the 1500/s asked were sent: the load was offered
    text = _block("Request Rate: 1500 inference requests per second", 1495.9, 1200, 1000, 20, 900,
                  LATE.format(sent="1496.20", pct="3.20"))
    assert serving_capacity.lagging(_feed(LoadReport(), text)) is None
    assert _verdict(tmp_path, "late.txt", text) != "data_starvation"


def test_a_full_server_holding_a_synchronous_client_back_is_not_starved(tmp_path):
    # the client sent 1000 of 1500/s because its threads waited on the server: 2.9 ms of the 3.9 ms the server held
    # each request was its queue (1000/s x 1 ms compute: the instance never idle) — the server is the limit
    text = _block("Request Rate: 1500 inference requests per second", 1000.1, 4000, 3900, 2870, 900,
                  LATE.format(sent="1000.40", pct="96.10"))
    assert serving_capacity.lagging(_feed(LoadReport(), text)) is None
    assert _verdict(tmp_path, "full.txt", text) != "data_starvation"
    # the same shortfall with the requests not waiting in the server: the client is the limit
    short = _block("Request Rate: 1500 inference requests per second", 1000.1, 4000, 1000, 20, 900,
                   LATE.format(sent="1000.40", pct="96.10"))
    assert serving_capacity.lagging(_feed(LoadReport(), short))["hypothesis"] == "data_starvation"


PS = """NAME            ID              SIZE    PROCESSOR       UNTIL
llama3:8b       365c0bd3c000    6.7 GB  100% GPU        4 minutes from now
While it answers, top shows ollama at 100% CPU and nvidia-smi shows 0%
"""


def test_prose_under_an_ollama_ps_table_is_no_row():
    got = _feed(Placements(), PS)
    assert [(r["model"], r["cpu_share"]) for r in got] == [("llama3:8b", 0.0)]  # no model `While` 100% on the CPU
    assert serving_capacity.offloaded(got) is None


def test_a_utilization_pair_labelled_cpu_gpu_is_no_placement():
    # ollama (cmd/cmd.go) prints the model's two shares, which add up to 100; a monitor's utilization pair does not
    line = "step 120 | util 35%/98% CPU/GPU | loss 2.10 | 0.41 s/it"
    assert _feed(Placements(), line) == []
    assert _feed(Placements(), "llama3:70b  be39eb53a197  41 GB  42%/58% CPU/GPU  Forever")[0]["cpu_share"] == 0.42


CACHED = """Request concurrency: 1
  Client:
    Request count: 5000
    Throughput: 1100 infer/sec
    Avg latency: 900 usec (standard deviation 60 usec)
    Avg HTTP time: 890 usec (send/recv 90 usec + response wait 800 usec)
  Server:
    Inference count: 50
    Execution count: 50
    Cache hit count: 4950
    Cache miss count: 50
    Successful request count: 5000
    Avg request latency: 40 usec (overhead 10 usec + queue 5 usec + cache hit/miss 25 usec)
      Average Cache Hit Latency: 12 usec
      Average Cache Miss Latency: 1300 usec (cache lookup/insertion 30 usec + compute input 50 usec + compute infer 1150 usec + compute output 70 usec)
"""


def test_requests_answered_from_the_response_cache_do_not_starve_the_gpu(tmp_path):
    # perf_analyzer's response-cache layout (ReportServerSideStats): 4950 of 5000 requests never reached the model,
    # so the server's 40 µs of the client's 900 µs says nothing about the GPU waiting for requests
    assert serving_capacity.outside(_feed(LoadReport(), CACHED)) is None
    assert _verdict(tmp_path, "cached.txt", CACHED) != "data_starvation"


def test_the_client_overhead_warning_marks_the_client_as_the_limit(tmp_path):
    # perf_analyzer's second warning (inference_profiler.cc Report, printed after the Server section when the client's
    # overhead passes --overhead-pct 50): the load asked was not generated — the client is the limit, as for a rate
    text = (_block("Request concurrency: 16", 7000, 2000, 1500, 20, 1350)
            + "[WARNING] Perf Analyzer is not able to keep up with the desired load. The results may not be accurate.\n")
    (b,) = _feed(LoadReport(), text)
    assert b["lagging"] is True
    f = serving_capacity.lagging([b])
    assert f["hypothesis"] == "data_starvation" and "load asked (16 requests in flight)" in f["evidence"]
    assert _verdict(tmp_path, "overhead.txt", text) == "data_starvation"


def test_ollama_planning_for_the_cpu_alone_states_no_gpu_memory(tmp_path):
    # Ollama's estimate on a host where it found no GPU (`msg="offload to cpu"`, later `msg=offload library=cpu`):
    # memory.available is host memory, and no layer was ever meant for a GPU — not a split, not GPU memory to spare
    line = ('time=2024-10-01T09:00:00.000Z level=INFO source=memory.go:326 msg="offload to {lib}" layers.requested=-1 '
            'layers.model=33 layers.offload={k} layers.split="" memory.available="[{avail} GiB]" memory.gpu_overhead="0 B" '
            'memory.required.full="5.2 GiB" memory.required.partial="0 B" memory.required.kv="1.0 GiB"')
    assert _feed(Placements(), line.format(lib="cpu", k=0, avail="29.1")) == []
    new = line.format(lib="cpu", k=0, avail="29.1").replace('msg="offload to cpu"', "msg=offload library=cpu")
    assert _feed(Placements(), new) == []
    (r,) = _feed(Placements(), line.format(lib="cuda", k=20, avail="3.9"))
    assert r["layers"] == [20, 33] and serving_capacity.offloaded([r])["hypothesis"] == "memory_pressure"
