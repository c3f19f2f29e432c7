"""The step grammar's vocabulary (readers/step_log/grammar.py): counter and field patterns, unit words, and
`classify`, which gives a field key and unit its role (per-step, cumulative, window, phase, tokens, rates)."""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from playbook.readers.step_log import handoff
from playbook.readers.step_log.abbrev import unabbreviate
from playbook.readers.step_log.data_keys import DATA_KEYS as _DATA_KEYS
from playbook.readers.step_log.data_keys import names_data_wait
from playbook.readers.step_log.window_count import COUNT_FIELD, COUNT_ROLE, COUNTED, bracket_count

NAT = np.iinfo(np.int64).min
_NUM = r"(?:\d{1,3}(?:,\d{3})+(?![\d.])|\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0,
               "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
               "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0}
_STEP_WORDS = ("step", "steps", "it", "iter", "iters", "iteration", "iterations", "batch", "batches", "update",
               "updates", "epoch_step", "tick", "ticks")
_SAMPLE_WORDS = ("samples", "sample", "examples", "example", "ex", "img", "imgs", "images", "seq", "seqs",
                 "sequences", "sentences")
_TOKEN_WORDS = ("tokens", "token", "tok", "toks", "words", "wds")
_UNITS = sorted({*TIME_UNITS, "%",
                 *(f"{t}/{s}" for t in ("ns", "us", "ms", "s", "sec") for s in _STEP_WORDS),
                 *(f"{s}/{t}" for s in _STEP_WORDS + _SAMPLE_WORDS + _TOKEN_WORDS for t in ("s", "sec", "second")),
                 # a time per epoch (Keras' `106s/epoch - 71ms/step`): the epoch's, no step's; kept whole so that
                 # `/epoch` is not read as the key of the value after it
                 *(f"{t}/epoch" for t in ("ms", "s", "sec", "min")),
                 "/s", "/sec"}, key=len, reverse=True)
_RATE_UNITS = {u for u in _UNITS if "/" in u}
_UNIT_ALT = "|".join(re.escape(u) for u in _UNITS)
# (a clock after a date, `2021-03-12 10:00:22.1+00:00`, is the date's time of day, not a field; nor is its zone; nor is
# the date's year: Coqui's `--> TIME: 2024-03-05 10:00:13 -- STEP: ...` holds no time of 2024 s)
VALUE_RE = re.compile(
    r"(?<![\w.@/\-])(?<!\d-\d\d[ T])(?<!\d:)(?:(?<!\+)(?P<clock>(?:\d+ days?, )?\d+:\d{2}(?::\d{2})?(?:\.\d+)?)|"
    r"(?P<num>(?!\d+[-/]\d{1,2}[-/]\d)-?" + _NUM + r"))"
    r"(?:(?P<unit>" + _UNIT_ALT + r")(?![\w/])|\s(?P<unit_s>" + _UNIT_ALT + r")(?![\w/])(?!\s*[:=]|\s+-?\.?\d)|"
    r"(?P<unit2>[A-Za-z]+)(?![\w]))?"
    r"(?:\s*\(\s*(?P<avg>-?" + _NUM + r")\s*(?P<avg_unit>" + _UNIT_ALT + r")?\s*\))?")
OWN_UNIT = "\ue003"  # in a line's shape: the unit of the bracketed value after a value follows (plan_line)


# the seconds part after a value's minutes (`6m 40s`, `1m 02s`): the two are one clock spelled in parts
_SECONDS_PART = re.compile(r"(?<!\s)[ \t]*+\d{1,2}(?:\.\d++)?s\b")  # one pass over a run of blanks


def value_unit(m, text: str) -> str:
    """The unit of VALUE_RE's match `m` in `text`, "" for none; a lower-case `m` (minutes) followed by its seconds
    part is the head of a clock spelled in parts, whose minutes alone are no time ("m…", an unknown unit)."""
    unit = m["unit"] or m["unit_s"] or m["unit2"] or ""
    return "m\u2026" if unit == "m" and _SECONDS_PART.match(text, m.end()) else unit


def bracket_unit(m) -> str:
    """OWN_UNIT + the unit of the bracketed value after the value of match `m` (of VALUE_RE) when that unit is a rate
    or per-step unit the value itself does not have (TF-Slim's `loss = 79.3501 (57.126 sec/step)`: the bracket is
    the step's time, not the loss's running average), else ""."""
    own = m["avg_unit"]
    unit = m["unit"] or m["unit_s"] or m["unit2"]
    return OWN_UNIT + own if own and "/" in own and own != unit else ""


# fields split by these, and by a date (with its time of day), which is no value and no part of a key
KEY_SPLIT = re.compile(r"[|,;\t{}\[\]\ue000]|\s{2,}|\s--?\s|^-\s|"
                       r"\d{4}[-/]\d{1,2}[-/]\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?")
# the unit stated in the key: `iter time (s)`, `step [ms]`, NeMo's `train_step_timing in s`, open_clip's `Batch (t)`
# (t: a time, in seconds)
KEY_UNIT = re.compile(r"(?<!\s)(?:\s*+[(\[]\s*(ns|us|µs|ms|s|sec|secs|seconds|min|minutes|t)\s*[)\]]|"
                       r"\s+in\s+(ns|us|µs|ms|s|sec|secs|seconds|min|minutes))\s*$", re.IGNORECASE)
# `time (data): 0.410 (0.012)` (BasicSR): the bracketed name labels the bracketed value after the first
# each side of the bracket: words joined by spaces, word and space never overlapping, so a long line fails in linear time
PAIRED_KEY = re.compile(r"^(?P<a>[A-Za-z][\w.\-]*(?: +[\w.\-]+)*)\s*\(\s*(?P<b>[A-Za-z][\w.\-]*(?: +[\w.\-]+)*)\s*\)$")
MARKER = re.compile(r"(?<!\w)\(([A-Za-z_][\w.\-]*)\)")  # not glued to a key: PaddleClas' `lr(PiecewiseDecay)`
_NORM = re.compile(r"[^0-9a-z]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")  # a lower-case letter or digit, then a capital: a new word

