"""What input-pipeline tools print about a run (readers/input_pipeline_text.py) → findings for `playbook diagnose`,
at profiler_ops' levels (5% moderate, 20% high):

  TensorFlow Profiler   its verdict states the share of the sampled steps' time spent waiting for input (the
                        profiler measured it on the device's step timeline): data_starvation at that share; a `NOT
                        input-bound` verdict finds nothing (it clears the input, not the rest of the step)
  Ray Data stats        the iterating thread's time blocked in iter_batches, as a share of the iterator's overall
                        time (pooled over a file's training iterators: blocked seconds over their seconds), is the
                        consumer's wait for its next batch (less the wait for the first batch where Ray states it:
                        the pipeline's warm-up, a one-time cost, said in a warning). It is the GPU's wait only when
                        the consumer is the GPU's work: a training loop — said by the stats themselves when the dataset was split
                        to training workers (a `split(N, ...)` operator, the streaming-split coordinator line), or
                        when the loop's own execution is at least HIGH of the time (it does real work between
                        batches). Otherwise (the loop takes the outputs and does little: batch inference, whose model
                        runs inside the pipeline as an operator) the blocked time is the pipeline's own execution —
                        Ray's docs: "often the primary execution of a dataset" — and no starvation is found; a
                        warning names the slowest operator and what would tell the two apart
  DataLoader / Lightning worker warnings
                        a configuration the tool distrusts (more workers than usable CPUs; fewer workers than CPUs),
                        no measured wait: a warning that says what to measure, never a finding — the same warning
                        prints in runs that lost nothing (CI tests on a 2-CPU runner) and in runs that froze
  input-queue depths    the depth of the queue of batches a trainer's record prints (Detectron's mb_qsize,
                        tensorpack's QueueInput/queue_size): a queue found empty (below half a batch: tensorpack prints
                        an epoch's mean) means the consumer asked for a batch and none was ready — the producer falls
                        behind. At least half the records empty: data_starvation, high from 3 records, moderate from
                        fewer (one record may be a moment); the wait's length is not stated, so no share is claimed.
                        A queue kept full says the input keeps ahead: nothing is found from it
  empty-queue warnings  a producer's own count of the batch requests that found its queue empty: the first may be the
                        start (the queue not yet filled); those past it are the steady state waiting: data_starvation,
                        high from 100 waits past the first (no start-up transient lasts a hundred batches), moderate
                        from fewer; a lone first warning finds nothing
"""

from __future__ import annotations

from collections.abc import Callable

from playbook.analysis import ray_progress, stage_breakdown
from playbook.knowledge import ids as cause_ids

HIGH = 0.20  # profiler_ops.HIGH: a consumer that runs its own code this share of the time does real work
EMPTY_DEPTH = 0.5  # a queue's depth below half a batch: empty (tensorpack prints an epoch's mean depth)
MANY_RECORDS = 3  # records of an empty queue that make it the run's state, not a moment
MANY_WAITS = 100  # empty-queue waits past the first that no start-up transient explains


def findings(source: str, part: dict, out: list[dict], warnings: list[str],
             level: Callable[[float], str | None]) -> int:
    """Append the findings of one file's input-pipeline statements (`part`: InputPipelineText.summary()) to `out`
    and its cautions to `warnings`; how many statements the file holds."""
    _tf(source, part.get("tf") or [], out, level)
    _ray(source, part, out, warnings, level)
    _workers(source, part, warnings)
    _queues(source, part, out)
    ray_progress.findings(source, part.get("ray_progress") or [], out, level)
    stage_breakdown.findings(source, part.get("stage_breakdowns") or [], out, level)
    return sum(len(part.get(k) or []) for k in ("tf", "torch_workers", "lightning", "ray_iterators", "queue_depths",
                                                 "queue_waits", "ray_progress", "stage_breakdowns"))


