"""Where a served model's weights sit: on the GPU, on the CPU, or split — read from what the runtimes print.

A model too large for the free GPU memory is split: some layers stay in host memory and run on the CPU, the rest on
the GPU, one after the other for every token. The runtimes state the split in two ways:

  a share of the model's bytes: `ollama ps` (ollama cmd/cmd.go ListRunningHandler) prints a PROCESSOR column,
      `100% GPU`, `100% CPU` or `C%/G% CPU/GPU` (C% of the model in host memory), one row per loaded model under a
      `NAME  ID  SIZE  PROCESSOR  [CONTEXT]  UNTIL` header (a row: the name, 12 hex digits of the digest, the size;
      a `100% CPU` elsewhere is prose, a `C%/G% CPU/GPU` pair elsewhere a share with no model named);
  a count of layers: llama.cpp's loader `offloaded K/M layers to GPU` (llm_load_tensors / load_tensors), Ollama's
      scheduler line `msg=offload ... layers.model=M layers.offload=K ... memory.available="[17.8 GiB]"
      memory.required.full="23.4 GiB"` (slog key=value; a paste may wrap it over several lines, whose `layers.` /
      `memory.` keys belong to the line they continue). Its `library=cpu` (2024: `msg="offload to cpu"`) is Ollama's
      plan on a host where it found no GPU: no placement, its memory.available being host memory.
  the MiB kept on the GPU: ComfyUI (comfy/model_patcher.py) after `Requested to load <Model>`: `loading in lowvram
      mode <MiB>` (2024: the budget of weights kept on the GPU, the rest streamed from host memory at every use),
      `loaded partially <budget MiB> <loaded MiB> <patches>` / `loaded completely <budget> <loaded MiB> <full_load>`
      (2025: `loaded partially; <U> MB usable, <L> MB loaded, <O> MB offloaded, ...`: the share on the host is
      O / (L + O), a byte share). The older lines state the MiB on the GPU, not the model's size: a partial load's
      record has cpu_share None (part of the model on the host, how much not stated); a complete load's is 0.

  a device per layer: llama.cpp's loader at debug verbosity (src/llama-model.cpp, 2025-) `load_tensors: layer %3d
      assigned to device %s[, is_swa = %d]`, one line per layer: the layers whose device is `CPU` run on the CPU.
      The record counts the layers the input shows ("shown": a paste may cut the list).
  a memory mode: ComfyUI / stable-diffusion-webui-forge (model_management.py) `Set vram state to: LOW_VRAM | NO_VRAM`
      (the weights kept partly in host memory and moved to the GPU at each use; with `Total VRAM X MB` stated, the
      GPU's size is the reason, as forge's `Trying to enable lowvram mode because your GPU seems to have 4GB or less`
      says). NORMAL_VRAM / HIGH_VRAM / SHARED are understood and place nothing; DISABLED (no GPU seen) and
      openai/whisper's `FP16 is not supported on CPU; using FP32 instead` (whisper/transcribe.py: the model's device
      is the CPU) state a model on the CPU (how "device") — not that a GPU was there to use.
  the memory a GPU borrows from the host: Windows Task Manager's GPU pane (Performance → GPU), as users copy or type
      it: `Dedicated GPU memory 7.6/8.0 GB` (the GPU's own memory, used of size) and `Shared GPU memory 1.5/7.9 GB`
      (system memory the WDDM driver lends the GPU; its `GPU memory` line is the two added; Windows' `GB` is GiB).
      The driver places an allocation in shared memory when the dedicated memory cannot hold it (NVIDIA's "CUDA -
      Sysmem Fallback Policy", driver 536.40+): the GPU then reads it across PCIe at each use (how "shared"). Only where the
      dedicated memory is at least DEDICATED_FULL used and the shared use is at least SHARED_MIN_GIB: below, shared
      memory holds the desktop's and other programs' surfaces, not the job's spill; and only a discrete GPU's
      (dedicated memory of at least DEDICATED_MIN_GIB: an integrated GPU's pane shows its small carve-out full).
  a managed-memory setting: llama.cpp's `GGML_CUDA_ENABLE_UNIFIED_MEMORY=1` (docs/build.md: "enable unified memory
      ... This allows swapping to system RAM instead of crashing when the GPU VRAM is exhausted"), TensorFlow's
      `TF_FORCE_UNIFIED_MEMORY=1` (gpu_device.cc: allocations in CUDA managed memory, used to oversubscribe the GPU
      beside a per_process_gpu_memory_fraction above 1), RAPIDS RMM's `managed_memory=True`: the allocations may live
      in host memory and the driver migrates their pages to the GPU on first touch, one fault at a time (how
      "managed"); set to 0 / false it places nothing.
  a precision downgrade: CTranslate2 (faster-whisper) `The compute type inferred from the saved model is float16, but
      the target device or backend do not support efficient float16 computation ... converted to use the float32
      compute type instead` (how "precision"): the device may be a GPU without fast float16 or the CPU — the line does
      not say which, so it places nothing.

  beside a layer count: the layers asked for the GPU by the command line or call the input shows (llama.cpp `-ngl N`
      / `--n-gpu-layers N`, KoboldCpp `--gpulayers N` / `gpulayers=N`, llama-cpp-python `n_gpu_layers=N`) → "asked";
      ggml's system-info line naming a GPU backend (`CUDA : ARCHS = ...`, `ROCm : ...`, `Vulkan : ...`, `Metal : ...`)
      → "build": the binary could have used the GPU.

Each statement becomes a placement record: {"model": name or None, "cpu_share": 0..1 (of the bytes, or of the
layers), "how": "bytes" | "layers", "layers": [K, M], "available_gib": .., "required_gib": ..}. A share pair is
read in the order its label gives (`CPU/GPU` or `GPU/CPU`), and only where its two shares add up to 100 (±1 for
rounding): a `35%/98% CPU/GPU` utilization pair is no placement. Memory: MAX_RECORDS records at most.
"""