# a keyword then the step number (an integer, or an integer-valued float such as NeMo's `global_step=99.00`);
# `current_steps` / `completed_steps` (LLaMA-Factory, Accelerate) name the step as `global_step` does, `total_steps`
# and `max_steps` do not; `update N` names an RL trainer's current PPO update (SoundSpaces), the plural `Updates=500` of
# Sockeye's checkpoint summary is a count over a window, no step's line; OpenPCDet's `Acc_iter N` counts over epochs as `global_step` does; Marian's `Up. N` counts updates as `num_updates` does, StyleGAN's `tick N` its logging
# unit; fairseq's epoch summary names its counter for the split (`"train_num_updates": "643"`, as `train/global_step`
# is named): the training's; a step may be printed with thousands separators (`{:,d}`); a bracketed number or range counts to its end (MXNet's `Batch [20-40]`: batch 40); `batch N` (PaddlePaddle's `[Epoch 0, batch 10]`, Composer's `[batch=12/100]`) ranks last
KEYWORD = re.compile(r"(?<![\w])(?<!timing_s/)(?<!timing/)(?<!timings/)(?<!timers/)(?<!timer/)(?<!time/)(?<!times/)"
                     r"(?<!perf/)(?:train[_/](?=global|num_updates))?(?P<k>(?:current|cur|curr|completed)_steps?|global[_ ]step|env_steps?|acc(?:umulated)?_iter|num_updates|"
                                r"training_iteration|iteration|iters|iter|it|train_step|step_i|micro_?step|steps|step|(?<!/)batch|tick|(?<!/)update|(?-i:Up)(?=\.\s))\b\.?[\"']?\s*"
                                r"[:=#]?\s*(?P<br>\[\s*(?:\d+\s*-\s*)?)?(?P<i>\d{1,3}(?:,\d{3})+(?![\d.])|\d+)(?:\.0+)?(?(br)\s*\])(?![\d%]|\w|\.(?![ \t]+\S))(?:\s*/\s*(?P<n>\d+))?", re.IGNORECASE)
_KEYWORD_RANK = {"global_step": 0, "global step": 0, "env_step": 0, "env_steps": 0, "acc_iter": 0, "accumulated_iter": 0, "current": 0, "cur": 0, "curr": 0, "completed": 0, "batch": 4, "num_updates": 1, "iteration": 2, "iters": 2, "iter": 2, "it": 2, "train_step": 3,
                 "steps": 3, "step": 3, "up": 1, "update": 2, "training_iteration": 2, "tick": 3, "micro_step": 3, "microstep": 3}
EPOCH_BRACKET = re.compile(r"\b(?P<w>Epoch|Iter|Iteration)(?:\s*\((?P<m>\w+)\))?\s*:?\s*(?:\[\s*(?P<e>\d+)\s*\]|(?P<e2>\d+))?"
                            r"\s*\[\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*(?:\(\s*\d+(?:\.\d*)?\s*%\s*\)\s*)?\]", re.IGNORECASE)
NAMED_EPOCH = re.compile(r"\b(?P<m>Train|Training|Test|Eval|Val|Valid|Validation)\s*:?\s*(?P<e>\d+)\s*\[\s*"
                          r"(?P<i>\d+)\s*/\s*(?P<n>\d+)")  # timm: "Train: 3 [ 50/1251 ( 4%)]"
FAIRSEQ = re.compile(r"\bepoch\s*[:=]?\s*(?P<e>\d+)\s*(?:/\s*\d+\s*)?[:|,]?\s+(?P<i>\d+)\s*/\s*(?P<n>\d+)\b",
                      re.IGNORECASE)
# a progress bar: tqdm's `i/N [elapsed<remaining, rate, postfix]` (the rate may be absent: NeMo's bar shows only its
# postfix), rich's `i/N elapsed • remaining rate` (Lightning's RichProgressBar), or tqdm-loggable's message for a
# bar in a log (Levanter's): `Progress on:train 120/10000 rate:2.0 it/s elapsed:60.0 postfix:loss=5.2`
# (the spaces after `i/N` taken once, by the alternative that needs them: `\s*` then `\s+` was quadratic in a run of
# spaces after a count)
TQDM = re.compile(r"(?<!\d)(?P<i>\d++)/(?P<n>\d++)(?:\s*+\[\s*(?:\d+:)?\d+:\d+\s*<\s*[\d:?]+\s*(?=[,\]])|"
                   r"\s++(?:\d+:)?\d+:\d+\s*•\s*[-\d:?]+(?=\s|$)|(?=\s++rate:\s*+(?:None|[\d.]+)\s*it/s))"
                   r"(?:,?\s*(?:(?P<rate>" + _NUM + r")\s*(?P<ru>it/s|s/it)|\?it/s))?")
# tqdm without a total (an iterable of unknown length): `{n}{unit} [{elapsed}, {rate}{postfix}]`, e.g.
# `Training: 3it [00:18,  5.86s/it]`
TQDM_OPEN = re.compile(r"(?<![\w/.])(?P<i>\d{1,12})(?P<n>)(?:it|[A-Za-z]{1,12}) \[(?:\d{1,4}:)?\d{1,2}:\d{2},\s{0,4}"
                       r"(?=(?:" + _NUM + r")\s?(?:it/s|s/it)|\?it/s)")
# `Epoch 3:` (Lightning), `Epoch #3:` (Tianshou), or a leading `3/100 ` (ultralytics): the bar's epoch
TQDM_EPOCH = re.compile(r"(?:\bEpoch\s*#?\s*(?P<e>\d+)\b|^\s*(?P<e2>\d+)/(?P<E>\d+)\s)", re.IGNORECASE)
EPOCH_WORD = re.compile(r"\bepoch\s*[:=]?\s*[\[#]?\s*(\d{1,9})\b(?!\.\d)", re.IGNORECASE)  # past 9 digits: damage
# a step given as a list (DLLogger's JSON `"step": [epoch, iteration]`, `[epoch, iteration, validation iteration]`)
# (`[epoch]` alone: the epoch's summary, no step)
STEP_LIST = re.compile(r"[\"']step[\"']\s*:\s*\[\s*(?P<e>\d{1,9})\s*(?:,\s*(?P<i>\d{1,18})\s*)?"
                       r"(?:,\s*(?P<v>\d{1,18})\s*)?\]")
