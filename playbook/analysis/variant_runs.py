"""Tables of runs that differ by a setting (readers/variant_table.py) → findings for `playbook diagnose`: what the
setting the rows vary costs, from the rows themselves.

The varied setting (the factor): a column of switches (true/false, on/off, yes/no, enabled/disabled) if there is
one, else the last setting column (a table names the item first — model, case — and the knobs after it); with one
setting column every row is a case of it. Rows that agree on every other setting form a group (where no two rows
agree, the other columns only name the rows, and all rows form one group); in each group the
fastest row is the reference and the slowest is compared with it: the share of the slow row's time the change costs
(1 - fast/slow) is the finding's share, at the caller's levels. Its phases (the other time columns) say where the
time went: the phases that grew by at least a tenth of the whole difference, and the ones that did not change.

The cause is named only for a setting whose name states its mechanism: an offload (`ZeRO Offload`, `offload_param`)
→ h2d_copy (it moves the optimizer state, gradients or parameters across PCIe every step, and the step waits on the
host's side of it — said so in the evidence), where its values turn it on, off or up (true/false, none/cpu, 50%)
and the slow row is the one with it on: values that name alternatives (`Megatron` / `DTensor` under `Backend`) are
different programs, not one knob. The looser links of knowledge.environment.KEYWORD_LINKS (a substring of a changed
setting's name) say nothing here: gradient checkpointing is no checkpoint save, use_cache no compile cache, a
learning-rate warmup no compile warm-up, a Device column of CPU and GPU no slower kernel of the run, and compile=off
being the slow row no recompilation. Any other setting (`Case`, `variant`), alternatives, or an offload whose off side
is the slow one give no finding: the comparison is kept as a note (`notes`), for the answer to state beside "not
enough data" — the table says which row is slow, not why. A table is a single measurement per row: a difference under the
caller's lowest level, or a slow row under SLOW_GAP times the fast one, is neither — unless each of the two rows
holds repeated measurements (a typed list's epochs, readers/config_lists.py) and the slow row's every one is slower
than the fast row's every one (separated(): their spread is smaller than their difference).

An input pipeline's knob (a DataLoader's workers, persistent workers, pinned memory, prefetching) states its
mechanism too: a setting named for one (`num_workers`; plain `workers` only beside a count of zero: a job runs with no
workers only where they load its data, elsewhere they may be a distributed job's), a sweep whose rows each name one
knob at other counts (`Zero workers` / `Eight workers`), or a fast row whose name adds one the slow row lacks (`Persistent worker + Pin memory`
against `Current version`) → data_starvation: what the runs change is the time the step waits on its input. Where the
rows keep their first epoch apart and it is alike in every row while the steady epochs differ, the cost is paid at
each epoch's start after the first (loader workers started anew every epoch: persistent workers keep them) — said so. The finding is `stated` (the table's own times, no time axis of the GPUs): the
cause it names leads where nothing else measured the run.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from playbook.knowledge import ids

_SWITCH = re.compile(r"^(true|false|yes|no|on|off|enabled?|disabled?|with|without|✓|✗|x|-|none)$", re.IGNORECASE)
# what a setting that moves work between devices takes: off/none, or where it puts the work (`cpu`, `nvme`)
_PLACEMENT = re.compile(r"^(none|off|false|no|disabled?|cpu|gpu|nvme|disk|host|device|cuda)$", re.IGNORECASE)
_AMOUNT = re.compile(r"^\d{1,9}(?:\.\d{1,9})?\s?%?$")
SLOW_GAP = 1.3  # one measurement per row: a difference under 30% may be the runs' own spread (as nccl_bench.SLOW_GAP)
_OFFLOAD = re.compile(r"offload|\bcpu\b", re.IGNORECASE)
_OFFLOAD_NAME = re.compile(r"offload", re.IGNORECASE)  # the one setting name that states its mechanism (docstring)
_OFF = re.compile(r"^(none|off|false|no|disabled?|without|0\s?%?|-|✗|gpu|device|cuda)$", re.IGNORECASE)
# an input pipeline's knob, in a setting's or a configuration's name (docstring)
_LOADER = re.compile(r"\b(num_?workers?|persistent[_ ]workers?|pin[_ ]?memory|prefetch(?:_factor)?|data ?loader|"
                     r"loader workers?)\b", re.IGNORECASE)
# plain `workers` names a loader's only beside a count of zero among the rows (`0 workers`, `Zero workers`): a job
# runs with no workers only where they load its data in-process; elsewhere `workers` may be a distributed job's
_WORKERS = re.compile(r"\bworkers?\b", re.IGNORECASE)
_ZERO_WORKERS = re.compile(r"(?:^|\b)(?:0|zero|no)\s+(?:data ?loader\s+)?workers?\b|\bworkers?\s*[=:]\s*0\b",
                           re.IGNORECASE)
FIRST_ALIKE = 0.05  # first epochs within this share of each other are alike
GREW = 0.1  # a phase "grew" when it adds at least this share of the whole difference
SAME = 0.25  # ... and "did not change" when it moved by less than this ratio either way


def _factor(table: dict) -> str | None:
    settings = table["settings"]
    rows = table["rows"]
    switches = [c for c in settings if all(_SWITCH.match(r["settings"][c]) for r in rows)
                and len({r["settings"][c].lower() for r in rows}) > 1]
    if switches:
        return switches[0]
    varied = [c for c in settings if len({r["settings"][c] for r in rows}) > 1]
    return varied[-1] if varied else None


def _groups(table: dict, factor: str) -> list[list[dict]]:
    others = [c for c in table["settings"] if c != factor]
    out: dict[tuple, list[dict]] = {}
    for r in table["rows"]:
        out.setdefault(tuple(r["settings"][c] for c in others), []).append(r)
    groups = [g for g in out.values() if len({r["settings"][factor] for r in g}) > 1]
    # no two rows agree on the other settings: those columns name each row (`baseline`, `zero3`), they hold nothing
    # constant — the rows form one group
    return groups or [list(table["rows"])]


def _phases(slow: dict, fast: dict) -> str:
    diff = slow["whole_s"] - fast["whole_s"]
    grew, same = [], []
    for name, s in slow["phases"].items():
        f = fast["phases"].get(name)
        if f is None:
            continue
        if diff > 0 and s - f >= GREW * diff:
            grew.append((s - f, f"{name} {f:g} → {s:g} s"))
        elif f > 0 and abs(s / f - 1) < SAME or s == f:
            same.append(name)
    text = ""
    if grew:
        text += "; the time grew in " + ", ".join(t for _, t in sorted(grew, reverse=True))
    if same:
        text += "; unchanged: " + ", ".join(same)
    return text


def linked_cause(name: str, slow_value: str, values: tuple[str, ...] = ()) -> str | None:
    """The cause a setting's name states when the slow row has it on (module docstring: an offload → h2d_copy, an
    input pipeline's knob → data_starvation); None for any other setting, or an offload whose slow row has it off."""
    if _OFFLOAD_NAME.search(name) and not _OFF.match(slow_value.strip()):
        return ids.H2D_COPY
    if _LOADER.search(name) or _WORKERS.search(name) and any(v.strip() == "0" for v in values):
        return ids.DATA_STARVATION
    return None


