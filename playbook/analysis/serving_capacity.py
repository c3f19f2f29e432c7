"""A server's capacity as load tests and model placements state it (readers/load_report.py,
readers/model_placement.py) → findings, by what the numbers mean.

  Requests spend most of their time outside the server → data_starvation: a load block states both the latency the
      client sees and the server's own request latency (its queue and compute). Where, in every block that states
      both, the server's share is at most OUTSIDE and its queue no larger than its compute (the requests do not wait
      inside it), the rest is the client, the network and the protocol — by Little's law only that share of the
      requests in flight is in the server, so its model instances wait for work. High at ≤ OUTSIDE_HIGH. One block
      where the server holds more, or queues the requests, shows that this client can fill it: no finding (the
      lighter loads of a sweep idle the server by the load asked, not by starving it).
  The load generator could not offer the load asked → data_starvation (moderate): the tool says so (`not able to
      keep up with the desired request rate`, or `... desired load`: its own overhead too high), or the rate it sent
      is ≤ LAG of the rate asked — the server was fed less than the test meant; the client (its threads, its
      transfer path) is the limit. Not where the rate it sent is stated above LAG of the asked (perf_analyzer warns
      once 1% of the requests leave 1 ms late: the load was still offered), nor where the server queues the
      requests (queue above compute: a synchronous client's threads waited on a full server, the server is the
      limit).
  Part of the model on the CPU: a placement holding ≥ CPU_MIN of the model (its bytes or its layers) in host memory
      runs those layers on the CPU for every token while the GPU waits (high at ≥ CPU_HIGH). Why it is split decides
      the id: a share of the bytes resident in GPU memory (the runtime placed what fit), or free GPU memory stated
      below what the whole model needs → memory_pressure; a count of layers with no shortage stated (the layers a
      setting asked for the GPU) → pipeline_imbalance, the CPU's layers the slow stage of the two in series. The
      layers a command asked (`-ngl 64`) beside none placed: the setting did not reach the loader; beside fewer
      placed: the runtime placed fewer. A GPU backend in the build line (`CUDA : ARCHS = ...`) is said beside.
      A model stated on the CPU by a device warning (whisper's `FP16 is not supported on CPU`, ComfyUI's DISABLED)
      is no finding: the line does not say a GPU was there to use.
  Weights streamed from host memory: a memory mode that keeps part of the weights in host memory and moves them to
      the GPU at each use (ComfyUI / forge LOW_VRAM, NO_VRAM) → memory_pressure (moderate): every step waits on those
      host-to-GPU copies; the GPU's size is the reason the runtime gives (its total stated beside). Not where every
      load line of the same input says its model was loaded completely (they fit after all). Likewise a GPU that
      borrows host memory beside a full dedicated memory (Task Manager's shared GPU memory, WDDM's sysmem fallback;
      readers/model_placement.py how "shared"): what did not fit is read across PCIe at each use. And a managed-
      memory setting (llama.cpp GGML_CUDA_ENABLE_UNIFIED_MEMORY=1, TF_FORCE_UNIFIED_MEMORY=1, RMM managed_memory;
      how "managed"): a switch for a model larger than the GPU, whose pages the driver then migrates on each fault —
      memory_pressure (moderate: on a GPU that shares the host's memory, or where the model fits, it costs little).
  Saturation (no finding, a fact for `info` and the evidence): two load levels of one kind LOAD_STEP apart whose
      throughput differs by at most FLAT, the lower one spending ≥ INSIDE of the client's latency in the server —
      the server already served all it could at the lower load; the latency added at the higher one is queueing.
"""

from __future__ import annotations

from playbook.knowledge import ids

OUTSIDE = 0.5
OUTSIDE_HIGH = 0.25
LAG = 0.9  # perf_analyzer's own tolerance (--stability-percentage 10): loads 10% apart are the same load
CPU_MIN = 0.02  # a model with less than this share off the GPU is on the GPU (ollama rounds to whole percents)
CPU_HIGH = 0.1
LOAD_STEP = 2.0
FLAT = 1.15
INSIDE = 0.8


