"""Which devices a job says it uses: what the frameworks and nvidia-smi print of the GPUs a process sees and the ones
it computes on — kept per input in Bundle.meta (schema.DEVICE_USE + the input's path) for analysis.device_use.

  The accelerator summary a trainer prints at its start (PyTorch Lightning's trainer setup, `_log_device_info`):
      `GPU available: True (cuda), used: False` (older: `GPU available: True, used: False`), beside `TPU available:
      False, using: 0 TPU cores`, `IPU/HPU available: False, using: 0 IPUs`: a GPU available and not used is a run
      that computes on the CPU.
  The devices a trainer shards each batch over: tensor2tensor's `datashard_devices: ['gpu:0']` (devices.py: one
      entry per GPU it shards over, `['']` for the one default device, `cpu:0` where it shards to the CPU too);
      TensorFlow's `Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/device:GPU:0', ...)`.
  The devices a framework creates in its process (the GPUs it can compute on, which need not be the ones it uses):
      TensorFlow 1.x `Creating TensorFlow device (/gpu:0) -> (device: 0, name: GeForce GTX 960, pci bus id:
      0000:01:00.0)`, TensorFlow 2.x `Created device /job:localhost/replica:0/task:0/device:GPU:0 with 9630 MB memory:
      -> device: 0, name: NVIDIA GeForce RTX 3080, pci bus id: 0000:01:00.0, compute capability: 8.6`, the
      `Device mapping:` block below them (`/job:localhost/replica:0/task:0/gpu:1 -> device: 1, name: Tesla K40c, pci
      bus id: 0000:02:00.0`), and DirectML's (tensorflow-directml, its plugin) `DirectML: creating device on adapter 0
      (AMD Radeon(TM) Graphics)` after `DirectML device enumeration: found 1 compatible adapters.`. One entry per
      device index (a device named again by the mapping is the same one); the name says whether it is the
      processor's own graphics (integrated(): Intel UHD / HD / Iris, AMD `Radeon(TM) Graphics` with no model
      number, `Radeon Vega 8 Graphics`, `Radeon 780M Graphics`) — a device that shares the host's memory and has a
      fraction of a discrete GPU's compute.
  A GPU line followed by link lines is `nvidia-smi nvlink -s`: each GPU's active NVLinks and their rate per direction
      (`Link 0: 25 GB/s`, `Link 4: <inactive>`), kept on the GPU's entry as "nvlink": {active, inactive, gb_s}.
  The GPUs a process can see, `nvidia-smi -L`: `GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)` one line per visible
      GPU (a MIG slice indented below its GPU: `  MIG 1g.5gb Device 0: (UUID: MIG-...)`), `No devices found.` when
      it sees none. Run once per task of a job (`srun nvidia-smi -L`), each task's lines carry its label: a
      `NAME=value: ` or `[label]: ` prefix (a script's `PROCID=$SLURM_PROCID: `), quotes around the line allowed. A
      label seen again starts another listing (a second run of the same tasks, pasted after the first).

summary(): {"accelerators": [{"line", "kind", "available", "used"}], "shards": [{"line", "devices": [..]}],
"listings": [[{"task", "gpus": [uuid or name, ...]}, ...], ...], "created": [{"line", "framework", "index", "name",
"bus", "integrated"}], "adapters": N (DirectML's count)}; {} when none of these was read. Memory: MAX_RECORDS
of each at most.
"""

from __future__ import annotations

import re

MAX_RECORDS = 1000
ACCEL = re.compile(r"\b(GPU|TPU|IPU|HPU|MPS) available: (True|False)(?: \((\w{1,12})\))?, us(?:ed|ing): "
                   r"(True|False|\d{1,5})\b")
SHARDS = re.compile(r"\bdatashard_devices: \[([^\]]{0,2000})\]")
MIRRORED = re.compile(r"\bUsing MirroredStrategy with devices \(([^)]{0,4000})\)")
_QUOTED = re.compile(r"""['"]([^'"]{0,200})['"]""")
# `nvidia-smi -L`: a GPU's line (its UUID in parentheses), and the line of a process that sees none
LISTED = re.compile(r"^GPU (\d{1,4}): (.{1,120}?) \(UUID: ((?:GPU|MIG)-[0-9A-Fa-f-]{8,64})\)\s*$")
NONE = re.compile(r"^No devices were found\.?$|^No devices found\.?$")
# `nvidia-smi nvlink -s` (--status): the same GPU line, then one line per link of that GPU (indented), its rate per
# direction or `<inactive>`: `\t Link 0: 25 GB/s`, `Link 3: 26.562 GB/s`, `Link 4: <inactive>`
NVLINK = re.compile(r"^Link (\d{1,3}): (?:(\d{1,5}(?:\.\d{1,4})?) GB/s|<inactive>)$")
# a framework creating its devices (module docstring): TensorFlow 1.x and 2.x, the Device mapping lines, DirectML
TF_CREATING = re.compile(r"Creating TensorFlow device \(/(?:device:)?[GgXx][\w]{0,8}:(\d{1,3})\) -> \(device: \d{1,3}, "
                         r"name: ([^,()]{1,120}), pci bus id: ([0-9A-Fa-f:.]{4,20})")
