"""The labs: real PyTorch workloads with fault and fix knobs (labs/workloads/), the fixes users import into their own
training code (labs/fixes/), and LABELLED SYNTHETIC data with known answers (synthetic).

A notebook imports them from here, lazily (torch is imported only when a lab runs):

    from playbook.labs import data_starvation as lab, run_variants, shapes
"""

from pathlib import Path

from playbook.core.lazy import exports

_HERE = Path(__file__).parent
EXPORTS = {
    **{p.stem: f"playbook.labs.{p.parent.name}.{p.stem}:" for folder in ("workloads", "fixes")
       for p in sorted((_HERE / folder).glob("[a-z]*.py"))},
    "synthetic": "playbook.labs.synthetic:",
    "run_variants": "playbook.labs.workloads.loop",
    "loss_curves": "playbook.labs.workloads.loop",
    "pick_device": "playbook.labs.workloads.common",
    "ObjectStore": "playbook.labs.workloads.objstore",
    "measure_splits": "playbook.labs.workloads.serving_splits",
    "split_model_table": "playbook.labs.workloads.serving_splits",
    "recompile_limit": "playbook.labs.fixes.compile",
    "even_buckets": "playbook.labs.fixes.shapes",
    "packed_attention_mask": "playbook.labs.fixes.shapes",
    "padded_attention_mask": "playbook.labs.fixes.shapes",
}
__getattr__, __dir__ = exports(__name__, EXPORTS)