# the epoch named after a step counter: DLRM's `Finished training it 1024/306969 of epoch 1`
EPOCH_AFTER = re.compile(r"(?:of|in)\s++epoch\s*+[:=]?\s*+(\d+)\b", re.IGNORECASE)
KERAS = re.compile(r"^\s*(?P<i>\d+)/(?P<n>\d+)\s*(?:\[[=>.]*\]|━+|(?=\s-\s))")
KERAS_EPOCH = re.compile(r"^\s*Epoch\s+(\d+)\s*/\s*(\d+)\s*$", re.IGNORECASE)
# the position within an epoch after `Epoch [e/E]`: `Step [100/600]`, `batch: [0/8290]`, `iter 5/100`
# the position within the epoch in brackets right after `Epoch [e/E]` (minimind's `Epoch:[1/2](459800/850049)`)
NEXT_FRACTION = re.compile(r"\s{0,3}[(\[]\s{0,3}(?P<i>\d{1,18})\s{0,3}/\s{0,3}(?P<n>\d{1,18})\s{0,3}[)\]]")
INNER_FRACTION = re.compile(r"\b(?:step|batch|iter|iteration|it)\s*[:=]?\s*\[?\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*\]?",
                            re.IGNORECASE)
# a file-level batch size (Horovod's `Batch size: 32`, MXNet's `start with arguments Namespace(batch_size=128, ...)`)
BATCH_SIZE_LINE = re.compile(r"\bbatch[ _]size\b['\"]?\s*[:=]\s*(\d{1,9})\b", re.IGNORECASE)
# a range of batches or steps with its noun glued on (ESPnet's `1epoch:train:101-200batch:`): the range's end
RANGE_SUFFIX = re.compile(r"(?<![\w.])(?:\d{1,18}-)?(?P<i>\d{1,18})(?:batch|batches|iter|iters|steps?)\b")
# CLU's LoggingWriter `[100] loss=2.3, ...`; big_vision's metric writer, one metric a line: `[100] training_loss = 6.9`;
# a line opening with its position of the run's N steps, then fields (keras-rl's `  39160/50000: episode: 569, ...`)
LEAD_STEP = re.compile(r"^\s*(?:\[\s*(?P<i>\d+)\s*\](?=\s+\S+=|\s+[^\s=\[][^=\n]{0,80}?\s=\s)|"
                       r"(?P<f>\d{1,18})/\d{1,18}:(?=\s+[A-Za-z][\w ]{0,40}:\s))")
# the one-letter epoch and batch (Sockeye's Speedometer `E=0 B=50`): a batch count that restarts each epoch
LETTER_PAIR = re.compile(r"(?<![\w=])E\s*=\s*(?P<e>\d+)[\s,;|]+B\s*=\s*(?P<i>\d+)(?![\w.])")
# `[e/E][i/N]` (Pointcept's `Train: [1/100][29/510]`): the first bracket the epoch of E, the second the position in it
EPOCH_PAIR = re.compile(r"\[\s*(?P<e>\d+)\s*/\s*\d+\s*\]\s*\[\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*\]")
BRACKET = re.compile(r"\[\s*(?:(?P<w>[A-Za-z_]+)\s*[=:]\s*)?(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*\]")  # [12/100], [batch=12/100]
# mAP: a detector's validation bar; CV: cross-validation, the speech toolkits' dev set (WeNet's `CV Batch 4/0`)
EVAL_MODE = re.compile(r"\b(val|valid|validation|validating|eval|evaluation|evaluating|test|testing|sanity"
                        r"|predict|predicting|cv)\b|\bmAP\d*\b", re.IGNORECASE)
DIGIT = re.compile(r"\d")
CLI_OPTION = re.compile(r"(?<!\S)--[A-Za-z][\w.-]*(?:=\S*)?")  # `--eval-iters`, `--save=ckpt/`: a command line's option


def blank_options(body: str) -> str:
    """`body` with its command-line options blanked (the same length, so spans still index the line)."""
    return CLI_OPTION.sub(lambda m: " " * len(m[0]), body)
STEP_NAMES = ("step", "iter", "iteration", "batch")
IMPLICIT_HINT = re.compile(r"(?:step|iter|iteration|batch)[ _]?(?:time|duration|dt|ms|took|runtime)(?:_?(?:ms|us|ns|s|sec))?\b"
                           r"|\b[A-Za-z]{2,16}\s?\((?:ns|us|µs|ms|s|sec)\)\s*:"  # a unit in brackets: wav2letter's `bch(ms):`
                           r"|\b(?:timing_s|timings?|timers?|times?|perf)/(?:step|iter|iteration)\b\s*[:=]"  # a family's whole step
                           r"|\d(?:s|sec|ms)/(?:it|iter|step|batch)\b", re.IGNORECASE)  # or a per-step unit: `3.79s/it`
RATE_LINE = re.compile(r"\b(?:global_step|steps?|it|iters?|examples|samples)/sec\s*[:=]\s*\d", re.IGNORECASE)
# a row of a box-drawn table (rich / Ray Train's `│ time_this_iter_s   25.7 │`), read as fields of the record above
BOX_ROW = re.compile(r"^\s*[│┃║╭╰├┌└╞╘╒╓]")
BOX_CHARS = re.compile(r"[│┃║╭╮╰╯├┤┌┐└┘─═╞╡╘╛╒╕╓╖]+")
# a header stating the unit of the indented timer rows below it, and such a row (Megatron's timers:
# `(min, max) time across ranks (ms):` then `    forward-compute ......: (1200.12, 1201.50)`; the max is kept)
UNIT_HEAD = re.compile(r"\((ns|us|µs|ms|s|sec)\)\s*:\s*$")
TIMER_ROW = re.compile(r"^\s+(?P<name>[A-Za-z][\w/\- ]*?)\s*\.{2,}\s*:\s*\(?\s*(?P<a>" + _NUM + r")"
                        r"(?:\s*,\s*(?P<b>" + _NUM + r"))?\s*\)?\s*$")
