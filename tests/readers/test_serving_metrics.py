"""Serving engines' scheduler lines read by their fields' meaning (readers/serving_metrics.py) and what they show
(analysis/serving_load.py). Every log here is written apart from the held-out files (tests/data/eval/heldout40), in
the other wordings and layouts the engines print (vLLM V0 vllm/engine/metrics.py and its scheduler's preemption
warning, vLLM V1 vllm/v1/metrics/loggers.py and its SpecDecoding line, SGLang's `Decode batch,` of 2026 releases and
its server args' `cuda_graph_bs=[...]`); numbers are made up (LABELED SYNTHETIC)."""

from __future__ import annotations

from pathlib import Path

import pytest

from playbook.analysis import serving_load
from playbook.core.errors import UnknownFormatError
from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.serving_metrics import ServingLines, fields


def _write(tmp_path: Path, name: str, lines: list[str]) -> str:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(p)


def _summary(path: str) -> dict:
    meta = read_paths([path]).meta
    return next(v for k, v in meta.items() if k.startswith("serving:"))


def _verdict(path: str) -> str:
    return diagnose(read_paths([path])).verdict["id"]


V0 = ("INFO 03-02 10:{m:02d}:{s:02d} metrics.py:349] Avg prompt throughput: {p} tokens/s, Avg generation throughput: "
      "{g} tokens/s, Running: {r} reqs, Swapped: {sw} reqs, Pending: {q} reqs, GPU KV cache usage: {kv}%, CPU KV "
      "cache usage: {ckv}%.")


def test_fields_are_read_by_meaning_in_each_wording():
    assert fields("Avg prompt throughput: 12.5 tokens/s, Avg generation throughput: 300.0 tokens/s, Running: 9 reqs, "
                  "Swapped: 2 reqs, Pending: 4 reqs, GPU KV cache usage: 97.5%, CPU KV cache usage: 12.0%.") == {
        "prompt_tps": 12.5, "gen_tps": 300.0, "running": 9.0, "swapped": 2.0, "queued": 4.0, "kv": 0.975}
    assert fields("Engine 001: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 88.0 tokens/s, "
                  "Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.0%, Prefix cache hit rate: 50.0%") == {
        "prompt_tps": 0.0, "gen_tps": 88.0, "running": 3.0, "queued": 0.0, "kv": 0.04}
    assert fields("Decode batch, #running-req: 12, #full token: 900, full token usage: 0.50, #swa token: 40, "
                  "swa token usage: 0.10, cuda graph: False, gen throughput (token/s): 77.5, #queue-req: 1, ") == {
        "running": 12.0, "kv": 0.5, "cuda_graph": False, "gen_tps": 77.5, "queued": 1.0}
    assert fields("SpecDecoding metrics: Mean acceptance length: 2.40, Accepted throughput: 10.00 tokens/s, "
                  "Per-position acceptance rate: 0.700, 0.400, Avg Draft acceptance rate: 35.0%") == {
        "accept_len": 2.4, "accept_rate": 0.35}
    assert fields("*accept len: 1.25*, `gen throughput (token/s): 50.0`") == {"accept_len": 1.25, "gen_tps": 50.0}


def test_a_head_with_one_field_or_damaged_numbers_is_no_record():
    s = ServingLines()
    assert not s.feed(1, "Decode batch. #running-req: 4")  # one field
    assert not s.feed(2, "Decode batch. #running-req: abc, token usage: 9" + "9" * 5000)  # no number it can hold
    assert not s.feed(3, "Running: 3 reqs, Pending: 0 reqs")  # no engine line head
    assert s.summary() == {}


