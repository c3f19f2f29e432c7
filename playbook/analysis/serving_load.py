"""An inference server's scheduler records (readers/serving_metrics.py) → findings, by what the fields mean.

  KV cache full and requests waiting, or requests preempted / swapped / retracted for KV space → memory_pressure:
      the running batch is as large as the KV cache allows, and evicted requests recompute their prefix (or wait
      swapped out). High where the engine states evictions, moderate where the pool is full (≥ FULL_KV) with a queue.
  Decode steps without a CUDA graph → launch_bound: SGLang's `cuda graph: False`, a run whose launch or
      configuration turned the graphs off (`graphs_on` False: --enforce-eager, --disable-cuda-graph), or a decode
      batch larger than the largest captured graph (`bs=[...]`), runs eager — every kernel of every layer launched
      from the host per token. Not where the graph steps are the slower ones (then the graphs are not what costs);
      high, with the share lost, where the same file's graphed records generate more tokens/s (eager ≤ TPS_DROP).
  Speculative acceptance collapsing between runs → pipeline_imbalance: the draft→target pair of speculative
      decoding pays only through accepted tokens; a run whose accepted tokens per step fell to ≤ SPEC_DROP of
      another run's, its generated tokens/s falling with it (≤ TPS_DROP), verifies drafts it then discards.
  No drafted token accepted (every speculative reading's acceptance rate ≤ NONE_ACCEPTED) → pipeline_imbalance:
      the draft runs and the target verifies its tokens each step, and none is kept.
  Few requests and none waiting → data_starvation: at most FEW requests run at once, no queue, the KV cache mostly
      free — the batch is only as large as the offered load, and the GPU waits for work (decode at batch 1-2 reads
      every weight per token for one or two tokens).
"""

from __future__ import annotations

import statistics
from typing import Any

from playbook.analysis import inference_bench, serving_capacity
from playbook.knowledge import ids
from playbook.model import schema
from playbook.readers.serving_metrics import describe

FULL_KV = 0.98  # a KV pool this full cannot admit another request's blocks: the scheduler waits for one to finish
SPEC_DROP = 0.6  # accepted tokens per speculative step fell to this share of another run's, or below
SPEC_WORKING = 1.5  # the better run accepts this many tokens per step at least (speculation pays there)
TPS_DROP = 0.8  # and that run's generated tokens/s fell to this share, or below (the drop costs throughput)
FEW = 2  # at most this many requests running in every record, and none queued: the load is the batch
MIN_RECORDS = 3
NONE_ACCEPTED = 0.01  # an acceptance rate at or below this: the draft's tokens are all rejected
RUN_MIN = 2  # speculative readings a run needs before its acceptance is compared with another run's
# eager decode steps must be at least this share of the decode steps: one batch past the largest graph in a busy
# server's hour costs nothing measurable, and the stated fact would otherwise lead the verdict alone
EAGER_SHARE = 0.1