from __future__ import annotations

import re

MAX_RECORDS = 10_000
SPLIT = re.compile(r"\b(\d{1,3})%\s*/\s*(\d{1,3})%\s*(CPU|GPU)\s*/\s*(CPU|GPU)\b")
WHOLE = re.compile(r"(?:^|\s)100%\s+(CPU|GPU)(?:\s|$)")
HEADER = re.compile(r"^\s*NAME\s+ID\s+SIZE\s+PROCESSOR\b")
# a row of that table: the model's name, the first 12 hex digits of its digest, its size (`41 GB`, `980 MB`)
ROW = re.compile(r"^\s*(\S{1,200})\s+[0-9a-f]{12}\s+\d{1,6}(?:\.\d{1,3})?\s?[KMGT]?i?B\s", re.IGNORECASE)
OFFLOADED = re.compile(r"\boffloaded\s+(\d{1,5})\s*/\s*(\d{1,5})\s+layers\s+to\s+GPU\b", re.IGNORECASE)
KEY = re.compile(r"\b(layers\.model|layers\.offload|memory\.available|memory\.required\.full|library)="
                 r"(\"[^\"]{0,200}\"|\S{1,60})")
OFFLOAD_TO = re.compile(r'\bmsg="offload to (\w{1,20})"')  # the 2024 wording of the same line: the library in msg
GIB = {"b": 1 / 2**30, "kib": 1 / 2**20, "mib": 1 / 2**10, "gib": 1.0, "tib": 2**10, "kb": 1e3 / 2**30,
       "mb": 1e6 / 2**30, "gb": 1e9 / 2**30, "tb": 1e12 / 2**30}
SIZE = re.compile(r"(\d{1,9}(?:\.\d{1,6})?)\s*([KMGT]?i?B)\b", re.IGNORECASE)
_NUM = r"(\d{1,9}(?:\.\d{1,20})?(?:e[+-]?\d{1,3})?)"
REQUESTED = re.compile(r"\bRequested to load (\w{1,80})")
LOWVRAM = re.compile(r"\bloading in lowvram mode " + _NUM + r"\s*$")
LOADED = re.compile(r"\bloaded (partially|completely)(?:;.{0,40}?\b" + _NUM + r"\s*MB loaded\b| " + _NUM + " "
                    + _NUM + r" \S{1,10}\s*$)")
