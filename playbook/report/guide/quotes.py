"""The command outputs and fixture excerpts the field guide quotes (`python -m playbook.report.guide --outputs`):
which commands, how each is shown, running them from the repository root, and cutting their text to size."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from playbook.core.errors import InputError

OUTPUT_COMMANDS: dict[str, list[str]] = {
    "dflash-diagnosis": ["-m", "playbook", "diagnose", "data/samples/dflash-8gpu", "--interval", "2"],
    "synthetic-64gpu-diagnosis": ["-m", "playbook", "diagnose", "data/samples/synthetic-64gpu"],
    "nccl-socket-diagnosis": ["-m", "playbook", "diagnose", "tests/data/nccl/socket_fallback.log"],
    # a live answer without a GPU: fake NVML with an 8 s stall (SYNTHETIC); 30 s of wall time
    "watch-demo": ["-m", "playbook", "watch", "--fake-nvml", "data_stall:8", "--for", "30s"],
}
STDOUT_ONLY = {"watch-demo"}  # its stderr is the live progress lines, not the answer
BENCH_COMMANDS: dict[str, list[str]] = {"probe-overhead": ["benchmarks/probe_overhead.py", "--repeats", "3"]}
SAMPLE_COMMANDS: dict[str, list[str]] = {**OUTPUT_COMMANDS, **BENCH_COMMANDS}

# The NCCL_DEBUG=INFO lines that say which transport each rank uses (the grep the guide tells readers to run).
NCCL_TRANSPORT_RE = r"NET/IB : |NET/Socket : Using|Using network|GPU Direct RDMA"
PERFORMANCE_FIXTURE = "tests/data/nvidia_smi_q/performance-8gpu-thermal.txt"
# Fixture excerpts the pages quote (region name -> (command shown, argv run from the repo root or None, note)).
EXCERPTS: dict[str, tuple[str, list[str] | None, str]] = {
    "nccl-socket-init": (f"grep -E '{NCCL_TRANSPORT_RE}' tests/data/nccl/socket_fallback.log",
                         ["grep", "-E", NCCL_TRANSPORT_RE, "tests/data/nccl/socket_fallback.log"],
                         "On the fixture `tests/data/nccl/socket_fallback.log` (written for this project in NCCL "
                         "2.18's format, see `tests/data/nccl/README.md`)."),
    "nccl-healthy-init": (f"grep -m 3 -E '{NCCL_TRANSPORT_RE}' tests/data/nccl/healthy_ib_gdr.log",
                          ["grep", "-m", "3", "-E", NCCL_TRANSPORT_RE, "tests/data/nccl/healthy_ib_gdr.log"],
                          "The same grep on the healthy fixture `tests/data/nccl/healthy_ib_gdr.log`."),
    "nvidia-smi-performance": ("nvidia-smi -q -d PERFORMANCE", None,
                               f"Excerpt of the fixture `{PERFORMANCE_FIXTURE}` (an 8-GPU node in a recent "
                               "driver's layout, written for this project: see `tests/data/nvidia_smi_q/README.md`), "
                               "cut by `playbook.report.guide.quotes.performance_excerpt`; the comment lines at the "
                               "end are its decoding of the Active lines into `clocks_event_reasons.active` bits."),
}
# Shortened copies of a quoted output (region name -> the region it shortens), for pages with little room.
HEADS: dict[str, str] = {"dflash-diagnosis-head": "dflash-diagnosis", "watch-demo-head": "watch-demo"}
QUOTES: tuple[str, ...] = (*SAMPLE_COMMANDS, *EXCERPTS, *HEADS)  # every quoted region playbook.report.guide fills
FAST_QUOTES: tuple[str, ...] = (*OUTPUT_COMMANDS, *EXCERPTS, *HEADS)  # the ones `--outputs` refills


def shown_command(argv: list[str]) -> str:
    """How the guide shows a SAMPLE_COMMANDS entry: `playbook diagnose ...` or `python benchmarks/...`."""
    return " ".join(["playbook", *argv[2:]] if argv[:2] == ["-m", "playbook"] else ["python", *argv])


def shown(name: str) -> str:
    """The command line a quoted region shows after `$ `."""
    if name in HEADS:
        name = HEADS[name]
    if name in EXCERPTS:
        return EXCERPTS[name][0]
    return shown_command(SAMPLE_COMMANDS[name])


def run_sample(argv: list[str], root: Path, timeout_s: float = 600, stderr: bool = True) -> str:
    """What `python ARGV` prints (stdout, then stderr: diagnose's warnings), run from the repository `root`."""
    return _run([sys.executable, *argv], root, timeout_s, stderr)


def _run(argv: list[str], root: Path, timeout_s: float = 600, stderr: bool = True) -> str:
    try:
        proc = subprocess.run(argv, cwd=root, capture_output=True, text=True,
                              timeout=timeout_s, env={**os.environ, "COLUMNS": "200"})
    except subprocess.TimeoutExpired:
        return f"(did not finish within {timeout_s:.0f} s)"
    except OSError as exc:  # grep missing: say so in the page rather than fail the whole regeneration
        return f"({argv[0]} could not run: {exc})"
    text = proc.stdout.rstrip()
    if proc.stderr.strip() and (stderr or proc.returncode):
        text += "\n\n" + proc.stderr.rstrip()
    if proc.returncode:
        text += f"\n(exit status {proc.returncode})"
    return text


REASONS_HEAD = re.compile(r"^\s{4}Clocks (?:Event|Throttle) Reasons\s*$")
REASON_LINE = re.compile(r"^\s{8,}(?P<label>[A-Za-z][A-Za-z /-]*?)\s*:\s*(?P<value>Active|Not Active|N/A)\s*$")


def reason_bit(label: str) -> int:
    """The clocks_event_reasons bit of an `nvidia-smi -q` reason label ("HW Thermal Slowdown" -> 0x40)."""
    from playbook.readers.nvidia_smi.fields import REASON_BITS

    key = re.sub(r"[^a-z]+", "_", label.lower()).strip("_")
    key = {"idle": "gpu_idle"}.get(key, key)
    if key not in REASON_BITS:
        raise InputError(f"unknown clock-event reason label {label!r}")
    return REASON_BITS[key]


def performance_blocks(text: str) -> tuple[list[str], list[tuple[str, list[str], list[str]]]]:
    """Split `nvidia-smi -q -d PERFORMANCE` output into its header lines and, per GPU, (bus id, block lines,
    labels of the Active clock-event reasons). The Counters block that follows the reasons is not read as reasons."""
    header: list[str] = []
    gpus: list[tuple[str, list[str], list[str]]] = []
    in_reasons = False
    for line in text.splitlines():
        if line.startswith("GPU "):
            gpus.append((line[4:].strip(), [line], []))
            in_reasons = False
            continue
        if not gpus:
            header.append(line)
            continue
        if line.strip():
            gpus[-1][1].append(line)
        if REASONS_HEAD.match(line):
            in_reasons = True
        elif in_reasons and (m := REASON_LINE.match(line)):
            if m.group("value") == "Active":
                gpus[-1][2].append(m.group("label"))
        elif line.strip():
            in_reasons = False
    return header, gpus


def performance_excerpt(root: Path, path: str | Path = PERFORMANCE_FIXTURE) -> str:
    """The header, the first GPU's block and every GPU block with a harmful reason active (other GPUs elided), then
    one comment line per shown GPU: its Active reasons as bits, the mask, and whether the mask is harmful."""
    from playbook.model import schema

    path = Path(root) / path
    header, gpus = performance_blocks(path.read_text(encoding="utf-8"))
    if not gpus:
        raise InputError(f"{path}: no 'GPU <bus id>' block: not `nvidia-smi -q -d PERFORMANCE` output")

    def mask(labels: list[str]) -> int:
        return sum(reason_bit(label) for label in labels)

    shown_ix = [0] + [i for i, g in enumerate(gpus) if i and mask(g[2]) & schema.THROTTLE_HARMFUL]
    lines = "\n".join(header).strip("\n").splitlines()
    last = -1
    for i in shown_ix:
        if i - last > 1:
            lines.append(f"[... {i - last - 1} GPU block(s) left out ...]")
        lines += gpus[i][1]
        last = i
    if len(gpus) - 1 > last:
        lines.append(f"[... {len(gpus) - 1 - last} GPU block(s) left out ...]")
    lines.append("")
    lines.append("# Active reasons as clocks_event_reasons.active bits (playbook.model.schema.THROTTLE_BITS):")
    for i in shown_ix:
        bus, _, labels = gpus[i]
        m = mask(labels)
        parts = " + ".join(f"{label} {reason_bit(label):#x}" for label in labels) or "none"
        verdict = ("harmful: this GPU is slowed by heat or power delivery" if m & schema.THROTTLE_HARMFUL
                   else "normal at full load" if m else "no reason active")
        lines.append(f"#   GPU {bus}: {parts} = {m:#x} ({verdict})")
    return "\n".join(lines)


def run_excerpt(name: str, root: Path) -> str:
    """The text of an EXCERPTS region: the command's output, or the fixture excerpt for nvidia-smi (run and read
    from the repository `root`)."""
    _, argv, _ = EXCERPTS[name]
    return performance_excerpt(root) if argv is None else _run(argv, root, timeout_s=60)


def head_of_diagnosis(text: str) -> str:
    """A diagnose output cut to what a front page has room for: the lines before the GPU table (the verdict; all of a
    `watch` answer's one-line summary), the GPU summary line, and the first hypothesis with its evidence; each cut
    is marked `  ...`."""
    keep: list[str] = []
    lines = text.splitlines()
    section = "top"
    for line in lines:
        if line.startswith("GPUs:"):
            section = "gpus"
            keep.append(line)
            continue
        if line.startswith("Hypotheses"):
            section = "hyp"
            keep += ["  ...", "", line]
            continue
        if section == "top":
            keep.append(line)
        elif section == "hyp":
            if re.match(r"\s+2\. ", line):
                keep.append("  ...")
                break
            keep.append(line)
    return "\n".join(keep).rstrip()


def command_outputs(root: Path, names: tuple[str, ...] = FAST_QUOTES, say=None) -> dict[str, str]:
    """Run the quoted commands and excerpts `names` from the repository `root` (HEADS from their full output);
    region name -> text."""
    out: dict[str, str] = {}
    for name in names:
        if name in HEADS:
            continue
        if say:
            say(f"excerpt of {PERFORMANCE_FIXTURE}" if name in EXCERPTS and EXCERPTS[name][1] is None
                else shown(name))
        out[name] = (run_excerpt(name, root) if name in EXCERPTS
                     else run_sample(SAMPLE_COMMANDS[name], root, stderr=name not in STDOUT_ONLY))
    for name, full in HEADS.items():
        if name in names and full in out:
            out[name] = head_of_diagnosis(out[full])
    return out
