"""Token rates that local inference runtimes print after each generation, read by what each figure means.

The runtimes state, for the prompt (prefill) and for the generated tokens (decode), a duration and a count or a rate:

  llama.cpp (2023 - mid 2024 `llama_print_timings:`, later `llama_perf_context_print:` / `llama_perf_sampler_print:`,
      llama-server's `slot print_timing: id N | task M |` and its unprefixed continuation lines):
      `prompt eval time = T ms / N tokens ( X ms per token, R tokens per second)`, `eval time = T ms / N runs ( ... )`,
      `sample time` / `sampling time = ...` (the sampler, on the CPU); the oldest prints carry no `tokens per second`
      part; `load time = T ms` and `total time = T ms [/ N tokens]` carry no rate (understood, not recorded);
  text-generation-webui (modules/text_generation.py): `Output generated in S seconds (R tokens/s, N tokens, context C,
      seed D)` — one request, prompt and decode together;
  KoboldCpp (koboldcpp.py): `CtxLimit:P/L, Amt:N/M, Init:0.00s, Process:Ts (R T/s), Generate:Ts (R T/s), Total:Ts`
      (2024-), `ContextLimit: P/L, Processing:Ts (X ms/T), Generation:Ts (X ms/T), Total:Ts (...)` (early 2024) and
      `Time Taken - Processing:Ts (Xms/T), Generation:Ts (Xms/T), Total:Ts (R T/s)` (2023): each `Name:Ts (figure
      unit)` piece is one phase, its figure a rate (`T/s`) or a time per token (`ms/T`); with --debugmode both
      (`Process:Ts (Xms/T = RT/s)`), the rate read (X is rounded to 0.1 ms).

Beside them, a tqdm bar's closing postfix alone on a line (`[01:22<00:00,  4.13s/it]`, readers/step_log/span_line.py
BAR_CLOSE: the mean rate of a whole loop, a sampler's steps in the web UIs) → a record {"tool": "tqdm", "phase":
"loop", "s_per_it", "seconds" (the elapsed clock)}: one loop each, never steps of one series.

Each statement becomes a record {"tool", "phase": "prompt" | "decode" | "sample" | "request", "ms_per_token",
"tps", "tokens" (None where not stated), "seconds" (None where not stated)}; a time per token and a rate are the same
figure read two ways (tps = 1000 / ms_per_token), whichever the line gives (llama.cpp's total over its count where
both are printed: its per-token figure is rounded). `nan` (no tokens) is no record.
Memory: MAX_RECORDS at most.
"""

from __future__ import annotations

import math
import re

from playbook.readers.step_log.span_line import BAR_CLOSE

MAX_RECORDS = 100_000
_NUM = r"(\d{1,12}(?:\.\d{1,9})?|nan|inf)"
LLAMA = re.compile(r"\b(prompt eval|eval|sample|sampling|generation eval) time\s*=\s*" + _NUM + r"\s*ms\s*/\s*(\d{1,12})"
                   r"\s*(?:tokens|runs|token)\s*\(\s*" + _NUM + r"\s*ms per token(?:,\s*" + _NUM
                   + r"\s*tokens per second)?\s*\)")
LLAMA_PLAIN = re.compile(r"(?:llama_print_timings|llama_perf_context_print|llama_perf_sampler_print|print_timing)\b.{0,40}?"
                         r"\b(?:load|total) time\s*=\s*" + _NUM + r"\s*ms\b")
TEXTGEN = re.compile(r"\bOutput generated in " + _NUM + r" seconds \(" + _NUM + r" tokens/s, (\d{1,12}) tokens"
                     r"(?:, context (\d{1,12}))?")
KOBOLD_PIECE = re.compile(r"\b(Process|Processing|Generate|Generation):\s*" + _NUM + r"s\s*\(\s*" + _NUM
                          + r"\s*(T/s|ms/T)(?:\s*=\s*" + _NUM + r"\s*T/s)?\)")  # debugmode: `(0.7ms/T = 1365.33T/s)`