def _share(b: dict) -> float | None:
    client, server = b.get("client_us"), b.get("server_us")
    return server / client if client and server is not None and client > 0 else None


def _parts(b: dict) -> tuple[float, float]:
    parts = b.get("server_parts") or {}
    queue = sum(v for k, v in parts.items() if "queue" in k)
    compute = sum(v for k, v in parts.items() if "compute" in k)
    return queue, compute


def _load(b: dict) -> str:
    kind, n = b["load"]
    return (f"{n:g} request{'s' * (n != 1)} in flight" if kind == "concurrency" else f"{n:g} requests/s asked")


def outside(blocks: list[dict]) -> dict | None:
    """Requests spend most of their latency outside the server (see the module docstring)."""
    # a block whose server breakdown names a response cache (`cache hit/miss`) is left out: the requests the cache
    # answered never reached the model, so the server's short time says nothing about its GPU waiting for work
    rows = [(share, b) for b in blocks if (share := _share(b)) is not None
            and not any("cache" in k for k in b.get("server_parts") or {})]
    for share, b in rows:
        queue, compute = _parts(b)
        if share > OUTSIDE or (compute and queue > compute):
            return None  # at this load the server holds the requests (or queues them): this client can fill it
    if not rows:
        return None
    share, b = max(rows, key=lambda r: r[0])  # the block where the server holds the most: the case least against
    queue, compute = _parts(b)
    inside = f" (queue {queue:,.0f} µs, compute {compute:,.0f} µs)" if compute else ""
    flight = (f"; of the {b['load'][1]:g} requests in flight about {b['load'][1] * share:.1f} are in the server at a "
              "time (Little's law)" if b["load"][0] == "concurrency" else "")
    # no "share": the requests' time outside the server is not the GPU time lost (the instances may overlap)
    return {"hypothesis": ids.DATA_STARVATION, "level": "high" if share <= OUTSIDE_HIGH else "moderate",
            "evidence": f"the server holds each request {b['server_us']:,.0f} µs{inside} of the {b['client_us']:,.0f} µs "
                        f"the client waits at {_load(b)} ({share:.0%}; {len(rows)} load block"
                        f"{'s' * (len(rows) != 1)}, none above {OUTSIDE:.0%} or queued in the server){flight}: the rest is spent in the "
                        "client, the network and the protocol, and the server's model instances wait for requests",
            "next": "find what holds the requests outside the server: the client (its threads, serialization), the "
                    "transport (shared memory instead of gRPC/HTTP payloads, a faster network), or the server's "
                    "request front end (more server processes or front-end threads)"}


def lagging(blocks: list[dict]) -> dict | None:
    """The load generator could not offer the load asked (see the module docstring)."""
    for b in blocks:
        asked = b["load"][1] if b["load"][0] == "rate" else None
        sent = b.get("sent_rate")
        short = asked and sent is not None and sent <= LAG * asked
        if not (b.get("lagging") or short) or (asked and sent is not None and not short):
            continue  # a warning with the rate sent within LAG of the rate asked: a few late requests, the load offered
        queue, compute = _parts(b)
        if compute and queue > compute:
            continue  # the requests waited in the server's queue: a full server held the client's threads back
        said = (f"the client sent {sent:,.4g}/s of the {asked:,.4g}/s asked ({sent / asked:.0%})" if short
                else f"the load generator says it could not keep up with the "
                     f"{'rate' if b['load'][0] == 'rate' else 'load'} asked ({_load(b)})")
        if b.get("delayed_share") is not None:
            said += f"; {b['delayed_share']:.2%} of the requests were sent late"
        return {"hypothesis": ids.DATA_STARVATION, "level": "moderate",
                "evidence": f"{said}: the server was fed less than the test meant — the client is the limit, and "
                            "what the server does at the asked load is not measured",
                "next": "give the load generator more threads or processes (or asynchronous requests), move large "
                        "inputs by shared memory, and rerun until it keeps up with the rate asked"}
    return None