def _median(rows: list[dict], key: str) -> float | None:
    vals = [float(r[key]) for r in rows if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
    return statistics.median(vals) if vals else None


def _memory(s: dict, recs: list[dict]) -> dict | None:
    swapped = [r for r in recs if (r.get("swapped") or 0) > 0]
    full = [r for r in recs if (r.get("kv") or 0) >= FULL_KV and (r.get("queued") or 0) > 0]
    if s.get("preempted") or swapped:
        said = []
        if s.get("preempted"):
            said.append(f"{s['preempted']} line{'s' * (s['preempted'] != 1)} of requests preempted or retracted for "
                        "KV cache space" + (f" ({s['retracted']} retracted)" if s.get("retracted") else "")
                        + (f" ({s['preemptions']:,} preemptions by vLLM's own count)" if s.get("preemptions") else ""))
        # one eviction stated once (vLLM's warning at its first preemption, one SGLang retraction of one request) is
        # the scheduler's normal recovery on a busy server: the pool is at its edge (moderate), not thrashing (high)
        once = (not swapped and s.get("preempted") == 1 and (s.get("preemptions") or 1) <= 1
                and (s.get("retracted") or 1) <= 1)
        if swapped:
            said.append(f"up to {max(int(r['swapped']) for r in swapped)} requests swapped out to host memory "
                        f"({len(swapped)} of {len(recs)} records)")
        return {"hypothesis": ids.MEMORY_PRESSURE, "level": "moderate" if once else "high",
                "evidence": "; ".join(said) + ": evicted requests recompute or copy back their KV cache, and the "
                            "batch is capped by the KV cache",
                "next": "give the KV cache more memory (--gpu-memory-utilization / --mem-fraction-static, a larger "
                        "tensor-parallel size, an fp8 KV cache) or admit fewer requests (--max-num-seqs / "
                        "--max-running-requests); watch the preemption count and the queue"}
    if full:
        kv = max(float(r["kv"]) for r in full)
        return {"hypothesis": ids.MEMORY_PRESSURE, "level": "moderate",
                "evidence": f"the KV cache is full ({kv:.0%}) while up to {max(int(r['queued']) for r in full)} "
                            f"requests wait ({len(full)} of {len(recs)} records): the running batch is as large as "
                            "the KV cache allows, and the next request waits for one to finish (or evicts one)",
                "next": "give the KV cache more memory (--gpu-memory-utilization / --mem-fraction-static, an fp8 KV "
                        "cache, a larger tensor-parallel size) and watch the queue and the preemption / retraction "
                        "lines"}
    return None


def _eager(s: dict, recs: list[dict]) -> dict | None:
    decode = [r for r in recs if r["kind"] in ("decode", "interval")]
    bs = int(s.get("graph_bs_max") or 0)

    def off(r: dict) -> bool:  # the line says so, or its run's launch / configuration turned the graphs off
        return r.get("cuda_graph") is False or ("cuda_graph" not in r and r.get("graphs_on") is False)

    eager = [r for r in decode if off(r)]
    graphed = [r for r in decode if r.get("cuda_graph") is True or (
        "cuda_graph" not in r and r.get("graphs_on") is True and not (bs and (r.get("running") or 0) > bs))]
    stated = any(r.get("cuda_graph") is False for r in eager)
    how = ("state `cuda graph: False`" if stated else
           "come from a run launched or configured without CUDA graphs (--enforce-eager / enforce_eager=True / "
           "--disable-cuda-graph)")
    if not eager and bs:
        eager = [r for r in decode if "cuda_graph" not in r and r.get("graphs_on") is not False
                 and (r.get("running") or 0) > bs]
        how = f"run more requests than the largest captured CUDA graph (batch {bs})"
    if not eager or len(eager) < EAGER_SHARE * len(decode):
        return None
    fast_eager, fast_graph = _median(eager, "gen_tps"), _median(graphed, "gen_tps")
    if fast_eager is not None and fast_graph is not None and fast_graph < fast_eager:
        return None  # the graph steps are the slower ones: the graphs are not what costs
    share = f"all {len(decode)}" if len(eager) == len(decode) else f"{len(eager)} of {len(decode)}"
    tps = f" at {fast_eager:.4g} generated tokens/s" if fast_eager is not None else ""
    noun = "decode steps" if all(r["kind"] == "decode" for r in decode) else "interval records"
    out = {"hypothesis": ids.LAUNCH_BOUND, "level": "moderate",
           "evidence": f"{share} {noun} {how}{tps}: they run eager, every kernel of every layer launched "
                       "from the host for each token",
           "next": "capture CUDA graphs for the batch sizes the server runs (SGLang --cuda-graph-max-bs at least "
                   "--max-running-requests; vLLM: drop --enforce-eager, max_cudagraph_capture_size ≥ max_num_seqs × "
                   "(1 + speculative tokens)) and compare gen throughput"}
    if fast_eager is not None and fast_graph and fast_eager <= TPS_DROP * fast_graph:
        # the same file holds records with graphs: the comparison measures what running eager costs
        out.update(level="high", share=round(1.0 - fast_eager / fast_graph, 3))
        out["evidence"] += (f"; with CUDA graphs the same file's records generate {fast_graph:.4g} tokens/s "
                            f"({len(graphed)} record(s)): eager loses {1.0 - fast_eager / fast_graph:.0%}")
    return out


def _rejected(recs: list[dict]) -> dict | None:
    """Every speculative reading states that no drafted token was accepted (RUN_MIN readings at least)."""
    rates = [float(r["accept_rate"]) for r in recs if isinstance(r.get("accept_rate"), (int, float))]
    if len(rates) < RUN_MIN or max(rates) > NONE_ACCEPTED:
        return None
    return {"hypothesis": ids.PIPELINE_IMBALANCE, "level": "high",
            "evidence": f"no drafted token accepted in {len(rates)} speculative readings (acceptance rate "
                        f"{max(rates):.3g} at most): every step runs the draft and verifies its tokens for nothing",
            "next": "check that the draft (or speculative heads) matches the target model and its tokenizer; "
                    "serve without speculation meanwhile"}


def _speculation(recs: list[dict]) -> dict | None:
    runs: dict[int, list[dict]] = {}
    for r in recs:  # a run's records: its speculative lines (accept length) and its interval lines (tokens/s)
        runs.setdefault(int(r["segment"]), []).append(r)
    runs = {k: v for k, v in runs.items()  # a run is compared on two speculative readings at least, not one interval
            if sum(isinstance(r.get("accept_len"), (int, float)) for r in v) >= RUN_MIN}
    if len(runs) < 2:
        return None
    level = {k: (_median(v, "accept_len"), _median(v, "gen_tps")) for k, v in runs.items()}
    best = max(level, key=lambda k: level[k][0])
    worst = min(level, key=lambda k: level[k][0])
    (hi, hi_tps), (lo, lo_tps) = level[best], level[worst]
    if hi < SPEC_WORKING or lo > SPEC_DROP * hi or hi_tps is None or hi_tps <= 0 or lo_tps is None or \
            lo_tps > TPS_DROP * hi_tps:  # no tokens/s in the better run: no drop to measure (nor to divide by)
        return None
    return {"hypothesis": ids.PIPELINE_IMBALANCE, "level": "high", "share": round(1.0 - lo_tps / hi_tps, 3),
            "evidence": f"speculative decoding's accepted tokens per step fell from {hi:.3g} (run {best + 1} of the "
                        f"file) to {lo:.3g} (run {worst + 1}), and generated tokens/s with it ({hi_tps:.4g} → "
                        f"{lo_tps:.4g}): the target verifies drafts it then rejects — the draft no longer feeds it",
            "next": "compare the draft's acceptance per position between the two configurations (the change between "
                    "the runs: CUDA graphs, attention backend, parallelism); fewer speculative tokens or no "
                    "speculation where acceptance stays low"}


def _few(recs: list[dict]) -> dict | None:
    load = [r for r in recs if r["kind"] in ("decode", "interval") and isinstance(r.get("running"), (int, float))]
    if len(load) < MIN_RECORDS:
        return None
    if max(r["running"] for r in load) > FEW or any((r.get("queued") or 0) > 0 for r in load):
        return None
    if any((r.get("kv") or 0) >= 0.5 for r in load) or not any(r["running"] > 0 for r in load):
        return None
    return {"hypothesis": ids.DATA_STARVATION, "level": "moderate",
            "evidence": f"at most {int(max(r['running'] for r in load))} request(s) run at once and none waits "
                        f"({len(load)} records): the batch is only as large as the offered load, so the GPU waits "
                        "for work (each decode step reads every weight for one or two tokens)",
            "next": "send more concurrent requests (the client's concurrency, the benchmark's --max-concurrency or "
                    "request rate) and watch generated tokens/s scale"}


def findings_of(s: dict) -> list[dict]:
    """The findings one file's serving summary supports (see the module docstring)."""
    recs = [r for r in s.get("records") or [] if isinstance(r, dict)]
    out = [f for f in (_memory(s, recs), _eager(s, recs), _speculation(recs) or _rejected(recs)) if f]
    out += serving_capacity.findings(s)  # load-test blocks and model placements (analysis/serving_capacity.py)
    out += inference_bench.findings(s.get("trtexec") or [])[0]  # a benchmark's summary (analysis/inference_bench.py)
    if not out and (few := _few(recs)):
        out.append(few)
    return out


def summarize(bundle: Any) -> dict | None:
    """{files: [{file, line}], findings: [...]}; None without a serving summary."""
    found = sorted(schema.meta_sections(getattr(bundle, "meta", None), schema.SERVING))
    if not found:
        return None
    findings, vouched = [], []
    for name, s in found:
        vouched += inference_bench.findings(s.get("trtexec") or [])[1]
        # the records state what they count (the queue, the KV fill, eager steps): facts, not samples that could be
        # too few (diagnosis/answer._fact_lead lets them lead where they are the only input)
        findings += [{**f, "stated": True, "evidence": f"{f['evidence']} ({name.rsplit('/', 1)[-1]})"}
                     for f in findings_of(s)]
    return {"files": [{"file": f, "line": describe(s) + "".join(
        f"; {x}" for x in [serving_capacity.saturation(s.get("loadtest") or [])]
        + inference_bench.facts(s.get("trtexec") or []) if x)} for f, s in found],
            "findings": findings, "vouched": vouched}