def _knobs(label: str, zero: bool) -> set[str]:
    found = {re.sub(r"[_ ]|s$", "", k.lower()) for k in _LOADER.findall(label)}
    return found | ({"worker"} if zero and _WORKERS.search(label) else set())


def labelled_cause(rows: list[dict], slow: dict, fast: dict) -> str | None:
    """data_starvation where the rows' own names state an input pipeline's knob as what differs (docstring): every
    row names the same knob (a sweep of its count), or the fast row names one the slow row does not (a fix)."""
    zero = any(_ZERO_WORKERS.search(r["label"]) for r in rows)
    named = [_knobs(r["label"], zero) for r in rows]
    if all(named) and set.intersection(*named):
        return ids.DATA_STARVATION
    if _knobs(fast["label"], zero) - _knobs(slow["label"], zero):
        return ids.DATA_STARVATION
    return None


def separated(slow: dict, fast: dict) -> bool:
    """Both rows hold repeated measurements and every one of the slow row's is slower than every one of the fast's."""
    a, b = slow.get("samples") or [], fast.get("samples") or []
    return len(a) > 1 and len(b) > 1 and min(a) > max(b)


def _first_epochs(rows: list[dict], slow: dict, fast: dict) -> str:
    firsts = [r["first_s"] for r in rows if r.get("first_s") and len(r.get("samples") or []) >= 1]
    if len(firsts) < len(rows) or len(firsts) < 2 or max(firsts) > (1 + FIRST_ALIKE) * min(firsts):
        return ""
    if not separated(slow, fast):
        return ""
    return ("; the first epoch is alike in every configuration (" + ", ".join(f"{f:.3g} s" for f in firsts)
            + ") and only the later ones differ: a cost paid again at each epoch's start after the first — loader "
            "workers started anew every epoch (persistent workers keep them)")


