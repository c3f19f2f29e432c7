"""What Kubernetes says happened to a training job's pods, as `kubectl` prints it: each event on the pod it is about.

- `kubectl get pods` (kubectl's printers: `[NAMESPACE] NAME READY STATUS RESTARTS AGE [IP NODE ...]`, the header
  optional): a row whose STATUS says the pod was ended — `Evicted` (the kubelet, for a node's memory, disk or a
  preemption: the reason is in its describe), `OOMKilled` (its container over its memory limit), `Error`,
  `CrashLoopBackOff`, `ContainerStatusUnknown` — is an event on that pod; a RESTARTS count above 0 is one event of
  its container dying that often. Running, Pending, Completed rows are no event.
- `kubectl describe pod NAME` (the pod named on the command line, or by its `Name:` field): `Status:` / `Reason:` /
  `Message:` (an evicted pod: "The node was low on resource: memory."), a container's `Last State: Terminated` with
  `Reason: OOMKilled`, and the `Events:` table's rows (`Warning  Evicted  12m (x2 over 13m)  kubelet  The node ...`)
  — each on the described pod.
- `kubectl get events` (`LAST SEEN TYPE REASON OBJECT MESSAGE`): a row about `pod/NAME`, on that pod.

A message is read by the event lexicon (readers.event_lexicon: "The node was low on resource: memory." is the host's
memory, `host_oom`); an eviction whose message names no cause is `job_cancelled` (the orchestrator ended the pod), an
OOMKilled status `host_oom`, a crash `worker_failed`. The pod's name goes in the event's `host`: the subject the
diagnosis names. No times: kubectl prints ages, not clocks.
"""

from __future__ import annotations

import re
from pathlib import Path

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import event_lexicon, textio

FORMAT = "kubectl output (get pods, describe pod, get events)"

_CMD = re.compile(r"^(?:\([^()\n]{1,60}\)\s+)?(?:\[[^\]\n]{0,200}\][$#]|\S{0,200}?[$#>]?)\s*kubectl\s+(?P<verb>get|describe|top|logs)\b(?P<rest>.{0,400})$")
_GET_HEADER = re.compile(r"^(?:NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\b")
_EVENTS_HEADER = re.compile(r"^(?:NAMESPACE\s+)?LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\b")
_READY = re.compile(r"^\d{1,3}/\d{1,3}$")
_AGE = re.compile(r"^(?:\d{1,6}[smhdy])+$|^<invalid>$|^<unknown>$")
_FIELD = re.compile(r"^\s{0,12}(?P<key>[A-Z][\w -]{0,40}):(?:\s+(?P<value>\S.{0,600}))?$")
_EVENT_ROW = re.compile(r"^\s*(?P<type>Normal|Warning)\s+(?P<reason>[A-Z]\w{1,60})\s+(?P<age>\S{1,20}(?: \(x\d+ over "
                        r"\S{1,20}\))?)\s+(?P<source>\S.{0,120}?)\s{2,}(?P<message>\S.{0,600})$")
_GET_EVENT_ROW = re.compile(r"^(?:\S+\s+)?(?P<age>\S{1,20})\s+(?P<type>Normal|Warning)\s+(?P<reason>[A-Z]\w{1,60})\s+"
                            r"(?P<object>\S{1,300})\s+(?P<message>\S.{0,600})$")
ENDED = {"Evicted": "job_cancelled", "OOMKilled": "host_oom", "Error": "worker_failed",
         "CrashLoopBackOff": "worker_failed", "ContainerStatusUnknown": "worker_failed"}
_KNOWN_STATUS = set(ENDED) | {"Running", "Pending", "Completed", "Terminating", "ContainerCreating", "Init",
                              "PodInitializing", "ImagePullBackOff", "ErrImagePull", "Unknown", "NotReady"}


def _pod_row(line: str) -> tuple[str, str, int] | None:
    """(name, status, restarts) of a `kubectl get pods` row: the READY `n/m` cell, the name before it, the status
    and restart count after it."""
    cells = line.split()
    for i in (1, 2):  # NAME READY ... or NAMESPACE NAME READY ...
        if len(cells) > i + 3 and _READY.match(cells[i]) and cells[i + 2].isdecimal():
            status = cells[i + 1]
            if status.split(":")[0] in _KNOWN_STATUS and (_AGE.match(cells[i + 3]) or cells[i + 3].startswith("(")):
                name = cells[i - 1]  # `pod/NAME` under kubectl get all / --show-kind
                return name.split("/", 1)[1] if name.startswith(("pod/", "pods/")) else name, status, int(cells[i + 2])
    return None


def _described(rest: str) -> str:
    """The pod a `kubectl describe` command names: `pod NAME`, `pods NAME`, `po NAME`, `pod/NAME` (flags skipped)."""
    words = [w for w in re.sub(r"\s-(?:n|-namespace|l|-selector|-context)[= ]\S+", " ", rest).split()
             if not w.startswith("-")]
    for i, w in enumerate(words):
        if w.startswith(("pod/", "pods/")):
            return w.split("/", 1)[1]
        if w in ("pod", "pods", "po") and i + 1 < len(words):
            return words[i + 1]
    return ""


def _kind(line: str) -> str:
    s = line.strip()
    if not s or s in ("...", "…"):
        return "blank"
    if _CMD.match(s):
        return "command"
    if _GET_HEADER.match(s) or _EVENTS_HEADER.match(s) or re.match(r"^Type\s+Reason\s+Age\s+From\s+Message", s):
        return "header"
    if _pod_row(s) or _EVENT_ROW.match(line) or _GET_EVENT_ROW.match(s):
        return "row"
    if _FIELD.match(line) or set(s) <= set("-"):
        return "field"
    return "other"


