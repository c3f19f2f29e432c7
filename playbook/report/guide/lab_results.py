"""The lab-results part of the field guide: one row per notebook of a batch summary (status, verdict, figures,
what the fix bought), and the Markdown tables and the speedup plot made of those rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playbook.report import catalog
from playbook.report.guide.figures import _cell, _num, fmt_value

# The notebooks the project plans (fixed names); one missing from notebooks/ shows as "not in notebooks/ yet".
EXPECTED_NOTEBOOKS = (
    "00_onboarding", "01_triage", "02_observability", "10_data_starvation", "11_h2d_copies",
    "12_checkpoint_eval_stalls", "13_host_sync_gc", "14_recompilation", "20_collective_stragglers",
    "21_padding_vs_packing", "22_pipeline_imbalance", "23_comm_overlap", "30_serving_parity",
    "31_sharded_blob_loader", "40_regression_compare",
)

# Per notebook: the verdict figures the summary table shows, in order (the lab-<name> regions show them all).
KEY_FIGURES: dict[str, tuple[str, ...]] = {
    "00_onboarding": ("synthetic_top", "synthetic_period_s", "real_top", "fix_speedup", "fix_speedup_lo"),
    "01_triage": ("gpus", "gpus_not_ok", "mean_util_pct", "top_hypothesis", "top_score"),
    "02_observability": ("step_time_ratio", "ratio_1hz", "ratio_100hz", "ratio_profiler",
                         "profiler_window_cpu_ratio", "window_caught_stall"),
    "10_data_starvation": ("fault_ratio", "fix_ratio", "noise_cv", "fault_data_share", "buffer_period_steps"),
    "11_h2d_copies": ("cuda", "fault_ratio", "fix_ratio", "fault_h2d_share", "host_fresh_gib_s"),
    "12_checkpoint_eval_stalls": ("fault_ratio", "fix_ratio", "noise_cv", "stall_period_steps", "ckpt_every"),
    "13_host_sync_gc": ("fault_ratio", "fix_ratio", "sync_only_ratio", "fault_gc_max_s"),
    "14_recompilation": ("fault_ratio", "fix_ratio", "fault_recompiles", "noise_cv"),
    "20_collective_stragglers": ("hw_verdict", "sw_verdict", "sw_rho_tokens", "sw_step_ratio", "hw_fix_gain"),
    "21_padding_vs_packing": ("packed_speedup", "waste_padded", "waste_packed", "wait_share_padded",
                              "wait_share_packed", "loss_max_rel_gap"),
    "22_pipeline_imbalance": ("fix_vs_fault", "slow_consumer_busy", "other_consumers_busy", "producers_blocked",
                              "producers_needed", "producers_used_in_fault"),
    "23_comm_overlap": ("exposed_post_backward_ms", "exposed_ddp_one_bucket_ms", "exposed_ddp_buckets_ms",
                        "overlap_saved_ms", "backend"),
    "30_serving_parity": ("p99_eager_ms", "p99_exact_ms", "p99_bucketed_ms", "compiles_exact", "compiles_bucketed",
                          "packed_max_abs_diff", "bf16_rel_l2"),
    "31_sharded_blob_loader": ("fault_ratio", "fix_ratio", "fault_busy", "fix_busy", "prefetch"),
    "40_regression_compare": ("throughput_ratio", "top_cause", "shapes_gap_closed", "cache_gap_closed"),
}

# Per notebook: how much faster the fix runs than the fault (a ratio > 1 = the fix wins), from its verdict figures.
# Each entry: (label, function of the figures dict returning the ratio or None).
SPEEDUPS: dict[str, tuple[str, Any]] = {
    "00_onboarding": ("read-ahead buffer ÷ stalling loader, throughput", lambda f: f.get("fix_speedup")),
    "10_data_starvation": ("threaded loader ÷ serial decode, throughput", lambda f: _div(f, "fix_ratio", "fault_ratio")),
    "11_h2d_copies": ("prefetcher ÷ pageable sync copy, throughput",  # without CUDA there is no copy to overlap
                      lambda f: _div(f, "fix_ratio", "fault_ratio") if f.get("cuda") else None),
    "12_checkpoint_eval_stalls": ("async ckpt + background eval ÷ inline, loop efficiency",
                                  lambda f: _div(f, "fix_ratio", "fault_ratio")),
    "13_host_sync_gc": ("gc.freeze + batched logging ÷ default, throughput", lambda f: _div(f, "fix_ratio", "fault_ratio")),
    "14_recompilation": ("buckets warmed up ÷ exact shapes, throughput", lambda f: _div(f, "fix_ratio", "fault_ratio")),
    "20_collective_stragglers": ("count split ÷ token-balanced, step time", lambda f: f.get("sw_step_ratio")),
    "21_padding_vs_packing": ("packed ÷ padded, throughput", lambda f: f.get("packed_speedup")),
    "22_pipeline_imbalance": ("least-loaded ÷ round-robin, throughput", lambda f: f.get("fix_vs_fault")),
    "23_comm_overlap": ("post-backward ÷ bucketed DDP, step time",
                        lambda f: _ratio(_sum(f, "step_compute_only_ms", "exposed_post_backward_ms"),
                                         _sum(f, "step_compute_only_ms", "exposed_ddp_buckets_ms"))),
    "31_sharded_blob_loader": ("prefetching ÷ naive shard fetch, throughput", lambda f: _div(f, "fix_ratio", "fault_ratio")),
    "40_regression_compare": ("GOOD ÷ BAD, throughput", lambda f: _ratio(1.0, f.get("throughput_ratio"))),
}


def _ratio(a: Any, b: Any) -> float | None:
    a, b = _num(a), _num(b)
    return a / b if a is not None and b not in (None, 0.0) else None


def _div(figures: dict, num: str, den: str) -> float | None:
    return _ratio(figures.get(num), figures.get(den))


def _sum(figures: dict, *keys: str) -> float | None:
    values = [_num(figures.get(k)) for k in keys]
    return None if any(v is None for v in values) else sum(values)


@dataclass
class LabRow:
    """One notebook's outcome in a batch: status ok / failed / not run / missing, verdict and figures."""

    notebook: str
    title: str = ""
    status: str = "not run"
    verdict: str | None = None
    summary: str = ""
    figures: dict[str, Any] = field(default_factory=dict)
    duration_s: float | None = None
    error: str | None = None

    @property
    def key_figures(self) -> dict[str, Any]:
        """The curated figures of KEY_FIGURES that are present, else the first five scalar figures."""
        keys = [k for k in KEY_FIGURES.get(self.notebook, ()) if k in self.figures]
        if not keys:
            keys = [k for k, v in self.figures.items() if not isinstance(v, (dict, list))][:5]
        return {k: self.figures[k] for k in keys}

    @property
    def speedup(self) -> float | None:
        """How much faster the fix runs than the fault (SPEEDUPS), None when not measured."""
        entry = SPEEDUPS.get(self.notebook)
        if entry is None or self.status != "ok":
            return None
        try:
            return _num(entry[1](self.figures))
        except (TypeError, ValueError, ZeroDivisionError):
            return None


