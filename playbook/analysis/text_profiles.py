"""Profiler texts of the host alone (readers/stack_samples.py, readers/line_profile.py) → findings for `playbook
diagnose`, at profiler_ops' levels (5% moderate, 20% high) of what each text measures:

  folded stacks   the loader's and the syncs' shares of the host's samples (host_calls.innermost per stack)
  line_profiler   the shares of the profiled function's time its loader and sync lines take
  py-spy dump     one instant: a main thread waiting in the DataLoader or in a sync is a finding without a share
                  (a dump taken while a process hangs stands for the whole wait; one taken at random, for a moment)

Every finding is `stated`: a share of host samples, or of one function's time, is no share of the run's time, and
none of these texts accounts for the device's time — none vouches for health (profiler_ops' cProfile rule needs
calls held >= 1 ms to show the host waiting on a busy device; a sample or a line has no call count to say so).
"""

from __future__ import annotations

from collections.abc import Callable

from playbook.knowledge import ids as cause_ids
from playbook.readers import host_calls

_CAUSE = {host_calls.LOADER: cause_ids.DATA_STARVATION, host_calls.SYNC: cause_ids.HOST_SYNC}
_WHAT = {host_calls.LOADER: "the DataLoader (waiting for or building the next batch)",
         host_calls.SYNC: "calls that wait for the device (.item(), .cpu(), .to(), synchronize)"}


def findings(source: str, table: dict, out: list[dict], level: Callable[[float], str | None]) -> int:
    """Append the findings of `table`'s host texts to `out`; how many such texts the table holds."""
    n = 0
    if stacks := table.get("stacks"):
        n += 1
        total = float(stacks.get("samples") or 0.0)
        for kind, cause in _CAUSE.items():
            share = float(stacks.get(kind) or 0.0) / total if total > 0 else 0.0
            if lvl := level(share):
                out.append({"hypothesis": cause, "level": lvl, "share": share, "stated": True, "evidence": (
                    f"folded stacks in {source}: {share:.0%} of the {total:,.0f} samples are in {_WHAT[kind]} "
                    f"(e.g. {stacks.get('examples', {}).get(kind, '?')}); a share of the host's samples, not of "
                    "the run's time: the samples say nothing of what the device did")})
    for f in table.get("line_profile") or []:
        n += 1
        for kind, cause in _CAUSE.items():
            share = float(f.get(f"{kind}_pct") or 0.0) / 100
            if lvl := level(share):
                total = f" of its {f['total_s']:.3f} s" if f.get("total_s") else ""
                out.append({"hypothesis": cause, "level": lvl, "share": share, "stated": True, "evidence": (
                    f"line_profiler listing in {source}: {share:.0%} of the profiled function's time{total} is on "
                    f"lines in {_WHAT[kind]} (`{f.get(f'{kind}_src')}`); a share of that function, not of the run")})
    if dump := table.get("dump"):
        n += 1
        _dump(source, dump, out)
    return n


def _dump(source: str, dump: dict, out: list[dict]) -> None:
    """A py-spy dump's main threads (one per process): those waiting in the DataLoader or in a sync."""
    main = dump.get("main") or []
    waits = {k: [m for m in main if m.get("kind") == k] for k in (*_CAUSE, host_calls.COLLECTIVE)}
    peers = len(waits[host_calls.COLLECTIVE])
    for kind, cause in _CAUSE.items():
        if not (these := waits[kind]):
            continue
        tops = ", ".join(sorted({f"{m['top']} ({m['state']})" for m in these})[:3])
        others = (f"; {peers} other main thread{'s' * (peers != 1)} wait in a collective (broadcast, all_reduce "
                  "...) for it" if peers else "")
        out.append({"hypothesis": cause, "level": "moderate", "stated": True, "evidence": (
            f"py-spy dump in {source}: {len(these)} of {len(main)} main thread{'s' * (len(main) != 1)} "
            f"{'is' if len(these) == 1 else 'are'} in {_WHAT[kind]}, innermost {tops}{others}. A dump is one "
            "instant: it names where the loop waits, not for how long (when the process hung, for all of it); "
            "sample it over time (py-spy record) or time the loop's phases (`playbook record`) for the share")})
