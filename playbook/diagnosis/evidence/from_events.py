"""Fault events as Findings: what the logs state outright (the readers' event lexicon) is evidence by itself.

One Finding per event kind of playbook.knowledge.causes.FAULT_EVENTS: the cause the catalog gives the kind, its confidence,
a weight that does not depend on time lost (a failing GPU is a finding even when the run died before losing any),
the ranks and hosts it names (not for an event the waiting ranks log, causes.WAITERS_EVENTS) and the first line as
evidence. Xid codes that report the application's own error
(playbook.knowledge.causes.APPLICATION_XIDS) are left out, unless the driver says a hardware Xid caused them
("Xid (PCI:0000:dc:00): 45, ... caused by previous Xid 149": an NVLink fault).

`run_end` names the event a run ended on (causes.ENDING_EVENTS), for the verdict to say so.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from playbook.analysis.step_pace import run_restarts
from playbook.diagnosis.findings import Finding
from playbook.knowledge import ids as cause_ids
from playbook.knowledge.causes import (
    APPLICATION_XIDS,
    ENDING_EVENTS,
    FAULT_EVENTS,
    WAITERS_EVENTS,
    cause_of_event,
)
from playbook.readers import textio
from playbook.readers.lines import ROOT_CAUSE

# "NVRM: Xid (PCI:0000:3b:00): 79, pid=..." (the code after the bus id, not the bus id's own digits), "Xid 79"
XID_CODE = re.compile(r"\bXid\b\s*(?:\([^)]{0,40}\))?\s*:?\s*(\d{1,4})\b", re.IGNORECASE)
XID_CAUSE = re.compile(r"caused by previous Xid (\d{1,4})\b", re.IGNORECASE)
FAULT_WEIGHT = 0.9  # a stated fault counts nearly fully, whatever it cost
# The device a kernel or driver line is about, by its PCI address (domain:bus:device[.function]) after the words that
# introduce one: the NVIDIA driver's "Xid (PCI:0000:07:00)", "NVRM: GPU 0000:0a:00.0:", "GPU at PCI:0000:02:00",
# "The NVIDIA GPU 0000:b3:00.0", NVML's "device handle for GPU 0000:BA:00.0", the PCI core's "pci 0000:0c:00.0:"
# and AER's "pcieport 0000:00:03.0:", and the kernel naming a device by the driver bound to it (dev_printk's "%s %s:")
# when that driver is NVIDIA's: "nvidia 0000:3b:00.0: PCIe Bus Error: ..." is AER on the GPU's own end of the link
# (a bare "12:34:56" is a time, never an address: the domain has 4-8 digits)
_DEVICE = re.compile(r"(?:\bPCI:|\bGPU\s?(?:at PCI:)?|\bnvidia |\b(?P<kernel>pci|pcieport) )"
                     r"(?P<dom>[0-9A-Fa-f]{4,8}):(?P<bus>[0-9A-Fa-f]{2}):(?P<dev>[0-9A-Fa-f]{2})(?:\.[0-7])?\b")


def device_named(text: str) -> str:
    """The device a fault line names, as "GPU 0000:07:00" (an NVIDIA driver or NVML line) or "PCI 0000:0c:00" (the
    kernel's PCI core, whatever the device), the function dropped and the domain four digits; "" when it names none."""
    m = _DEVICE.search(text)
    if not m:
        return ""
    return (f"{'PCI' if m.group('kernel') else 'GPU'} {int(m.group('dom'), 16):04x}:{m.group('bus').lower()}:"
            f"{m.group('dev').lower()}")


def _culprit(rank: int, host: str, detail: str) -> str:
    """Who a fault event names: its rank, else its host with the device its line names ("worker4 GPU 0000:07:00")."""
    if rank >= 0:
        return f"rank {rank}"
    device = device_named(detail)
    return f"{host} {device}" if device else host


MANY_HOSTS = 3  # hosts alike in memory pressure: fewer may share a culprit (one rack, one bad image)


def _every_host(events: pd.DataFrame, rows: pd.DataFrame, cid: str) -> int:
    """How many hosts, when memory pressure is stated on every host the events name and on MANY_HOSTS or more (a
    Ray cluster's raylets all spilling, every node OOM-killing): the workload's memory demand, no node's defect, so
    the finding names none; else 0. One host of many under pressure stays named."""
    if cid != cause_ids.MEMORY_PRESSURE or (rows["rank"] >= 0).any():
        return 0
    hosts, named = set(rows["host"].astype(str)) - {""}, set(events["host"].astype(str)) - {""}
    return len(hosts) if len(hosts) >= MANY_HOSTS and hosts >= named else 0


def from_fault_events(events: pd.DataFrame) -> list[Finding]:
    """One Finding per fault event kind found in `events` (see the module docstring)."""
    kinds = events["kind"].astype(str).str.lower()
    out = []
    for kind, conf in FAULT_EVENTS.items():
        rows = events[kinds == kind]
        if kind == "xid" and len(rows):
            text = rows["detail"].astype(str)
            codes = text.str.extract(XID_CAUSE)[0].fillna(text.str.extract(XID_CODE)[0])
            rows = rows[~codes.astype(float).isin(APPLICATION_XIDS)]
        cid = cause_of_event(kind)
        if rows.empty or cid is None:
            continue
        names = [] if kind in WAITERS_EVENTS else list(dict.fromkeys(
            _culprit(int(r), str(h), str(d)) for r, h, d in zip(rows["rank"], rows["host"], rows["detail"], strict=True)))
        first = str(rows["detail"].iloc[0])[:200]
        if (every := _every_host(events, rows, cid)):
            names, first = [], f"{first} — on every one of the {every} hosts the logs name: the workload's demand"
        out.append(Finding(cid, f"{len(rows)} {kind} event{'s' if len(rows) > 1 else ''} in the logs: {first}",
                           confidence=conf, weight=FAULT_WEIGHT, lost_share=0.0, names=tuple(names[:16]),
                           source="events",
                           anomaly=conf * FAULT_WEIGHT))
    return out


# torch._dynamo.config.recompile_limit (cache_size_limit before torch 2.6), default 8: how often torch recompiles one
# frame before it warns ("torch._dynamo hit config.recompile_limit (8)"; "Excessive recompilations can degrade
# performance due to the compilation overhead of each recompilation") and runs the frame eagerly from then on
RECOMPILE_LIMIT = 8
_LIMIT_HIT = re.compile(r"\bhit (?:config\.[a-z_]{0,40}limit\b|recompilation cache limit)|limit reached", re.IGNORECASE)
# a frame is its code object: the function with its file and line ("forward" is the name of every module's frame)
_FRAME = re.compile(r"recompiling (\S+ in [^\s;,'\"]+)|frame (\d+) compiled again")
_JAX_FRAME = re.compile(r"^line \d{1,12}: recompiling \S{1,300} in jit;")  # readers/runtime_logs.py's JAX records
# TensorFlow's own warning of excessive retracing (readers/runtime_logs.py): it logs it when at least 5 of the
# calls within 10 of each other traced the function anew, at most twice per function
_TF_WARNING = re.compile(r"traced anew on (\d+) of the last (\d+) calls")
# a guard on one local compared with a number (`L['t'] == 3`, `L['lr'] == 0.001`): dynamo specialised the frame on
# that value (a float read whole, not as its integer part)
_INT_GUARD = re.compile(r"guard: (L\[[^\]]{1,80}\]) == (-?\d{1,18}(?:\.\d{1,18})?(?:[eE][-+]?\d{1,3})?)(?![\w.])")
# distinct values of one such guard in a frame's recompiles that make it a counter: a flag or a mode takes two
# (train / eval, True / False); a third value that fails the guard is a number that changes between calls, and
# each new value is one more compilation until the recompile limit, then the frame runs eagerly
COUNTER_VALUES = 3


def from_recompile_events(events: pd.DataFrame, timed_steps: bool) -> list[Finding]:
    """Recompilation as a finding on its own, where torch says so: a frame hit its recompile limit; or, where no step
    times can measure the recompiles (evidence/from_steps.py does where they can), as many recompiles of one frame
    logged as that limit allows (RECOMPILE_LIMIT) in one process (the limit is each process's: eight ranks each
    compiling a frame again once are one recompile each); JAX compiles are counted by step times only."""
    rc = events[events["kind"].astype(str).str.lower() == "recompile"]
    detail = rc["detail"].astype(str)
    hit = detail[detail.str.contains(_LIMIT_HIT)]
    frames = detail.str.extract(_FRAME)
    frame = frames[0].fillna("frame " + frames[1].fillna("")).where(frames.notna().any(axis=1))
    who = [rc[c].astype(str) for c in ("host", "rank") if c in rc]
    if who and pd.concat(who, axis=1).drop_duplicates().shape[0] > 1:  # several processes: name the one
        frame = frame + " on " + pd.concat(who, axis=1).agg(" rank ".join, axis=1).str.strip()
    # the limit is torch's: a JAX jit has none and compiles once per signature it meets, static arguments included
    # (jax.random's jitted samplers, once per parameter shape at init), so a JAX function's count is no finding
    per_frame = frame[~detail.str.contains(_JAX_FRAME)].dropna().value_counts()
    tf = detail.str.extract(_TF_WARNING).dropna()
    if len(hit):
        text = f"torch says a frame recompiled up to its limit and runs eagerly from then on: {hit.iloc[0][:200]}"
    elif len(tf):
        at = tf.index[0]
        name = frame.get(at) if isinstance(frame.get(at), str) else "a tf.function"
        text = (f"TensorFlow says {name} traced anew on {tf.iloc[0, 0]} of the last "
                f"{tf.iloc[0, 1]} calls (its warning of excessive retracing: each trace runs the Python function "
                f"again and builds a new graph while the GPU waits)")
    elif not timed_steps and (counter := _counter_guard(frame, detail)):
        text = counter
    elif not timed_steps and len(per_frame) and per_frame.iloc[0] >= RECOMPILE_LIMIT:
        text = (f"{per_frame.iloc[0]} recompilations of {per_frame.index[0]} logged: as many as torch allows one "
                f"frame (recompile_limit {RECOMPILE_LIMIT}) before it warns of excessive recompilation; e.g. "
                f"{' '.join(detail[frame == per_frame.index[0]].iloc[-1].split())[:160]}")
    else:
        return []
    return [Finding(cause_of_event("recompile"), text, confidence=0.8, weight=FAULT_WEIGHT, lost_share=0.0,
                    source="events", anomaly=0.8 * FAULT_WEIGHT)]


def _counter_guard(frame: pd.Series, detail: pd.Series) -> str:
    """The words for a frame recompiled on COUNTER_VALUES or more values of one numeric guard, else ""."""
    guards = detail.str.extract(_INT_GUARD).assign(frame=frame).dropna()
    for (name, var), values in guards.groupby(["frame", 0])[1]:
        seen = list(dict.fromkeys(values))
        if len(seen) >= COUNTER_VALUES:
            return (f"{len(values)} recompilations of {name}, each on a new value of {var} "
                    f"({', '.join(seen[:6])}{', ...' if len(seen) > 6 else ''}): torch specialised the frame on a "
                    f"number that changes between calls, so every new value compiles it again (up to its "
                    f"recompile_limit {RECOMPILE_LIMIT}, then it runs eagerly)")
    return ""


LINE_NO = re.compile(r"^line (\d{1,12}):")


def run_end(events: pd.DataFrame, steps: pd.DataFrame, lines_meta: dict | None = None) -> dict | None:
    """The event the run ended on, or None: an event of causes.ENDING_EVENTS after the last training step (past
    the last step record's line of its own file, `lines_meta[source]["last_step_line"]` from readers.lines; or at
    or past the last step's number or time; any, when there are no steps); of those, the first whose kind
    measures a cause, else the one a launcher's summary calls its root cause (readers.lines.ROOT_CAUSE), else the
    first. {kind, words, host, rank, step, time (ISO or None), detail}."""
    if events is None or events.empty:
        return None
    ending = events[events["kind"].astype(str).str.lower().isin(ENDING_EVENTS)]
    whole = steps[steps["phase"] == "step"] if len(steps) else steps
    if len(ending) and len(whole):
        after = (ending["step"] >= 0) & (ending["step"] >= int(whole["step"].max()))
        last = whole["time"].max()
        if pd.notna(last):
            after |= ending["time"].notna() & (ending["time"] >= last)
        lineno = ending["detail"].astype(str).str.extract(LINE_NO)[0].astype(float)
        last_line = ending["source"].astype(str).map(
            lambda s: ((lines_meta or {}).get(s) or {}).get("last_step_line") or 0).astype(float)
        after |= (last_line > 0) & (lineno > last_line)
        ending = ending[after]
    if ending.empty:
        return None
    named = ending["kind"].astype(str).map(cause_of_event).notna()
    root = ending["detail"].astype(str).str.endswith(ROOT_CAUSE)  # the failure the launcher saw first
    row = ending[named].iloc[0] if named.any() else ending[root].iloc[0] if root.any() else ending.iloc[0]
    kind = str(row["kind"]).lower()
    words = (death_words(str(row["detail"])) if kind == "worker_failed" else None) or ENDING_EVENTS[kind]
    host = str(row["host"] or "")
    if "source" in row.index and host == textio.host_from_path(str(row["source"])):
        host = ""  # the file's own name, which readers take for the host of lines that state none: no statement
    return {"kind": kind, "words": words, "host": host, "rank": int(row["rank"]),
            "step": int(row["step"]), "time": None if pd.isna(row["time"]) else row["time"].isoformat(),
            "detail": str(row["detail"])[:200]}


def restarts(events: pd.DataFrame) -> dict | None:
    """The run's restarts into its own log whose time between the runs the log shows ("restart" events at a step
    with a duration: a time-stamped step counter that went back, readers/step_log/table_gaps.py), or None:
    {count, seconds between the runs}. (A step logged again in a text log names no such time, and is as often
    several roles or pasted runs on one counter: reruns.py; a telemetry logger's restart names no step.)"""
    if events is None or events.empty:
        return None
    rows = events[run_restarts(events) & (events["duration_s"].astype(float) >= 0)]
    if rows.empty:
        return None
    return {"count": len(rows), "seconds": float(rows["duration_s"].astype(float).sum())}


# the signal a process died of, as its launcher prints it: torchelastic "exitcode: -9" (its summary: "exitcode  :
# -9"), a shell's "exit code 137" (128 + the signal), Python's "Signals.SIGKILL", the DataLoader's "killed by signal:
# Killed", bash's job report "line 27:   318 Killed   sh start.sh" (strsignal's words), Open MPI's "exited on signal
# 9 (Killed)"
_SIGNAL = re.compile(r"exit ?code\s{0,4}:?\s{0,4}-(\d{1,2})\b|exit (?:code|status):? ?(1[3-5]\d)\b|"
                     r"Signals\.SIG([A-Z]{3,4})\b|(?:by signal:?|\b\d+)\s{1,8}"
                     r"(Killed|Terminated|Segmentation fault|Aborted|Bus error)\b|\bexited on signal (\d{1,2})\b",
                     re.IGNORECASE)
_SIGNAL_NAMES = {"KILL": 9, "KILLED": 9, "TERM": 15, "TERMINATED": 15, "SEGV": 11, "SEGMENTATION FAULT": 11,
                 "ABRT": 6, "ABORTED": 6, "BUS": 7, "BUS ERROR": 7}
# what each signal usually means for a training process (signal(7); the OOM killer sends SIGKILL)
_SIGNAL_WORDS = {
    9: "a process killed by SIGKILL (most often the host's OOM killer, else the scheduler or a person: "
       "`dmesg -T | grep -i -e oom -e killed` on its host tells)",
    15: "a process terminated by SIGTERM (the scheduler or a person stopping it: preemption, a time limit, a "
        "cancel)",
    11: "a process that crashed with SIGSEGV (a segmentation fault in native code: an extension, a driver, a "
        "DataLoader worker)",
    6: "a process that aborted (SIGABRT: a failed check in native code, e.g. a CUDA or NCCL abort)",
    7: "a process that died of SIGBUS (a bus error: most often /dev/shm too small for DataLoader workers)",
}


def death_words(detail: str) -> str | None:
    """The verdict's words for a process that died of a signal its launcher names (see _SIGNAL), else None."""
    m = _SIGNAL.search(detail)
    if not m:
        return None
    if m.group(5):
        sig = int(m.group(5))
    elif m.group(1) or m.group(2):
        sig = int(m.group(1)) if m.group(1) else int(m.group(2)) - 128
    else:
        sig = _SIGNAL_NAMES.get((m.group(3) or m.group(4) or "").upper(), 0)
    return _SIGNAL_WORDS.get(sig)


# PyTorch's watchdog line: "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=N, OpType=OP, ...) ran for
# M milliseconds before timing out"; the collective began M ms before the line
_WATCHDOG_RAN = re.compile(r"SeqNum=(\d{1,12}), OpType=(\w{1,40}).{0,200}? ran for (\d{1,12}) milliseconds")
SAVE_NEAR_S = 60.0  # a checkpoint line this close to the moment the timed-out collective began is where it began


def timeout_after_save(events: pd.DataFrame) -> list[Finding]:
    """A watchdog timeout whose collective began as a checkpoint save began (its line's time minus the time it ran,
    within SAVE_NEAR_S of a checkpoint event): the ranks that reached the collective waited the whole timeout for a
    rank still saving (rank 0 writes a checkpoint that is not sharded) — a save that outlasts the process group's
    timeout, stated by the two lines' clocks (ai2cm/ace#851: a save at 10:28:25, a 1,200 s timeout at 10:48:25). A save
    whose lines state it done in fewer seconds than the collective ran is not one (it ended long before the timeout)."""
    if events is None or events.empty or "time" not in events:
        return []
    kinds = events["kind"].astype(str)
    save_rows = events[kinds.isin(["checkpoint", "save", "checkpoint_write"]) & events["time"].notna()]
    if save_rows.empty:
        return []
    took = (save_rows["duration_s"].astype(float) if "duration_s" in save_rows
            else pd.Series(np.nan, index=save_rows.index))
    for t, detail in zip(events.loc[kinds == "nccl_timeout", "time"], events.loc[kinds == "nccl_timeout", "detail"],
                         strict=True):
        m = _WATCHDOG_RAN.search(str(detail))
        if m is None or pd.isna(t):
            continue
        began = t - pd.Timedelta(milliseconds=int(m.group(3)))
        # a save its lines state done in fewer seconds than the collective ran was over long before the timeout:
        # not what the ranks waited for
        saves = save_rows.loc[~(took < int(m.group(3)) / 1e3), "time"]
        near = saves[(saves - began).abs() <= pd.Timedelta(seconds=SAVE_NEAR_S)]
        if near.empty:
            continue
        gap = (began - near.iloc[0]).total_seconds()
        return [Finding(cause_ids.PERIODIC_STALL,
                        f"{m.group(2)} #{m.group(1)} timed out after {int(m.group(3)) / 1e3:.0f} s, and began "
                        f"{abs(gap):.0f} s {'after' if gap >= 0 else 'before'} the checkpoint save logged at "
                        f"{near.iloc[0]:%Y-%m-%d %H:%M:%S}: the ranks waited in it for a rank still saving (rank 0 "
                        "writes a checkpoint that is not sharded) — a save longer than the process group's timeout; "
                        "time the save on the saving rank, save asynchronously or sharded, or raise the timeout",
                        confidence=0.9, weight=FAULT_WEIGHT, lost_share=0.0, source="events", anomaly=0.9 * FAULT_WEIGHT)]
    return []


# Keras's callback timing statements (readers/keras_statements.py): "hook H: H s after batches of B s" (the means over
# the first batches it timed, TF >= 2.2) or "hook H: H s (median of the last 10 batches), more than 0.95 x ..."
_CALLBACK = re.compile(r"hook (\S{1,40}): ([\d.eE+-]{1,20}) s(?: after batches of ([\d.eE+-]{1,20}) s)?")
MEDIAN_SHARE = 0.95 / 1.95  # Keras <= 2.3 warns at a hook median above 0.95 x the batch: at least this share between
# a step's wall time (callbacks included) below the hook's stated time: the hook did not run that long after each step
RECUR = 1.0


def slow_callbacks(events: pd.DataFrame, steps: pd.DataFrame) -> list[Finding]:
    """Keras's own statement that a callback hook ran longer than the batch it follows, as time between steps: the
    share H / (H + B) of each step's wall time (at least 0.95 / 1.95 for the older wording, which states the median
    hook time only). Keras times the hook over the first batches only (TF >= 2.4: five) or over the last ten: when the
    same log's steps (Keras's bar: the epoch's wall time per step, callbacks included) take less than RECUR x the
    hook's time, the hook cannot have run that long after every batch — a one-off at the start (a profiler starting,
    the first save), no finding; likewise when the batch time B is stated and the steps take less than B + H / 2 (a
    hook after every batch makes a step about B + H, a one-off leaves it about B); when they take longer, the hook's
    share is H over the step's wall time."""
    if events is None or events.empty:
        return []
    detail = events.loc[events["kind"].astype(str) == "callback_slow", "detail"].astype(str)
    found = detail.str.extract(_CALLBACK).dropna(subset=[1])
    if found.empty:
        return []
    at = found[1].astype(float).idxmax()
    hook_name, hook = found.loc[at, 0], float(found.loc[at, 1])
    batch = float(found.loc[at, 2]) if isinstance(found.loc[at, 2], str) else None
    timed = steps.loc[steps["phase"] == "step", "duration_s"].astype(float).dropna() if len(steps) else pd.Series()
    step_s = float(timed.median()) if len(timed) else None
    if hook <= 0 or (step_s is not None and step_s < RECUR * hook):
        return []
    if step_s is not None and batch and step_s < batch + hook / 2:
        return []  # a hook after every batch makes a step about B + H, a one-off leaves it about B: nearer B
    if step_s is not None:
        share = min(hook / step_s, 1.0)
        how = f"of the {step_s:g} s each step takes in the same log"
    elif batch:
        share = hook / (hook + batch)
        how = f"after batches of {batch:g} s"
    else:
        share = MEDIAN_SHARE
        how = "its median over the last 10 batches, above 0.95 x the batch's own time"
    text = (f"Keras timed its callbacks: {hook_name} ran {hook:g} s {how} — about {share:.0%} of the wall time goes "
            f"to callbacks between the steps while the GPU waits (Keras's warning \"... is slow compared to the "
            f"batch ...\"); {str(detail.loc[at])[:120]}")
    # Keras measured the hook itself, and a hook after every batch slows the run's own pace with it (the step times
    # cannot show it): a direct measurement, as a debugging mode the framework states (causes.FAULT_EVENTS)
    return [Finding(cause_ids.BETWEEN_STEPS, text, confidence=0.9, weight=FAULT_WEIGHT, lost_share=round(share, 4),
                    source="events", anomaly=0.9 * FAULT_WEIGHT)]