def lab_rows(summary: dict[str, Any], expected: tuple[str, ...] = EXPECTED_NOTEBOOKS,
             present: list[str] | None = None, notebooks_dir: Path | None = None) -> list[LabRow]:
    """One LabRow per notebook of the batch, plus every expected notebook it lacks ("not run in this batch" when
    the notebook exists in notebooks/, "missing" when it does not), in notebook order."""
    if present is None:
        present = [s.name for s in catalog.discover(notebooks_dir or catalog.repo_root() / "notebooks")]
    rows: dict[str, LabRow] = {}
    for nb in summary.get("notebooks") or []:
        verdict = nb.get("verdict") or {}
        err = nb.get("error")
        row = LabRow(notebook=str(nb.get("notebook")), title=str(nb.get("title") or ""),
                     status="ok" if nb.get("status") == "ok" else "failed",
                     verdict=verdict.get("status"), summary=str(verdict.get("summary") or ""),
                     figures=dict(verdict.get("figures") or {}), duration_s=_num(nb.get("duration_s")))
        if err:
            cell = f" (cell {err.get('cell')})" if err.get("cell") is not None else ""
            row.error = f"{err.get('name')}: {_first_line(err.get('message'))}{cell}"
        rows[row.notebook] = row
    for name in list(expected) + list(present):
        if name not in rows:
            rows[name] = LabRow(notebook=name, status="not run" if name in present else "missing")
    return [rows[k] for k in sorted(rows)]


