"""A lab notebook's parameters cell, generated from its lab's config: the notebook chooses each knob's value (and
`[quick: ...]` value); what the knob means is the help text of the config field, written once, in the lab.

    python -m playbook.report.lab_parameters           # rewrite the comments of every lab notebook's parameters
    python -m playbook.report.lab_parameters --check   # exit 1 and name the notebooks that are out of date
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from pathlib import Path

from playbook.knowledge import ids as cause_ids
from playbook.report import catalog

# notebook stem -> the lab module (playbook.labs.workloads.<module>) whose CONFIG its parameters cell tunes
LAB_NOTEBOOKS = {
    "02_observability": "observability", "10_data_starvation": cause_ids.DATA_STARVATION, "11_h2d_copies": "h2d_copies",
    "12_checkpoint_eval_stalls": "checkpoint_stalls", "13_host_sync_gc": "host_sync_gc",
    "14_recompilation": cause_ids.RECOMPILATION, "20_collective_stragglers": "collective_stragglers",
    "21_padding_vs_packing": "padding_packing", "22_pipeline_imbalance": cause_ids.PIPELINE_IMBALANCE,
    "23_comm_overlap": "comm_overlap", "30_serving_parity": "serving", "31_sharded_blob_loader": "shard_loader",
}


def lab_fields(stem: str) -> dict[str, dataclasses.Field]:
    """{knob: field} a lab notebook may set: its lab's config fields and the harness's run options."""
    from playbook.labs.workloads import _harness as H

    config = importlib.import_module(f"playbook.labs.workloads.{LAB_NOTEBOOKS[stem]}").CONFIG
    return {f.name: f for f in (*H.fields(H.RunOptions), *H.fields(config))}


def generated_cell(source: str, knobs: dict[str, dataclasses.Field]) -> str:
    """`source` with every parameter's comment replaced by its field's help text (values, `[quick: ...]` tags and
    the lines that are not parameters kept). Raises catalog.ParameterCellError naming a knob the config lacks."""
    from playbook.labs.workloads import _harness as H

    lines = source.splitlines()
    for p in catalog.parse_parameters(source):
        if p.name not in knobs:
            raise catalog.ParameterCellError(f"line {p.line}: {p.name} is not a knob of the lab's config")
        quick = catalog.QUICK_TAG.search(lines[p.line - 1])
        tag = f" {quick.group(0).strip()}" if quick else ""
        lines[p.line - 1] = f"{p.code}  # {H.help_text(knobs[p.name])}{tag}"
    return "\n".join(lines) + ("\n" if source.endswith("\n") else "")


def out_of_date(notebooks: Path, write: bool) -> list[str]:
    """The lab notebooks whose parameters cell differs from the generated one (rewritten in place when `write`)."""
    stale = []
    for stem in sorted(LAB_NOTEBOOKS):
        path = notebooks / f"{stem}.ipynb"
        nb = json.loads(path.read_text(encoding="utf-8"))
        cell = catalog.parameters_cells(nb)[0]
        source = catalog.cell_source(cell)
        try:
            new = generated_cell(source, lab_fields(stem))
        except catalog.ParameterCellError as exc:
            raise catalog.ParameterCellError(f"{path}: {exc}") from None
        if new != source:
            stale.append(stem)
            if write:
                cell["source"] = new.splitlines(keepends=True)
                path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m playbook.report.lab_parameters", description=__doc__.split("\n\n")[0],
        epilog="example: python -m playbook.report.lab_parameters --check",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook is out of date")
    parser.add_argument("--notebooks", type=Path, default=None, help="the notebooks folder (default: the repo's)")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or catalog.repo_root() / "notebooks"
    try:
        stale = out_of_date(notebooks, write=not args.check)
    except catalog.ParameterCellError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    verb = "out of date" if args.check else "rewritten"
    print(f"{len(stale)} of {len(LAB_NOTEBOOKS)} lab notebooks {verb}" + (f": {', '.join(stale)}" if stale else ""))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