TF_CREATED = re.compile(r"Created device /job:[\w]{1,40}/replica:\d{1,4}/task:\d{1,4}/device:GPU:(\d{1,3}) with "
                        r"\d{1,9} MB memory:?\s+-> device: \d{1,3}, name: ([^,()]{1,120}), pci bus id: ([0-9A-Fa-f:.]{4,20})")
TF_MAPPED = re.compile(r"^/job:[\w]{1,40}/replica:\d{1,4}/task:\d{1,4}/(?:device:)?[Gg][Pp][Uu]:(\d{1,3}) -> device: "
                       r"\d{1,3}, name: ([^,()]{1,120}), pci bus id: ([0-9A-Fa-f:.]{4,20})")
DML_DEVICE = re.compile(r"DirectML: creating device on adapter (\d{1,3}) \(([^()]{1,120}(?:\([^()]{0,8}\)[^()]{0,60})*)\)")
DML_FOUND = re.compile(r"DirectML device enumeration: found (\d{1,3}) compatible adapters?")
# the processor's own graphics by its name: Intel's UHD / HD / Iris (Xe, Plus, Pro) / plain `Intel(R) Graphics`,
# AMD's APU graphics named by no model number or a Vega / NNNM one; a discrete card names a model (RX 6800, Arc A770)
_INTEGRATED = re.compile(r"^(?:Intel(?:\(R\))?\s+(?:(?:U?HD|Iris(?:\(R\))?(?:\s+(?:Xe|Plus|Pro))?)(?:\s+Graphics)?"
                         r"(?:\s+\d{2,4})?|Graphics)|AMD\s+Radeon(?:\(TM\))?\s+(?:Vega\s+\d{1,2}\s+|\d{3}M\s+)?"
                         r"Graphics|Radeon(?:\(TM\))?\s+(?:Vega\s+\d{1,2}|\d{3}M)\s+Graphics)\s*$", re.IGNORECASE)


def integrated(name: str) -> bool:
    """Whether a device's name is that of a processor's own graphics (module docstring)."""
    return bool(_INTEGRATED.match(name.strip()))


# a task's label before a listing line: `PROCID=2: `, `rank 3: `, `[1,0]<stdout>:`, `[task 2] `
TASK = re.compile(r"^(?:([A-Za-z_][\w.-]{0,40}=[\w.-]{1,40})|(\[[^\]\s]{1,40}\](?:<\w{1,10}>)?)|((?:rank|task|proc)"
                  r"\s?\d{1,6}))\s?:?\s*", re.IGNORECASE)


def _unquote(body: str) -> str:
    """The line without the quotes a script's `echo "..."` or a paste put around all of it."""
    s = body.strip()
    return s[1:-1].strip() if len(s) > 1 and s[0] == s[-1] and s[0] in "\"'" else s


def device_names(text: str) -> list[str]:
    """The devices a printed Python list or tuple names (`['gpu:0', 'gpu:1']`, `('/device:GPU:0',)`), each
    shortened to its last path part (`/job:localhost/replica:0/task:0/device:GPU:0` → `GPU:0`); `''` (one default
    device) kept as ''."""
    return [q.rsplit("device:", 1)[-1].strip("/") for q in _QUOTED.findall(text)]


