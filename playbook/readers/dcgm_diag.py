"""`dcgmi diag -r N` results as DCGM prints them (a box of `| test | result |` rows, DCGM 3.x), whole or pasted in
part: each failed or warned test, per GPU, becomes an event whose kind names the cause its own words point at.

    Successfully ran diagnostic for group.
    +---------------------------+------------------------------------------------+
    | Diagnostic                | Result                                         |
    +===========================+================================================+
    |-----  Deployment  --------+------------------------------------------------|
    | Error                     | GPU 3 has uncorrectable memory errors and row  |
    |                           |  remappings are pending                        |
    +-----  Stress  ------------+------------------------------------------------+
    | Targeted Power            | Pass - GPUs: 0, 2, 3                           |
    |                           | Fail - GPU: 1                                  |
    | Warning                   | GPU 1 Max power of 224.1 did not reach desire  |
    |                           | d power minimum target_power_min_ratio of 224  |

A result reads `Pass|Fail|Warn|Skip[ - All| - GPU: n| - GPUs: a, b]`; a row with an empty first cell continues the
row above (another result of the same test, or the next piece of a message wrapped at the cell's width, joined
as printed). `Warning` / `Error` rows are messages that open with the GPU they are about (`Info` rows are figures,
not findings). Each failed (or warned) GPU of a test is one event, its kind from its message's words first (the
most specific), else from the test:
  throttle    thermal violations, clocks or a power target not reached                    (throttling)
  pcie_error  the PCIe test, or a message about PCIe, its replays or bandwidth             (link_degradation)
  ecc         uncorrectable / ECC / row remapping / retired pages / Xid                    (hardware_fault)
  diag_fail   any other failed hardware or stress test (GPU Memory, Diagnostic, EUD …)     (hardware_fault)
  diag_setup  a failed deployment check (persistence mode, environment, permissions …): no performance cause
A box without any failed or warned test reads as no event (the GPUs passed). Events carry no time (the output
has no clock); their `host` is the GPU the result names ("GPU 1", or "all GPUs": the output names no machine).
"""

from __future__ import annotations

import re
from pathlib import Path

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import textio

FORMAT = "dcgmi diag results"

_ROW = re.compile(r"^\s*\|([^|]*)\|([^|]*)\|?\s*$")
_RESULT = re.compile(r"^(Pass|Fail|Warn|Skip)(?:\s*-\s*(All|GPUs?:\s*([\d,\s]+)))?$", re.I)
_MESSAGE_LABELS = ("warning", "error")
_HEADER = re.compile(r"^\s*\|\s*Diagnostic\s*\|\s*Result\s*\|", re.I)
_SNIFF_ROW = re.compile(r"^\s*\|[^|]{2,40}\|\s*(?:Pass|Fail|Warn|Skip)\s+-\s+(?:All|GPUs?:)", re.I | re.M)
_GPU_FIRST = re.compile(r"^GPU\s+(\d+)\b")
# the causes a failure's own words name, most specific first (each a DCGM message's wording: "Thermal violations
# totaling ...", "did not reach desired power minimum", "uncorrectable memory errors and row remappings are pending")
_PCIE = re.compile(r"pcie|replay|bandwidth|link width|link gen", re.I)
_WORDS = (("ecc", re.compile(r"uncorrectable|\becc\b|row remap|retired page|page retire|\bxid\b|dbe\b", re.I)),
          ("throttle", re.compile(r"thermal|throttl|clock|power (?:minimum|target)|desired power|slowdown", re.I)),
          ("pcie_error", _PCIE))
_SETUP = re.compile(r"denylist|blacklist|nvml|cuda (?:main )?library|permission|persistence|environment|"
                    r"graphics process|inforom", re.I)


def sniff(head: str) -> bool:
    return "Successfully ran diagnostic" in head or any(_HEADER.match(x) for x in head.split("\n")[:50]) or \
        bool(_SNIFF_ROW.search(head))