def test_vllm_v0_swapping_and_preemption_are_memory_pressure(tmp_path):
    lines = [V0.format(m=0, s=5 * i, p=0.0, g=900.0, r=40, sw=6, q=30, kv=99.4, ckv=35.0) for i in range(4)]
    lines.insert(2, "WARNING 03-02 10:00:07 scheduler.py:1089] Sequence group 77 is preempted by PreemptionMode.SWAP "
                    "mode because there is not enough KV cache space. This can affect the end-to-end performance. "
                    "Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
                    "total_num_cumulative_preemption=51")
    path = _write(tmp_path, "vllm_v0.log", lines)
    s = _summary(path)
    assert s["preempted"] == 1 and len(s["records"]) == 4 and s["segments"] == 1
    found = serving_load.findings_of(s)
    assert [(f["hypothesis"], f["level"]) for f in found] == [("memory_pressure", "high")]
    assert _verdict(path) == "memory_pressure"


def test_vllm_v1_full_kv_cache_with_a_queue_is_memory_pressure(tmp_path):
    path = _write(tmp_path, "vllm_v1.log", [
        f"(APIServer pid=7) INFO 06-01 09:00:{10 * i:02d} [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 "
        f"tokens/s, Avg generation throughput: 410.0 tokens/s, Running: 30 reqs, Waiting: {9 + i} reqs, GPU KV cache "
        "usage: 99.2%, Prefix cache hit rate: 0.0%" for i in range(3)])
    found = serving_load.findings_of(_summary(path))
    assert [(f["hypothesis"], f["level"]) for f in found] == [("memory_pressure", "moderate")]
    assert _verdict(path) == "memory_pressure"


def test_a_full_kv_cache_without_a_queue_is_no_pressure(tmp_path):
    path = _write(tmp_path, "full_no_queue.log", [
        V0.format(m=1, s=5 * i, p=0.0, g=1500.0, r=120, sw=0, q=0, kv=98.9, ckv=0.0) for i in range(4)])
    assert serving_load.findings_of(_summary(path)) == []


def test_eager_decode_steps_slower_than_graph_steps_are_launch_bound(tmp_path):
    graph = ("[2026-02-01 10:00:{s:02d} TP0] Decode batch, #running-req: 16, #token: 5000, token usage: 0.20, "
             "cuda graph: {g}, gen throughput (token/s): {t}, #queue-req: 0, ")
    path = _write(tmp_path, "sglang_eager.log", [graph.format(s=i, g="True", t=900.0) for i in range(3)]
                  + [graph.format(s=10 + i, g="False", t=610.0) for i in range(3)])
    found = serving_load.findings_of(_summary(path))
    assert [f["hypothesis"] for f in found] == ["launch_bound"]
    assert "3 of 6 decode steps" in found[0]["evidence"]
    assert _verdict(path) == "launch_bound"
    # the same steps where the eager ones are the faster: the graphs are not what costs
    faster = _write(tmp_path, "sglang_eager_faster.log", [graph.format(s=i, g="True", t=500.0) for i in range(3)]
                    + [graph.format(s=10 + i, g="False", t=610.0) for i in range(3)])
    assert serving_load.findings_of(_summary(faster)) == []


def test_decode_batches_above_the_captured_graphs_run_eager(tmp_path):
    path = _write(tmp_path, "sglang_bs.log", [
        "[2025-06-01 08:00:00] server_args=ServerArgs(model_path='m', cuda_graph_max_bs=8, cuda_graph_bs=[1, 2, 4, 8], "
        "max_running_requests=512, chunked_prefill_size=8192)",
        *(f"[2025-06-01 08:01:{i:02d} TP0] Decode batch. #running-req: {r}, #token: 9000, token usage: 0.30, gen "
          f"throughput (token/s): 700.00, #queue-req: 0" for i, r in enumerate((6, 24, 31, 40)))])
    s = _summary(path)
    assert (s["graph_bs_max"], s["max_running"]) == (8, 512)
    found = serving_load.findings_of(s)
    assert [f["hypothesis"] for f in found] == ["launch_bound"]
    assert "3 of 4 decode steps run more requests than the largest captured CUDA graph (batch 8)" in found[0]["evidence"]