def _queues(source: str, part: dict, out: list[dict]) -> None:
    """Input-queue depths and empty-queue warnings (module docstring): the consumer found no batch ready."""
    depths = part.get("queue_depths") or []
    empty = [d for d in depths if d["depth"] < EMPTY_DEPTH]
    if depths and len(empty) * 2 >= len(depths):
        keys = ", ".join(dict.fromkeys(d["key"] for d in depths))
        out.append({"hypothesis": cause_ids.DATA_STARVATION,
                    "level": "high" if len(empty) >= MANY_RECORDS else "moderate", "share": None, "evidence": (
                        f"{keys} in {source}: the input queue was empty in {len(empty)} of {len(depths)} record(s) "
                        "(depth below half a batch): each time the step asked for a batch, none was ready — the "
                        "loader (reading, decoding, augmenting) falls behind the GPU; how long each wait lasted is "
                        "not in the records. Check where the data is read from (a network or spinning disk), add "
                        "loader threads or workers, or preprocess offline")})
    waits = part.get("queue_waits") or []
    counted = [w for w in waits if w is not None]
    past_first = (max(counted) - 1) if counted else len(waits) - 1
    if past_first < 1:
        return
    stated = (f"its running count reached {max(counted):,}" if counted else f"{len(waits):,} such warnings")
    out.append({"hypothesis": cause_ids.DATA_STARVATION,
                "level": "high" if past_first >= MANY_WAITS else "moderate", "share": None, "evidence": (
                    f"the producer's empty-queue warning in {source}: {stated}, so {past_first:,} batch requests "
                    "past the first (the start, the queue not yet filled) found no batch ready: the reader falls "
                    "behind the step in the steady state; how long each wait lasted is not stated. Read faster "
                    "storage, add reader threads, or decode offline")})


def _tf(source: str, verdicts: list[dict], out: list[dict], level: Callable[[float], str | None]) -> None:
    """The TensorFlow Profiler's verdicts: the largest share waiting for input, at its level."""
    if not verdicts:
        return
    worst = max(verdicts, key=lambda v: v["input_share"])
    share = float(worst["input_share"])
    if not (lvl := level(share)):
        return
    others = (f"; {worst['others_share']:.1%} of it on 'All Others' time (host work outside the input pipeline and "
              "the device)") if worst.get("others_share") is not None else ""
    more = (f" (the worst of the {len(verdicts)} verdicts in the file: "
            + ", ".join(f"{v['input_share']:.1%}" for v in verdicts[:6]) + ")") if len(verdicts) > 1 else ""
    out.append({"hypothesis": cause_ids.DATA_STARVATION, "level": lvl, "share": share, "evidence": (
        f"TensorFlow Profiler's input-pipeline verdict in {source}: {worst['level']} input-bound, {share:.1%} of the "
        f"sampled steps' time is waiting for input{more}{others}; the input pipeline (reading, decoding, map "
        "functions) does not keep the device fed: parallelize map (num_parallel_calls), prefetch, cache, or "
        "preprocess offline")})