# the one-line form of the same timers (Megatron-LM before its table, DeepSpeed's wall-clock breakdown): `time (ms) |
# forward-compute: 53.79 | backward-compute: 138.84 | ... | optimizer: 19.12 | batch-generator: 1.2` after a record
TIMER_LINE = re.compile(r"^\s*(?:rank\s*=\s*\d{1,9}\s+)?time \((ns|us|µs|ms|s|sec)\)\s*\|")
# (possessive spaces around the optional parentheses: two `\s*` beside a `\(?` were quadratic in a run of spaces)
TIMER_PAIR = re.compile(r"(?P<name>[A-Za-z][\w/\-]{0,80})\s*:\s*+\(?\s*+(?P<a>" + _NUM + r")(?:\s*,\s*(?P<b>" + _NUM +
                        r"))?\s*+\)?\s*+(?=\||$)")
CONTINUATION = re.compile(r"\d|^[^\w]+$")  # an indented line of a block: a value, or only decoration
HAS_FIELD = re.compile(r"[\w'\"]\s*[:=]\s*[-.\d]")

# role classes, most specific first (the order of preference when the file's duration field is chosen)
PER_STEP, GENERIC, CUMULATIVE, WINDOW, AVERAGE, UNNAMED = range(6)
CLASS_NAMES = ("per-step", "time", "cumulative", "window", "running average", "unnamed")
# the order in which a file's duration field is chosen: a window's own time before a running total's differences
# (fairseq2's `Lapse Time`, which pauses for validation, before its `Wall Time`)
PREFERENCE = (PER_STEP, GENERIC, WINDOW, CUMULATIVE, AVERAGE, UNNAMED)
_PHASE_WORDS = {"forward": "fwd", "fwd": "fwd", "backward": "bwd", "bwd": "bwd", "optimizer": "optimizer",
                "optim": "optimizer", "opt": "optimizer", "optimizer_step": "optimizer", "comm": "collective",
                "communication": "collective", "allreduce": "collective", "all_reduce": "collective",
                "collective": "collective", "reduce": "collective", "sync": "collective", "gather": "collective",
                "allgather": "collective", "scatter": "collective", "h2d": "h2d", "compute": "compute",
                "to_device": "h2d", "copy": "h2d"}
_NOT_TIME = ("eta", "remaining", "remain", "left", "lr", "learning_rate", "loss", "mem", "memory", "acc", "norm", "eval",
             "val", "valid", "test", "validation", "evaluation", "testing", "ckpt", "checkpoint", "save", "compile", "warmup", "start", "stamp", "date",
             "now", "clock", "timestamp", "timer", "timeout", "num", "max", "min", "total_steps")
_CUM_WORDS = ("elapsed", "runtime", "wall", "total", "since", "uptime", "train_time", "training_time", "time_elapsed",
              "cumulative", "cum")
_AVG_WORDS = ("avg", "mean", "average", "running", "smoothed", "ema")
_STEP_RATE_KEYS = {"ups", "it_s", "its", "steps_per_sec", "steps_per_second", "step_per_sec", "global_step_sec",
                   "global_step_per_sec", "iters_per_sec", "iter_per_sec", "it_per_sec", "train_steps_per_second",
                   "steps_sec", "steps_s", "iterations_per_second", "batches_per_sec", "updates_per_sec"}
_TOKEN_KEYS = {"tokens", "num_tokens", "ntokens", "n_tokens", "tokens_per_step", "batch_tokens", "step_tokens",
               "tokens_in_batch"}
_TOKEN_RATE_KEYS = {"tps", "tok_s", "tokens_s", "tokens_per_sec", "tokens_per_second", "tokens_sec", "wps",
                    "tgs", "tokens_per_s", "tok_per_sec", "throughput_tokens"}
# the size of a step's work when it is not a token count: an input resolution (YOLOX's multi-scale `size: 640`,
# `img_size`), a sequence length; whether the step time follows it is the accounting's question (a fit), not the key's
_WORK_KEYS = {"size", "input_size", "img_size", "imgsz", "image_size", "resolution", "seq_len", "seqlen",
              "seq_length", "sequence_length", "max_seqlen", "max_seq_len"}
_BATCH_KEYS = {"bsz", "batch_size", "global_batch_size", "train_batch_size", "gbs", "global_batch",
               "total_batch_size", "effective_batch_size"}
_COUNT_NOUNS = {"epoch", "epochs", "batch", "batches", "sample", "samples", "token", "tokens", "step", "steps", "iter",
                "iteration", "batch_in_epoch", "sample_in_epoch", "token_in_epoch", "step_in_epoch"}
# a count's magnitude suffix (nanotron's human_format: `1.23K`, `2.62M`); G and T are left out: `3.72G` is memory
_FAMILY_HEADS = {"timing", "timings", "time", "times", "timer", "timers", "perf", "durations"}
_WHOLE_STEP = {"step", "steps", "iter", "iteration", "total", "train_step", "step_time", "iter_time", "iteration_time",
               "batch_time", "step_total", "total_step", "whole_step"}
FAMILY = "family"  # the 4th item of a stage timer's role: a stage of a family whose sum may be the step
DECIMAL = "decimal"  # the 4th item of a step noun's time (`Batch 3.505 (3.358)`): a time only when written with a point
CLOCK = "clock"  # the 4th item of a time's role when written as a clock (`Time=10:01:38`): maybe a time of day
_SLASH_RATE = re.compile(r"(?<!\w)([A-Za-z]\w*+)\.?\s*+/\s*+(?:s|sec|secs|second|seconds)\b", re.IGNORECASE)
MAGNITUDE = {"K": 1e3, "k": 1e3, "M": 1e6, "B": 1e9}
MAX_STEP = 2 ** 62  # step numbers beyond int64's reach are not steps
MAX_BLOCK_LINES = 256  # continuation lines kept per block record: an endless indented run cannot grow memory
MAX_TRAIL_LINES = 8  # lines after a bare step line that may still hold its time (DeepSpeed-Chat's latencies)
MAX_KEYS = 64  # distinct candidate fields kept per file: a file printing ever-new keys cannot grow memory


def keyword_rank(word: str) -> int:
    w = word.lower().replace(" ", "_")
    return _KEYWORD_RANK.get(w) if w in _KEYWORD_RANK else _KEYWORD_RANK.get(w.split("_")[0], 3)


def norm_key(key: str) -> str:
    """A key in snake case: `data_time`, `Data Time`, `data-time` and the CamelCase `DataTime` (mozilla/TTS's
    `LoaderTime`, DeepSpeed's `CurrSamplesPerSec`) read alike; an all-capitals run (`LR`, `ETA`) is one word."""
    return _NORM.sub("_", _CAMEL.sub("_", key).lower()).strip("_")