def test_speculative_acceptance_collapse_between_two_pasted_runs(tmp_path):
    """Two vLLM V1 runs pasted one after the other: the clock runs back an hour between them (no heading)."""
    def run(hour: int, accept: float, tps: float) -> list[str]:
        out = []
        for i in range(3):
            stamp = f"INFO 07-10 {hour:02d}:00:{10 * i:02d}"
            out.append(f"{stamp} [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
                       f"throughput: {tps} tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.0%, "
                       "Prefix cache hit rate: 0.0%")
            out.append(f"{stamp} [metrics.py:101] SpecDecoding metrics: Mean acceptance length: {accept}, Accepted "
                       "throughput: 40.00 tokens/s, Drafted throughput: 90.00 tokens/s, Accepted: 400 tokens, "
                       "Drafted: 900 tokens, Per-position acceptance rate: 0.700, 0.500, 0.300, Avg Draft acceptance "
                       "rate: 44.4%")
        return out
    path = _write(tmp_path, "vllm_spec.log", run(14, 3.2, 260.0) + run(13, 1.4, 120.0))
    s = _summary(path)
    assert s["segments"] == 2
    found = serving_load.findings_of(s)
    assert [(f["hypothesis"], f["level"]) for f in found] == [("pipeline_imbalance", "high")]
    assert found[0]["share"] == pytest.approx(1 - 120 / 260, abs=1e-3)
    # one run alone, or two runs whose acceptance holds: nothing to compare, nothing found
    assert serving_load.findings_of(_summary(_write(tmp_path, "one.log", run(14, 3.2, 260.0)))) == []
    steady = _write(tmp_path, "steady.log", run(14, 3.2, 260.0) + run(13, 3.0, 250.0))
    assert serving_load.findings_of(_summary(steady)) == []


def test_one_or_two_requests_and_no_queue_leave_the_gpu_waiting(tmp_path):
    path = _write(tmp_path, "one_request.log", [
        V0.format(m=2, s=5 * i, p=0.0, g=41.7, r=1, sw=0, q=0, kv=2.1, ckv=0.0) for i in range(5)])
    found = serving_load.findings_of(_summary(path))
    assert [(f["hypothesis"], f["level"]) for f in found] == [("data_starvation", "moderate")]
    assert _verdict(path) == "data_starvation"


def test_a_busy_server_with_nothing_wrong_names_no_cause_and_is_not_refused(tmp_path):
    path = _write(tmp_path, "busy.log", [
        f"[2025-04-01 12:00:{i:02d} TP0] Decode batch. #running-req: 96, #token: 40000, token usage: 0.45, "
        "cuda graph: True, gen throughput (token/s): 5200.00, #queue-req: 0" for i in range(5)])
    assert serving_load.findings_of(_summary(path)) == []
    assert _verdict(path) == "insufficient_data"  # scheduler counts measure no GPU time: no evidence of health


def test_a_file_of_unrelated_text_is_still_refused(tmp_path):
    path = _write(tmp_path, "prose.txt", ["Running: the server", "Pending: review", "nothing to read here"])
    with pytest.raises(UnknownFormatError):
        read_paths([path])


def test_access_log_lines_between_intervals_do_not_split_the_run(tmp_path):
    """uvicorn's access lines carry a level and no time (`INFO:     ::1:50352 - "POST ..." 200 OK`): output of the
    same run, not a heading between two runs."""
    lines = []
    for i, accept in enumerate((3.1, 1.2, 3.0, 1.3, 2.9, 1.1)):
        lines.append(f"INFO 07-24 04:00:{5 * i:02d} [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
                     f"Avg generation throughput: {200 if accept > 2 else 90}.0 tokens/s, Running: 2 reqs, Waiting: 0 "
                     "reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%")
        lines.append(f"INFO 07-24 04:00:{5 * i:02d} [metrics.py:101] SpecDecoding metrics: Mean acceptance length: "
                     f"{accept}, Avg Draft acceptance rate: 40.0%")
        lines.append('INFO:     ::1:50352 - "POST /v1/completions HTTP/1.1" 200 OK')
    s = _summary(_write(tmp_path, "access.log", lines))
    assert s["segments"] == 1
    assert not [f for f in serving_load.findings_of(s) if f["hypothesis"] == "pipeline_imbalance"]