def _ray(source: str, part: dict, out: list[dict], warnings: list[str],
         level: Callable[[float], str | None]) -> None:
    """Ray Data's iterator breakdowns (module docstring). The iterators whose loop is the GPU's work are one run's
    (a training epoch and its short validation pass, workers' shards): their blocked share is pooled, the blocked
    seconds over their seconds, so a 2 s pass blocked on its first batch is not the run's starvation."""
    ops = part.get("ray_operators") or []
    slowest = max(ops, key=lambda o: o["wall_s"]) if ops else None
    training: list[tuple[float, float, float]] = []  # (overall, blocked, user) past the first batch
    warm_up = 0.0  # the training iterators' waits for their first batch, where stated
    for it in part.get("ray_iterators") or []:
        total = float(it["overall_s"])
        blocked, user = float(it.get("blocked_s") or 0.0), float(it.get("user_s") or 0.0)
        b, u = min(blocked / total, 1.0), min(user / total, 1.0)  # a paste's figures cannot claim more than all
        if part.get("ray_split") or u >= HIGH:
            # the wait for the first batch (newer Ray states it, within the blocked time) is the pipeline's warm-up,
            # a one-time cost as a step log's warm-up is: the steady state's wait is the rest
            first = float(it.get("first_s") or 0.0)
            first = first if first <= blocked < total else 0.0
            warm_up += first
            training.append((total - first, min(blocked, total) - first, min(user, total)))
            continue
        if not level(b):
            continue
        warnings.append(
            f"{_ray_where(source, [(total, blocked, user)])}: the loop does little between batches, so its blocked "
            "time is the pipeline's own execution (Ray: \"often the primary execution of a dataset\"), not a wait the "
            "GPU pays for unless the loop is the GPU's work"
            + (f"; the slowest operator is {slowest['name']} ({slowest['wall_s']:.3g} s of {len(ops)} operators): "
               "when it runs the model (batch inference) the GPU is inside the pipeline and busy there"
               if slowest else "")
            + ". No starvation is found from these stats: time a training loop's wait for its next batch, or read "
              "the GPU's utilization beside them")
    if not training:
        return
    total = sum(t for t, _, _ in training)
    b, u = sum(x for _, x, _ in training) / total, sum(x for _, _, x in training) / total
    warm = ""
    if warm_up:
        whole = total + warm_up
        warm = (f"; past the first batch: the {warm_up:.3g} s waiting for it ({warm_up / whole:.0%} of {whole:.3g} s) "
                "were the pipeline's warm-up (reading and transforming its first blocks), left out")
        if level(warm_up / whole) and not level(b):
            warnings.append(f"Ray Data stats in {source}: the training loop waited {warm_up:.3g} s for its first "
                            f"batch, {warm_up / whole:.0%} of its {whole:.3g} s (the pipeline's warm-up, summed over "
                            f"epochs), and {b:.0%} of the rest: a start-up cost, not a pipeline slower than the loop; "
                            "shorten the warm-up (fewer or smaller first blocks) where the run is short")
    if not (lvl := level(b)):
        return
    why = ("the dataset was split to training workers (streaming_split): the loop that waits is the training loop"
           if part.get("ray_split") else f"the loop runs its own work {u:.0%} of the time and waits between batches")
    out.append({"hypothesis": cause_ids.DATA_STARVATION, "level": lvl, "share": b, "evidence": (
        f"{_ray_where(source, training)}{warm}: {why}; the pipeline does not produce batches as fast as the loop "
        "takes them"
        + (f" (slowest operator: {slowest['name']}, {slowest['wall_s']:.3g} s)" if slowest else ""))})


def _ray_where(source: str, iterators: list[tuple[float, float, float]]) -> str:
    """What the iterators' breakdowns say: blocked and own-code seconds and their shares of the overall time."""
    total = sum(t for t, _, _ in iterators)
    blocked, user = sum(x for _, x, _ in iterators), sum(x for _, _, x in iterators)
    whose = "the iterator's" if len(iterators) == 1 else f"its {len(iterators)} iterators'"
    return (f"Ray Data stats in {source}: the iterating thread was blocked in iter_batches {blocked:.3g} s, "
            f"{min(blocked / total, 1.0):.0%} of {whose} {total:.3g} s, and ran its own code {user:.3g} s "
            f"({min(user / total, 1.0):.0%})")


def _workers(source: str, part: dict, warnings: list[str]) -> None:
    """The DataLoader's and Lightning's worker-count warnings: cautions, with what to measure."""
    measure = ("a configuration, not a measured wait: the same warning prints in runs that lost nothing; time the "
               "loop's wait for its next batch (`playbook record`, or torch.profiler's enumerate(DataLoader)) or "
               "read the GPU's utilization to know what it cost")
    if ws := part.get("torch_workers"):
        worst = max(ws, key=lambda w: w["workers"] / max(w["suggested"] or 1, 1))
        where = (f"the process may use {worst['suggested']} CPUs; more workers than CPUs contend for them and can "
                 f"slow or freeze loading (lower num_workers to at most {worst['suggested']})"
                 if worst["suggested"] is not None else
                 "the DataLoader could not count the CPUs the process may use; more workers than CPUs contend for "
                 "them and can slow or freeze loading (compare num_workers with `nproc`)")
        warnings.append(f"PyTorch's DataLoader warned {len(ws)} time(s) in {source}: {worst['workers']} worker "
                        f"processes where {where}: {measure}")
    if ls := part.get("lightning"):
        names = sorted({w["loader"] for w in ls})
        hint = next((w["suggested"] for w in ls if w.get("suggested")), None)
        warnings.append(
            f"Lightning warned in {source} that {', '.join(names[:4])} does not have many workers"
            + (f" (it suggests num_workers={hint})" if hint else "")
            + f", which may leave the GPU waiting for batches: {measure}")
