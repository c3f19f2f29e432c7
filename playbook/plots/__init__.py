"""Figures from tidy frames. Every function takes an optional `ax` and returns a Figure; no show(), no file IO.

Modules: style (one look for all), timeline (GPU utilization over time, heatmaps, spectrum, folded cycle),
step_charts (step time and phase breakdown, busy fraction), ranks (per-rank waiting and straggler scores),
widgets (JupyterLab: a live view and a run explorer). The style's two switches are exported here, lazily.
"""

from playbook.core.lazy import exports

EXPORTS = {"use_headless_backend": "playbook.plots.style", "apply": "playbook.plots.style"}
__getattr__, __dir__ = exports(__name__, EXPORTS)
