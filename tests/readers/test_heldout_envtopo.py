"""Held-out machine facts (tests/data/envtopo, sources in its SOURCES.md): `nvidia-smi topo -m` matrices and
`lspci -vv` link lines pasted in public threads. Each file is read into the environment facts expected.json gives
(GPU-pair paths, NUMA / CPU affinity, NICs; per device the current and capable link, downgraded), and diagnosed
alone it is a fact, not a measured loss: the verdict stays insufficient_data. Run as a script for the score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from playbook import diagnose
from playbook.core.errors import PlaybookError
from playbook.readers import read_paths

DATA = Path(__file__).parent.parent / "data" / "envtopo"
EXPECTED = {k: v for k, v in json.loads((DATA / "expected.json").read_text()).items() if not k.startswith("_")}
LINK_KEYS = ("bus_id", "gpu", "gen", "width", "max_gen", "max_width", "downgraded")


def _section(bundle) -> dict:
    (section,) = [v for k, v in bundle.meta.items() if k.startswith("environment:")]
    return section


def problems(name: str) -> list[str]:
    """What a read and a lone diagnosis of `name` get wrong against expected.json (empty: right)."""
    want = EXPECTED[name]
    try:
        bundle = read_paths([DATA / name])
    except PlaybookError as exc:
        return [f"refused: {str(exc)[:120]}"]
    out = []
    sec = _section(bundle)
    if sec.get("format") != want["format"]:
        out.append(f"format {sec.get('format')!r}")
    if "pairs" in want:
        counts: dict[str, int] = {}
        for path in sec.get("pairs", {}).values():
            counts[path] = counts.get(path, 0) + 1
        if counts != want["pairs"]:
            out.append(f"pairs {counts} != {want['pairs']}")
        if sec.get("gpu_count") != want["gpus"]:
            out.append(f"gpus {sec.get('gpu_count')} != {want['gpus']}")
        if len(sec.get("nics", {})) != want["nics"]:
            out.append(f"nics {len(sec.get('nics', {}))} != {want['nics']}")
        for gpu, (cpus, numa) in want["affinity"].items():
            got = sec["gpus"].get(gpu, {})
            if (got.get("cpu_affinity"), got.get("numa")) != (cpus, numa):
                out.append(f"GPU{gpu} affinity {(got.get('cpu_affinity'), got.get('numa'))} != {(cpus, numa)}")
    if "links" in want:
        got = [dict(f, gpu=int(g)) for g, f in sec.get("gpus", {}).items()] + list(sec.get("devices", []))
        if len(got) != len(want["links"]):
            out.append(f"{len(got)} links != {len(want['links'])}")
        for g, w in zip(got, want["links"], strict=False):
            wrong = {k: g.get(k) for k in LINK_KEYS if k in w and g.get(k) != w[k]}
            if wrong:
                out.append(f"link {wrong} != { {k: w[k] for k in wrong} }")
    if want.get("skipped", 0) == 0 and bundle.warnings:
        out.append(f"warnings {bundle.warnings[:1]}")
    d = diagnose(bundle)
    if d.hypotheses[0]["id"] != want["verdict_alone"]:
        out.append(f"verdict {d.hypotheses[0]['id']}")
    if want.get("named") and not any(h["id"] == want["named"] for h in d.hypotheses):
        out.append(f"{want['named']} not stated")
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_heldout_envtopo_file_reads_as_expected(name):
    assert problems(name) == []


if __name__ == "__main__":
    right = 0
    for name in sorted(EXPECTED):
        found = problems(name)
        right += not found
        print(f"{'right' if not found else 'WRONG'}  {name}  {'; '.join(found)}")
    print(f"{right}/{len(EXPECTED)} read right")