def _decode(rates: list[dict]) -> str:
    """The decode rate a runtime states beside its placement (readers/token_rates.py), as the evidence's tail."""
    tps = sorted(r["tps"] for r in rates if r.get("phase") == "decode" and r.get("tps"))
    return f"; it decodes {tps[len(tps) // 2]:.3g} tokens/s" if tps else ""


def offloaded(records: list[dict], rates: list[dict] = ()) -> dict | None:
    """Part of a served model held and run on the CPU (see the module docstring)."""
    split = [r for r in records if (r.get("cpu_share") or 0) >= CPU_MIN and r.get("how") != "device"]
    if not split:
        return streamed(records)
    worst = max(split, key=lambda r: r["cpu_share"])
    who = worst.get("model") or "the model"
    how = (f"{worst['layers'][1] - worst['layers'][0]} of its {worst['layers'][1]} layers on the CPU"
           if worst.get("layers") else f"{worst['cpu_share']:.0%} of it held in host memory")
    stated = worst.get("available_gib") is not None and worst.get("required_gib") is not None
    short = stated and worst["available_gib"] < worst["required_gib"]
    whole = [r.get("model") for r in records if r is not worst and (r.get("cpu_share") or 0) < CPU_MIN
             and r.get("model")]
    beside = f"; {', '.join(whole)} fully on the GPU" if whole else ""
    level = "high" if worst["cpu_share"] >= CPU_HIGH or short else "moderate"
    waits = "every token runs those layers on the CPU at host-memory speed while the GPU waits"
    if short or (worst["how"] == "bytes" and not stated):
        # a residency share (the bytes the runtime could place in GPU memory), or free memory stated below the need
        mem = (f" ({worst['available_gib']:g} GiB of GPU memory free, {worst['required_gib']:g} GiB needed for the "
               "whole model)" if short else "")
        return {"hypothesis": ids.MEMORY_PRESSURE, "level": level,
                "evidence": f"{who}: {how}{mem}{beside}: the model does not fit the GPU's free memory, so {waits}"
                            f"{_decode(rates)}",
                "next": "fit the whole model on the GPU: a smaller quantization or context, free the GPU memory "
                        "other processes hold, or more GPU memory; then check that the runtime places 100% on the GPU"}
    # a layer count with no shortage of memory stated: the split is a setting (the layers asked for the GPU), and
    # the CPU's layers are the slow stage of the two in series
    why = (f" although {worst['available_gib']:g} GiB of GPU memory is free for the {worst['required_gib']:g} GiB the "
           "model needs" if stated else "; nothing in the input says the GPU's memory is short")
    asked, lay = worst.get("asked"), worst.get("layers")
    if asked is not None and lay and asked > 0 and lay[0] == 0:
        why += f"; {asked} layers were asked for the GPU: the setting did not reach the loader"
    elif asked is not None and lay and lay[0] < min(asked, lay[1]):
        why += f"; {asked} layers were asked for the GPU: the runtime placed fewer"
    if worst.get("build"):
        why += f"; the binary was built with {worst['build']}"
    return {"hypothesis": ids.PIPELINE_IMBALANCE, "level": level,
            "evidence": f"{who}: {how}{why}{beside}: {waits} — the CPU's layers are the slow stage of the two"
                        f"{_decode(rates)}",
            "next": "offload every layer (llama.cpp -ngl / n_gpu_layers at least the model's layer count, Ollama "
                    "num_gpu) and check the loader's `offloaded M/M layers to GPU`; lower it only if the GPU's "
                    "memory runs out"}


