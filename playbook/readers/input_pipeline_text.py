"""What input-pipeline tools and frameworks print about a run's input, read wherever it appears in a text log (a
line scanner fed by profiler_table.ProfilerTables; the findings: analysis/input_pipeline.py).

- TensorFlow Profiler's input-pipeline verdict (tensorboard_plugin_profile / xprof, input_pipeline_analysis and the
  overview page's "Recommendation for Next Step"): `Your program is {HIGHLY|MODERATELY|NOT} input-bound because
  [only ]P% of the total step time sampled is waiting for input.` (P >= 20 HIGHLY, >= 5 MODERATELY; TPU builds number
  it `(1) Your program is ...`), `... is POTENTIALLY input-bound because P% of the total step time sampled is spent on
  'All Others' time ...` and `P % of the total step time sampled is spent on 'All Others' time.` — a measured share of
  the sampled steps' time, read also inside a quotation or a comment (`# It's saying "Your program is ..."`).
- PyTorch's DataLoader warning (torch/utils/data/dataloader.py `check_worker_number_rationality`): `This DataLoader
  will create N worker processes in total. Our suggested max number of worker in current system is M[ (`cpuset` is not
  taken into account)], which is smaller than ...` (or `DataLoader is not able to compute a suggested max number of
  worker in current system.`: suggested None) — a configuration the tool distrusts (more workers than usable CPUs),
  no measured wait.
- PyTorch Lightning's warning (trainer/connectors/data_connector.py): 2.x `The '{name}' does not have many workers
  which may be a bottleneck. Consider increasing the value of the `num_workers` argument` to `num_workers={n}` ...`,
  1.x `The dataloader, {name}, does not have many workers which may be a bottleneck. Consider increasing the value of
  the `num_workers` argument` (try {n} which is the number of cpus on this machine) ...` — a suspicion, no measured wait.
- Ray Data's stats (python/ray/data/_internal/stats.py): `Operator N NAME: K tasks executed, B blocks produced in Ts`
  per operator, and the iterator's breakdown `Dataset iterator time breakdown:` with `* Total time overall: T`,
  `* Total time in Ray Data iterator initialization code: T`, `* Total time user thread is blocked by [Ray Data
  ]iter_batches: T` (2.9-: `Total time user code is blocked: T`) and `* Total execution time for user thread: T`
  (2.9-: `Total time in user code: T`), and in newer releases `* Total time spent waiting for the first batch after
  starting iteration: T` (the pipeline's warm-up, summed over epochs: a wait the blocked time holds); T as Ray's fmt
  prints it (`38.53s`, `24.0ms`, `3.6us`). A `split(N, ...)` operator or the `Streaming split coordinator overhead
  time` line says the dataset fed N training workers (Ray Train's streaming_split ingest): the iterating thread is then
  a training loop.
- An input queue's depth in a trainer's printed record: a key that names a queue of batches (an input noun — `mb`,
  `minibatch`, `batch`, `input`, `data`, `prefetch`, tensorpack's `QueueInput` — with a queue-size noun: `qsize`,
  `queue_size`, `queue_len`, `queue_depth`), as `key: value`, `key=value` or JSON `"key": value`: Detectron's
  `json_stats: {... "mb_qsize": 0, ...}` (roi_data/loader.py: the minibatch queue the loader threads fill and the net
  dequeues), tensorpack's monitor `QueueInput/queue_size: 2.32e-37` (the queue's mean size over the epoch) and its older
  `input_queue_size: 50`. The line is only observed (not claimed): it may also be a step record. A request queue
  (`queue_size` alone, a server's pending requests) names no input and is not read.
- A producer's own empty-queue warning: `batch queue is empty (N warnings)` (DeMoN's multivih5datareader.cpp
  getBatch(): N counts the batch requests that found the reader's queue empty, printed at the 1st, 101st, ...), or
  the same words without a count (`data queue empty`, `prefetch queue is empty`): each a time the consumer asked for a
  batch and none was ready.
"""

from __future__ import annotations

import re

from playbook.readers.ray_progress_text import RayProgress
from playbook.readers.stage_breakdown_text import StageBreakdown

_NUM = r"(\d{1,3}(?:\.\d{1,3})?)"
# TensorFlow Profiler: the verdict (the share waiting for input) and the 'All Others' share
_TF_INPUT = re.compile(r"\b(HIGHLY|MODERATELY|NOT)\s+input-bound\s+because\s+(?:only\s+)?" + _NUM
                       + r"\s?% of the total step time sampled is waiting for input", re.IGNORECASE)