def _kinds(lines: list[str]) -> list[str]:
    """Each line's _kind, where what a `kubectl logs` (or `top`) command prints — the pod's own log, its usage
    figures, not kubectl's pod and event printers — is 'printed' up to the next command, and in a describe (after
    its command, or from a `Name:` field at the line's start) an indented line outside the other grammars is the
    describe printer's: a field's continuation (Labels, Tolerations), a container's command and limits (`cpu: 16`),
    its mounts, the conditions table ('described'); outside a describe a `Key: value` line is no field of kubectl's
    ('other')."""
    kinds, printed, describing = [], False, False
    for ln in lines:
        kind = _kind(ln)
        if kind == "command":
            verb = _CMD.match(ln.strip()).group("verb")
            printed, describing = verb in ("logs", "top"), verb == "describe"
        elif kind == "field" and ln.strip().startswith("Name:"):
            describing = True
        elif kind == "other" and describing and ln[:1].isspace():
            kind = "described"
        elif kind == "field" and not describing and not set(ln.strip()) <= set("-"):
            kind = "other"  # `Key: value` outside a describe: a log's line (Lightning's `Epoch 0: 10%|`), not kubectl's
        kinds.append("printed" if printed and kind not in ("command", "blank") else kind)
    return kinds


def sniff(head: str) -> bool:
    """kubectl's output: a get / describe command, a get-pods or get-events header, or two pod rows — in a paste of
    little else (at most one line in five outside kubectl's grammar: a training log that mentions kubectl stays a
    log; what `kubectl logs` prints is the pod's own log, outside it)."""
    lines = head.splitlines()[:300]
    kinds = _kinds(lines)
    commands = [_CMD.match(ln.strip()) for ln, k in zip(lines, kinds, strict=True) if k == "command"]
    found = any(m.group("verb") in ("get", "describe") for m in commands) or "header" in kinds or sum(
        _pod_row(ln.strip()) is not None for ln, k in zip(lines, kinds, strict=True) if k == "row") >= 2
    if not found or not any(k == "row" or (k == "field" and re.match(r"\s*(?:Reason|Message|Status):", ln))
                            for k, ln in zip(kinds, lines, strict=True)):
        return False
    counted = [k for k in kinds if k != "blank"]
    return sum(k in ("other", "printed") for k in counted) * 5 <= len(counted)


def _message_kind(message: str, fallback: str) -> str:
    hit = event_lexicon.match(message)
    return hit.kind if hit is not None else fallback


def read(path: str | Path, **_opts) -> schema.Bundle:
    """One event per ended pod, eviction message, OOM-killed container or warning row (module docstring)."""
    src = str(path)
    rows: list[dict] = []
    subject = ""  # the pod a describe is about
    reason = ""
    skips = schema.SkipCounter(src)

    def add(kind: str, pod: str, detail: str) -> None:
        rows.append({"kind": kind, "host": pod, "detail": detail[:300], "source": src})

    lines = textio.read_text(path).splitlines()
    for no, (raw, kind) in enumerate(zip(lines, _kinds(lines), strict=True), start=1):
        s = raw.strip()
        if kind == "command":
            m = _CMD.match(s)
            subject = _described(m.group("rest")) if m.group("verb") == "describe" else ""
            reason = ""
        elif kind == "row":
            if pod := _pod_row(s):
                name, status, restarts = pod
                if status in ENDED:
                    add(ENDED[status], name, f"{name}: {status} (kubectl get pods)")
                elif restarts > 0:
                    add("worker_failed", name, f"{name}: {status}, restarted {restarts} times (kubectl get pods)")
            elif (m := _EVENT_ROW.match(raw)) and m.group("type") == "Warning":
                add(_message_kind(m.group("message"), "job_cancelled" if m.group("reason") == "Evicted" else
                                  "worker_failed" if m.group("reason") in ("OOMKilling", "BackOff") else "k8s_warning"),
                    subject, f"{subject}: {m.group('reason')}: {m.group('message')}")
            elif (m := _GET_EVENT_ROW.match(s)) and m.group("type") == "Warning":
                obj = m.group("object")
                pod = obj.split("/", 1)[1] if obj.startswith(("pod/", "pods/")) else obj
                add(_message_kind(m.group("message"), "job_cancelled" if m.group("reason") == "Evicted" else
                                  "k8s_warning"), pod, f"{pod}: {m.group('reason')}: {m.group('message')}")
        elif kind == "field":
            m = _FIELD.match(raw)
            key, value = (m.group("key").strip(), (m.group("value") or "").strip()) if m else ("", "")
            if key == "Name" and value and not subject:
                subject = value
            elif key == "Reason":
                reason = value
                if value == "OOMKilled":
                    add("host_oom", subject, f"{subject}: a container terminated, Reason: OOMKilled")
            elif key == "Message" and value:
                add(_message_kind(value, "job_cancelled" if reason == "Evicted" else "k8s_warning"), subject,
                    f"{subject}: {'Evicted: ' if reason == 'Evicted' else ''}{value}")
        elif kind == "other":
            skips.skip(no, "not kubectl output")
        elif kind == "printed":
            skips.skip(no, "a pod's own log or usage (kubectl logs / top)")
    rows = [r for r in rows if r["kind"] != "k8s_warning"]  # a warning no lexicon row explains names no cause
    if not rows:
        raise InputError(f"{src}: kubectl output with no pod ended, evicted, OOM-killed or restarted")
    bundle = schema.Bundle(inputs=[src])
    bundle.events = schema.events_frame({k: [r[k] for r in rows] for k in rows[0]})
    warning = skips.warning(rows_read=len(rows))
    if warning:
        bundle.warnings.append(warning)
    return bundle
