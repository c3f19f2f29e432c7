"""A record's time split into named stages, printed by a trainer or written by its user, read wherever it appears in
a text log (a line scanner fed through input_pipeline_text.InputPipelineText; the findings:
analysis/stage_breakdown.py). Two layouts, each checked by its own arithmetic (the stages add up to the whole within
SUM_TOLERANCE, else the line is something else):

- a sum: `the epoch time is 11s = 10s(sample) + 0s(transfer) + 1s(training)` — the whole, `=`, then two or more
  `<time>(<stage>)` terms joined by `+` (markdown emphasis around a number, `**10**s`, is the writer's), the unit
  stated on the whole or on every term (`12 = 8(model) + 4(data)` may be gigabytes or tokens);
- a keyed list with its total: `Sample: 26.6s; Extract: 15.90s; Train: 6.20s; Total: 49.18s` (gnnlab's DGL breakdown
  script) — three or more `<stage>: <time>` (or `=`) separated by `;`, `,` or `|`, one of them the whole (`total`,
  `overall`, `epoch`).

Only a line with no step or epoch counter of its own is claimed: a step log's `step 12 | data: 0.1s ... total: 0.5s`
is the step grammar's (readers/step_log), whose phases say the same. Each stage is sorted by the words of its name:
the input side (sampling a graph's neighbourhoods, extracting or gathering features, loading, reading, decoding,
collating, transferring or copying to the device) or the model's work (train, forward, backward, compute, optimizer);
a name of neither is `other`, and so is loading the model itself (`Model load`, `Loading checkpoint`: startup, once)
or moving its parameters and gradients between ranks (`data parallel sync`, `param gather`: communication).
"""

from __future__ import annotations

import re

from playbook.readers.step_log.vocab import EPOCH_WORD, KEYWORD

SUM_TOLERANCE = 0.10  # the stages' sum within 10% of the whole: printed rounding, a small untimed remainder
_UNITS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0}
_T = r"(\d{1,9}(?:\.\d{1,9})?)\s{0,2}(ms|seconds|second|secs|sec|mins|min|s)?\b"
_TERM = re.compile(_T + r"\s{0,2}\(\s{0,2}([A-Za-z][\w ./-]{0,40}?)\s{0,2}\)")
_SUM = re.compile(_T + r"\s{0,2}=\s{0,2}(" + _T + r"\s{0,2}\([^)]{1,42}\)(?:\s{0,2}\+\s{0,2}" + _T
                  + r"\s{0,2}\([^)]{1,42}\)){1,11})")
_TIMED = re.compile(r"\d\s{0,2}(?:ms|seconds|second|secs|sec|mins|min|s)\b")
_PAIR = re.compile(r"(?:^|[;,|]|\s)\s{0,3}([A-Za-z][\w ./-]{0,40}?)\s{0,2}[:=]\s{0,2}" + _T + r"(?=\s{0,3}(?:[;,|.]|$))")
_WHOLE = {"total", "overall", "all", "epoch", "whole", "sum", "wall"}
_INPUT = {"sample", "sampling", "sampler", "extract", "extraction", "gather", "load", "loading", "loader", "read",
          "reading", "fetch", "data", "dataloader", "io", "input", "decode", "decoding", "preprocess", "preprocessing",
          "augment", "augmentation", "collate", "transfer", "copy", "h2d", "feature", "features", "slice", "slicing"}
_MODEL = {"train", "training", "forward", "backward", "fwd", "bwd", "compute", "model", "optimizer", "optim", "update",
          "gpu", "loss"}
# loading or copying the model itself (`Model load`, `Loading checkpoint`, `weights transfer`: the run's startup, once)
# or its gradients and parameters between ranks (`data parallel sync`, `param gather`, `grad copy`: communication): an
# input word beside one of these names no batch the model waits for
_STARTUP = {"model", "checkpoint", "ckpt", "weights", "weight", "engine", "tokenizer", "param", "params", "parameters",
            "grad", "grads", "gradient", "gradients", "parallel", "allreduce", "sync", "nccl", "comm", "communication",
            "collective", "broadcast"}
MAX_RECORDS = 10000


def side(name: str) -> str:
    """"input", "model" or "other": the side of the pipeline a stage's name says it is on."""
    words = set(re.split(r"[^a-z0-9]+", name.lower()))
    if words & _INPUT:
        return "other" if words & _STARTUP else "input"
    return "model" if words & _MODEL else "other"


def _seconds(value: str, unit: str | None, default: str | None) -> float:
    return float(value) * _UNITS[(unit or default or "s").lower()]


class StageBreakdown:
    """Line scanner: feed(body) True for a line that splits a whole time into stages (module docstring)."""

    def __init__(self):
        self.records: list[dict] = []  # {total_s, stages: [(name, seconds, side)]}

    def feed(self, body: str) -> bool:
        if not ("=" in body or ":" in body):
            return False
        text = body.replace("*", "")
        record = self._sum(text) if "+" in text and "(" in text else None
        if record is None and len(_TIMED.findall(text)) >= 3:  # three timed values at least (a cheap look)
            record = self._pairs(text)
        # the counters last: KEYWORD costs more than all the rest on a line that is no breakdown (most lines)
        if record is None or KEYWORD.search(body) or EPOCH_WORD.search(body):
            return False
        if len(self.records) < MAX_RECORDS:
            self.records.append(record)
        return True

    def _sum(self, text: str) -> dict | None:
        if not (m := _SUM.search(text)):
            return None
        if not m.group(2) and not all(t.group(2) for t in _TERM.finditer(m.group(3))):
            return None  # `mem = 12 = 8(model) + 4(data)`: a time states its unit, on the whole or on every stage
        total = _seconds(m.group(1), m.group(2), None)
        stages = [(t.group(3).strip(), _seconds(t.group(1), t.group(2), m.group(2))) for t in _TERM.finditer(m.group(3))]
        return _checked(total, stages)

    def _pairs(self, text: str) -> dict | None:
        pairs = [(p.group(1).strip(), _seconds(p.group(2), p.group(3), None)) for p in _PAIR.finditer(text)
                 if p.group(3)]  # a stage's time states its unit: `Sample: 26.6s`, not `loss: 0.3`
        wholes = [(n, v) for n, v in pairs if set(re.split(r"[^a-z]+", n.lower())) & _WHOLE]
        if len(pairs) < 3 or len(wholes) != 1:
            return None
        return _checked(wholes[0][1], [(n, v) for n, v in pairs if (n, v) != wholes[0]])

    def summary(self) -> list[dict]:
        return self.records


def _checked(total: float, stages: list[tuple[str, float]]) -> dict | None:
    """The record when its stages (two or more) add up to its whole within SUM_TOLERANCE, else None."""
    if total <= 0 or len(stages) < 2 or abs(sum(v for _, v in stages) - total) > SUM_TOLERANCE * total:
        return None
    return {"total_s": total, "stages": [(n, v, side(n)) for n, v in stages]}