def test_no_drafted_token_accepted_is_speculation_for_nothing(tmp_path):
    """vLLM V0's speculative line (spec_decode/metrics.py wording) at a zero acceptance rate, twice."""
    lines = []
    for i in range(3):
        lines.append(f"INFO 01-02 03:04:{10 + 5 * i} metrics.py:295] Avg prompt throughput: 0.0 tokens/s, Avg "
                     "generation throughput: 60.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV "
                     "cache usage: 0.5%, CPU KV cache usage: 0.0%.")
        lines.append(f"INFO 01-02 03:04:{10 + 5 * i} metrics.py:316] Speculative metrics: Draft acceptance rate: "
                     "0.000, System efficiency: 0.200, Number of speculative tokens: 4, Number of accepted tokens: 0, "
                     "Number of draft tokens: 800, Number of emitted tokens: 200.")
    found = serving_load.findings_of(_summary(_write(tmp_path, "rejected.log", lines)))
    assert [(f["hypothesis"], f["level"]) for f in found] == [("pipeline_imbalance", "high")]
    # the same readings accepting a third of the drafts: speculation works, and one request is the load
    kept = [ln.replace("Draft acceptance rate: 0.000", "Draft acceptance rate: 0.330") for ln in lines]
    assert [f["hypothesis"] for f in serving_load.findings_of(_summary(_write(tmp_path, "kept.log", kept)))] == [
        "data_starvation"]


@pytest.mark.timeout(60)
def test_a_long_blank_run_after_a_field_is_read_in_linear_time():
    """A field followed by 200 kB of blanks and a character no unit takes: the field pattern gave the blanks to its
    unit's `\\s*` and its trailing `[\\s_*`.]*` every way (quadratic: ~20 s at 40 kB, minutes at 200 kB); now one way.
    Nothing is timed: the timeout only catches a runaway."""
    s = ServingLines()
    body = "Decode batch. #running-req: 5, token usage: 0.10" + " " * 200_000 + "!"
    assert fields(body) == {"running": 5.0}  # the damaged last piece is no field; the first still is
    assert s.feed(1, "Decode batch. #running-req: 5" + " " * 200_000 + "!, token usage: 0.10") is False


def test_a_run_without_generated_tokens_per_second_is_no_error(tmp_path):
    """Two pasted SGLang runs whose acceptance differs but whose `gen throughput` reads 0.00 in both: no drop to
    measure (the finding divided by the better run's tokens/s and raised ZeroDivisionError, so the whole serving
    analysis was skipped with a warning)."""
    row = ("[2025-05-13 02:{m:02d}:{s:02d} TP0] Decode batch. #running-req: 8, #token: 30000, token usage: 0.25, "
           "accept len: {a}, gen throughput (token/s): 0.00, #queue-req: 0")
    lines = ([row.format(m=32, s=i, a=3.6) for i in range(2)] + ["second run:"]
             + [row.format(m=40, s=i, a=1.5) for i in range(2)])
    path = _write(tmp_path, "zero_tps.log", lines)
    assert _summary(path)["segments"] == 2
    assert serving_load.findings_of(_summary(path)) == []


def test_one_eager_decode_step_in_a_busy_server_names_no_cause(tmp_path):
    """A busy SGLang server: 60 decode intervals with CUDA graphs, one batch past the largest graph runs eager (and
    is slower). One step in 60 costs nothing measurable; it must not be launch_bound (the stated fact led the
    verdict alone). A tenth of the steps eager still is."""
    row = ("[2025-05-13 03:{m:02d}:{s:02d} TP0] Decode batch, #running-req: {r}, #token: 300000, token usage: 0.60, "
           "cuda graph: {g}, gen throughput (token/s): {t}, #queue-req: 0, ")
    def log(n_eager: int) -> list[str]:
        return [row.format(m=i // 6, s=(i * 10) % 60, r=120 + i % 20, g="False" if i < n_eager else "True",
                           t=3100.0 if i < n_eager else 4000.0 + i) for i in range(60)]
    one = _write(tmp_path, "one_eager.log", log(1))
    assert serving_load.findings_of(_summary(one)) == []
    assert _verdict(one) != "launch_bound"
    six = _write(tmp_path, "six_eager.log", log(6))
    assert [f["hypothesis"] for f in serving_load.findings_of(_summary(six))] == ["launch_bound"]


