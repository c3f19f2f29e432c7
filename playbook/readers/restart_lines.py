"""A run restarted or resumed, as its trainer and launcher state it: what the restart cost outside any step's time.

Two kinds of event, each from the tools' own print statements:

  resume          a trainer loading a checkpoint to continue: the step the checkpoint holds (the loaded step), the
                  step the resumed count starts at, the batches it fast-forwards before its first step, and the
                  seconds the resume took when a line states them
                  - Hugging Face Trainer (trainer.py): "Continuing training from global step G" (the run continues
                    from G), "Will skip the first E epochs then the first B batches in the first epoch." (the data
                    fast-forward: transformers#11284, 660,000 batches replayed for 28 h)
                  - torchtitan (checkpoint.py, train.py): "Loading the checkpoint at step N." / "Loading the
                    checkpoint from checkpoint/step-N.", "Finished loading the checkpoint in X seconds.",
                    "Training starts at step S, ..." (torchtitan#571: step 45 loaded, training starts at 26)
                  - fvcore's Checkpointer (detectron2 and its descendants): "[Checkpointer] Loading from
                    output/model_0039999.pth ...", detectron2's "Starting training from iteration S"
                  - Megatron-LM (checkpointing.py): " loading checkpoint from DIR at iteration N", " successfully
                    loaded checkpoint from DIR [ t 1/1, p 1/1 ] at iteration N"
                  - Lightning: "Restoring states from the checkpoint path at PATH", "Restored all states from the
                    checkpoint at PATH" (the step from `step=N` in the file name; its tuner's hidden temporary
                    files, `.lr_find_*.ckpt`, are no resume)
                  - any trainer: "resum(e|ed|ing) ... (took|taken|in) X s(econds)" (Lightning-AI/pytorch-lightning
                    #19377: "resume finished, taken 22534.1 seconds")
                  Without a stated start, the first step record with a step keyword after the load is where the
                  resumed count starts (a progress bar's count is no run counter: it may restart at 0 on resume;
                  nor a record naming its epoch: it may count within it, not on the checkpoint's scale).
                  No resume: fvcore's load with no `Loading optimizer/scheduler/... from` after it (MODEL.WEIGHTS
                  without --resume: a fine-tune counting from 0), Lightning's "Loaded model weights from the checkpoint
                  at" (test / validate after fit), and a fresh run's first load (no step before it, a checkpoint of
                  no step or step 0, the count starting at 0 or 1: pretrained weights or a seed checkpoint).
  worker_restart  a launcher stopping every worker to start them again: torchelastic's agent (api.py) "[default]
                  Worker group FAILED. 3/3 attempts left; will restart worker group" and "[default] Detected 1 new
                  nodes from group_rank=0; will restart worker group" (a membership change); nvidia-resiliency-ext's
                  ft_launcher prints the same. Its duration: until the next step record, else (the log ends first) at
                  least until the last time-stamped line after it.

Steps computed again: a checkpoint of step C loaded and the count starting at S ≤ C runs steps S..C again (C - S + 1;
a file name's number is the last step it holds, as torchtitan's step-N and detectron2's model_{iter:07d} are). The
event's detail states the figures in the words `figures` reads back (the diagnosis prices them: evidence/from_restarts.py).
"""

from __future__ import annotations

import re

import numpy as np

from playbook.readers.step_log.vocab import KEYWORD

