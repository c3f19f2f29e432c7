"""Evidence from traces: the Kineto summary's unexplained GPU idle time and the findings lists of the Kineto,
straggler and NCCL analyses."""

from __future__ import annotations

from playbook.diagnosis.evidence import LEVEL_CONFIDENCE
from playbook.diagnosis.findings import Finding
from playbook.diagnosis.ranking import Evidence, expand, impact, support, typical_share
from playbook.knowledge import ids as cause_ids
from playbook.knowledge.causes import CAUSES, DIAGNOSIS_IDS


def from_trace_idle(idle: dict | None) -> list[Evidence]:
    """Evidence from the Kineto summary's `gpu_idle`: the GPU's idle share of the profiled steps that the
    dataloader, sync and launch analyses leave unexplained, read by where the idle time goes. A measured share,
    so the confidence is the window's: 0.85 over ≥ 3 profiled steps, 0.6 for fewer (or a trace without step
    marks), where one odd step can dominate. A host wait in a trace without the CPU side (`host_ops` false) is read
    as trace_idle_unobserved: only the causes its runtime calls can show; a trace without launch calls (`launches`
    false: XProf traces) as trace_idle_unsplit."""
    if not idle or not idle.get("unexplained_share"):
        return []
    cats = {k: float(idle.get(k) or 0.0) for k in ("host_wait", "kernel_wait", "other")}
    where = max(cats, key=cats.get)
    conf = 0.85 if idle.get("steps", 0) >= 3 else 0.6
    window = (f"{idle['steps']} profiled step{'s' if idle['steps'] != 1 else ''}" if idle.get("basis") == "steps"
              else "the traced span (no step marks)")
    reading = {"host_wait": "waiting for the host to issue work", "kernel_wait": "in short gaps between kernels",
               "other": "waiting on work already issued (syncs, copies, other streams)"}[where]
    text = (f"trace: rank {idle['rank']}'s GPU is idle {idle['share']:.0%} of {window}; "
            f"{idle['unexplained_share']:.0%} is not accounted for by DataLoader waits, syncs or launch gaps, and "
            f"{cats[where]:.0f}% of the idle time is {reading}")
    nxt = ("profile the CPU side of a step (torch.profiler with_stack=True, or py-spy dump --pid) to see what the "
           "training process does while the GPU waits; time next(loader) with playbook.probes `timed`")
    signature = f"trace_idle_{where.split('_')[0]}"
    if idle.get("launches") is False:  # no launch call recorded: the idle time cannot be split (XProf traces)
        signature = "trace_idle_unsplit"
        text = (f"trace: rank {idle['rank']}'s GPU is idle {idle['share']:.0%} of {window}; "
                f"{idle['unexplained_share']:.0%} is not accounted for by DataLoader waits or syncs, and the trace "
                "records no kernel launches, so whether the host was late or the GPU waited on issued work cannot "
                "be told from it")
    if signature == "trace_idle_host" and not idle.get("host_ops", True):
        signature = "trace_idle_unobserved"
        text += " (the trace records GPU activity only: what the host did meanwhile is not in it)"
        nxt = ("profile again with the CPU side recorded (torch.profiler activities=[CPU, CUDA]) to see what the "
               "host does")
    return support(signature, conf, impact(idle["unexplained_share"]), text, nxt, lost=idle["unexplained_share"])


def from_findings(findings: list[dict] | None, source: str) -> list[Evidence]:
    """Evidence from the Kineto / straggler / NCCL analyses' `findings` lists ({hypothesis, level, evidence}, an
    optional `anomaly` level)."""
    out: list[Evidence] = []
    for f in findings or []:
        hyp = f.get("hypothesis")
        if hyp not in DIAGNOSIS_IDS:
            continue
        conf = LEVEL_CONFIDENCE.get(str(f.get("level")), 0.5)
        if f.get("steps"):
            conf *= typical_share(int(f.get("steps_at_level", f["steps"])), int(f["steps"]))
        text = f"{source}: {f.get('evidence', '')}".strip() if source else str(f.get("evidence", ""))
        nxt = f.get("next") if isinstance(f.get("next"), str) else None
        if nxt is None and f.get("hosts"):
            nxt = CAUSES[hyp].next_step.replace("the named host", ", ".join(map(str, f["hosts"])))
        share = f.get("share")
        share = float(share) if isinstance(share, (int, float)) else None
        ranks = f.get("ranks") or ([f["rank"]] if f.get("rank") is not None else [])
        names = tuple(f"rank {r}" for r in ranks) + tuple(f.get("gpus") or ()) + tuple(f.get("hosts") or ())
        # `anomaly`: how sure the finding is that something is wrong, where that is surer than its cause (a loss
        # measured outright, its cause inferred); else the cause's own confidence
        anomaly = LEVEL_CONFIDENCE.get(str(f.get("anomaly")), conf)
        out += expand(Finding(hyp, text, conf, 1.0, level=share, lost_share=share, names=names, next_step=nxt,
                              anomaly=max(anomaly, conf), source=source or "findings"))
        nature = f.get("nature")
        if hyp == cause_ids.COLLECTIVE_STRAGGLER and nature in ("hardware-like", "software-like"):
            sig = "straggler_hardware" if nature == "hardware-like" else "straggler_software"
            why = ("the same rank every time, its compute slower" if nature == "hardware-like" else
                   "it rotates, or it is late for host-side reasons (rank-specific work, data)")
            for e in support(sig, conf, 1.0, f"the slowest rank is {nature} ({why})"):
                e.anomaly = 0.0  # the same finding read another way: no extra sign that something is wrong
                out.append(e)
    return out