def streamed(records: list[dict]) -> dict | None:
    """Weights kept in host memory and moved to the GPU at each use by a memory mode (see the module docstring)."""
    modes = [r for r in records if r.get("how") == "lowvram"]
    loads = [r for r in records if r.get("how") in ("resident", "bytes")]
    if (spill := [r for r in records if r.get("how") == "shared"]) and not modes:
        r = spill[-1]
        used, size = r["dedicated_gib"]
        return {"hypothesis": ids.MEMORY_PRESSURE, "level": "moderate",
                "evidence": f"the GPU's own memory is full ({used:.3g} of {size:.3g} GiB) and it borrows "
                            f"{r['shared_gib']:.3g} GiB of shared system memory: what did not fit is read across "
                            "PCIe each time it is used, so the GPU waits on host memory however busy it reads",
                "next": "make the job fit the GPU's memory (a smaller batch or resolution, gradient checkpointing, "
                        "8-bit optimizer states); on Windows set the NVIDIA control panel's CUDA - Sysmem Fallback "
                        "Policy to Prefer No Sysmem Fallback to see the shortfall as an out-of-memory error"}
    if not modes and (managed := [r for r in records if r.get("how") == "managed"]):
        return {"hypothesis": ids.MEMORY_PRESSURE, "level": "moderate",
                "evidence": f"the runtime allocates in CUDA managed memory ({managed[-1]['mode']}), the switch for a "
                            "model larger than the GPU: what does not fit stays in host memory and the driver moves "
                            "its pages to the GPU on each fault, so the GPU waits on PCIe page migrations",
                "next": "unset it and fit the model in the GPU's memory (a smaller quantization or context, fewer "
                        "layers offloaded) and compare the time per token; on a GPU that shares the host's memory "
                        "(GH200, an integrated GPU) the setting costs little"}
    if not modes or (loads and all(r.get("cpu_share") == 0 for r in loads)):
        return None  # every model the input shows loaded completely: it fit after all
    r = modes[-1]
    size = f" on a GPU of {r['gpu_total_mib']:g} MiB" if r.get("gpu_total_mib") else ""
    return {"hypothesis": ids.MEMORY_PRESSURE, "level": "moderate",
            "evidence": f"the runtime runs in {r['mode']} mode{size}: it keeps part of the model's weights in host "
                        "memory and moves them to the GPU each time they are used, so every step waits on those "
                        "host-to-GPU copies",
            "next": "give the model the GPU memory it needs (a smaller or quantized model, a lighter mode such as "
                    "A1111's --medvram where the model fits, a GPU with more memory) and compare the step time"}


def saturation(blocks: list[dict]) -> str | None:
    """The fact that the server was saturated already at a lower load (see the module docstring), or None."""
    for kind in ("concurrency", "rate"):
        rows = sorted((b for b in blocks if b["load"][0] == kind and b.get("throughput")), key=lambda b: b["load"][1])
        for lo in rows:
            share = _share(lo)
            for hi in rows:
                if (hi["load"][1] >= LOAD_STEP * lo["load"][1] and share is not None and share >= INSIDE
                        and hi["throughput"] <= FLAT * lo["throughput"]):
                    lat = (f", latency x{hi['client_us'] / lo['client_us']:.1f}" if hi.get("client_us") and
                           lo.get("client_us") else "")
                    return (f"saturated at {_load(lo)}: throughput {lo['throughput']:,.4g} → {hi['throughput']:,.4g}/s "
                            f"at {_load(hi)}{lat}, the server busy with the request {share:.0%} of the time the "
                            "client waits; the added latency is queueing")
    return None


def findings(s: dict) -> list[dict]:
    """The findings one file's load blocks and placements support."""
    blocks = [b for b in s.get("loadtest") or [] if isinstance(b, dict) and b.get("load")]
    return [f for f in (outside(blocks), lagging(blocks), offloaded(s.get("placement") or [], s.get("generation") or [])) if f]
