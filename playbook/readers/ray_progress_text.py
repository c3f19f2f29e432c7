"""Ray Data's progress snapshots, read wherever they appear in a text log (a line scanner fed through
input_pipeline_text.InputPipelineText; the findings: analysis/ray_progress.py). Each snapshot is the streaming
executor's resource line and one line (or two) per operator, as its three printers write them:

- logging_progress.py (non-interactive, Ray 2.5x): `======= Running Dataset: <id> =======`, `Total Progress: d/t`,
  `Active & requested resources: c/C CPU, [m/M memory, ]g/G GPU, used/limit object store (pending: ...)` — the GPU term
  only while GPUs run (`f"{running_usage.gpu:.4g}/{limits.gpu:.4g} GPU, "`; later versions put `(input=N, outputs=N,
  ...)` before the pending part) — then per operator `<name>: done/total`
  and on the next line `  Tasks: N[ [backpressured:...]]; Actors: N (running=r, restarting=, pending=p, active=a,
  idle=i, util=u, tasks_in_flight=); Queued blocks: N (size); Resources: x CPU, y GPU, z object store`;
- the tqdm bars (2.4x-2.5x): `Running Dataset: <id>. Active & requested resources: ...` and `- <name>: Tasks: N ...;
  Queued blocks: N; Resources: ...` on one line, the bar after it;
- the older bars (2.2x-2.3x): `Running: c/C CPU, g/G GPU, used/limit object_store_memory` and `- <name>: N active, N
  queued, [cpu: x, gpu: y, objects: z], N actors (N pending)`.

A snapshot is what the executor held at one moment: how many of the cluster's GPUs ran, and per operator its
finished and total outputs, running tasks and actors, and the blocks queued at its input (work waiting for it).
"""

from __future__ import annotations

import re

_N = r"(\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
_RESOURCES = re.compile(r"(?:Active & requested resources|(?<![\w-])Running):\s*" + _N + "/" + _N + r" CPU,"
                        r"(?:\s*\S+/\S+ memory,)?(?:\s*" + _N + "/" + _N + r" GPU,)?\s*\S+/\S+ object[ _]store"
                        r"(?:_memory)?(?:[^(\n]{0,40}(?:\([^()\n]{0,160}\)\s{0,3})?\(pending:(?P<pending>[^)]{0,80})\))?")
_PENDING_GPU = re.compile(_N + r" GPU")
_HEADER = re.compile(r"=+ Running Dataset: (\S{1,200}) =+|Running Dataset: ([^\s.]{1,200})\.\s+Active & requested")
_TOTAL = re.compile(r"(?:^|-- |\s)(?:- )?(?P<name>[A-Za-z_][^:]{0,300}?): (?P<done>\d{1,15})/(?P<total>\d{1,15})\s*$")
_DETAIL = re.compile(r"(?:^|\s|- )(?:(?P<name>[A-Za-z_][^:]{0,300}?): )?Tasks: (?P<tasks>\d{1,9})(?P<bp> \[backpressured"
                     r"[^\]]{0,60}\])?; (?:Actors: (?P<actors>\d{1,9})(?: \((?P<ad>[^)]{0,200})\))?; )?Queued blocks: "
                     r"(?P<queued>\d{1,12})(?: \((?P<qsize>[^)]{0,30})\))?; Resources: (?P<res>[^;:\n]{0,200})")
_OLD = re.compile(r"(?:^|\s)- (?P<name>[A-Za-z_][^:]{0,300}?): (?P<tasks>\d{1,9}) active, (?P<queued>\d{1,12}) queued, "
                  r"\[(?P<res>[^\]]{0,200})\](?:, (?P<actors>\d{1,9}) actors(?: \((?P<pend>\d{1,9}) pending\))?)?")
# an operator's name (`ReadParquet->Map(decode)`, `MapBatches(Infer)`, `limit=1`, `split(8, equal=True)`): any other
# `name: 3/10` after a snapshot (a trainer's `Step: 3/10`) is not the executor's
_OPERATOR = re.compile(r"->|\(|=|^(?:Read|Write|Map|Filter|FlatMap|Limit|Split|Sort|Aggregate|Repartition|Random|Zip|"
                       r"Union|Project|Input|Streaming)")
