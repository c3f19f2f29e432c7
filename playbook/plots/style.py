"""One look for every figure: call `apply()` once (plots modules do it for you)."""

from __future__ import annotations

import matplotlib

PALETTE = {
    "busy": "#2a9d8f",
    "idle": "#e76f51",
    "wait": "#f4a261",
    "fault": "#e76f51",
    "fix": "#2a9d8f",
    "no_fault": "#264653",
}
PHASE_COLORS = {
    "data": "#e76f51", "h2d": "#f4a261", "fwd": "#2a9d8f", "bwd": "#264653", "collective": "#e9c46a",
    "optimizer": "#8ab17d", "checkpoint": "#9b5de5", "eval": "#f15bb5", "log": "#adb5bd", "other": "#ced4da",
}


def apply() -> None:
    """Set the seaborn theme used by every playbook figure (idempotent)."""
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", rc={"figure.dpi": 100, "axes.titleweight": "bold"})


def figure(ax=None, figsize=(9, 3.5)):
    """(fig, ax): reuse `ax` when given, else a new figure of `figsize` inches, styled."""
    apply()
    if ax is not None:
        return ax.figure, ax
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return fig, ax


def report_tables() -> None:
    """Tables as a report shows them: 3 significant decimals (not pandas' 6) and at most 20 columns."""
    import pandas as pd

    pd.set_option("display.precision", 3)
    pd.set_option("display.max_columns", 20)


def use_headless_backend() -> None:
    """Use Agg when no display is present (batch runs, tests); tables with report precision (report_tables)."""
    report_tables()
    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        import os

        if not os.environ.get("DISPLAY"):
            matplotlib.use("Agg")


def outside_legend(ax, **kwargs):
    """The legend right of the axes, never over the data (the figure's constrained layout makes room)."""
    kwargs.pop("loc", None)
    kwargs.pop("ncols", None)  # one column beside the plot
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, **kwargs)
