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
