"""What TensorFlow / Keras state about a run's pace in its own words, as event rows (one scanner, fed by
readers/runtime_logs.py before the step grammar). Wordings from the sources (keras / tensorflow `callbacks.py`,
`recurrent_v2.py`, `data_adapter.py`, TF C++ `shuffle_dataset_op.cc`, grappler `implementation_selector.cc`):

  callback timing  Keras 1: "Method on_batch_end() is slow compared to the batch update (M). Check your callbacks."
                   Keras 2.2-2.3 / TF <= 2.1: "Method (on_train_batch_end) is slow compared to the batch update (M)."
                   — M the median time of the hook over the last 10 batches, warned when M > 0.95 x the last batch's
                   own time and M > 0.1 s; TF 2.2-2.3 "Callbacks method `H` is slow compared to the batch time
                   (batch time: Bs vs `H` time: Hs). Check your callbacks.", TF >= 2.4 / Keras 2-3 "Callback method
                   ..." (the same numbers: the mean batch and hook times over the first 5 timed batches, checked
                   once) → a `callback_slow` event: "hook H: H s after batches of B s"
  cuDNN fallback   "Layer L will not use cuDNN kernel(s) since it doesn't meet the (cuDNN kernel) criteria. It will
                   use (a) generic GPU kernel as fallback when running on GPU" → a `kernel_fallback` event: every step
                   of that layer runs the generic kernel (recurrent_dropout, a non-tanh activation, unroll, ... break
                   the cuDNN criteria), which the run's own pace cannot show
  input exhausted  "Your input ran out of data; interrupting training. Make sure that your dataset or generator can
                   generate at least `steps_per_epoch * epochs` batches (in this case, N batches)." → an
                   `input_exhausted` event (training ends there), once per rank; the progress bar Keras then draws to
                   its end ("562/562 [===] - 1s 891us/step") is read as the cut epoch's and no step record: its time
                   covers only the steps run before the input ended, divided by all of them. The same warning comes
                   from evaluate() when validation_steps exceeds the validation set (N = validation_steps), and
                   training goes on: when the epoch's bar and its `Epoch k/E` are known, N must be the bar's steps
                   times the epochs planned (between E-k+1 and E) to be training's; otherwise it ends nothing and
                   the epoch's bar is a step
  shuffle buffer   tf.data "Filling up shuffle buffer (this may take a while): N of M", logged every 10 s
                   (kLogIntervalMicros) of a fill, then "Shuffle buffer filled." → a `data_load` event whose duration
                   runs from 10 s before the first progress line to the "filled" line (the GPU waits for the buffer
                   at every new iteration of the dataset, e.g. each epoch)
  benign notes     grappler's "Skipping optimization due to error while loading function libraries: ... both
                   implement '...' but their signatures do not match" (TF 2.0's LSTM/GRU implementation swap; a
                   maintainer, tensorflow/tensorflow#30263: "not an actual error, and can safely ignored") and
                   tf.data's "Encountered a stop event that was not preceded by a start event" are understood and
                   raise nothing

Every pattern is linear; a line is tried only when it holds one of the few needles below.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from playbook.readers.step_log.vocab import NAT

_NUM = r"(\d{1,9}(?:\.\d{1,9})?(?:[eE][-+]?\d{1,3})?)"
# the hook's name: Keras 1 "on_batch_end()", Keras 2.2 "(on_train_batch_end)", TF >= 2.2 "`on_train_batch_end`"
_CB_MEDIAN = re.compile(r"\bMethod \(?`?(on_\w{1,40}?)(?:\(\))?`?\)? is slow compared to the batch update \(" + _NUM
                        + r"\)")
_CB_MEANS = re.compile(r"\bCallbacks? method `(on_\w{1,40})` is slow compared to the batch time \(batch time: " + _NUM
                       + r"\s?s vs `on_\w{1,40}` time: " + _NUM + r"\s?s\)")
_FALLBACK = re.compile(r"\bLayer (\S{1,200}) will not use cuDNN kernels? since it doesn'?t meet the (?:cuDNN kernel )?"
                       r"criteria\. It will use (?:a )?generic GPU kernel as fallback")
_EXHAUSTED = re.compile(r"\bYour input ran out of data; interrupting training\.(?:.{0,200}?\(in this case, ([\d.]{1,15}) "
                        r"batches\))?")
# Keras's progress bar at its end: "562/562 [=====] - 1s 891us/step ..." or verbose=2's "562/562 - 1s - loss: ..."
_BAR_END = re.compile(r"^\s{0,12}(\d{1,12})/\1 (?:\[=*\] )?- ")
_BAR = re.compile(r"^\s{0,12}\d{1,12}/(\d{1,12}) (?:\[[=>.]*\] )?- ")  # any of Keras's bars: its steps per epoch
_EPOCH_HEAD = re.compile(r"^\s{0,12}Epoch (\d{1,9})/(\d{1,9})\s*$")
_SHUFFLE_FILLING = re.compile(r"Filling up shuffle buffer \(this may take a while\): (\d{1,15}) of (\d{1,15})")
_SHUFFLE_FILLED = "Shuffle buffer filled."
_BENIGN = ("Skipping optimization due to error while loading function libraries",
           "Encountered a stop event that was not preceded by a start event")
_NEEDLES = ("slow compared to the batch", "cuDNN kernel", "ran out of data", "shuffle buffer", "Shuffle buffer",
            *_BENIGN)
MEDIAN_RULE = 0.95  # Keras <= 2.3 warns when the hook's median time exceeds this share of the batch's own time
SHUFFLE_LOG_S = 10.0  # tf.data logs a fill's progress every 10 s of it (shuffle_dataset_op.cc kLogIntervalMicros)


class KerasLines:
    """The scanner: `feed(line)` → "events" when it understood the line, else None; events through `add(line, kind,
    detail, duration)` (readers/lines.py `_EventLines._add`)."""

    def __init__(self, add: Callable[..., int]):
        self.add = add
        self.exhausted: dict[int, bool] = {}  # rank -> its input ran out and the cut epoch's bar is still to come
        self.ended: set[int] = set()  # ranks whose input ran out (Keras logs the warning more than once)
        self.filling: dict[int, tuple[int, int]] = {}  # rank -> (time of its first fill-progress line, their count)
        self.epoch: dict[int, tuple[int, int]] = {}  # rank -> its last `Epoch k/E`
        self.steps: dict[int, int] = {}  # rank -> the steps per epoch of its last bar

    def feed(self, ln) -> str | None:
        body = ln.body
        if m := _BAR.match(body):
            self.steps[ln.rank] = int(m[1])
        elif m := _EPOCH_HEAD.match(body):
            self.epoch[ln.rank] = (int(m[1]), int(m[2]))
        if self.exhausted.get(ln.rank):
            if _BAR_END.match(body):
                self.exhausted[ln.rank] = False
                return "events"  # the cut epoch's bar, drawn to its end by Keras: not a step record
            if _EPOCH_HEAD.match(body):
                self.exhausted[ln.rank] = False  # another fit() began (a notebook's next cell): its bars are steps
        if not any(n in body for n in _NEEDLES):
            return None
        if m := _CB_MEANS.search(body):
            batch, hook = float(m.group(2)), float(m.group(3))
            self.add(ln, "callback_slow", f"line {ln.lineno}: Keras callback hook {m.group(1)}: {hook:g} s after "
                                          f"batches of {batch:g} s (the means over the first batches it timed)", hook)
            return "events"
        if m := _CB_MEDIAN.search(body):
            hook = float(m.group(2))
            self.add(ln, "callback_slow", f"line {ln.lineno}: Keras callback hook {m.group(1)}: {hook:g} s (median of "
                                          f"the last 10 batches), more than {MEDIAN_RULE:g} x the batch's own time",
                     hook)
            return "events"
        if m := _FALLBACK.search(body):
            self.add(ln, "kernel_fallback", f"line {ln.lineno}: Keras layer {m.group(1)} will not use the cuDNN kernel "
                                            "and runs the generic GPU kernel in every step")
            return "events"
        if m := _EXHAUSTED.search(body):
            if self._validation(ln.rank, m.group(1)):
                return "events"  # evaluate()'s input ran short of validation_steps: training goes on
            if ln.rank not in self.ended:
                self.ended.add(ln.rank)
                planned = f" before the {m.group(1)} batches planned (steps_per_epoch x epochs)" if m.group(1) else ""
                self.add(ln, "input_exhausted", f"line {ln.lineno}: Keras ended training: the input ran out of "
                                                f"data{planned}")
            self.exhausted[ln.rank] = True
            return "events"
        return self._shuffle(ln) or ("events" if any(n in body for n in _BENIGN) else None)

    def _validation(self, rank: int, planned: str | None) -> bool:
        """Whether the input that ran out was evaluate()'s (validation_steps batches planned), not training's
        (steps per epoch x the epochs planned, from E-k+1 when resumed at epoch k to E): known only when the warning
        states its batches and this rank's bar and `Epoch k/E` came before it."""
        steps, (k, epochs) = self.steps.get(rank), self.epoch.get(rank, (0, 0))
        try:
            batches = float(planned) if planned else None
        except ValueError:
            return False
        if not (steps and epochs and batches):
            return False
        fits = batches % steps == 0 and max(epochs - k + 1, 1) <= batches // steps <= epochs
        return not fits

    def _shuffle(self, ln) -> str | None:
        body = ln.body
        if _SHUFFLE_FILLING.search(body):
            if ln.rank not in self.filling:
                self.filling[ln.rank] = (ln.time, 0)
            first, n = self.filling[ln.rank]
            self.filling[ln.rank] = (first, n + 1)
            return "events"
        if _SHUFFLE_FILLED in body:
            first, n = self.filling.pop(ln.rank, (NAT, 0))
            # the fill began one log interval before its first progress line (or earlier, were lines cut)
            duration = (ln.time - first) / 1e9 + SHUFFLE_LOG_S if n and NAT not in (first, ln.time) else float("nan")
            self.add(ln, "data_load", f"line {ln.lineno}: tf.data filled its shuffle buffer (the GPU waits for it at "
                                      "each new pass over the dataset)", duration)
            return "events"
        return None