_TF_OTHERS = re.compile(_NUM + r"\s?% of the total step time sampled is spent on '?All Others'? time", re.IGNORECASE)
# PyTorch DataLoader: its suggestion, or (no CPU count to be had) `DataLoader is not able to compute a suggested max
# number of worker in current system.`
_TORCH_WORKERS = re.compile(r"This DataLoader will create (\d{1,6}) worker processes in total\.\s+(?:Our suggested max "
                            r"number of worker in current system is (\d{1,6})|DataLoader is not able to compute a "
                            r"suggested max number of worker)")
# Lightning: 2.x quotes the loader's name, 1.x names it after "The dataloader, "
_PL_FEW = re.compile(r"The (?:dataloader, )?'?([\w ]{1,40}?)'?,? does not have many workers which may be a bottleneck"
                     r"(?:.{0,200}?(?:num_workers=(\d{1,5})|\(try (\d{1,5}) which is the number of cpus))?")
# Ray Data
_RAY_OPERATOR = re.compile(r"^\s*Operator (\d{1,4}) (.{1,200}?): (\d{1,9}) tasks executed, (\d{1,9}) blocks produced "
                           r"in (\S{1,20})\s*$")
_RAY_TIMES = (("overall_s", re.compile(r"^\s*\*\s*Total time overall: (\S{1,20})\s*$")),
              ("init_s", re.compile(r"^\s*\*\s*Total time in Ray Data iterator initialization code: (\S{1,20})\s*$")),
              ("blocked_s", re.compile(r"^\s*\*\s*Total time user (?:thread is blocked by (?:Ray Data )?iter_batches|"
                                       r"code is blocked): (\S{1,20})\s*$")),
              ("user_s", re.compile(r"^\s*\*\s*(?:Total execution time for user thread|Total time in user code): "
                                    r"(\S{1,20})\s*$")),
              ("first_s", re.compile(r"^\s*\*\s*Total time spent waiting for the first batch after starting "
                                     r"iteration: (\S{1,20})\s*$")))
_RAY_BREAKDOWN = re.compile(r"^\s*Dataset iterator time breakdown:\s*$")
_RAY_SPLIT = re.compile(r"^\s*(?:Operator \d{1,4} split\(\d{1,5}|Streaming split coordinator overhead time:)")
_RAY_TIME = re.compile(r"^(\d{1,9}(?:\.\d{1,9})?)(us|ms|s|min|h)$")
_RAY_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
# an input queue's depth: an input noun then a queue-size noun in one key (`mb_qsize`, `QueueInput/queue_size`,
# `input_queue_size`, `prefetch_queue_len`), its value a number (tensorpack prints a mean: 2.32e-37)
_QUEUE_DEPTH = re.compile(r"(?<![\w/])\"?((?:[\w]{0,40}[/_.])?(?:mb|minibatch|batch|input|data|prefetch|queueinput)"
                          r"[/_.]?(?:qsize|queue_?size|queue_?len|queue_?depth)|queueinput/queue_?size)\"?\s*[:=]\s*"
                          r"(\d{1,9}(?:\.\d{1,12})?(?:e[-+]?\d{1,3})?)(?![\w.])", re.IGNORECASE)
# a producer's empty-queue warning, with the running count where it states one
_QUEUE_EMPTY = re.compile(r"\b(?:mini-?batch|batch|input|data|prefetch)\s+queue\s+(?:is\s+)?empty\b"
                          r"(?:\s*\((\d{1,12})\s+warnings?\))?", re.IGNORECASE)
MAX_ITEMS = 1000  # statements, warnings and operators kept per file


def ray_seconds(text: str) -> float | None:
    """Seconds from Ray's fmt (`38.53s`, `24.0ms`, `3.6us`); None when the text is not one."""
    m = _RAY_TIME.match(text.strip())
    return float(m.group(1)) * _RAY_UNITS[m.group(2)] if m else None