OFFLOADED_MB = re.compile(r"\bMB loaded, " + _NUM + r"\s*MB offloaded\b")
ASSIGNED = re.compile(r"\blayer\s{1,5}(\d{1,5}) assigned to device ([\w.:-]{1,40})")
VRAM_STATE = re.compile(r"\bSet vram state to:\s*([A-Z_]{3,20})\b", re.IGNORECASE)
TOTAL_VRAM = re.compile(r"\bTotal VRAM (\d{1,9}(?:\.\d{1,3})?) MB\b")
FP16_CPU = "FP16 is not supported on CPU; using FP32 instead"
MANAGED = re.compile(r"\b(GGML_CUDA_ENABLE_UNIFIED_MEMORY|TF_FORCE_UNIFIED_MEMORY|managed_memory)\s?=\s?[\"']?(1|true|on)\b",
                     re.IGNORECASE)
ASKED = re.compile(r"(?:(?<!\S)-ngl[ =]|--n-gpu-layers[ =]|--gpulayers[ =]|\b(?:gpulayers|n_gpu_layers)\s*=\s*)"
                   r"(-?\d{1,6})\b")
BUILD = re.compile(r"(?:^|\|\s|\s)(CUDA|ROCm|Vulkan|Metal|SYCL)\s*:\s*[A-Z_]{2,30}\s*=")
# Task Manager's GPU pane lines (see the module docstring): `Dedicated GPU memory 7.6/8.0GB`, `Shared GPU memory
# 1.5/7.9 GB` (a unit on the used figure too, `1.5 GB/7.9 GB`, and a colon after the label are accepted)
PANE = re.compile(r"\b(Dedicated|Shared) GPU memory\s{0,3}:?\s{0,3}(\d{1,6}(?:\.\d{1,3})?)\s?(?:([KMGT]i?B)\s?)?/\s?"
                  r"(\d{1,6}(?:\.\d{1,3})?)\s?([KMGT]i?B)\b", re.IGNORECASE)
DEDICATED_MIN_GIB = 1.0  # an integrated GPU's carve-out of system memory (Intel's 128 MiB, an APU's 512 MiB) is no
# dedicated memory: it works in shared memory by design, across no PCIe
DEDICATED_FULL = 0.9  # the dedicated memory this full before the driver's spill to shared memory reads as one
SHARED_MIN_GIB = 1.0  # above the few hundred MiB the desktop's surfaces and other programs keep in shared memory
# (beside a dedicated memory a framework fills by default: TensorFlow takes nearly all of it at start)
CT2 = re.compile(r"compute type inferred from the saved model is (\w{1,20}), but the target device or backend do not "
                 r"support efficient \1 computation.{0,80}?use the (\w{1,20}) compute type")


def _gib(text: str) -> float | None:
    """The sum of the sizes a value states (`"[17.8 GiB 20.1 GiB]"` → 37.9; one per GPU), in GiB."""
    sizes = [float(n) * GIB[u.lower()] for n, u in SIZE.findall(text) if u.lower() in GIB]
    return round(sum(sizes), 3) if sizes else None