def clock_seconds(text: str) -> float:
    """Seconds in a clock-form duration: `1:17:42`, `0:02:55`, or past a day as Python prints a timedelta (`1 day,
    0:02:55`, `2 days, 3:47:48`)."""
    days, _, hms = text.rpartition(" day")
    parts = [float(p) for p in hms.lstrip("s, ").split(":")]
    return sum(p * 60 ** k for k, p in enumerate(reversed(parts))) + 86400.0 * float(days or 0)


def unit_kind(unit: str | None) -> tuple[str, float] | None:
    """(kind, factor): ("time", s per unit), ("per_step", s per step per unit), ("step_rate", 1),
    ("sample_rate", 1), ("token_rate", 1); None for other units."""
    if not unit:
        return None
    if unit == "m":
        # a lower-case `m` glued to a number is minutes (`elapsed 0.49m`, as `2h` is hours), after a time's key only
        # (plan_line: `tok 0.5m` is a million); an upper-case `M` is memory (`max_mem: 7432M`, megabytes), so this one
        # unit keeps its case. The minutes of a clock spelled in parts (StyleGAN's `time 6m 40s`) are no value of
        # their own: the grammar gives them no unit (value_unit)
        return "time", 60.0
    u = unit.lower()
    if u in TIME_UNITS:
        return "time", TIME_UNITS[u]
    if "/" not in u:
        return None
    a, b = u.split("/", 1)
    if a in TIME_UNITS and b in _STEP_WORDS:
        return "per_step", TIME_UNITS[a]
    if b in ("s", "sec", "second"):
        if a in _STEP_WORDS:
            return "step_rate", 1.0
        if a in _TOKEN_WORDS:
            return "token_rate", 1.0
        return "sample_rate", 1.0
    return None


_SPLIT_PREFIX = re.compile(r"train[_/]", re.IGNORECASE)


# A stated model-FLOP rate per device (`throughput per GPU (TFLOP/s/GPU)`, `TFLOP/s/device`, torchtitan's `tflops`,
# GPT-NeoX's `approx flops per GPU: 112.9TFLOPS`, nanotron's `model_tflops_per_gpu`): TFLOP/s per FLOP word or unit
FLOP_SCALE = {"flop": 1e-12, "flops": 1e-12, "gflop": 1e-3, "gflops": 1e-3, "tflop": 1.0, "tflops": 1.0,
              "pflop": 1e3, "pflops": 1e3}
# a phase's own rate (the DeepSpeed flops profiler's `fwd FLOPS per GPU`) or the hardware's count with recomputation
# (nanotron's `hardware_tflops_per_gpu`) is not the model's rate over the step
_NOT_MODEL_RATE = {"fwd", "bwd", "forward", "backward", "hardware", "hw", "macs"}


_PERCENT_WORDS = {"pct", "percent", "percentage"}


def _flop_role(words: list[str], unit: str | None, key: str = "") -> tuple[str, object, float] | None:
    """("flops", None, TFLOP/s per value) for a stated model-FLOP rate, ("mfu", None, fraction per value) for a
    stated model-FLOP utilization (`mfu: 20.50%`, nanoGPT's `mfu 28.86%`, verl's `perf/mfu/actor`; a percentage also
    when the key says so: `mfu (%): 0.30`, `throughput/device/MFU (%)`, `mfu_pct`), else None. A bare `flops` word is
    a rate only with a FLOPS unit after the value (`112.9TFLOPS`): without one it may be a count."""
    if set(words) & _NOT_MODEL_RATE:
        return None
    if "mfu" in words:
        return "mfu", None, (0.01 if unit == "%" or "%" in key or set(words) & _PERCENT_WORDS else 1.0)
    u = (unit or "").lower()
    if u in FLOP_SCALE and u != "flops" and any(w in FLOP_SCALE for w in words):
        return "flops", None, FLOP_SCALE[u]
    word = next((w for w in words if w in FLOP_SCALE and w not in ("flop", "flops")), None)
    if word is not None and not unit:
        return "flops", None, FLOP_SCALE[word]
    return None


@lru_cache(maxsize=8192)
def classify(key: str, unit: str | None) -> tuple[str, object, float] | None:
    """_classify, and for a key named for the training split that means nothing whole (fairseq's epoch summary:
    `train_ups`, `train_wps`), the role of the rest."""
    role = _classify(key, unit)
    if role is None and (m := _SPLIT_PREFIX.match(key)) and m.end() < len(key):
        role = _classify(key[m.end():], unit)
    return role