def _gpus(spec: str | None) -> list[int] | None:
    """GPU indexes of a result's `GPU: n` / `GPUs: a, b`; None for All or none named."""
    return [int(x) for x in re.findall(r"\d+", spec)] if spec else None


def parse(lines: list[str]) -> tuple[list[dict], list[dict]]:
    """(results [{test, status, gpus}], messages [{label, test, gpu, text}]) of the box's rows."""
    results: list[dict] = []
    messages: list[dict] = []
    test = ""
    last: dict | None = None  # the row a continuation extends: a result or a message
    for line in lines:
        m = _ROW.match(line)
        if not m or line.lstrip().startswith(("+", "|-")) or _HEADER.match(line):
            continue
        name, cell = m.group(1).strip(), m.group(2)
        text = cell[1:].rstrip() if cell.startswith(" ") else cell.rstrip()
        r = _RESULT.match(text.strip())
        if name.lower() in _MESSAGE_LABELS:
            g = _GPU_FIRST.match(text.strip())
            last = {"label": name.lower(), "test": test, "gpu": int(g.group(1)) if g else None, "text": text.strip()}
            messages.append(last)
        elif name.lower() == "info":
            last = None
        elif name:
            test = name
            last = None
            if r:
                last = {"test": test, "status": r.group(1).lower(), "gpus": _gpus(r.group(3))}
                results.append(last)
        elif r and test:  # another result of the same test
            last = {"test": test, "status": r.group(1).lower(), "gpus": _gpus(r.group(3))}
            results.append(last)
        elif last is not None and "text" in last:  # a message wrapped at the cell's width: joined as printed
            last["text"] += text
    return results, messages


def _kind(test: str, words: str) -> str:
    for kind, pattern in _WORDS:
        if pattern.search(words):
            return kind
    if _PCIE.search(test):
        return "pcie_error"
    return "diag_setup" if _SETUP.search(test) else "diag_fail"


def events(results: list[dict], messages: list[dict], src: str) -> list[dict]:
    """One event per failed or warned GPU of a test (all GPUs: one event), and per Error message about a GPU no
    failed result names (a deployment error printed as a message of its own)."""
    out, seen = [], set()
    for r in results:
        if r["status"] not in ("fail", "warn"):
            continue
        for gpu in r["gpus"] or [None]:
            said = " ".join(m["text"] for m in messages if m["test"] == r["test"] and m["gpu"] in (gpu, None))
            where = f"GPU {gpu}" if gpu is not None else "all GPUs"
            out.append({"kind": _kind(r["test"], said), "host": where, "detail": f"{where}: dcgmi diag {r['test']} "
                        f"{r['status']}{': ' + said if said else ''}"[:300], "source": src})
            seen.add((r["test"], gpu))
    for m in messages:
        if m["label"] == "error" and (m["test"], m["gpu"]) not in seen:
            where = f"GPU {m['gpu']}" if m["gpu"] is not None else "all GPUs"
            out.append({"kind": _kind(m["test"], m["text"]), "host": where, "detail": f"{where}: dcgmi diag "
                        f"{m['test']} error: {m['text']}"[:300], "source": src})
    return out


def read(path: str | Path, **_opts) -> schema.Bundle:
    src = str(path)
    results, messages = parse(textio.read_text(path).split("\n"))
    if not results and not messages:
        raise InputError(f"{src}: no dcgmi diag result row (| test | Pass/Fail/Warn/Skip ... |)")
    rows = events(results, messages, src)
    bundle = schema.Bundle(inputs=[src])
    if rows:
        bundle.events = schema.events_frame({k: [r[k] for r in rows] for k in rows[0]})
    bundle.meta[schema.DCGM_DIAG + src] = {"tests": len({r["test"] for r in results}),
                                       "failed": sum(r["status"] == "fail" for r in results),
                                       "warned": sum(r["status"] == "warn" for r in results)}
    return bundle