@pytest.mark.parametrize("between", [
    'vllm-1  | INFO:     172.18.0.1:45678 - "POST /v1/completions HTTP/1.1" 200 OK',  # docker compose's prefix
    "vllm-1  | ",
    "Processed prompts:  50%|#####     | 5/10 [00:01<00:01, 3.21it/s]",  # an offline run's progress bar
])
def test_program_output_between_intervals_is_no_heading_between_runs(tmp_path, between):
    """One vLLM V1 server whose draft acceptance follows its workload (code, then chat): the short untimed lines
    the program prints between its intervals (a container's prefixed lines, tqdm's bar) are its output, not a
    person's heading between two pasted runs; read as headings they cut the server into "runs" and compared them
    (pipeline_imbalance on a healthy server). A heading in words still separates two runs."""
    lines = []
    for i, (accept, tps) in enumerate(((3.0, 200), (3.1, 210), (2.9, 190), (1.5, 100), (1.4, 95), (1.5, 98))):
        lines.append(f"vllm-1  | INFO 07-24 04:00:{5 * i:02d} [loggers.py:118] Engine 000: Avg prompt throughput: "
                     f"0.0 tokens/s, Avg generation throughput: {tps}.0 tokens/s, Running: 40 reqs, Waiting: 0 reqs, "
                     "GPU KV cache usage: 30.0%, Prefix cache hit rate: 0.0%")
        lines.append(f"vllm-1  | INFO 07-24 04:00:{5 * i:02d} [metrics.py:101] SpecDecoding metrics: Mean acceptance "
                     f"length: {accept}, Avg Draft acceptance rate: 40.0%")
        if i == 2:
            lines.append(between)
    s = _summary(_write(tmp_path, "compose.log", lines))
    assert s["segments"] == 1
    assert serving_load.findings_of(s) == []
    headed = lines[:6] + ["### chat workload, new draft:"] + lines[7:]
    assert _summary(_write(tmp_path, "headed.log", headed))["segments"] == 2


def test_preemptions_are_counted_by_vllms_own_count_and_one_is_no_thrashing(tmp_path):
    """vLLM prints its preemption warning at the 1st, 51st, 101st ... preemption with the running count
    (`total_num_cumulative_preemption=N`; `total_cumulative_preemption_cnt=N` in 0.4-0.5): the count is read, and a
    busy server's one preemption (its warning once, count 1, KV below full, nothing swapped or queued) is the pool at
    its edge (moderate), where 51 are thrashing (high)."""
    warn = ("WARNING 03-02 10:00:07 scheduler.py:1089] Sequence group 77 is preempted by PreemptionMode.RECOMPUTE "
            "mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase "
            "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. {key}={n}")
    busy = [V0.format(m=0, s=5 * i, p=0.0, g=2900.0, r=180, sw=0, q=0, kv=91.0, ckv=0.0) for i in range(6)]
    for key in ("total_num_cumulative_preemption", "total_cumulative_preemption_cnt"):
        once = _write(tmp_path, f"once_{key}.log", busy[:3] + [warn.format(key=key, n=1)] + busy[3:])
        s = _summary(once)
        assert (s["preempted"], s["preemptions"]) == (1, 1)
        assert [(f["hypothesis"], f["level"]) for f in serving_load.findings_of(s)] == [("memory_pressure", "moderate")]
        many = _write(tmp_path, f"many_{key}.log", busy[:3] + [warn.format(key=key, n=51)] + busy[3:])
        s = _summary(many)
        assert s["preemptions"] == 51
        found = serving_load.findings_of(s)
        assert [(f["hypothesis"], f["level"]) for f in found] == [("memory_pressure", "high")]
        assert "51 preemptions by vLLM's own count" in found[0]["evidence"]