_GPU_RES = re.compile(r"(?:gpu: " + _N + r"|" + _N + r" GPU)")
_ACTOR_FIELD = re.compile(r"(running|pending|active|idle|util)=(\d+(?:\.\d+)?)")
MAX_SNAPSHOTS = 2000


class RayProgress:
    """Line scanner: feed(body) True for a line of a progress snapshot (module docstring)."""

    def __init__(self):
        self.snapshots: list[dict] = []  # at most MAX_SNAPSHOTS, evenly spaced over the run (every `_stride`-th)
        self._cur: dict | None = None  # the snapshot being read (kept in `snapshots` or not)
        self._seen, self._stride = 0, 1
        self._name: tuple[str, int, int] | None = None  # `<name>: done/total`, for the Tasks line after it

    def feed(self, body: str) -> bool:
        header = _HEADER.search(body) if "Running Dataset" in body else None
        r = _RESOURCES.search(body) if "CPU" in body else None
        if header or r:
            if header or self._cur is None or self._cur["cpu_limit"] is not None:
                self._cur = _snapshot(header and (header.group(1) or header.group(2)))
                if self._seen % self._stride == 0:  # a long run thinned evenly, not cut after its first snapshots
                    self.snapshots.append(self._cur)
                    if len(self.snapshots) > MAX_SNAPSHOTS:
                        self.snapshots, self._stride = self.snapshots[::2], self._stride * 2
                self._seen += 1
            self._name = None
            if r is not None:
                s = self._cur
                s["cpu_used"], s["cpu_limit"] = float(r.group(1)), float(r.group(2))
                s["gpu_used"] = float(r.group(3)) if r.group(3) else 0.0
                s["gpu_limit"] = float(r.group(4)) if r.group(4) else None
                p = _PENDING_GPU.search(r.group("pending") or "")
                s["gpu_pending"] = float(p.group(1)) if p else 0.0
            return True
        if self._cur is None:
            return False  # an operator's line only inside a snapshot: `name: 3/10` alone is any log's
        if "Tasks:" in body and (m := _DETAIL.search(body)):
            return self._operator(m.group("name"), m, _actor_fields(m.group("ad") or ""))
        if " active, " in body and (m := _OLD.search(body)):
            fields = {"running": float(m.group("actors") or 0) - float(m.group("pend") or 0),
                      "pending": float(m.group("pend") or 0)}
            return self._operator(m.group("name"), m, fields)
        if (m := _TOTAL.search(body)) and _OPERATOR.search(m.group("name").strip()):
            self._name = (m.group("name").strip(), int(m.group("done")), int(m.group("total")))
            return True
        if "Total Progress:" in body:
            return True
        return False

    def _operator(self, name: str | None, m, actors: dict) -> bool:
        done = total = None
        if not name and self._name is not None:
            name, done, total = self._name
        self._name = None
        ops = self._cur["operators"]
        if len(ops) < 200:
            g = _GPU_RES.search(m.group("res") or "")
            ops.append({"name": (name or "?").strip(), "done": done, "total": total, "tasks": int(m.group("tasks")),
                        "queued": int(m.group("queued")), "queued_size": (m.groupdict().get("qsize") or "").strip(),
                        "gpu": float(g.group(1) or g.group(2)) if g else 0.0,
                        "backpressured": bool(m.groupdict().get("bp")), **actors})
        return True

    def summary(self) -> list[dict]:
        """The snapshots that state their resources (the cluster's CPUs at least)."""
        return [s for s in self.snapshots if s["cpu_limit"] is not None]


def _snapshot(dataset: str | None) -> dict:
    return {"dataset": dataset, "cpu_used": None, "cpu_limit": None, "gpu_used": 0.0, "gpu_limit": None,
            "gpu_pending": 0.0, "operators": []}


def _actor_fields(text: str) -> dict:
    return {k: float(v) for k, v in _ACTOR_FIELD.findall(text)}
