"""Balanced producer → consumer pipelines: per-consumer queues, least-loaded dispatch, work stealing, and queue
depth and producer:consumer ratio sized from measured rates.

The failure: producers (e.g. GPUs computing hidden states) route items to consumers (GPUs consuming them) by a
fixed rule such as round-robin, through one shared bounded buffer. A slow consumer's items pile up in the buffer
and take all its slots; producers block on a full buffer while the other consumers find nothing addressed to them.
GPU utilization turns spotty: producers and fast consumers idle in turns, the slow consumer is saturated, and the
pipeline runs at `consumers × slowest rate`.

The fix, in three parts:
1. per-consumer bounded queues and least-loaded dispatch (`QueueSet(routing="least_loaded")`): a producer puts
   each item on the consumer with the fewest queued items, so a slow consumer simply gets fewer items; or work
   stealing (`get(..., steal=True)`): an idle consumer takes items queued for another.
2. a queue depth sized from measured rates with Little's law (`littles_law_depth`): items queued = throughput ×
   time each item must wait; enough to ride out a producer hiccup of `cover_s`, no more (deeper queues only add
   latency and memory).
3. a producer:consumer ratio from measured throughput (`plan_pipeline`): supply = Σ producer rates must meet
   demand = Σ consumer rates; more producers than that only fill the queues and then block.

    from playbook.labs.fixes.dispatch import QueueSet, plan_pipeline
    qs = QueueSet(n_consumers=3, depth=4, routing="least_loaded")     # create before starting workers
    # producer process:                       # consumer process c:
    consumer, blocked_s = qs.put(item)        item, blocked_s = qs.get(c, steal=False)

Works with fork and spawn (the queues and counters are multiprocessing objects created by the parent).
"""

from __future__ import annotations

import math
import multiprocessing as mp
import queue as queue_mod
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

ROUTINGS = ("round_robin", "least_loaded")


class QueueSet:
    """Consumer queues with a routing rule and slot accounting, shared between processes.

    routing "round_robin": producer p sends its i-th item to consumer (p + i) mod n (static routing).
    routing "least_loaded": a put goes to the consumer with the fewest queued items that has a free slot.
    shared_capacity=K: ONE pool of K slots for all consumers (the single shared bounded queue); otherwise each
    consumer has its own `depth` slots. A slot is taken by the producer's put and freed when a consumer takes the
    item. The failure is round_robin + shared_capacity; the fix least_loaded (or work stealing) + per-consumer depth.

    depths() reads the queued items per consumer (for sampling queue depth over time).
    """

    def __init__(self, n_consumers: int, depth: int = 4, routing: str = "least_loaded",
                 shared_capacity: int | None = None, ctx: Any = None):
        if routing not in ROUTINGS:
            raise ValueError(f"routing must be one of {ROUTINGS}, not {routing!r}")
        if n_consumers < 1 or depth < 1 or (shared_capacity is not None and shared_capacity < 1):
            raise ValueError("need at least one consumer and at least one slot")
        ctx = ctx or mp.get_context()
        self.n, self.routing, self.depth = int(n_consumers), routing, int(depth)
        self.shared = shared_capacity is not None
        self.capacity = int(shared_capacity) if self.shared else self.depth * self.n
        self.queues = [ctx.Queue() for _ in range(self.n)]
        if self.shared:
            pool = ctx.BoundedSemaphore(self.capacity)
            self.slots = [pool] * self.n
        else:
            self.slots = [ctx.BoundedSemaphore(self.depth) for _ in range(self.n)]
        self.counts = ctx.Array("i", self.n)  # queued items per consumer
        self._sent = 0  # per-producer counter (each producer process has its own copy)

    def describe(self) -> str:
        slots = f"one shared queue of {self.capacity} slots" if self.shared else f"{self.depth} slots per consumer"
        return f"{self.routing} routing, {slots}"

    # ------------------------------------------------------------------ producer side
    def put(self, item: Any, producer: int = 0, poll_s: float = 0.05) -> tuple[int, float]:
        """Queue `item`; blocks while no slot is free. Returns (consumer it went to, seconds blocked)."""
        t0 = time.perf_counter()
        if self.routing == "round_robin":
            c = (producer + self._sent) % self.n
            self._sent += 1
            self.slots[c].acquire()
        else:
            c = self._acquire_least_loaded(poll_s)
        blocked = time.perf_counter() - t0
        with self.counts.get_lock():
            self.counts[c] += 1
        self.queues[c].put(item)
        return c, blocked

    def _acquire_least_loaded(self, poll_s: float) -> int:
        while True:
            order = np.argsort(np.frombuffer(self.counts.get_obj(), dtype=np.int32), kind="stable")
            for c in order:
                if self.slots[int(c)].acquire(block=False):
                    return int(c)
            if self.slots[int(order[0])].acquire(timeout=poll_s):
                return int(order[0])

    def close(self, n_stops: int = 1) -> None:
        """Send `n_stops` stop markers (None) to every consumer, outside the slot accounting."""
        for q in self.queues:
            for _ in range(n_stops):
                q.put(None)

    # ------------------------------------------------------------------ consumer side
    def get(self, consumer: int, steal: bool = False, timeout: float | None = None,
            poll_s: float = 0.02) -> tuple[Any, float]:
        """Take the next item for `consumer` (None = stop marker). With `steal`, an idle consumer takes an item
        queued for another consumer. Returns (item, seconds blocked); raises queue.Empty after `timeout`."""
        t0 = time.perf_counter()
        deadline = None if timeout is None else t0 + timeout
        while True:
            wait = poll_s if steal else (None if deadline is None else max(0.0, deadline - time.perf_counter()))
            try:
                item = self.queues[consumer].get(timeout=wait)
                return self._took(consumer, item), time.perf_counter() - t0
            except queue_mod.Empty:
                pass
            if steal:
                for other in sorted(range(self.n), key=lambda c: -self.counts[c]):
                    if other == consumer or self.counts[other] <= 0:
                        continue
                    try:
                        item = self.queues[other].get_nowait()
                    except queue_mod.Empty:
                        continue
                    if item is None:  # never steal a stop marker
                        self.queues[other].put(None)
                        continue
                    return self._took(other, item), time.perf_counter() - t0
            if deadline is not None and time.perf_counter() >= deadline:
                raise queue_mod.Empty

    def _took(self, queue_of: int, item: Any) -> Any:
        if item is not None:
            with self.counts.get_lock():
                self.counts[queue_of] -= 1
            self.slots[queue_of].release()
        return item

    # ------------------------------------------------------------------ observation
    def depths(self) -> list[int]:
        """Items queued per consumer right now."""
        return [int(x) for x in self.counts[:]]