# a checkpoint's step from its file or directory name: `step=30899`, `step-50`, `checkpoint-660000`, `iter_0001000`,
# `model_0039999`, `global_step120` (the last such number; an epoch number alone is no step)
_NAME_STEP = re.compile(r"(?:global_step|step|iter|iteration|checkpoint|ckpt|model)[-_=]?0*(\d{1,12})", re.IGNORECASE)
_LOADS = (
    # torchtitan
    re.compile(r"\bLoading the checkpoint (?:at step (?P<step>\d{1,12})\b|from (?P<path>\S{1,300}))"),
    # fvcore Checkpointer (detectron2): "[Checkpointer] Loading from PATH ...", its `[Checkpointer]` head taken off
    # as a logger name by line_prefix (so the raw line must name it)
    re.compile(r"^\s*(?:\[Checkpointer\] )?Loading from (?P<path>\S{1,300}) \.\.\.\s*$"),
    # Megatron-LM
    re.compile(r"\b(?:successfully loaded|loading) checkpoint from (?P<path>\S{1,300}).{0,60}? at iteration "
               r"(?P<step>\d{1,12})\b"),
    # Lightning
    re.compile(r"\b(?:Restoring states from the checkpoint path|Restored all states from the checkpoint(?: file)?) "
               r"at (?P<path>\S{1,300})"),
)
# fvcore's Checkpointer loading the trainer's state beside the model (`Loading optimizer from PATH ...`): only a resume
# does (resume_or_load(resume=False) loads MODEL.WEIGHTS with checkpointables=[]: a fine-tune, its count from 0)
_FVCORE_PART = re.compile(r"^\s*Loading \w{1,40} from \S{1,300} \.\.\.\s*$")
# Lightning's test / validate / predict restoring a checkpoint: its weights only, no training resumed
# (checkpoint_connector.resume_end: "Loaded model weights" where a fit says "Restored all states")
_WEIGHTS_ONLY = re.compile(r"\bLoaded model weights from the checkpoint at\b")
_CONTINUING = re.compile(r"\bContinuing training from (?:checkpoint\b|epoch \d{1,9}\b)")  # HF: the resume's first lines
_CONTINUES = re.compile(r"\bContinuing training from global step (?P<step>\d{1,12})\b")  # HF: the run goes on from G
_SKIPS = re.compile(r"\bWill skip the first (?P<epochs>\d{1,9}) epochs then the first (?P<batches>\d{1,12}) batches")
_STARTS = re.compile(r"\b(?:Training starts at step|Starting training from iteration) (?P<step>\d{1,12})\b")
_TOOK = re.compile(r"\b(?:resum(?:e|ed|ing)\b|finished loading the checkpoint\b).{0,60}?\b(?:took|taken|in)\s?:?\s?"
                   r"(?P<s>\d{1,3}(?:,\d{3}){1,3}(?:\.\d{1,20})?|\d{1,9}(?:\.\d{1,20})?)\s?(?:s|sec|secs|seconds)\b",
                   re.IGNORECASE)  # 3,600 s: thousands set apart
# a step record that names its epoch (`Epoch 4 step 0`, `epoch: 4, batch: 0`) may count within that epoch (the
# grammar counts such records from the log's first epoch): no run count to set against a checkpoint's global step
_EPOCH_WORD = re.compile(r"\bepoch\b", re.IGNORECASE)
_WORKER_RESTART = re.compile(r"\bwill restart worker group\b|\bWorker group FAILED\b.{0,80}\battempts left\b")
# torchelastic's etcd rendezvous (etcd_rendezvous.py) giving up on a round while the workers wait to restart: "Keep-alive
# key /torchelastic/p2p/run_x/rdzv/v_4/rank_1 is not renewed.", "Rendevous version 4 is incomplete." (sic); the c10d
# backend's "The node ... has closed the rendezvous" / a RendezvousTimeoutError
_RDZV_FAILED = re.compile(r"\bKeep-alive key \S{1,200} is not renewed|\bRende?z?vous version \d{1,9} is incomplete|"
                          r"\bRendezvousTimeoutError\b|\bhas closed the rendezvous\b")
_WHY = ((re.compile(r"Detected (\d+) new nodes?"), "a node joined (a membership change)"),
        (re.compile(r"Worker group (?:FAILED|UNHEALTHY)"), "the worker group failed"))

# the detail's words for the figures (figures() reads them back)
_REDONE = re.compile(r"(\d+) steps? computed again")
_SKIPPED = re.compile(r"fast-forwards (\d+) batches")
_TOOK_WORDS = re.compile(r"the resume took ([\d.]+) s")
_DOWN = re.compile(r"(at least )?(?<![\w.+-])([\d.]+) s without a step")
_FIRST = re.compile(r"its first step record came ([\d.]+) s after the load")


def _secs(x: float) -> str:
    """Seconds as figures() reads them back: plain digits, never an exponent (`{:.4g}` writes 5 h as 1.8e+04)."""
    return (f"{x:.1f}" if abs(x) >= 1000 else f"{x:.4f}").rstrip("0").rstrip(".") or "0"


def step_in_name(path: str) -> int | None:
    """The step a checkpoint's file name holds (see _NAME_STEP), None when it states none; a hidden temporary
    file (Lightning's tuner: `.lr_find_*.ckpt`, `.scale_batch_size_*.ckpt`) is no checkpoint of the run."""
    name = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if name.startswith("."):
        return None
    found = _NAME_STEP.findall(path)
    return int(found[-1]) if found else None