def _classify(key: str, unit: str | None) -> tuple[str, object, float] | None:
    """The role of a field: ("dur", class, factor to seconds), ("rate", PER_STEP, 1) for steps per second,
    ("phase", name, factor), ("tokens", None, 1), ("token_rate", None, 1), ("sample_rate", None, 1), ("batch", None,
    1), ("work", None, 1) for a step's input size or sequence length; None when the field is not about time (loss,
    lr, ...)."""
    if unit is None and "/" in key and key.strip().lower() in _RATE_UNITS:
        key, unit = "", key.strip()  # the key is a unit: `ms/step: 120.5`, `it/s: 3.2`, `tok/s 100000`
    if "/" in key and (m := _SLASH_RATE.search(key)):
        # `avg. samples / sec`, `TFLOP/s/device`, `Tokens/s/device`: a rate of what precedes the slash, never a time
        what = norm_key(m.group(1)).rsplit("_", 1)[-1]
        if what in FLOP_SCALE and not set(norm_key(key).split("_")) & _NOT_MODEL_RATE:
            return "flops", None, FLOP_SCALE[what]  # Megatron's `throughput per GPU (TFLOP/s/GPU)`, MaxText's
        return _per_second_role(what)
    if "/" in key and (family := _family(key, unit)) is not False:
        return family
    k = norm_key(key)
    m = KEY_UNIT.search(key)
    if m:
        stated = m.group(1) or m.group(2)
        unit = unit or ("s" if stated.lower() == "t" else stated)
        k = norm_key(key[: m.start()])
    if "/" in key and unit is None and norm_key(key.rsplit("/", 1)[1]) in _COUNT_NOUNS:
        return None  # a tag path ending in what it counts (Composer's `time/batch: 12`): a count, not a duration
    # `wall_clock/train`: the wall-clock total, not a GPU clock; `bch`, `smp`: vowel-dropped nouns (abbrev.py)
    k = unabbreviate(k.replace("wall_clock", "wall"))
    kind = unit_kind(unit)
    words = k.split("_") if k else []
    if (flop := _flop_role(words, unit, key)) is not None:
        return flop
    if kind and kind[0] == "per_step":
        return "dur", PER_STEP, kind[1]
    per = next((j for j in range(1, len(words) - 1) if words[j] == "per"), None)
    if per is not None and words[per + 1] in ("s", "sec", "second", "seconds"):
        return _per_second_role(words[per - 1])
    if kind and kind[0] == "step_rate" or k in _STEP_RATE_KEYS or (
            k.endswith(("_per_sec", "_per_second")) and words and words[0] in _STEP_WORDS + (
                "global", "train", "optimizer")) or (
            # `global_step_sec`, `steps_s`: steps per second; `train_runtime_s`, `iter_time_s`: seconds
            k.endswith(("_sec", "_s")) and len(words) >= 2 and words[-2] in _STEP_WORDS and "time" not in words):
        if "sample" in k or "token" in k or "example" in k:
            return ("token_rate" if "token" in k else "sample_rate"), None, 1.0
        return "rate", PER_STEP, 1.0
    if kind and kind[0] in ("token_rate", "sample_rate") or k in _TOKEN_RATE_KEYS or words[-1:] == ["tps"]:
        return ("token_rate" if kind is None or kind[0] == "token_rate" else kind[0]), None, 1.0
    if k in _TOKEN_KEYS and kind is None:
        return "tokens", None, 1.0
    if words[-1:] == ["tokens"] and set(words) & {"total", "seen", "consumed", "processed"} and kind is None:
        return "token_count", None, 1.0  # EasyLM's `dataset_total_tokens`: a running count (columns.from_throughput)
    if k in _BATCH_KEYS and kind is None:
        return "batch", None, 1.0
    if k in _WORK_KEYS and not unit:  # a count without a unit: `size: 1024MB` is memory, not the step's work
        return "work", None, 1.0
    if "samples_per" in k or "samplespersec" in k or k.startswith(("examples_per", "examples_sec")):
        return "sample_rate", None, 1.0
    return _duration_role(k, unit, kind)


def _family(key: str, unit: str | None):
    """The role of a key in a family of timers (`timing_s/gen`, `time/forward`, `timers/data`, `perf/...`):
    ("dur", PER_STEP, factor) for the whole step (`timing_s/step`, `time/iter`, `timers/total`), ("phase", stage,
    factor, FAMILY) for a stage, None for a count or an estimate (Composer's `time/batch`, `time/remaining`),
    False when `key` names no timer family. `perf/<leaf>` is read by its leaf alone (MaxText's
    `perf/step_time_seconds`, `perf/per_device_tflops_per_sec`)."""
    head, leaf = key.rsplit("/", 1)
    words = norm_key(head).split("_")
    factor = None
    if words and words[-1] in TIME_UNITS and len(words) > 1:
        factor = TIME_UNITS[words.pop()]
    if not set(words) & _FAMILY_HEADS:
        return False
    if "per" in words:
        return None  # verl's `timing_per_token_ms/gen`: a time per token, not a stage of the step
    if lk_stat(leaf) or set(words) & {"slowest", "fastest"}:
        return None  # a statistic over a batch's samples, or one sample's record, is no stage (sample_tail.py)
    if words[0] == "perf":  # `perf/<leaf>` by its leaf; verl's `perf/mfu/actor` by `mfu_actor` (no time)
        return classify("_".join([*words[1:], leaf]), unit)
    lk = norm_key(leaf)
    kind = unit_kind(unit)
    if kind and kind[0] == "time":
        factor = kind[1]
    for suffix, f in (("_ms", 1e-3), ("_us", 1e-6), ("_ns", 1e-9), ("_sec", 1.0), ("_seconds", 1.0), ("_s", 1.0)):
        if lk.endswith(suffix) and len(lk) > len(suffix):
            lk, factor = lk[: -len(suffix)], factor or f
            break
    f = factor or 1.0
    lw = set(lk.split("_"))
    if factor is None and lk in _COUNT_NOUNS - {"step", "steps", "iter", "iteration"} or lw & {
            "remaining", "estimate", "eta", "left"} or lk in _SAMPLE_WORDS + _TOKEN_WORDS:
        # a count or an estimate; DeepSpeed-Chat's `Time/seq 0.33s` is a time per sequence, not a stage
        return None
    if lk in _WHOLE_STEP or (lw & {"step", "iter", "iteration"} and lw & {"time", "total", "duration"}):
        return "dur", PER_STEP, f
    stage = lk.removesuffix("_time").removesuffix("_timing")
    if stage in _DATA_KEYS or stage.split("_")[0] in ("data", "dataloader", "loader", "batch"):
        stage = "data"
    elif lw & {"eval", "evaluation", "val", "validation", "test", "testing"}:
        stage = "eval"
    elif lw & {"checkpoint", "ckpt", "save", "saving"}:
        stage = "checkpoint"
    stage = _PHASE_WORDS.get(stage, None) or stage_by_meaning(stage) or stage
    return ("phase", stage, f, FAMILY) if stage else None


# what a wait names as waited on, where the step vocabulary has a phase for it
_WAITED_ON = {**_PHASE_WORDS, "nccl": "collective", "barrier": "barrier", "data": "data", "dataloader": "data",
              "loader": "data", "input": "data"}


def stage_by_meaning(name: str) -> str | None:
    """A stage's phase by the words of its name (handoff.py), or None: "wait", "handoff", or for a wait named for
    what it waits on that phase (`comm_wait`, `exposed_comm`: collective; `h2d_wait`; `wait_for_data`: data), not
    a wait on another side."""
    kind = handoff.stage(name)
    waited = [_WAITED_ON[w] for w in handoff.words(name) if w in _WAITED_ON] if kind == "wait" else []
    return waited[0] if waited else kind