class InputPipelineText:
    """Line scanner: feed(body) True when the line is one of the statements the module docstring lists."""

    def __init__(self):
        self.tf: list[dict] = []  # {level, input_share, others_share}
        self.torch_workers: list[dict] = []  # {workers, suggested (None: the warning could not say)}
        self.lightning: list[dict] = []  # {loader, suggested}
        self.ray_operators: list[dict] = []  # {index, name, tasks, blocks, wall_s}
        self.ray_iterators: list[dict] = []  # {overall_s, init_s, blocked_s, user_s, first_s}
        self.ray_split = False
        self._in_breakdown = False
        self.queue_depths: list[dict] = []  # {key, depth}: an input queue's depth as a record printed it
        self.queue_waits: list[int | None] = []  # an empty-queue warning each: its running count, None without one
        self.progress = RayProgress()  # Ray Data's progress snapshots (readers/ray_progress_text.py)
        self.stages = StageBreakdown()  # a record's time split into stages (readers/stage_breakdown_text.py)

    def feed(self, body: str) -> bool:
        # both TensorFlow statements say "step time sampled": a line without it costs no search (most lines)
        if ("sampled" in body or "SAMPLED" in body) and self._tf(body):
            return True
        # each warning's fixed words first: a line without them costs no regex search (most lines)
        if "DataLoader will create" in body and (m := _TORCH_WORKERS.search(body)):
            if len(self.torch_workers) < MAX_ITEMS:
                self.torch_workers.append({"workers": int(m.group(1)),
                                           "suggested": int(m.group(2)) if m.group(2) else None})
            return True
        if "does not have many workers" in body and (m := _PL_FEW.search(body)):
            if len(self.lightning) < MAX_ITEMS:
                n = m.group(2) or m.group(3)
                self.lightning.append({"loader": m.group(1).strip(), "suggested": int(n) if n else None})
            return True
        if ("queue" in body or "QUEUE" in body or "qsize" in body) and self._queues(body):
            return True
        return self._ray(body) or self.progress.feed(body) or self.stages.feed(body)

    def _queues(self, body: str) -> bool:
        """An empty-queue warning (claimed); a record's input-queue depths (observed only: False, the line may be a
        step record as well)."""
        if m := _QUEUE_EMPTY.search(body):
            if len(self.queue_waits) < MAX_ITEMS:
                self.queue_waits.append(int(m.group(1)) if m.group(1) else None)
            return True
        for m in _QUEUE_DEPTH.finditer(body):
            if len(self.queue_depths) < MAX_ITEMS:
                self.queue_depths.append({"key": m.group(1), "depth": float(m.group(2))})
        return False

    def _tf(self, body: str) -> bool:
        if (m := _TF_INPUT.search(body)) and float(m.group(2)) <= 100 and len(self.tf) < MAX_ITEMS:
            o = _TF_OTHERS.search(body)
            self.tf.append({"level": m.group(1).upper(), "input_share": float(m.group(2)) / 100,
                            "others_share": float(o.group(1)) / 100 if o else None})
            return True
        if (m := _TF_OTHERS.search(body)) and float(m.group(1)) <= 100:
            if self.tf and self.tf[-1]["others_share"] is None:
                self.tf[-1]["others_share"] = float(m.group(1)) / 100
            return True
        return False

    def _ray(self, body: str) -> bool:
        if _RAY_SPLIT.match(body):
            self.ray_split = True
        if (m := _RAY_OPERATOR.match(body)) and (wall := ray_seconds(m.group(5))) is not None:
            self._in_breakdown = False
            if len(self.ray_operators) < MAX_ITEMS:
                self.ray_operators.append({"index": int(m.group(1)), "name": m.group(2).strip(),
                                           "tasks": int(m.group(3)), "blocks": int(m.group(4)), "wall_s": wall})
            return True
        if _RAY_BREAKDOWN.match(body):
            self._in_breakdown = True
            if len(self.ray_iterators) < MAX_ITEMS:
                self.ray_iterators.append({})
            return True
        if self._in_breakdown and self.ray_iterators:
            for key, pattern in _RAY_TIMES:
                if (m := pattern.match(body)) and (sec := ray_seconds(m.group(1))) is not None:
                    self.ray_iterators[-1][key] = sec
                    return True
        return False

    def summary(self) -> dict | None:
        """{tf, torch_workers, lightning, ray_operators, ray_iterators (those with an overall time), ray_split,
        queue_depths, queue_waits, ray_progress (readers/ray_progress_text.py), stage_breakdowns (readers/stage_breakdown_text.py)}: the lists the file printed; None when it printed none of them."""
        iterators = [it for it in self.ray_iterators if it.get("overall_s")]
        progress, stages = self.progress.summary(), self.stages.summary()
        if not (self.tf or self.torch_workers or self.lightning or iterators or self.queue_depths
                or self.queue_waits or progress or stages):
            return None
        return {"tf": self.tf, "torch_workers": self.torch_workers, "lightning": self.lightning,
                "ray_operators": self.ray_operators if iterators else [], "ray_iterators": iterators,
                "ray_split": self.ray_split, "queue_depths": self.queue_depths, "queue_waits": self.queue_waits,
                "ray_progress": progress, "stage_breakdowns": stages}
