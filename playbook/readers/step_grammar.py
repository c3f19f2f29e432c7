"""Step records from one grammar, not one pattern per framework.

A step line is a STEP COUNTER plus TYPED FIELDS `key <sep> value <unit>` in any order:

counters   `step N`, `iter N`, `iteration N/M`, `global_step=N`, `num_updates=N`, `steps: N`, `step:N/M`
           (keywords; with several on a line the most global wins: global_step > num_updates > iter(ation) > step),
           `Epoch: [e][i/N]` / `Epoch(train) [e][i/N]` / `Iter(train) [i/N]` (PyTorch examples, MMEngine),
           `Train: e [i/N` (timm), `epoch 001:  i / N` (fairseq), `Epoch e/E` header + `i/N [====]` (Keras),
           tqdm bars `i/N [mm:ss<mm:ss, 3.4it/s]` after `Epoch e:` (Lightning) or a leading `e/E` (ultralytics),
           rich bars `i/N 0:00:20 • 0:00:40 5.00it/s`, a bare `[i/N]` or `[batch=i/N]`, CLU's leading `[N] k=v`;
           `current_steps` / `completed_steps`, integer-valued floats (`global_step=99.00`), `batch N` (last).
           Inside an epoch the step is (e - first epoch) * N + i.
fields     any `key <sep> value [unit] [(running average)]`, separators `:` `=` space, fields split by `|` `,`
           `;` tab, runs of spaces or ` - `; units ns/us/ms/s/sec/min/h and H:MM:SS; per-step units (ms/step,
           s/it, sec/batch); step rates (it/s, steps/sec, global_step/sec, ups); throughput (samples/s,
           examples/sec, tokens/s, tok/s, tps, wps). `3.140 (3.393)`: the current value and its average (kept: the
           current). Python dict lines (`{'loss': 1.9, 'epoch': 0.1}`) and JSON Lines are fields too. A unit may sit
           in the key (`iter time (s)`, `step [ms]`, `train_step_timing in s`, `Batch (t)`) or be the key
           (`ms/step: 120`); `1.23K` / `2.62M` scale their value; `<what>_per_sec` is a rate of what precedes
           `per`. A counter line without fields takes them from the indented lines or the box-drawn table below it
           (Composer, OLMo, Ray Train); a box table under a record line adds to that record.
roles      by key: per-step durations (iter time, step_time, time per iteration, batch_time, dt, time, ...),
           cumulative times (train_time, elapsed, runtime, wall: per-step = difference / steps between lines),
           running averages (step_avg), a window's time (TensorFlow's `step = 200 (11.474 sec)`), phases (`Data`,
           data_time, dataloader, data_wait, reader_cost → data; forward/backward/optimizer/comm → fwd/bwd/optimizer/
           collective), tokens (count, or rate x step time), markers in parentheses (litgpt `(optimizer.step)`).

The duration field is chosen PER FILE (`StepLines.result`): among fields present on at least half as many step
lines as the best-covered one, the most specific role wins (per-step > generic time > verified-monotone
cumulative > window > running average > unnamed); a cumulative field that is not monotone is read as per-step,
a rising field of Unix clock readings (MLPerf's `time_ms`) as cumulative. Only records whose counter is of a kind
(keyword / progress bar / position) that carries the chosen field count: a worker's tqdm batches next to Ray's
iterations are another step space.
Lines with a counter but no duration field, when the file has none, give window means from their timestamps.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter
from functools import lru_cache
from itertools import pairwise

import numpy as np

NAT = np.iinfo(np.int64).min
_NUM = r"(?:\d{1,3}(?:,\d{3})+(?![\d.])|\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"
_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0,
               "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
               "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0}
_STEP_WORDS = ("step", "steps", "it", "iter", "iters", "iteration", "iterations", "batch", "batches", "update",
               "updates", "epoch_step")
_SAMPLE_WORDS = ("samples", "sample", "examples", "example", "ex", "img", "imgs", "images", "seq", "seqs",
                 "sequences", "sentences")
_TOKEN_WORDS = ("tokens", "token", "tok", "toks", "words", "wds")
_UNITS = sorted({*_TIME_UNITS, "%",
                 *(f"{t}/{s}" for t in ("ns", "us", "ms", "s", "sec") for s in _STEP_WORDS),
                 *(f"{s}/{t}" for s in _STEP_WORDS + _SAMPLE_WORDS + _TOKEN_WORDS for t in ("s", "sec", "second")),
                 "/s", "/sec"}, key=len, reverse=True)
_RATE_UNITS = {u for u in _UNITS if "/" in u}
_UNIT_ALT = "|".join(re.escape(u) for u in _UNITS)
VALUE_RE = re.compile(
    r"(?<![\w.@/\-])(?:(?P<clock>\d+:\d{2}(?::\d{2})?(?:\.\d+)?)|(?P<num>-?" + _NUM + r"))"
    r"(?:(?P<unit>" + _UNIT_ALT + r")(?![\w/])|\s(?P<unit_s>" + _UNIT_ALT + r")(?![\w/])(?!\s*[:=]|\s+-?\.?\d)|"
    r"(?P<unit2>[A-Za-z]+)(?![\w]))?"
    r"(?:\s*\(\s*(?P<avg>-?" + _NUM + r")\s*(?:" + _UNIT_ALT + r")?\s*\))?")
_KEY_SPLIT = re.compile(r"[|,;\t{}\[\]\ue000]|\s{2,}|\s-\s|^-\s")
# the unit stated in the key: `iter time (s)`, `step [ms]`, NeMo's `train_step_timing in s`, open_clip's `Batch (t)`
# (t: a time, in seconds)
_KEY_UNIT = re.compile(r"(?:\s*[(\[]\s*(ns|us|µs|ms|s|sec|secs|seconds|min|minutes|t)\s*[)\]]|"
                       r"\s+in\s+(ns|us|µs|ms|s|sec|secs|seconds|min|minutes))\s*$", re.IGNORECASE)
_MARKER = re.compile(r"\(([A-Za-z_][\w.\-]*)\)")
_NORM = re.compile(r"[^0-9a-z]+")

# a keyword then the step number (an integer, or an integer-valued float such as NeMo's `global_step=99.00`);
# `current_steps` / `completed_steps` (LLaMA-Factory, Accelerate) name the step as `global_step` does, `total_steps`
# and `max_steps` do not; `batch N` (PaddlePaddle's `[Epoch 0, batch 10]`, Composer's `[batch=12/100]`) ranks last
KEYWORD = _KEYWORD = re.compile(r"(?<![\w])(?P<k>(?:current|cur|curr|completed)_steps?|global[_ ]step|num_updates|"
                                r"iteration|iter|it|train_step|steps|step|(?<!/)batch)\b[\"']?\s*"
                                r"[:=#]?\s*(?P<i>\d+)(?:\.0+)?(?![\d.%]|\w)(?:\s*/\s*(?P<n>\d+))?", re.IGNORECASE)
_KEYWORD_RANK = {"global_step": 0, "global step": 0, "current": 0, "cur": 0, "curr": 0, "completed": 0, "batch": 4, "num_updates": 1, "iteration": 2, "iter": 2, "it": 2, "train_step": 3,
                 "steps": 3, "step": 3}
_EPOCH_BRACKET = re.compile(r"\b(?P<w>Epoch|Iter|Iteration)(?:\s*\((?P<m>\w+)\))?\s*:?\s*(?:\[\s*(?P<e>\d+)\s*\]|(?P<e2>\d+))?"
                            r"\s*\[\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*(?:\(\s*\d+(?:\.\d*)?\s*%\s*\)\s*)?\]", re.IGNORECASE)
_NAMED_EPOCH = re.compile(r"\b(?P<m>Train|Training|Test|Eval|Val|Valid|Validation)\s*:?\s*(?P<e>\d+)\s*\[\s*"
                          r"(?P<i>\d+)\s*/\s*(?P<n>\d+)")  # timm: "Train: 3 [ 50/1251 ( 4%)]"
_FAIRSEQ = re.compile(r"\bepoch\s*[:=]?\s*(?P<e>\d+)\s*(?:/\s*\d+\s*)?[:|,]?\s+(?P<i>\d+)\s*/\s*(?P<n>\d+)\b",
                      re.IGNORECASE)
# a progress bar: tqdm's `i/N [elapsed<remaining, rate, postfix]` (the rate may be absent: NeMo's bar shows only its
# postfix) or rich's `i/N elapsed • remaining rate` (Lightning's RichProgressBar)
_TQDM = re.compile(r"(?P<i>\d+)/(?P<n>\d+)\s*(?:\[\s*(?:\d+:)?\d+:\d+\s*<\s*[\d:?]+\s*(?=[,\]])|"
                   r"\s+(?:\d+:)?\d+:\d+\s*•\s*[-\d:?]+(?=\s|$))"
                   r"(?:,?\s*(?:(?P<rate>" + _NUM + r")\s*(?P<ru>it/s|s/it)|\?it/s))?")
_TQDM_EPOCH = re.compile(r"(?:\bEpoch\s*(?P<e>\d+)\b|^\s*(?P<e2>\d+)/(?P<E>\d+)\s)", re.IGNORECASE)
_EPOCH_WORD = re.compile(r"\bepoch\s*[:=]?\s*\[?\s*(\d+)\b", re.IGNORECASE)
_KERAS = re.compile(r"^\s*(?P<i>\d+)/(?P<n>\d+)\s*(?:\[[=>.]*\]|━+|(?=\s-\s))")
_KERAS_EPOCH = re.compile(r"^\s*Epoch\s+(\d+)\s*/\s*(\d+)\s*$", re.IGNORECASE)
_LEAD_STEP = re.compile(r"^\s*\[\s*(?P<i>\d+)\s*\](?=\s+\S+=)")  # CLU's LoggingWriter: `[100] loss=2.3, ...`
_BRACKET = re.compile(r"\[\s*(?:(?P<w>[A-Za-z_]+)\s*[=:]\s*)?(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*\]")  # [12/100], [batch=12/100]
_EVAL_MODE = re.compile(r"\b(val|valid|validation|validating|eval|evaluation|evaluating|test|testing|sanity"
                        r"|predict|predicting)\b|\bmAP\d*\b", re.IGNORECASE)  # mAP: a detector's validation bar
_DIGIT = re.compile(r"\d")
_STEP_NAMES = ("step", "iter", "iteration", "batch")
_IMPLICIT_HINT = re.compile(r"(?:step|iter|iteration|batch)[ _]?(?:time|duration|dt|ms)", re.IGNORECASE)
_RATE_LINE = re.compile(r"\b(?:global_step|steps?|it|iters?|examples|samples)/sec\s*[:=]\s*\d", re.IGNORECASE)
# a row of a box-drawn table (rich / Ray Train's `│ time_this_iter_s   25.7 │`), read as fields of the record above
_BOX_ROW = re.compile(r"^\s*[│┃║╭╰├┌└╞╘╒╓]")
_BOX_CHARS = re.compile(r"[│┃║╭╮╰╯├┤┌┐└┘─═╞╡╘╛╒╕╓╖]+")
# a header stating the unit of the indented timer rows below it, and such a row (Megatron's timers:
# `(min, max) time across ranks (ms):` then `    forward-compute ......: (1200.12, 1201.50)`; the max is kept)
_UNIT_HEAD = re.compile(r"\((ns|us|µs|ms|s|sec)\)\s*:\s*$")
_TIMER_ROW = re.compile(r"^\s+(?P<name>[A-Za-z][\w/\- ]*?)\s*\.{2,}\s*:\s*\(?\s*(?P<a>" + _NUM + r")"
                        r"(?:\s*,\s*(?P<b>" + _NUM + r"))?\s*\)?\s*$")
_CONTINUATION = re.compile(r"\d|^[^\w]+$")  # an indented line of a block: a value, or only decoration
_HAS_FIELD = re.compile(r"[\w'\"]\s*[:=]\s*[-.\d]")

# role classes, most specific first (the order of preference when the file's duration field is chosen)
PER_STEP, GENERIC, CUMULATIVE, WINDOW, AVERAGE, UNNAMED = range(6)
CLASS_NAMES = ("per-step", "time", "cumulative", "window", "running average", "unnamed")
_DATA_KEYS = {"data", "data_time", "datatime", "dataloader", "data_wait", "data_load", "data_loading",
              "dataloader_time", "data_load_time", "data_loading_time", "data_wait_time", "last_data_time",
              "data_ms", "data_s", "load_time", "wait_data", "input_time", "data_t"}
_PHASE_WORDS = {"forward": "fwd", "fwd": "fwd", "backward": "bwd", "bwd": "bwd", "optimizer": "optimizer",
                "optim": "optimizer", "opt": "optimizer", "optimizer_step": "optimizer", "comm": "collective",
                "communication": "collective", "allreduce": "collective", "all_reduce": "collective",
                "collective": "collective", "reduce": "collective", "sync": "collective", "gather": "collective",
                "allgather": "collective", "scatter": "collective", "h2d": "h2d",
                "to_device": "h2d", "copy": "h2d"}
_NOT_TIME = ("eta", "remaining", "left", "lr", "learning_rate", "loss", "mem", "memory", "acc", "norm", "eval",
             "val", "valid", "test", "ckpt", "checkpoint", "save", "compile", "warmup", "start", "stamp", "date",
             "now", "clock", "timestamp", "timer", "timeout", "num", "max", "min", "total_steps")
_CUM_WORDS = ("elapsed", "runtime", "wall", "total", "since", "train_time", "training_time", "time_elapsed",
              "cumulative", "cum")
_AVG_WORDS = ("avg", "mean", "average", "running", "smoothed", "ema")
_STEP_RATE_KEYS = {"ups", "it_s", "its", "steps_per_sec", "steps_per_second", "step_per_sec", "global_step_sec",
                   "global_step_per_sec", "iters_per_sec", "iter_per_sec", "it_per_sec", "train_steps_per_second",
                   "steps_sec", "steps_s", "iterations_per_second", "batches_per_sec", "updates_per_sec"}
_TOKEN_KEYS = {"tokens", "num_tokens", "ntokens", "n_tokens", "tokens_per_step", "batch_tokens", "step_tokens",
               "tokens_in_batch"}
_TOKEN_RATE_KEYS = {"tps", "tok_s", "tokens_s", "tokens_per_sec", "tokens_per_second", "tokens_sec", "wps",
                    "tgs", "tokens_per_s", "tok_per_sec", "throughput_tokens"}
_BATCH_KEYS = {"bsz", "batch_size", "global_batch_size", "train_batch_size", "gbs", "global_batch",
               "total_batch_size", "effective_batch_size"}
_COUNT_NOUNS = {"epoch", "epochs", "batch", "batches", "sample", "samples", "token", "tokens", "step", "steps", "iter",
                "iteration", "batch_in_epoch", "sample_in_epoch", "token_in_epoch", "step_in_epoch"}
# a count's magnitude suffix (nanotron's human_format: `1.23K`, `2.62M`); G and T are left out: `3.72G` is memory
_MAGNITUDE = {"K": 1e3, "k": 1e3, "M": 1e6, "B": 1e9}
_MAX_STEP = 2 ** 62  # step numbers beyond int64's reach are not steps
_MAX_BLOCK_LINES = 256  # continuation lines kept per block record: an endless indented run cannot grow memory
_MAX_KEYS = 64  # distinct candidate fields kept per file: a file printing ever-new keys cannot grow memory


def _keyword_rank(word: str) -> int:
    w = word.lower().replace(" ", "_")
    return _KEYWORD_RANK.get(w) if w in _KEYWORD_RANK else _KEYWORD_RANK.get(w.split("_")[0], 3)


def norm_key(key: str) -> str:
    return _NORM.sub("_", key.lower()).strip("_")


def _unit_kind(unit: str | None) -> tuple[str, float] | None:
    """(kind, factor): ("time", s per unit), ("per_step", s per step per unit), ("step_rate", 1),
    ("sample_rate", 1), ("token_rate", 1); None for other units."""
    if not unit:
        return None
    u = unit.lower()
    if u in _TIME_UNITS:
        return "time", _TIME_UNITS[u]
    if "/" not in u:
        return None
    a, b = u.split("/", 1)
    if a in _TIME_UNITS and b in _STEP_WORDS:
        return "per_step", _TIME_UNITS[a]
    if b in ("s", "sec", "second"):
        if a in _STEP_WORDS:
            return "step_rate", 1.0
        if a in _TOKEN_WORDS:
            return "token_rate", 1.0
        return "sample_rate", 1.0
    return None


@lru_cache(maxsize=8192)
def classify(key: str, unit: str | None) -> tuple[str, object, float] | None:
    """The role of a field: ("dur", class, factor to seconds), ("rate", PER_STEP, 1) for steps per second,
    ("phase", name, factor), ("tokens", None, 1), ("token_rate", None, 1), ("sample_rate", None, 1); None when the
    field is not about time (loss, lr, ...)."""
    if unit is None and "/" in key and key.strip().lower() in _RATE_UNITS:
        key, unit = "", key.strip()  # the key is a unit: `ms/step: 120.5`, `it/s: 3.2`, `tok/s 100000`
    k = norm_key(key)
    m = _KEY_UNIT.search(key)
    if m:
        stated = m.group(1) or m.group(2)
        unit = unit or ("s" if stated.lower() == "t" else stated)
        k = norm_key(key[: m.start()])
    if "/" in key and unit is None and norm_key(key.rsplit("/", 1)[1]) in _COUNT_NOUNS:
        return None  # a tag path ending in what it counts (Composer's `time/batch: 12`): a count, not a duration
    k = k.replace("wall_clock", "wall")  # `wall_clock/train`: the wall-clock total, not a GPU clock
    kind = _unit_kind(unit)
    words = k.split("_") if k else []
    if kind and kind[0] == "per_step":
        return "dur", PER_STEP, kind[1]
    per = next((j for j in range(1, len(words) - 1) if words[j] == "per"), None)
    if per is not None and words[per + 1] in ("s", "sec", "second", "seconds"):
        # `<what>_per_sec[_per_gpu]`: what comes before `per` is what is counted (batches_per_second is a step
        # rate, tokens_per_sec_per_gpu a token rate); another thing per second (TFLOPs, bytes) is no time
        what = words[per - 1]
        if what in _STEP_WORDS:
            return "rate", PER_STEP, 1.0
        if what in _TOKEN_WORDS:
            return "token_rate", None, 1.0
        if what in _SAMPLE_WORDS:
            return "sample_rate", None, 1.0
        return None
    if kind and kind[0] == "step_rate" or k in _STEP_RATE_KEYS or (
            k.endswith(("_per_sec", "_per_second")) and words and words[0] in _STEP_WORDS + (
                "global", "train", "optimizer")) or (
            # `global_step_sec`, `steps_s`: steps per second; `train_runtime_s`, `iter_time_s`: seconds
            k.endswith(("_sec", "_s")) and len(words) >= 2 and words[-2] in _STEP_WORDS and "time" not in words):
        if "sample" in k or "token" in k or "example" in k:
            return ("token_rate" if "token" in k else "sample_rate"), None, 1.0
        return "rate", PER_STEP, 1.0
    if kind and kind[0] in ("token_rate", "sample_rate") or k in _TOKEN_RATE_KEYS:
        return ("token_rate" if kind is None or kind[0] == "token_rate" else kind[0]), None, 1.0
    if k in _TOKEN_KEYS and kind is None:
        return "tokens", None, 1.0
    if k in _BATCH_KEYS and kind is None:
        return "batch", None, 1.0
    if "samples_per" in k or "samplespersec" in k or k.startswith(("examples_per", "examples_sec")):
        return "sample_rate", None, 1.0
    factor = kind[1] if kind and kind[0] == "time" else None
    if factor is None:
        for suffix, f in (("_ms", 1e-3), ("_us", 1e-6), ("_ns", 1e-9), ("_s", 1.0), ("_sec", 1.0),
                          ("_seconds", 1.0), ("ms", 1e-3)):
            if k.endswith(suffix) and len(k) > len(suffix):
                factor = f
                if suffix != "ms":
                    k = k[: -len(suffix)]
                break
    if unit and kind is None:
        return None  # a value in MiB, % or another unit is not a time
    if not k:
        return ("dur", UNNAMED, factor) if factor is not None else None
    words = k.split("_")
    if k in _DATA_KEYS or "generator" in words or (words[0] in ("data", "reader", "loader", "dataloader", "input") and (
            factor is not None or "time" in words or "wait" in words or "cost" in words)):
        return "phase", "data", factor or 1.0
    timeish = factor is not None or any(w in ("time", "dt", "duration", "latency", "elapsed", "runtime", "wall",
                                              "took", "seconds", "secs", "sec", "cost", "timing")
                  for w in words)
    for w in words:
        if w in _PHASE_WORDS and timeish and not any(x in words for x in ("data", "eval", "val")):
            return "phase", _PHASE_WORDS[w], factor or 1.0
    if not timeish or any(w in _NOT_TIME for w in words):
        return None
    f = factor or 1.0
    if any(w in _AVG_WORDS for w in words):
        return "dur", AVERAGE, f
    if "per" in words or any(w in ("step", "iter", "iteration", "batch", "it", "steptime", "itertime")
                             for w in words) or k in ("dt", "sec_batch", "last_time", "time_per_step",
                                                      "step_time", "iter_time"):
        if not any(w in ("train", "total", "since") for w in words) or "per" in words:
            return "dur", PER_STEP, f
    if any(w in _CUM_WORDS for w in words) or k in ("train_time", "training_time") or k.startswith("elapsed"):
        return "dur", CUMULATIVE, f
    return "dur", GENERIC, f


class StepCounter:
    """What a counter match says: the step number, the within-epoch position, a mode (train / eval)."""

    __slots__ = ("step", "epoch", "n", "span", "keyword", "evaluating", "fields", "progress", "kind")

    def __init__(self, step, epoch, n, span, keyword, evaluating=False):
        self.step, self.epoch, self.n, self.span = step, epoch, n, span
        self.keyword, self.evaluating = keyword, evaluating
        self.progress = False  # a progress bar (tqdm, Keras): a redraw without a rate is still understood
        self.kind: int | None = None  # the counter's kind when not its keyword / progress flags (see StepLines.kind)


class StepLines:
    """The step scanner: feed(line context) for every line; result() builds the step rows of the file."""

    name = "steps"

    def __init__(self):
        self.step = array("q")
        self.rank = array("q")
        self.time = array("q")
        self.line = array("q")
        self.keyword = array("b")
        self.kind = array("b")  # the counter's kind: 0 a bracket / epoch position, 1 a keyword, 2 a progress bar
        self.fields: dict[str, array] = {}
        self.field_role: dict[str, tuple] = {}
        self.markers: Counter = Counter()
        self.epoch0: dict[str, int] = {}
        self.keras_epoch: int | None = None
        self.last_step: dict[int, int] = {}
        self.metric_lines = 0
        self.eval_lines = 0
        self.tqdm_lines = 0
        self._plans: dict[str, tuple] = {}
        self.timed = 0  # records with a field: a training step went by (events use it to merge their lines)
        # a counter line ending in ':' whose fields follow on indented `key: value` lines (Composer's console
        # logger: `[batch=12/100]:` then `\t Train time/batch: 11` ...): the counter and its continuation lines
        self._block: tuple | None = None
        self._block_text: list[str] = []
        self._orphan: tuple | None = None  # a counter line without fields, not stored: a box table may follow
        self._box: int | None = None
        self._box_bare = False
        self._timer: tuple[int, float] | None = None  # (record, seconds per unit) of an open timer table  # the record a box table drawn under its line belongs to (Ray Train's result)

    # -- per line ------------------------------------------------------------------------------------------
    def _counter(self, body: str) -> StepCounter | None:
        best = None
        for m in _KEYWORD.finditer(body):
            rank = _keyword_rank(m["k"])
            if best is None or rank < best[0]:
                best = (rank, m)
        if best is not None:
            m = best[1]
            head = body[: m.start()]
            evaluating = bool(_EVAL_MODE.search(head[-40:]))
            if m["n"] and best[0] >= 2 and (e := _EPOCH_WORD.search(head)) and not evaluating:
                # "Epoch 2/10 | Step 120/500": a step within its epoch, as global steps count
                c = self._within(int(e.group(1)), int(m["i"]), int(m["n"]), m.span(), "keyword", False)
                c.keyword = True
                return c
            return StepCounter(int(m["i"]), None, None, m.span(), True, evaluating)
        if (m := _EPOCH_BRACKET.search(body)):
            mode = (m["m"] or "").lower()
            e = m["e"] or m["e2"]  # `Epoch: [1][50/196]`, open_clip's `Train Epoch: 0 [4096/1000000 (0%)]`
            return self._within(int(e) if e else None, int(m["i"]), int(m["n"]), m.span(), mode,
                                bool(_EVAL_MODE.search(mode)) if mode else bool(_EVAL_MODE.search(body[: m.start()])))
        if (m := _TQDM.search(body)):
            head = body[: m.start()]
            e = _TQDM_EPOCH.search(head)
            epoch = int(e["e"] or e["e2"]) if e else None
            self.tqdm_lines += 1
            return self._progress(epoch, int(m["i"]), int(m["n"]), (m.start(), m.start() + len(m["i"]) + 1 +
                                                                  len(m["n"])), "tqdm", bool(_EVAL_MODE.search(head)))
        if (m := _NAMED_EPOCH.search(body)):
            mode = m["m"].lower()
            return self._within(int(m["e"]), int(m["i"]), int(m["n"]), m.span(), "timm",
                                bool(_EVAL_MODE.search(mode)))
        if (m := _FAIRSEQ.search(body)):
            return self._within(int(m["e"]), int(m["i"]), int(m["n"]), m.span(), "fairseq",
                                bool(_EVAL_MODE.search(body[: m.start()])))
        if (m := _KERAS.match(body)):
            return self._progress(self.keras_epoch, int(m["i"]), int(m["n"]), m.span(), "keras", False)
        for m in _BRACKET.finditer(body):
            if m["w"] and m["w"].lower().startswith("epoch"):
                continue  # `[epoch=2/10]`: the epoch, not the step
            head = body[: m.start()]
            e = _EPOCH_WORD.search(head)  # Composer's `[epoch=1][batch=12/100]`: a batch within its epoch
            return self._within(int(e.group(1)) if e else None, int(m["i"]), int(m["n"]), m.span(), "bracket",
                                bool(_EVAL_MODE.search(head)))
        if (m := _LEAD_STEP.match(body)):
            return StepCounter(int(m["i"]), None, None, m.span(), False, False)
        return None

    def _implicit(self, body: str, ctx) -> StepCounter | None:
        """A line without a counter whose field names a step's own time (`Iteration duration: 0.53`,
        `step_time=0.5s`): the next step of its rank."""
        if not _IMPLICIT_HINT.search(body):
            return None
        fields = {k: v for k, v in self._fields(body, None).items()
                  if v[1][0] == "dur" and v[1][1] == PER_STEP and any(w in k.split("_") for w in _STEP_NAMES)}
        if not fields:
            return None
        c = StepCounter(self.last_step.get(ctx.rank, 0) + 1, None, None, (0, 0), False)
        c.fields = fields
        c.kind = 1  # the step after the last one named: of the keyword lines' kind
        return c

    def _progress(self, *args) -> StepCounter:
        c = self._within(*args)
        c.progress = True
        return c

    def _within(self, epoch, i, n, span, mode, evaluating) -> StepCounter:
        if epoch is None or evaluating:
            return StepCounter(i, epoch, n, span, False, evaluating)
        first = self.epoch0.setdefault(mode, epoch)
        return StepCounter((epoch - first) * n + i, epoch, n, span, False, evaluating)

    def _flush(self) -> None:
        """Store the open block record (a counter line and its indented field lines), if any."""
        if self._block is None:
            return
        c, ctx, rest = self._block
        self._block = None
        text = rest + "\t" + "\t".join(self._block_text)
        self._block_text = []
        fields = self._fields(text, c)
        if fields or (c.keyword and ctx.time != NAT):
            self._store(c, ctx, fields)
            self._box = None  # its table, if any, was read with it

    def _merge(self, row: int, fields: dict) -> None:
        """Fields read after a record was stored (a box table under its line) added to that record."""
        n = len(self.step)
        for name, (value, role) in fields.items():
            col = self.fields.get(name)
            if col is None:
                if len(self.fields) >= _MAX_KEYS:
                    continue
                col = self.fields[name] = array("d", [np.nan]) * n
                self.field_role[name] = role
            if len(col) < n:
                col.extend([np.nan] * (n - len(col)))
            if np.isnan(col[row]):
                col[row] = value

    def _timer_row(self, m) -> None:
        """One timer row: its phase (by name) gets the row's max, in seconds, on the record above; a timer that
        spans several phases (`forward-backward`) or none is left out."""
        row, factor = self._timer
        words = set(norm_key(m["name"]).split("_"))
        if {"forward", "backward"} <= words or {"fwd", "bwd"} <= words:
            return
        role = classify(m["name"] + " time", None)
        if role is None or role[0] != "phase":
            return
        value = float(m["b"] or m["a"]) * factor
        name = f"timer {role[1]}"
        col = self.fields.get(name)
        if col is not None and len(col) > row and np.isfinite(col[row]):
            value = max(value, col[row])  # nested timers of one phase (optimizer, optimizer-inner-step): the outer
            col[row] = np.nan
        self._merge(row, {name: (value, ("phase", role[1], 1.0))})

    def feed(self, ctx) -> bool:
        body = ctx.body
        boxed = _BOX_ROW.match(body) is not None
        if self._box is not None:
            if boxed or self._box_bare and _continues(body):
                self._merge(self._box, self._fields(_BOX_CHARS.sub("  ", body), None))
                return True
            self._box = None
        if self._orphan is not None:  # a counter line without fields, then a table or indented lines holding them
            if boxed or _continues(body):
                self._block = self._orphan
            self._orphan = None
        if self._block is not None:
            if (boxed or _continues(body)) and len(self._block_text) < _MAX_BLOCK_LINES:
                self._block_text.append(_BOX_CHARS.sub("  ", body).strip() if boxed else body.strip())
                return True
            self._flush()
        if self._timer is not None:
            if (m := _TIMER_ROW.match(body)):
                self._timer_row(m)
                return True
            self._timer = None
        if len(self.step) and body.rstrip().endswith(":") and (m := _UNIT_HEAD.search(body)) and \
                not _KEYWORD.search(body):
            self._timer = (len(self.step) - 1, _TIME_UNITS[m.group(1).lower()])
            return True
        if not _DIGIT.search(body):
            return False
        if (m := _KERAS_EPOCH.match(body)):
            self.keras_epoch = int(m.group(1))
            return True
        c = self._counter(body)
        if c is None and (c := self._implicit(body, ctx)) is not None:
            self._store(c, ctx, c.fields)
            return True
        if c is None:
            if _RATE_LINE.search(body):
                self.metric_lines += 1  # TensorFlow's `global_step/sec: 8.7` on a line of its own
                return True
            if body.lstrip().startswith("{") and _HAS_FIELD.search(body):
                self.metric_lines += 1  # a metrics dict without a step (Hugging Face Trainer); kept as read
                return True
            return False
        if c.evaluating:
            self.eval_lines += 1
            ctx.evaluating = True
            return True
        rest = body[: c.span[0]] + " \ue000 " + body[c.span[1]:]
        fields = self._fields(rest, c)
        if not fields and rest.rstrip().endswith(":"):
            self._block = (c, ctx, rest.rstrip()[:-1])  # its fields follow on the next, indented lines
            return True
        if not fields and not (c.keyword and ctx.time != NAT):
            if c.keyword and VALUE_RE.search(rest):  # a step line of metrics only (`step = 0, loss ...`)
                self._store(c, ctx, {})
                return True
            self._orphan = (c, ctx, rest)
            return c.progress
        self._store(c, ctx, fields)
        return True

    def _fields(self, rest: str, c: StepCounter) -> dict[str, tuple[float, tuple]]:
        """name -> (value, role) for the typed fields of `rest` (the line with its counter replaced)."""
        matches = list(VALUE_RE.finditer(rest))
        segs, prev_end = [], 0
        for m in matches:
            segs.append(rest[prev_end:m.start()])
            segs.append(m["unit"] or m["unit_s"] or m["unit2"] or ("\ue001" if m["clock"] else ""))
            prev_end = m.end()
        tail = rest[prev_end:]
        shape = "\ue002".join(segs) + "\ue002" + tail  # the line without its numbers: lines of a log repeat it
        plan = self._plans.get(shape)
        if plan is None:
            plan = _plan(segs, tail)
            if len(self._plans) < 4096:  # bounded: a log of ever-new line shapes is parsed afresh each time
                self._plans[shape] = plan
        fields, markers = plan
        for marker in markers:
            self.markers[marker] += 1
        found: dict[str, tuple[float, tuple]] = {}
        for i, name, role, scale in fields:
            m = matches[i]
            if m["clock"]:
                parts = [float(p) for p in m["clock"].split(":")]
                value = sum(p * 60 ** k for k, p in enumerate(reversed(parts)))
            else:
                value = float(m["num"].replace(",", "")) * scale
            found[name] = (value, role)
        return found

    def _store(self, c: StepCounter, ctx, fields: dict) -> None:
        if not -_MAX_STEP < c.step < _MAX_STEP:
            return  # a 20-digit "step" is an id or a hash, not a step (and would not fit the int64 column)
        n = len(self.step)
        self.step.append(c.step)
        self.rank.append(ctx.rank)
        self.time.append(ctx.time)
        self.line.append(ctx.lineno)
        self.keyword.append(1 if c.keyword else 0)
        self.kind.append(c.kind if c.kind is not None else 1 if c.keyword else 2 if c.progress else 0)
        self.last_step[ctx.rank] = c.step
        self.timed += bool(fields)
        self._box = n
        self._box_bare = not fields  # a record without fields may take them from the indented lines below (OLMo)
        for name, (value, role) in fields.items():
            col = self.fields.get(name)
            if col is None:
                if len(self.fields) >= _MAX_KEYS:
                    continue
                col = self.fields[name] = array("d", [np.nan]) * n if n else array("d")
                self.field_role[name] = role
            if len(col) < n:
                col.extend([np.nan] * (n - len(col)))
            if len(col) == n:
                col.append(value)

    # -- per file ------------------------------------------------------------------------------------------
    def _column(self, name: str) -> np.ndarray:
        col = np.frombuffer(self.fields[name], dtype=np.float64) if len(self.fields[name]) else np.empty(0)
        n = len(self.step)
        if len(col) < n:
            col = np.concatenate([col, np.full(n - len(col), np.nan)])
        return col

    def result(self) -> dict:
        """The file's step rows, one per (rank, step) (the last line wins): numpy arrays "step", "rank", "line",
        "duration" (s), "start" (int64 ns UTC, NAT unknown), "tokens", "phases" {phase: seconds}; "chosen" (the
        duration field, None when none), "how" (in words), "windowed" (window means from timestamps)."""
        self._flush()
        n = len(self.step)
        step = np.frombuffer(self.step, dtype=np.int64) if n else np.empty(0, np.int64)
        rank = np.frombuffer(self.rank, dtype=np.int64) if n else np.empty(0, np.int64)
        time = np.frombuffer(self.time, dtype=np.int64) if n else np.empty(0, np.int64)
        line = np.frombuffer(self.line, dtype=np.int64) if n else np.empty(0, np.int64)
        out = {"chosen": None, "how": None, "n_records": n}
        if not n:
            return out
        rank = _adopt_untagged(step, rank)
        cols = {name: self._column(name) for name in self.fields}
        roles = self.field_role
        chosen, duration, how = self._choose(step, rank, cols, roles)
        windowed = False
        if chosen is None:
            chosen, duration, how = _from_throughput(cols, roles)
        if chosen is None:
            kw = np.frombuffer(self.keyword, dtype=np.int8).astype(bool)
            duration, windowed = _window_means(step, rank, time, kw), True
            how = "window means of timestamped step lines"
        ok = np.isfinite(duration) & (duration >= 0)
        # the same (rank, step) printed again (a progress bar redrawn, a repeated message): the last one counts
        idx = np.flatnonzero(ok)
        if len(idx):
            order = np.lexsort((idx, step[idx], rank[idx]))
            idx = idx[order]
            last = np.ones(len(idx), dtype=bool)
            last[:-1] = (step[idx[1:]] != step[idx[:-1]]) | (rank[idx[1:]] != rank[idx[:-1]])
            idx = np.sort(idx[last])
        phases = {}
        for phase, name in self._phase_fields(cols, roles, chosen).items():
            phases[phase] = cols[name][idx] * roles[name][2]
        tokens = np.full(len(idx), np.nan)
        tok = [k for k, r in roles.items() if r[0] == "tokens"]
        rate = [k for k, r in roles.items() if r[0] == "token_rate"]
        if tok:
            tokens = cols[max(tok, key=lambda k: np.isfinite(cols[k]).sum())][idx]
        elif rate:
            tokens = cols[max(rate, key=lambda k: np.isfinite(cols[k]).sum())][idx] * duration[idx]
        if windowed:
            start = _window_starts(step, rank, time, idx)  # a window mean starts where its window does
        else:  # a logged time is the end of its step
            start = time[idx].copy()
            stamped = start != NAT
            start[stamped] = start[stamped] - np.round(duration[idx][stamped] * 1e9).astype(np.int64)
        out.update(step=step[idx], rank=rank[idx], line=line[idx], duration=duration[idx], start=start,
                   phases=phases, tokens=tokens, chosen=chosen, how=how, windowed=windowed)
        return out

    def _choose(self, step, rank, cols, roles):
        cands = {k: r for k, r in roles.items() if r[0] in ("dur", "rate")}
        if not cands:
            return None, None, None
        cover = {k: int(np.isfinite(cols[k]).sum()) for k in cands}
        best = max(cover.values())
        # a field on fewer than half the lines the best-covered one is on is an occasional message (a summary,
        # an eval line), not the file's step time
        eligible = [k for k in cands if cover[k] * 2 >= best and cover[k] > 0]
        if not eligible:
            return None, None, None
        ranked = []
        for k in eligible:
            cls = cands[k][1]
            if cls == CUMULATIVE and not _monotone(step, rank, cols[k]):
                cls = GENERIC  # named like a total but goes up and down: a per-step time
            elif cls != CUMULATIVE and cands[k][0] == "dur" and _epoch_clock(cols[k] * cands[k][2]) and \
                    _monotone(step, rank, cols[k]):
                cls = CUMULATIVE  # MLPerf's `time_ms: 1721026805975`: a clock reading, its differences are the steps
            ranked.append((cls, -cover[k], len(k), k))
        cls, _, _, name = min(ranked)
        values, how = self._seconds(name, cls, cands[name], step, rank, cols)
        # counters of another kind count other things (Ray Train's `iteration N` per report, its workers' tqdm bar
        # per batch): the file's step records are those of the kinds that carry its duration field
        kind = np.frombuffer(self.kind, dtype=np.int8)
        mine = np.isin(kind, np.unique(kind[np.isfinite(cols[name])]))
        # a line without the file's field keeps its own explicit per-step time, if it states one
        for other in sorted(cands, key=lambda k: -int(np.isfinite(cols[k]).sum())):
            if other == name or cands[other][1] != PER_STEP:
                continue
            gap = ~np.isfinite(values)
            if not gap.any():
                break
            theirs, _ = self._seconds(other, PER_STEP, cands[other], step, rank, cols)
            values = np.where(gap & mine, theirs, values)
        return name, values, how

    @staticmethod
    def _seconds(name, cls, role, step, rank, cols):
        kind, _, factor = role
        values = cols[name] * factor
        if kind == "rate":
            with np.errstate(divide="ignore"):
                values = np.where(values > 0, 1.0 / values, np.nan)
            return values, f"{name} (steps per second, inverted)"
        if cls == CUMULATIVE:
            return _per_step_diff(step, rank, values), f"{name} (cumulative: difference per step)"
        if cls == WINDOW:
            return _per_step_diff(step, rank, values, cumulative=False), \
                "time since the previous log line / steps between"
        return values, f"{name} ({CLASS_NAMES[cls]})"

    def _phase_fields(self, cols, roles, chosen) -> dict[str, str]:
        """Per phase, its best-covered field; with a `last_` step time (detectron2), the `last_` phase times."""
        out: dict[str, str] = {}
        last = str(chosen).startswith("last_")

        def score(k):
            return (np.isfinite(cols[k]).sum(), k.startswith("last_") == last, -len(k))

        for k, r in roles.items():
            if r[0] != "phase":
                continue
            have = out.get(r[1])
            if have is None or score(k) > score(have):
                out[r[1]] = k
        return out


def _continues(body: str) -> bool:
    """An indented line that continues the record above it: a value (or only decoration) and no counter of its own
    (Megatron's ` iteration 30/ ...` is indented too, and is the next record)."""
    return body[:1] in " \t" and _CONTINUATION.search(body) is not None and not (
        _KEYWORD.search(body) or _EPOCH_BRACKET.search(body) or _BRACKET.search(body) or _TQDM.search(body))


def _from_throughput(cols, roles):
    """Without a time field: step seconds = samples per step (a batch-size field) / samples per second, or tokens
    per step / tokens per second."""
    for rate_role, size_role in (("sample_rate", "batch"), ("token_rate", "tokens")):
        best = {}
        for want in (rate_role, size_role):
            names = [k for k, r in roles.items() if r[0] == want]
            if names:
                best[want] = max(names, key=lambda k: (np.isfinite(cols[k]).sum(), "curr" in k, -len(k)))
        if len(best) < 2:
            continue
        rate, size = cols[best[rate_role]], cols[best[size_role]]
        with np.errstate(divide="ignore", invalid="ignore"):
            seconds = np.where(rate > 0, size / rate, np.nan)
        name = f"{best[size_role]} / {best[rate_role]}"
        what = "batch size / samples" if rate_role == "sample_rate" else "tokens / tokens"
        return name, seconds, f"{name} ({what} per second)"
    return None, None, None


def _markers(text: str) -> list[str]:
    return [m for m in _MARKER.findall(text) if not m[0].isdigit() and m.lower() not in _TIME_UNITS]


def _plan(segs: list[str], tail: str) -> tuple[list[tuple[int, str, tuple, float]], list[str]]:
    """How to read a line shape: [(value index, field name, role)], markers. `segs` alternates the text before
    each value and that value's unit."""
    fields: list[tuple[int, str, tuple, float]] = []
    names: set[str] = set()
    units_seen: set[str] = set()
    markers: list[str] = []
    for i in range(0, len(segs), 2):
        raw_key, unit = segs[i], segs[i + 1]
        markers += _markers(raw_key)
        if unit == "\ue001":
            unit = "s"  # H:MM:SS
        scale = _MAGNITUDE.get(unit, 1.0)
        if scale != 1.0:
            unit = ""
        seg = raw_key.replace("'", " ").replace('"', " ").rstrip()
        seg = seg.rstrip(":= \t").rstrip()
        stated = _KEY_UNIT.search(seg)  # `step [ms]`: the bracket is the key's unit, not a field boundary
        suffix = stated.group(0) if stated else ""
        pieces = _KEY_SPLIT.split(seg[: stated.start()] if stated else seg)
        key = (pieces[-1].strip() if pieces else "") + suffix
        key = _MARKER.sub("", key).strip() if key.startswith("(") and key.endswith(")") else key
        window = False
        seen = unit in units_seen
        units_seen.add(unit)
        if key == "(":
            if "\ue000" in raw_key:
                window = True  # `step = 200 (11.474 sec)`: the time since the previous log line
            elif seen:
                continue  # averages in parentheses of the fields before, in their units: `(0.320s, 400.0/s)`
            else:
                key = ""  # a value of its own in parentheses, in a unit not seen before: llm.c's `(520.12 ms | ...)`
        key = key.lstrip("(").strip().rstrip(":=").strip()
        if window:
            kind = _unit_kind(unit)
            if not kind or kind[0] != "time":
                continue
            role, name = ("dur", WINDOW, kind[1]), "(window)"
        else:
            role = classify(key, unit or None)
            if role is None:
                continue
            name = norm_key(key) or f"({unit})"
            if role[0] == "dur" and role[1] == UNNAMED:
                kind = _unit_kind(unit)
                name = f"(unnamed {kind[0] if kind else 'time'})"  # a unit stated by a bare `(s)` key: a time
        if name not in names:
            names.add(name)
            fields.append((i // 2, name, role, scale))
    return fields, markers + _markers(tail)


def _adopt_untagged(step: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Ranks with untagged rows (rank -1) given to the one tagged rank whose steps they mostly repeat: the same
    process printing through a second logger (DeepSpeed's engine and timer lines next to its `[Rank 0]` line)."""
    untagged = rank < 0
    if untagged.any() and not untagged.all():
        mine = set(step[untagged].tolist())
        for r in np.unique(rank[~untagged]):
            if len(mine & set(step[rank == r].tolist())) * 2 >= len(mine):
                rank = rank.copy()
                rank[untagged] = r
                break
    return rank


def _epoch_clock(seconds: np.ndarray) -> bool:
    """Values that are Unix times, not durations: a median past 1e8 s (1973; no step lasts three years)."""
    ok = seconds[np.isfinite(seconds)]
    return len(ok) > 0 and float(np.median(ok)) > 1e8


def _monotone(step, rank, values) -> bool:
    ok = np.isfinite(values)
    pairs = rising = 0
    for r in np.unique(rank[ok]):
        sel = ok & (rank == r)
        order = np.argsort(step[sel], kind="stable")
        v = values[sel][order]
        d = np.diff(v)
        pairs += len(d)
        rising += int((d >= 0).sum())
    # at least 3 rising pairs, and at most one drop in 20 (a restart resets a running total)
    return pairs >= 3 and rising >= 0.95 * pairs


def _per_step_diff(step, rank, values, cumulative: bool = True) -> np.ndarray:
    """Per-step seconds from a cumulative time (difference / steps between consecutive lines of a rank) or from a
    window's time (value / steps since the previous line). The first line of a rank has no previous: NaN."""
    out = np.full(len(step), np.nan)
    ok = np.isfinite(values)
    for r in np.unique(rank[ok]):
        # a cumulative time needs two readings; a window's time only the previous line's step
        idx = np.flatnonzero((ok if cumulative else np.ones(len(step), bool)) & (rank == r))
        idx = idx[np.argsort(step[idx], kind="stable")]
        for a, b in pairwise(idx):
            ds = step[b] - step[a]
            if ds <= 0:
                continue
            dv = values[b] - values[a] if cumulative else values[b]
            if dv >= 0:  # NaN (no reading on this line) fails too
                out[b] = dv / ds
    return out


def _window_means(step, rank, time, keyword) -> np.ndarray:
    out = np.full(len(step), np.nan)
    ok = (time != NAT) & keyword
    for r in np.unique(rank[ok]):
        idx = np.flatnonzero(ok & (rank == r))
        first: dict[int, int] = {}
        for i in idx:
            first.setdefault(int(step[i]), i)  # the first line naming a step
        order = sorted(first)
        for a, b in pairwise(order):
            seconds = (time[first[b]] - time[first[a]]) / 1e9
            if seconds > 0:
                out[first[b]] = seconds / (b - a)
    return out


def _window_starts(step, rank, time, idx) -> np.ndarray:
    """For window-mean rows: the window's start, the time of the previous logged step's line of the same rank."""
    starts = np.full(len(idx), NAT, dtype=np.int64)
    prev: dict[tuple[int, int], int] = {}
    ok = time != NAT
    by_rank: dict[int, list[int]] = {}
    for i in np.flatnonzero(ok):
        key = (int(rank[i]), int(step[i]))
        if key not in prev:
            prev[key] = int(time[i])
            by_rank.setdefault(int(rank[i]), []).append(int(step[i]))
    before: dict[tuple[int, int], int] = {}
    for r, steps in by_rank.items():
        steps = sorted(set(steps))
        for a, b in pairwise(steps):
            before[(r, b)] = prev[(r, a)]
    for j, i in enumerate(idx):
        starts[j] = before.get((int(rank[i]), int(step[i])), NAT)
    return starts