class DeviceLines:
    """Feed every non-blank line: `feed(body)` is True for a line this module reads (module docstring)."""

    def __init__(self):
        self.accelerators: list[dict] = []
        self.shards: list[dict] = []
        self.listings: list[list[dict]] = []
        self.created: list[dict] = []
        self.adapters: int | None = None
        self.lineno = 0
        self._gpu: dict | None = None  # the GPU of the last listing line: the NVLink lines below it are its own

    def feed(self, body: str, lineno: int | None = None, raw: str | None = None) -> bool:
        """`raw`: the line as written, before a log reader took its prefixes off (a task's `rank 3: ` label)."""
        self.lineno = lineno if lineno is not None else self.lineno + 1
        if " available: " in body and (m := ACCEL.search(body)):
            if len(self.accelerators) < MAX_RECORDS:
                used = m.group(4)
                self.accelerators.append({"line": self.lineno, "kind": m.group(1), "available": m.group(2) == "True",
                                          "backend": m.group(3),
                                          "used": used == "True" if used in ("True", "False") else int(used) > 0})
            return True
        if "devices" in body and ((m := SHARDS.search(body)) or (m := MIRRORED.search(body))):
            if len(self.shards) < MAX_RECORDS:
                self.shards.append({"line": self.lineno, "devices": device_names(m.group(1))})
            return True
        if "evice" in body and self._created(body):
            return True
        if self._gpu is not None and body.lstrip().startswith("Link ") and (m := NVLINK.match(body.strip())):
            links = self._gpu.setdefault("nvlink", {"active": 0, "inactive": 0, "gb_s": 0.0})
            if m.group(2) is None:
                links["inactive"] += 1
            else:
                links["active"] += 1
                links["gb_s"] = max(links["gb_s"], float(m.group(2)))
            return True
        self._gpu = None
        return (raw is not None and raw != body and self._listing(_unquote(raw))) or self._listing(_unquote(body))

    def _created(self, body: str) -> bool:
        if (m := DML_FOUND.search(body)):
            self.adapters = int(m.group(1))
            return True
        text = body.strip()
        for framework, pattern in (("TensorFlow", TF_CREATING), ("TensorFlow", TF_CREATED), ("TensorFlow", TF_MAPPED),
                                   ("DirectML", DML_DEVICE)):
            if (m := pattern.search(text)):
                index, name = int(m.group(1)), m.group(2).strip()
                known = next((d for d in self.created if d["framework"] == framework and d["index"] == index), None)
                if known is None and len(self.created) < MAX_RECORDS:
                    self.created.append({"line": self.lineno, "framework": framework, "index": index, "name": name,
                                         "bus": m.group(3) if pattern is not DML_DEVICE else None,
                                         "integrated": integrated(name)})
                return True
        return False

    def _listing(self, text: str) -> bool:
        if "GPU " not in text and "No devices" not in text:
            return False
        task = ""
        if (t := TASK.match(text)) and not text.startswith("GPU "):
            task, text = next(g for g in t.groups() if g), text[t.end():]
        gpu = LISTED.match(text)
        if gpu is None and not NONE.match(text):
            return False
        rounds = self.listings
        current = rounds[-1] if rounds else None
        entry = next((e for e in current if e["task"] == task), None) if current is not None else None
        # the task listed again (its listing ended, or the same GPU comes again): another run of the listing
        again = entry is not None and (entry.get("closed") or gpu is None
                                       or any(g["index"] == int(gpu.group(1)) for g in entry["gpus"]))
        if current is None or again:
            if sum(len(r) for r in rounds) >= MAX_RECORDS:
                return True
            current, entry = [], None
            rounds.append(current)
        if entry is None:
            entry = {"task": task, "gpus": []}
            current.append(entry)
        if gpu is None:
            entry["closed"] = True  # `No devices found.` ends that task's listing
        else:
            entry["gpus"].append({"index": int(gpu.group(1)), "name": gpu.group(2).strip(), "uuid": gpu.group(3)})
            self._gpu = entry["gpus"][-1]
        return True

    def summary(self) -> dict:
        listings = [[{"task": e["task"], "gpus": e["gpus"]} for e in r] for r in self.listings]
        out = {"accelerators": self.accelerators, "shards": self.shards, "listings": listings, "created": self.created,
               "adapters": self.adapters}
        return {k: v for k, v in out.items() if v}


def describe(s: dict) -> str:
    """One line for `playbook info`."""
    parts = []
    for a in s.get("accelerators") or []:
        if a["kind"] == "GPU":
            parts.append(f"line {a['line']}: GPU available {a['available']}, used {a['used']}")
    for sh in (s.get("shards") or [])[:2]:
        parts.append(f"line {sh['line']}: batches sharded over {len(sh['devices'])} device"
                     f"{'s' * (len(sh['devices']) != 1)} ({', '.join(d or 'default' for d in sh['devices'][:8])})")
    for r in s.get("listings") or []:
        seen = sum(1 for e in r if e["gpus"])
        uuids = {g["uuid"] for e in r for g in e["gpus"]}
        parts.append(f"nvidia-smi -L of {len(r)} task{'s' * (len(r) != 1)}: {seen} see a GPU ({len(uuids)} distinct)")
    if (made := s.get("created")):
        parts.append(f"line {made[0]['line']}: {made[0]['framework']} creates {len(made)} device"
                     f"{'s' * (len(made) != 1)} (" + ", ".join(f"{d['index']}: {d['name']}" for d in made[:6]) + ")")
    if (links := nvlinks(s)):
        parts.append("NVLink stated (nvidia-smi nvlink -s): " + ", ".join(links[:4]) + (" ..." if len(links) > 4 else ""))
    return "device use: " + "; ".join(parts)


def nvlinks(s: dict) -> list[str]:
    """Each GPU with active NVLinks in a summary(), as `GPU 0 (NAME): 12 links x 25 GB/s`."""
    out = []
    for r in s.get("listings") or []:
        for e in r:
            for g in e["gpus"]:
                if (n := g.get("nvlink")) and n["active"]:
                    out.append(f"GPU {g['index']} ({g['name']}): {n['active']} link{'s' * (n['active'] != 1)} x "
                               f"{n['gb_s']:g} GB/s")
    return out