def figures(detail: str) -> dict[str, float]:
    """The figures a restart event's detail states: redone (steps computed again), skipped (batches fast-forwarded),
    took (seconds the resume took), down (seconds until the workers stepped again; down_open: at least), first
    (seconds from the load to the first step record: at most the fast-forward's and the reload's)."""
    out: dict[str, float] = {}
    for key, pat in (("redone", _REDONE), ("skipped", _SKIPPED), ("took", _TOOK_WORDS), ("first", _FIRST)):
        if m := pat.search(detail):
            out[key] = float(m.group(1))
    if m := _DOWN.search(detail):
        out["down"], out["down_open"] = float(m.group(2)), float(bool(m.group(1)))
    return out


class ResumeLines:
    """The scanner: `feed(ln)` for every line (True when the line is a resume or restart statement, which is then
    no step record), `stepped(ln, step)` after each step record, `close()` at the end of the file."""

    def __init__(self, add, nat: int):
        self.add, self.nat = add, nat  # add(ln, kind, detail, duration) -> row (lines._EventLines._add)
        self.resume: dict | None = None  # the open resume: its line and the figures read so far
        self.restart: dict | None = None  # the open worker restart
        self.last_time = nat
        self.before: tuple[int, int] | None = None  # (step, time) of the last step record: the run before a restart

    def feed(self, ln) -> bool:
        body = ln.body
        if ln.time != self.nat:
            self.last_time = ln.time
        low = ln.raw.lower()
        if "checkpoint" in low or "training" in low or "resum" in low or "skip" in low:
            if self._feed_resume(ln, body):
                return True
        if self.restart is not None and "rende" in body.lower() and _RDZV_FAILED.search(body):
            self.restart.setdefault("rdzv", body.strip()[:120])  # the first sign the re-rendezvous failed
            return True
        if "worker group" in body.lower() and _WORKER_RESTART.search(body):
            self._close_restart(None)
            why = next((w for pat, w in _WHY if pat.search(body)), "")
            self.restart = {"ln": ln, "why": why, "before": self.before}
            return True
        return False

    def _feed_resume(self, ln, body: str) -> bool:
        for pat in _LOADS:
            if (m := pat.search(body)) and (pat is not _LOADS[1] or "Checkpointer" in ln.raw):
                step = m.group("step") if "step" in pat.groupindex else None
                path = m.group("path") if "path" in pat.groupindex else None
                loaded = int(step) if step else step_in_name(path) if path else None
                if path is not None and loaded is None and path.replace("\\", "/").rsplit("/", 1)[-1].startswith("."):
                    return False  # a tuner's temporary checkpoint, no resume
                self._close_resume()
                self.resume = {"ln": ln, "loaded": loaded, "before": self.before, "weights": pat is _LOADS[1]}
                return True
        if self.resume is not None and self.resume.get("weights") and _FVCORE_PART.search(body):
            self.resume["weights"] = False  # the optimizer / scheduler / iteration too: a resume
            return True
        if _WEIGHTS_ONLY.search(body):
            self.resume = None  # a test or validation loading weights after (or instead of) training
            return True
        if _CONTINUING.search(body):
            self._opened(ln)
            return True
        if m := _CONTINUES.search(body):
            self._opened(ln).update(loaded=int(m.group("step")), continues=True)
            return True
        if m := _SKIPS.search(body):
            self._opened(ln).update(skipped=int(m.group("batches")), epochs=int(m.group("epochs")))
            return True
        if m := _STARTS.search(body):
            if self.resume is None:
                return False  # a fresh run's start (detectron2 logs it at iteration 0 too): no resume
            self.resume["start"] = int(m.group("step"))
            return True
        if m := _TOOK.search(body):
            self._opened(ln)["took"] = float(m.group("s").replace(",", ""))  # closed by the next step record, load or the file's end
            return True
        return False

    def _opened(self, ln) -> dict:
        """The open resume, opened at `ln` when none is (a line of the resume's that names no checkpoint)."""
        if self.resume is None:
            self.resume = {"ln": ln, "loaded": None, "before": self.before}
        return self.resume

    def stepped(self, ln, step: int | None) -> None:
        """A step record: the first after a resume is where its count restarted (unless a line stated it, or the
        record is a bar's count: no step keyword); the first after a worker restart ends that restart's downtime."""
        # whether the record names its step with a keyword: read only while a resume or restart is open
        keyword = (self.resume is not None or self.restart is not None) and bool(KEYWORD.search(ln.body))
        if self.resume is not None:
            r = self.resume
            if ("start" not in r and keyword and step is not None and not r.get("continues")
                    and not _EPOCH_WORD.search(ln.body)):
                r["start_seen"] = step
            if ln.time != self.nat and r["ln"].time != self.nat:
                r["first_after"] = (ln.time - r["ln"].time) / 1e9
            r["first"] = (step, ln.time)
            self._close_resume()
        if self.restart is not None:
            self.restart["first"] = (step if keyword else None, ln.time)
            self._close_restart(ln)
        if step is not None:
            self.before = (step, ln.time)

    def close(self) -> None:
        self._close_resume()
        self._close_restart(None)

    def _again(self, r: dict, start: int | None, loaded: int | None) -> tuple[list[str], float | None]:
        """The words for the steps computed again and the time without a step, and that time (s, None when not
        stated): a count starting at `start` at or below the checkpoint's step or the last step the log holds before
        the restart runs max(those) - start + 1 steps again; the time from the last step before the restart to the
        first after is time without a step."""
        words = []
        last = r["before"][0] if r.get("before") else None
        top = max((x for x in (loaded, last) if x is not None), default=None)
        if top is not None and start is not None and start <= top:
            how = ("starts again at" if "start" in r else
                   f"went back from {last} to" if last is not None and last >= (loaded or -1) else "restarted at or below")
            words.append(f"its count {how} step {start}: {top - start + 1} step{'s' if top - start else ''} computed again")
        before, first = r.get("before"), r.get("first")
        down = None
        if before and first and before[1] != self.nat and first[1] != self.nat and first[1] >= before[1]:
            secs = _secs((first[1] - before[1]) / 1e9)
            down = float(secs)  # the figure as the words state it (figures() reads the same)
            words.append(f"{secs} s without a step (from the last step before it to the first after)")
        return words, down

    def _close_resume(self) -> None:
        r, self.resume = self.resume, None
        if r is None:
            return
        words = []
        loaded, start = r.get("loaded"), r.get("start", r.get("start_seen"))
        if r.get("weights") or ("weights" in r and not r.get("before") and not loaded and start is not None
                                and start <= 1 and not r.get("skipped") and not r.get("continues")):
            return  # the model's weights alone (a fine-tune), or a fresh run's initial load (pretrained, a step-0 seed)
        if loaded is not None:
            words.append(f"resumed from a checkpoint of step {loaded}")
        words += self._again(r, start, loaded)[0]
        if r.get("skipped"):
            words.append(f"it fast-forwards {r['skipped']} batches"
                         + (f" (and {r['epochs']} epochs)" if r.get("epochs") else "")
                         + " before its first step (the loader replays them; the GPUs wait)")
        if r.get("took") is not None:
            words.append(f"the resume took {_secs(r['took'])} s")
        elif r.get("first_after") is not None and not r.get("before"):
            words.append(f"its first step record came {_secs(r['first_after'])} s after the load")
        if not words:
            return
        ln = r["ln"]
        self.add(ln, "resume", f"line {ln.lineno}: {ln.body.strip()[:160]} ({'; '.join(words)})",
                 r["took"] if r.get("took") is not None else np.nan)

    def _close_restart(self, step_ln) -> None:
        r, self.restart = self.restart, None
        if r is None:
            return
        ln = r["ln"]
        words = [r["why"]] if r["why"] else []
        if r.get("rdzv"):
            words.append(f"its re-rendezvous failed ({r['rdzv']})")
        down = np.nan
        if step_ln is None:  # the log ends before the workers step again
            start = r["before"][1] if r.get("before") else ln.time
            if self.last_time != self.nat and start != self.nat and self.last_time >= start:
                down = (self.last_time - start) / 1e9
                words.append(f"at least {_secs(down)} s without a step (the log ends before the workers step again)")
        else:
            first = r.get("first") or (None, step_ln.time)
            again, stated = self._again(r, first[0], None)
            words += again
            if not r.get("before") and step_ln.time != self.nat and ln.time != self.nat and step_ln.time >= ln.time:
                down = (step_ln.time - ln.time) / 1e9
                words.append(f"{_secs(down)} s without a step (from the restart to the first step after)")
            elif stated is not None:
                down = stated
        self.add(ln, "worker_restart", f"line {ln.lineno}: {ln.body.strip()[:200]}"
                 + (f" ({'; '.join(words)})" if words else ""), down)