def lk_stat(leaf: str) -> bool:
    """Whether a timer key's leaf is a statistic over samples (`/max`, `/mean`) or a count (`/prompt_length`)."""
    k = norm_key(leaf)
    return k in ("min", "max", "mean", "avg", "median", "std", "p50", "p90", "p95", "p99") or bool(
        set(k.split("_")) & {"length", "len", "preempted"})


def _per_second_role(what: str) -> tuple[str, object, float] | None:
    """The role of `<what>_per_sec[_per_gpu]`: what comes before `per` is what is counted (batches_per_second is
    a step rate, tokens_per_sec_per_gpu a token rate); another thing per second (TFLOPs, bytes) is no time."""
    if what in _STEP_WORDS or what == "u":  # Sockeye's `u/sec`: updates per second
        return "rate", PER_STEP, 1.0
    if what in _TOKEN_WORDS:
        return "token_rate", None, 1.0
    if what in _SAMPLE_WORDS:
        return "sample_rate", None, 1.0
    return None


def _duration_role(k: str, unit: str | None, kind: tuple[str, float] | None) -> tuple[str, object, float] | None:
    """classify's last step, for a normalised key `k` that is no rate, token or batch count: ("dur", class,
    factor to seconds) or ("phase", name, factor) when it names a time; None otherwise."""
    factor = kind[1] if kind and kind[0] == "time" else None
    if factor is None:
        for suffix, f in (("_ms", 1e-3), ("_us", 1e-6), ("_ns", 1e-9), ("_s", 1.0), ("_sec", 1.0),
                          ("_seconds", 1.0), ("ms", 1e-3)):
            if suffix == "ms" and not k[:-2].endswith(_GLUED_MS):
                continue  # `steptimems` is milliseconds; `l2_params`, `items` only end in the letters
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
    if names_data_wait(k, words, factor is not None, _AVG_WORDS):
        return "phase", "data", factor or 1.0
    timeish = factor is not None or any(w in ("time", "dt", "duration", "latency", "elapsed", "runtime", "wall",
                                              "uptime", "took", "seconds", "secs", "sec", "cost", "timing")
                  for w in words)
    if timeish and handoff.stage(k) == "handoff":
        return "phase", "handoff", factor or 1.0  # `weight_sync`, `sleep_time`: the hand-over, no side's work
    for w in words:
        if w in _PHASE_WORDS and timeish and not any(x in words for x in ("data", "eval", "val")):
            return "phase", _PHASE_WORDS[w], factor or 1.0
    if "per" in words[:-1] and words[words.index("per") + 1] not in _STEP_WORDS:
        return None  # `per_token_latency`, `time_per_sample`: a time per token or sample, not per step
    if not timeish or any(w in _NOT_TIME for w in words) or (k == "cost" and factor is None):
        return None  # a bare `Cost 9.12` is a loss (Marian); `batch_cost`, `reader_cost` are times (PaddlePaddle)
    f = factor or 1.0
    if any(w in _AVG_WORDS for w in words):
        return "dur", AVERAGE, f
    if k.startswith(("end_to_end", "e2e")):
        return "dur", PER_STEP, f  # DeepSpeed-Chat's `End-to-End => Latency`: the whole step, its stages beside it
    if "per" in words or any(w in ("step", "iter", "iteration", "batch", "it", "steptime", "itertime")
                             for w in words) or k in ("dt", "sec_batch", "last_time", "time_per_step",
                                                      "step_time", "iter_time"):
        # `total_step_time`, `time_since_step`: a running total; `train_step_timing` (NeMo): the training step
        if not any(w in ("total", "since") for w in words) or "per" in words:
            return "dur", PER_STEP, f
    # a time given `at` / `after` a point (neural-enhance's `Epoch #3 at 244.6s`, time.time() - start): since the start
    if any(w in _CUM_WORDS for w in words) or k in ("train_time", "training_time", "at", "after") or \
            k.startswith("elapsed"):
        return "dur", CUMULATIVE, f
    return "dur", GENERIC, f


# the stems a bare `ms` may be glued to as a unit (`steptimems`, `dtms`, `latencyms`)
_GLUED_MS = ("time", "dt", "duration", "latency", "step", "iter", "elapsed")


def line_markers(text: str) -> list[str]:
    return [m for m in MARKER.findall(text) if not m[0].isdigit() and m.lower() not in TIME_UNITS]


def counted_window(key: str) -> bool:
    """Whether a time's key counts steps done in it (`Ran 500 train steps in`, `100 batches in`, `took 50
    iterations in`): the time of a window of steps, not of one step."""
    words = norm_key(key).split("_")
    return len(words) >= 2 and words[-1] == "in" and words[-2] in _STEP_WORDS and words[-2] not in ("it", "tick")


# words of a key that make a lower-case `m` after its value minutes (`elapsed 0.49m`, `total time: 0.00m`); after
# another key it is a million, metres or milli-CPU (`tok 0.5m`, `consumed 1.5m`, `(1.2m tokens)`, `cpu 4000m`)
_COUNTERS = {"epoch", "step", "iter", "iteration", "batch"}  # a time's key ending in one: the value numbers it
_COUNTED_BY = {"for", "of", "at", "during"}  # `time at epoch 3`: the counter's number; `time per step 0.5`: the time
_MINUTE_WORDS = {"time", "times", "dt", "duration", "latency", "elapsed", "runtime", "wall", "uptime", "took", "timing"}