def findings(source: str, variants: dict, out: list[dict], level: Callable[[float], str | None],
             notes: list[str] | None = None) -> int:
    """Append the findings of `variants` (VariantTable.summary()) to `out` and the comparisons whose setting names no
    cause to `notes`; how many tables it holds."""
    tables = variants.get("tables") or []
    for t in tables:
        factor = _factor(t)
        if factor is None:
            continue
        best = None
        for g in _groups(t, factor):
            fast = min(g, key=lambda r: r["whole_s"])
            slow = max(g, key=lambda r: r["whole_s"])
            if slow["whole_s"] <= 0 or slow is fast:
                continue
            share = 1.0 - fast["whole_s"] / slow["whole_s"]
            if best is None or share > best[0]:
                best = (share, slow, fast, len(g))
        if best is None or (best[0] < 1 - 1 / SLOW_GAP and not separated(best[1], best[2])) or not (
                lvl := level(best[0])):
            continue
        share, slow, fast, n = best
        offload = bool(_OFFLOAD.search(factor))
        others = ", ".join(f"{c}={v}" for c, v in slow["settings"].items() if c != factor)
        # the setting's name says the cause only where its values turn one mechanism on, off or up (true/false,
        # none/cpu, 50%): named alternatives (`Megatron` / `DTensor` under `Backend`) are different programs
        values = {r["settings"][factor] for r in t["rows"]}
        knob = all(_SWITCH.match(v) or _PLACEMENT.match(v) or _AMOUNT.match(v) for v in values)
        cause = linked_cause(factor, slow["settings"][factor], tuple(values)) if knob else None
        by_label = cause is None and labelled_cause(t["rows"], slow, fast)
        cause = cause or by_label or None
        if cause is None:
            if notes is not None:
                notes.append(f"a table of runs in {source} (line {t['line']}): {factor}={slow['settings'][factor]} "
                             f"takes {slow['whole_s']:g} s against {fast['whole_s']:g} s with {factor}="
                             f"{fast['settings'][factor]} ({slow['whole_s'] / fast['whole_s']:.1f}x; {share:.0%} of "
                             f"its time; {t['whole']}), a setting whose name says no cause")
            continue
        out.append({"hypothesis": cause, "level": lvl, "share": share, "stated": True, "evidence": (
            f"a table of runs in {source} (line {t['line']}) that differ by {factor}"
            + (f" ({others})" if others else "") + f": {factor}={slow['settings'][factor]} takes "
            f"{slow['whole_s']:g} s ({t['whole']}) against {fast['whole_s']:g} s with {factor}="
            f"{fast['settings'][factor]} ({slow['whole_s'] / fast['whole_s']:.1f}x: {share:.0%} of its time is what "
            f"the setting costs)" + _phases(slow, fast)
            + (f"; the configurations' names state an input pipeline's knob ({slow['label']} against "
               f"{fast['label']}): the time they differ by is the step waiting on its input" + _first_epochs(
                   t["rows"], slow, fast) if by_label else "")
            + ("; a CPU offload: the optimizer step and the state it reads live in host memory, so every step waits "
               "on the host's update and on copies across PCIe — keep it only where the GPU memory it frees is "
               "needed (offload less, overlap the copies, a faster CPU optimizer)" if offload else "")
            + (f"; {len(t['rows'])} rows, one measurement each" if n < len(t["rows"]) else ""))})
    return len(tables)