class Placements:
    """Feed every non-blank line: `feed(body)` is True for a line that states a placement (or continues one).
    `summary()`: the placement records ([] for none)."""

    def __init__(self):
        self.records: list[dict] = []
        self.table = False  # an `ollama ps` header seen: its rows name a model and a PROCESSOR value
        self.open: dict | None = None  # the offload record whose wrapped keys may follow
        self.requested: str | None = None  # ComfyUI's `Requested to load <Model>`: the model its next load line places
        self.layers: dict[int, str] = {}  # llama.cpp's `layer N assigned to device D`, by layer
        self.total_vram: float | None = None  # ComfyUI / forge `Total VRAM X MB`
        self.said: set[str] = set()  # one-per-file statements already recorded (a warning and its source line)
        self.asked: int | None = None  # the layers a command line or call asked for the GPU
        self.build: str | None = None  # the GPU backend ggml's system-info line names
        self.pane: dict[str, tuple[float, float]] = {}  # Task Manager's dedicated / shared GPU memory (used, size GiB)

    def _add(self, rec: dict) -> dict:
        if len(self.records) < MAX_RECORDS:
            self.records.append(rec)
        return rec

    def _once(self, key: str, rec: dict) -> bool:
        if key not in self.said:
            self.said.add(key)
            self._add(rec)
        return True

    def _stated(self, body: str) -> bool:
        """The per-layer devices, memory modes and device / precision warnings (see the module docstring)."""
        if "assigned to device" in body and (m := ASSIGNED.search(body)):
            if len(self.layers) < MAX_RECORDS:
                self.layers[int(m.group(1))] = m.group(2)
            return True
        if "VRAM" in body or "vram" in body:
            if m := TOTAL_VRAM.search(body):
                self.total_vram = float(m.group(1))
                return True
            if m := VRAM_STATE.search(body):
                state = m.group(1).upper()
                if state in ("LOW_VRAM", "NO_VRAM"):
                    self._add({"model": None, "cpu_share": None, "how": "lowvram", "mode": state,
                               "gpu_total_mib": self.total_vram})
                elif state == "DISABLED":
                    self._once("disabled", {"model": None, "cpu_share": 1.0, "how": "device", "said": state})
                return True
        if ("MEMORY" in body or "memory" in body) and (m := MANAGED.search(body)):
            return self._once("managed", {"model": None, "cpu_share": None, "how": "managed", "mode": f"{m.group(1)}=1"})
        if FP16_CPU in body:
            return self._once("fp16cpu", {"model": "whisper", "cpu_share": 1.0, "how": "device", "said": FP16_CPU})
        if "compute type" in body and (m := CT2.search(body)):
            return self._once("ct2", {"model": None, "cpu_share": None, "how": "precision", "from": m.group(1),
                                      "to": m.group(2)})
        return False

    def _pane(self, body: str) -> bool:
        """Task Manager's dedicated / shared GPU memory lines (see the module docstring)."""
        m = PANE.search(body)
        if not m:
            return False
        # Windows writes binary sizes with decimal names (its `8.0 GB` is 8 GiB): read as binary
        size_unit = m.group(5).lower().replace("ib", "b").replace("b", "ib")
        used_unit = (m.group(3) or m.group(5)).lower().replace("ib", "b").replace("b", "ib")
        if used_unit not in GIB or size_unit not in GIB:
            return False
        self.pane[m.group(1).lower()] = (float(m.group(2)) * GIB[used_unit], float(m.group(4)) * GIB[size_unit])
        return True

    def feed(self, body: str) -> bool:
        if "GPU memory" in body or "GPU Memory" in body or "gpu memory" in body:
            if self._pane(body):
                return True
        if ("ngl" in body or "gpu" in body or "gpulayers" in body) and (m := ASKED.search(body)):
            self.asked = int(m.group(1))  # understood by what else the line holds (a command, a Namespace dump)
        if "=" in body and ":" in body and (m := BUILD.search(body)):
            self.build = m.group(1)
            return True
        if ("assigned" in body or "VRAM" in body or "vram" in body or "FP16" in body or "compute type" in body
                or "MEMORY" in body or "memory" in body) and self._stated(body):
            return True
        if HEADER.match(body):
            self.table = True
            return True
        split = SPLIT.search(body) if "%" in body else None
        if split and abs(int(split.group(1)) + int(split.group(2)) - 100) > 1:
            split = None  # one model's two shares add up to 100: another pair (a monitor's utilization) is not one
        row = ROW.match(body) if self.table else None  # prose under a table (`top shows 100% CPU`) is no row
        whole = WHOLE.search(body) if row and split is None and "100%" in body else None
        if split or whole:
            if split:
                a, b = int(split.group(1)), int(split.group(2))
                cpu = (a if split.group(3).upper() == "CPU" else b) / 100.0
            else:
                cpu = 1.0 if whole.group(1).upper() == "CPU" else 0.0
            self._add({"model": row.group(1) if row else None, "cpu_share": cpu, "how": "bytes"})
            self.open = None
            return True
        if "load" in body and self._resident(body):
            return True
        if "offloaded" in body and (m := OFFLOADED.search(body)):
            k, n = int(m.group(1)), int(m.group(2))
            if 0 < n and k <= n:
                self._add({"model": None, "cpu_share": round((n - k) / n, 4), "how": "layers", "layers": [k, n]})
            self.open = None
            return True
        keys = dict(KEY.findall(body)) if "layers." in body or "memory." in body else {}
        if keys and (to := OFFLOAD_TO.search(body)):
            keys["library"] = to.group(1)
        if not keys:
            return False
        if self.open is None or any(k in keys and k in self.open["_keys"] for k in ("layers.model", "library")):
            self.open = self._add({"model": None, "how": "layers", "_keys": {}})
        self.open["_keys"].update(keys)
        return True

    def _resident(self, body: str) -> bool:
        """ComfyUI's load lines (see the module docstring): the model named, then the MiB it keeps on the GPU."""
        if m := REQUESTED.search(body):
            self.requested = m.group(1)
            return True
        low, done = LOWVRAM.search(body), LOADED.search(body)
        if not (low or done):
            return False
        partial = bool(low) or done.group(1) == "partially"
        mib = float(low.group(1) if low else (done.group(2) or done.group(4)))
        off = OFFLOADED_MB.search(body) if done and partial else None
        share = round(float(off.group(1)) / (mib + float(off.group(1))), 4) if off and mib > 0 else None
        if mib < 1e9:  # the budget of a complete load may print as 9.5e+25 (no limit): the loaded MiB is read
            self._add({"model": self.requested, "cpu_share": share if partial else 0.0,
                       "how": "bytes" if share is not None else "resident", "gpu_mib": round(mib, 1)})
        self.open = None
        return True

    def summary(self) -> list[dict]:
        out = []
        ded, shared = self.pane.get("dedicated"), self.pane.get("shared")
        if (ded and shared and ded[1] >= DEDICATED_MIN_GIB and ded[0] >= DEDICATED_FULL * ded[1]
                and shared[0] >= SHARED_MIN_GIB):
            out.append({"model": None, "cpu_share": None, "how": "shared", "dedicated_gib": [round(ded[0], 3),
                        round(ded[1], 3)], "shared_gib": round(shared[0], 3)})
        if self.layers:
            n = len(self.layers)
            gpu = sum(1 for d in self.layers.values() if d.upper() != "CPU")
            out.append({"model": None, "cpu_share": round((n - gpu) / n, 4), "how": "layers", "layers": [gpu, n],
                        "shown": True})
        for r in self.records:
            r = dict(r)
            keys = r.pop("_keys", None)
            if keys is not None:
                try:
                    n, k = int(keys["layers.model"].strip('"')), int(keys["layers.offload"].strip('"'))
                except (KeyError, ValueError):
                    continue  # a wrapped line without both counts states no split
                if n <= 0 or not 0 <= k <= n or keys.get("library", "").strip('"').lower() == "cpu":
                    continue  # library=cpu: the runtime saw no GPU; its memory.available is host memory
                r.update(cpu_share=round((n - k) / n, 4), layers=[k, n])
                for key, name in (("memory.available", "available_gib"), ("memory.required.full", "required_gib")):
                    if key in keys and (g := _gib(keys[key])) is not None:
                        r[name] = g
            out.append(r)
        for r in out:
            if r.get("how") == "layers":
                r.update({k: v for k, v in (("asked", self.asked), ("build", self.build)) if v is not None})
        return out


