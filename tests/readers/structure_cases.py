"""The held-out cases of tests/data/structure/*.txt (see the header of heldout.txt): parse them, read each case's
lines as a file, and check what was read against the case's expectations, one check per expected key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from playbook.core.errors import PlaybookError
from playbook.readers import read_file

DATA = Path(__file__).resolve().parents[1] / "data" / "structure"


def cases(name: str) -> list[dict]:
    """The cases of DATA/name: [{"name", "file", "expect": {key: value}, "lines": [...]}]."""
    out: list[dict] = []
    for raw in (DATA / name).read_text(encoding="utf-8").splitlines():
        if raw.startswith("## case "):
            out.append({"name": raw[8:].strip(), "file": None, "expect": {}, "lines": []})
        elif raw.startswith("## file: "):
            out[-1]["file"] = raw[9:].strip()
        elif raw.startswith("## expect: "):
            out[-1]["expect"] = dict(kv.split("=", 1) for kv in raw[11:].split())
        elif raw.startswith(("## ", "# ")) or (not raw.strip() and (not out or not out[-1]["lines"])):
            continue
        elif out and raw.strip():
            out[-1]["lines"].append(raw)
    return out


def read_case(case: dict, root: Path):
    """The Bundle of the case's lines written under its file name (None when the file is refused)."""
    path = root / (case["file"] or f"{case['name']}.log")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(case["lines"]) + "\n", encoding="utf-8")
    try:
        return read_file(path)
    except PlaybookError:
        return None


def check(case: dict, bundle) -> dict[str, bool]:
    """key -> whether the reading meets the case's expectation for that key."""
    out = {}
    steps = bundle.steps if bundle is not None else pd.DataFrame(columns=["phase", "rank", "duration_s", "time"])
    events = bundle.events if bundle is not None else pd.DataFrame(columns=["kind", "rank", "time"])
    whole = steps[steps["phase"] == "step"]
    for key, want in case["expect"].items():
        if key == "step_s":
            if want == "none":
                out[key] = len(whole) == 0
            else:
                out[key] = len(whole) > 0 and bool(np.isclose(whole["duration_s"].median(), float(want), rtol=2e-3))
        elif key == "ranks":
            got = set(whole["rank"].tolist()) if len(whole) else set(events["rank"].tolist())
            out[key] = got == {int(r) for r in want.split(",")}
        elif key == "phases":
            out[key] = set(steps["phase"]) - {"step"} == set(want.split(","))
        elif key == "events":
            out[key] = sorted(events["kind"].astype(str)) == sorted(want.split(","))
        elif key == "time":
            times = whole["time"].dropna() if len(whole) else events["time"].dropna()
            out[key] = len(times) > 0 and times.iloc[0] == pd.Timestamp(want, tz="UTC")
        else:
            raise ValueError(f"unknown expectation {key!r} in case {case['name']}")
    return out


def score(name: str, root: Path) -> tuple[int, int, list[str]]:
    """(checks met, checks, names of the failed case:key) over the cases of DATA/name."""
    met = total = 0
    failed = []
    for case in cases(name):
        for key, ok in check(case, read_case(case, root)).items():
            total += 1
            met += ok
            if not ok:
                failed.append(f"{case['name']}:{key}")
    return met, total, failed