KOBOLD_HEAD = re.compile(r"\b(?:CtxLimit|ContextLimit|Time Taken)\b")
LOOP = re.compile(r"\[\s*(?:(\d{1,4}):)?(\d{1,4}):(\d\d)\s*<[^,]{1,12},\s*(\d{1,9}(?:\.\d{1,6})?)\s*(s/it|it/s)")
PHASE = {"prompt eval": "prompt", "eval": "decode", "generation eval": "decode", "sample": "sample",
         "sampling": "sample", "process": "prompt", "processing": "prompt", "generate": "decode",
         "generation": "decode"}


def _num(s: str | None) -> float | None:
    if s is None:
        return None
    v = float(s)
    return v if math.isfinite(v) else None


class TokenRates:
    """Feed every non-blank line: `feed(body)` is True for a line that states a token rate (or a timing line of the
    same print without one). `summary()`: the records ([] for none)."""

    def __init__(self):
        self.records: list[dict] = []

    def _add(self, tool: str, phase: str, ms: float | None, tps: float | None, tokens: int | None,
             seconds: float | None) -> None:
        if ms is None and tps:
            ms = 1000.0 / tps
        if tps is None and ms:
            tps = 1000.0 / ms
        if not ms or not tps or len(self.records) >= MAX_RECORDS:
            return  # nan: no tokens in that phase
        self.records.append({"tool": tool, "phase": phase, "ms_per_token": round(ms, 4), "tps": round(tps, 4),
                             "tokens": tokens, "seconds": seconds})

    def feed(self, body: str) -> bool:
        if "time" in body and "ms" in body:
            if m := LLAMA.search(body):
                total, n = _num(m.group(2)), int(m.group(3))
                exact = total / n if total and n else None  # the printed per-token figure is rounded to 2 places
                self._add("llama.cpp", PHASE[m.group(1)], exact or _num(m.group(4)),
                          None if exact else _num(m.group(5)), n, None if total is None else round(total / 1000.0, 6))
                return True
            if LLAMA_PLAIN.search(body):
                return True
        if "/" in body and "[" in body and BAR_CLOSE.match(body) and (m := LOOP.search(body)):
            rate = float(m.group(4))
            if rate > 0 and len(self.records) < MAX_RECORDS:
                per = rate if m.group(5) == "s/it" else 1.0 / rate
                secs = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
                self.records.append({"tool": "tqdm", "phase": "loop", "s_per_it": round(per, 6), "seconds": secs})
            return True
        if "Output generated" in body and (m := TEXTGEN.search(body)):
            self._add("text-generation-webui", "request", None, _num(m.group(2)), int(m.group(3)), _num(m.group(1)))
            return True
        if ("T/s" in body or "ms/T" in body) and KOBOLD_HEAD.search(body):
            pieces = KOBOLD_PIECE.findall(body)
            for name, secs, fig, unit, rate in pieces:
                f = _num(fig)  # beside a rate (debugmode), the rate: its time per token is rounded to 0.1 ms
                self._add("KoboldCpp", PHASE[name.lower()], None if rate or unit != "ms/T" else f,
                          _num(rate) if rate else f if unit == "T/s" else None, None, _num(secs))
            return bool(pieces)
        return False

    def summary(self) -> list[dict]:
        return list(self.records)


def describe(records: list[dict]) -> str:
    """One line for `playbook info`: the median rate of each phase."""
    parts = []
    loops = [r for r in records if r["phase"] == "loop"]
    if loops:
        parts.append(f"{len(loops)} bar{'s' * (len(loops) != 1)} closing at "
                     + ", ".join(f"{r['s_per_it']:.4g} s/it" for r in loops[:6]) + ("..." if len(loops) > 6 else "")
                     + " (each a whole loop's mean rate)")
    for phase in ("prompt", "decode", "request", "sample"):
        rates = sorted(r["tps"] for r in records if r["phase"] == phase)
        if rates:
            mid = rates[len(rates) // 2]
            span = f" ({rates[0]:.4g}-{rates[-1]:.4g})" if len(rates) > 1 else ""
            parts.append(f"{phase} {mid:.4g} tokens/s{span} over {len(rates)} record{'s' * (len(rates) != 1)}")
    tools = sorted({r["tool"] for r in records})
    return f"rates ({', '.join(tools)}): " + "; ".join(parts)