def _first_line(text: Any) -> str:
    line = next((ln for ln in str(text or "").splitlines() if ln.strip()), "")
    return line.strip()[:160]


def _status_text(row: LabRow) -> str:
    if row.status == "ok":
        return "ok"
    if row.status == "failed":
        return f"**failed** — {row.error or 'no error message'}"
    if row.status == "missing":
        return "**missing** — not in notebooks/ yet"
    return "not run in this batch"


def results_table(rows: list[LabRow], notebooks: str = "../notebooks") -> str:
    """The lab-results Markdown table: notebook, batch status, verdict, key figures, minutes; `notebooks` is the
    notebooks/ folder relative to the page the table goes into."""
    lines = ["| Notebook | Ran | Verdict | Key figures (from the notebook's verdict) | Time (s) |",
             "| --- | --- | --- | --- | ---: |"]
    for r in rows:
        figs = " · ".join(f"{k} {fmt_value(v)}" for k, v in r.key_figures.items()) or "–"
        verdict = f"**{r.verdict}**" if r.verdict else ("no verdict recorded" if r.status != "not run" else "–")
        secs = f"{r.duration_s:.0f}" if r.duration_s is not None else "–"
        lines.append(f"| [{r.notebook}]({notebooks}/{r.notebook}.ipynb) | {_cell(_status_text(r))} | {verdict} | "
                     f"{_cell(figs)} | {secs} |")
    return "\n".join(lines)


def lab_section(row: LabRow) -> str:
    """Markdown for one lab's generated region: its verdict sentence and every verdict figure."""
    if row.status == "missing":
        return f"Not measured: `notebooks/{row.notebook}.ipynb` is not in the repository yet."
    if row.status == "not run":
        return f"Not measured in the last batch (`notebooks/{row.notebook}.ipynb` was not run)."
    head = []
    if row.status == "failed":
        head.append(f"**The notebook failed in the last batch** — {_cell(row.error or '')}.")
    if row.verdict:
        head.append(f"**Verdict: {row.verdict}** — {_cell(row.summary)}")
    elif row.status == "ok":
        head.append("The notebook ran but recorded no verdict.")
    lines = ["\n\n".join(head)]
    if row.figures:
        lines += ["", "| Figure | Value |", "| --- | --- |"]
        lines += [f"| `{k}` | {_cell(fmt_value(v))} |" for k, v in row.figures.items()]
    return "\n".join(lines)


def plot_speedups(rows: list[LabRow]):
    """Horizontal bars: fix ÷ fault per lab (SPEEDUPS), a line at 1 (no gain). Figure, or None without data."""
    data = [(f"{r.notebook[:2]} {SPEEDUPS[r.notebook][0]}", r.speedup) for r in rows if r.speedup is not None]
    if not data:
        return None
    from playbook.plots.style import PALETTE, figure

    fig, ax = figure(figsize=(7.5, 0.32 * len(data) + 1.1))
    labels, values = zip(*reversed(data), strict=True)
    colors = [PALETTE["fix"] if v > 1 else PALETTE["fault"] for v in values]
    ax.barh(range(len(values)), [v - 1.0 for v in values], left=1.0, color=colors)  # bars grow from "no change"
    ax.set_yticks(range(len(values)), labels, fontsize=8)
    ax.set_xscale("log")
    ax.axvline(1.0, color="#212529", lw=1)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.2f}×", va="center", fontsize=8)
    ax.set_xlabel("fix ÷ fault (> 1: the fix wins; log scale)", fontsize=9)
    ax.set_title("What each fix bought in the last lab run", fontsize=10)
    ax.set_xlim(min(0.5, min(values) * 0.8), max(values) * 2.5)
    return fig