def describe(records: list[dict]) -> str:
    """One line for `playbook info`."""
    parts = []
    for r in records[:4]:
        who = r.get("model") or ("the GPU" if r.get("how") == "shared" else "the model")
        where = (f"{r['layers'][0]} of {r['layers'][1]} layers on the GPU"
                 + (" (of the layers the log shows)" if r.get("shown") else "") if r.get("layers")
                 else f"kept partly in host memory and moved to the GPU at each use ({r['mode']}"
                      + (f", a GPU of {r['gpu_total_mib']:g} MiB)" if r.get("gpu_total_mib") else ")")
                 if r.get("how") == "lowvram"
                 else f"{r['shared_gib']:.3g} GiB in shared system memory beside a full dedicated memory "
                      f"({r['dedicated_gib'][0]:.3g} of {r['dedicated_gib'][1]:.3g} GiB)" if r.get("how") == "shared"
                 else f"in CUDA managed memory ({r['mode']}): pages migrate to the GPU as they are touched"
                 if r.get("how") == "managed"
                 else f"on the CPU (its own words: {r['said']}); nothing here says a GPU was there to use"
                 if r.get("how") == "device"
                 else f"weights converted from {r['from']} to {r['to']}: the device lacks efficient {r['from']} "
                      "(a GPU without it or the CPU: the line does not say which)" if r.get("how") == "precision"
                 else f"fully on the GPU ({r['gpu_mib']:g} MiB)" if r.get("how") == "resident" and r["cpu_share"] == 0
                 else f"{r['cpu_share']:.0%} on the CPU" if r.get("cpu_share") is not None
                 else f"partly on the GPU ({r['gpu_mib']:g} MiB kept there; the rest read from host memory at each use)")
        parts.append(f"{who}: {where}")
    return "model placement: " + "; ".join(parts) + (f" (+{len(records) - 4} more)" if len(records) > 4 else "")