# -------------------------------------------------------------------------------------------------------- sizing
def littles_law_depth(rate_per_s: float, wait_s: float) -> int:
    """Little's law L = λ·W: items in a queue that serves `rate_per_s` when each item waits `wait_s` (rounded up)."""
    if not (rate_per_s > 0 and wait_s >= 0):
        raise ValueError("rate must be > 0 and wait >= 0")
    return max(1, math.ceil(rate_per_s * wait_s - 1e-9))


@dataclass
class PipelinePlan:
    """Rates (items/s) measured per worker, and what they imply for the pipeline."""

    producer_rate: float  # items/s of one producer (median over producers)
    consumer_rates: list[float]  # items/s of each consumer
    supply: float  # items/s all producers together
    demand: float  # items/s all consumers together
    bottleneck: str  # "producers" or "consumers"
    capacity: float  # min(supply, demand): the best balanced throughput, items/s
    static_capacity: float  # n_consumers × slowest consumer rate: the most round-robin routing can reach
    producers_needed: int  # producers that meet the consumers' demand
    ratio: float  # producers per consumer that balances supply and demand
    depth: int  # per-consumer queue depth (Little's law with cover_s)
    cover_s: float  # the producer hiccup a consumer's queue must ride out, s

    def as_dict(self) -> dict:
        return asdict(self)


def plan_pipeline(produce_s: Sequence[float], consume_s: Sequence[float], n_producers: int | None = None,
                  cover_s: float | None = None) -> PipelinePlan:
    """Size a pipeline from measured service times (seconds of work per item; not including blocked time).

    produce_s: per-item seconds of producer work (pooled over producers; the median sets the producer rate).
    consume_s: per-consumer median seconds per item (one value per consumer).
    n_producers: producers in use (default: as many as needed). cover_s: how long a queue must keep its consumer
    busy without new input; default twice the 95th percentile of producer item time (a late item, and the one
    queued behind it at the same producer).
    """
    p = np.asarray(produce_s, dtype=float)
    c = np.asarray(consume_s, dtype=float)
    if p.size == 0 or c.size == 0 or (p <= 0).any() or (c <= 0).any():
        raise ValueError("need positive producer and consumer item times")
    prod_rate = 1.0 / float(np.median(p))
    cons_rates = (1.0 / c).tolist()
    demand = float(sum(cons_rates))
    needed = max(1, math.ceil(demand / prod_rate - 1e-9))
    n_prod = needed if n_producers is None else int(n_producers)
    supply = n_prod * prod_rate
    cover = 2.0 * float(np.percentile(p, 95)) if cover_s is None else float(cover_s)
    depth = littles_law_depth(max(cons_rates), cover)
    return PipelinePlan(
        producer_rate=prod_rate, consumer_rates=cons_rates, supply=supply, demand=demand,
        bottleneck="producers" if supply < demand else "consumers", capacity=min(supply, demand),
        static_capacity=len(cons_rates) * min(cons_rates), producers_needed=needed,
        ratio=demand / prod_rate / len(cons_rates), depth=depth, cover_s=cover,
    )
