"""Figures from tidy frames. Every function takes an optional `ax` and returns a Figure; no show(), no file IO.

Modules: style (one look for all), timeline (GPU utilization over time, heatmaps, spectrum, folded cycle),
steps (step time and phase breakdown, busy fraction), ranks (per-rank waiting and straggler scores).
"""
