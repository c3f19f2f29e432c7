"""What a stage's name says about a step that hands work between two groups of GPUs (RL post-training: a rollout
engine and a trainer; any producer and consumer), read by the words of the name, not by a list of frameworks' keys.

Two kinds of stage are no work of either side:
- WAIT: the time one side idles for the other, named so (`train_wait_time`, NeMo-RL's `exposed_generation`: the
  generation the trainer could not hide behind its own work, the buffer-fill wait; `idle`, `blocked`, `starved`).
- HANDOFF: the hand-over itself, while neither side computes: weights moved from trainer to engine (`weight_sync`,
  `refit`, `sync_rollout_weights`, `broadcast_weights`, `reshard`), or the GPU's memory handed from one to the other
  (`sleep` / `wake_up` of a colocated engine, `offload` / `onload` / `reload`).

Weights *updated* are no hand-off: a weight update is what every trainer's optimizer does (`weight_update_time`,
`param_update` beside `fwd_time` / `bwd_time` in a supervised run), so verl's `update_weights` stays a stage as read.
Nor is the training's own traffic of parameters among its data-parallel ranks or in its optimizer (Megatron's
`params-all-gather`, `optimizer-copy-main-to-model-params`): a collective, the optimizer's work.

Every other stage is work (`gen`, `update_actor`, `policy_training`, `old_log_prob`). `stage(name)` returns "wait",
"handoff" or None; the step scanner names such a phase so, and the accounting charges it as lost time
(analysis/step_times.WAIT_PHASES; the causes' PHASE_FALLBACK).
"""

from __future__ import annotations

import re

_WAIT_WORDS = frozenset(("wait", "waiting", "waited", "exposed", "idle", "blocked", "starved", "starvation"))
_HANDOFF_WORDS = frozenset(("sleep", "wake", "wakeup", "offload", "onload", "refit", "reshard", "resharding"))
_WEIGHT_WORDS = frozenset(("weight", "weights", "param", "params", "parameter", "parameters", "model"))
_MOVE_WORDS = frozenset(("sync", "synchronize", "broadcast", "transfer", "load", "reload", "send", "push", "gather",
                         "copy"))
# the training's own handling of its parameters: the optimizer's, its own copies of them (mixed precision's master /
# main weights, an EMA), or a collective among its ranks (`params-all-gather`)
_OWN_WORDS = frozenset(("optimizer", "optim", "grad", "grads", "gradient", "gradients", "master", "main", "ema", "all",
                        "allgather", "allreduce", "reduce", "scatter"))
_SPLIT = re.compile(r"[^a-z0-9]+")


def words(name: str) -> list[str]:
    """The words of a stage's name, lower-case, in order (`perf/sleep_time` -> perf, sleep, time)."""
    return _SPLIT.split(name.lower())


def stage(name: str) -> str | None:
    """"wait", "handoff" or None (work, or not a hand-off's) for a stage's name (`exposed_generation`,
    `perf/sleep_time`, `weight_sync`, `timing_s/update_weights`)."""
    said = set(words(name))
    if said & _WAIT_WORDS:
        return "wait"
    if said & _HANDOFF_WORDS or (said & _WEIGHT_WORDS and said & _MOVE_WORDS and not said & _OWN_WORDS):
        return "handoff"
    return None