def plan_line(segs: list[str], tail: str) -> tuple[list[tuple[int, str, tuple, float, str]], list[str]]:
    """How to read a line shape: [(value index, field name, role, scale, "num" or "avg": the value or the one in
    brackets after it)], markers. `segs` alternates the text before each value and that value's unit."""
    fields: list[tuple[int, str, tuple, float, str]] = []
    names: set[str] = set()
    units_seen: set[str] = set()
    markers: list[str] = []
    counted, counts_window = "", -1  # the key of a counter just read (`Time for epoch`), for a value after `is`
    for i in range(0, len(segs), 2):
        if bracket_count(segs, i):  # HugeCTR's `Time(1000 iters): 5.36s`: a count of steps, then their time
            if COUNT_FIELD not in names:  # the first (`Eval Time(100 iters)` after it counts another time)
                names.add(COUNT_FIELD)
                counts_window = i + 2
                fields.append((i // 2, COUNT_FIELD, COUNT_ROLE, 1.0, "num"))  # its time over it (per_count)
            continue
        raw_key, (unit, _, own) = segs[i], segs[i + 1].partition(OWN_UNIT)
        if own and (role := classify("", own)) is not None:  # `loss = 79.35 (57.126 sec/step)`: a value of its own
            names.add(f"({own})")
            fields.append((i // 2, f"({own})", role, 1.0, "avg"))
        markers += line_markers(raw_key)
        clock = unit == "\ue001"
        if clock:
            unit = "s"  # H:MM:SS, after Python's `N day(s), ` past 24 h (str(timedelta))
        scale = MAGNITUDE.get(unit, 1.0)
        if scale != 1.0:
            unit = ""
        seg = raw_key.replace("'", " ").replace('"', " ").rstrip()
        seg = seg.rstrip(":= \t").rstrip()
        stated = KEY_UNIT.search(seg)  # `step [ms]`: the bracket is the key's unit, not a field boundary
        suffix = stated.group(0) if stated else ""
        pieces = KEY_SPLIT.split(seg[: stated.start()] if stated else seg)
        key = (pieces[-1].strip() if pieces else "") + suffix
        key = MARKER.sub("", key).strip() if key.startswith("(") and key.endswith(")") else key
        if unit == "m" and not (set(norm_key(key).split("_")) & _MINUTE_WORDS or counted_window(key)):
            unit = "m\u2026"  # no time's key: an unknown unit, as before `m` was minutes
        window = False
        seen = unit in units_seen
        units_seen.add(unit)
        pair = PAIRED_KEY.match(key) if not stated else None
        paired = classify(pair["b"], unit or None) if pair else None
        if paired is not None:  # `time (data): 0.410 (0.012)`: `time` the value, `data` the bracketed one after it
            key = pair["a"]  # (a bracketed word of no role, `iter time (avg)`, stays part of its key)
            if norm_key(pair["b"]) not in names:
                names.add(norm_key(pair["b"]))
                fields.append((i // 2, norm_key(pair["b"]), paired, scale, "avg"))
        if key == "(":
            if "\ue000" in raw_key and (unit_kind(unit) or ("",))[0] == "time":
                window = True  # `step = 200 (11.474 sec)`: the time since the previous log line
            elif seen:
                continue  # averages in parentheses of the fields before, in their units: `(0.320s, 400.0/s)`
            else:
                key = ""  # a value of its own in parentheses, in a unit not seen before: llm.c's `(520.12 ms | ...)`
        key = key.lstrip("(").strip().rstrip(":=").strip()
        words = norm_key(key).split("_")
        if not unit and not clock and len(words) > 2 and words[-1] in _COUNTERS and words[-2] in _COUNTED_BY \
                and set(words) & _MINUTE_WORDS:
            counted = key  # `Time for epoch 3 is 15.4 sec` (TF's tutorials): 3 numbers the epoch the time is for
            continue
        if words == ["is"] and counted:  # ... and 15.4 sec is that time: the key before the copula is its key
            key = counted
        counted = ""
        if not window and (unit_kind(unit) or ("",))[0] == "time" and counted_window(key):
            window = True  # Trax's `Ran 500 train steps in 5.03 secs`: the time of the steps since the last line
        if i == counts_window and (unit_kind(unit) or ("",))[0] == "time":
            role, name = ("dur", PER_STEP, unit_kind(unit)[1]), COUNTED  # over the count before it (per_count)
        elif window:
            role, name = ("dur", WINDOW, unit_kind(unit)[1]), "(window)"
        else:
            role = classify(key, unit or None)
            if role is None and not unit and norm_key(key) in STEP_NAMES:
                role = ("dur", PER_STEP, 1.0, DECIMAL)  # AverageMeter's `Batch 3.505`: the step noun's own time
            if role is None:
                continue
            if clock and role[0] == "dur":
                role = (*role[:3], CLOCK)
            name = norm_key(key) or f"({unit})"
            if role[0] == "dur" and role[1] == UNNAMED:
                kind = unit_kind(unit)
                name = f"(unnamed {kind[0] if kind else 'time'})"  # a unit stated by a bare `(s)` key: a time
        if name not in names:
            names.add(name)
            fields.append((i // 2, name, role, scale, "num"))
    return fields, markers + line_markers(tail)


# a JSON / dict value that is a number written as text (fairseq's json progress bar formats every stat:
# `"loss": "15.6"`, `"num_updates": "100"`, `"clip": "100%"`): the number, so the grammar reads it as any value; the
# fraction's digits only after its point (`\d+\.?\d*` split a run of digits every way: quadratic on a long one)
QUOTED_NUMBER = re.compile(r"(:\s*)([\"'])(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?%?)\2(?=\s*[,}\]])")


def unquote_numbers(body: str) -> str:
    """`{"loss": "15.6", "ups": "0.68"}` -> `{"loss": 15.6, "ups": 0.68}`: numbers a JSON or dict line holds as
    text, as numbers (the keys and other text stay quoted)."""
    return QUOTED_NUMBER.sub(r"\1\3", body) if "{" in body else body


# `episode steps: 393` (keras-rl): an episode's length, a count like a total
_STEP_TOTAL = re.compile(r"\b(?:total|max|num|number\s+of)\b[\w ]{0,24}$|\bepisode\s+$", re.IGNORECASE)


def step_total(body: str, at: int) -> bool:
    """Whether the step keyword at `at` counts the steps of a run (`Total optimization steps = 60`, `max_steps=100`,
    `Total prediction steps = 13`) rather than naming the current one: a total/max/num word just before it."""
    return _STEP_TOTAL.search(body[max(0, at - 40):at]) is not None


def continues(body: str) -> bool:
    """An indented line that continues the record above it: a value (or only decoration) and no counter of its own
    (Megatron's ` iteration 30/ ...` is indented too, and is the next record; rsl_rl's `  Total steps: 2304` counts
    the run's steps, a field of the block: step_total)."""
    return body[:1] in " \t" and CONTINUATION.search(body) is not None and not (
        any(not step_total(body, m.start()) for m in KEYWORD.finditer(body)) or EPOCH_BRACKET.search(body) or
        BRACKET.search(body) or TQDM.search(body))
