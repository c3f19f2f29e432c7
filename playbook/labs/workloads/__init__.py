"""Reproducible failure-mode workloads: small real PyTorch training loops with fault knobs and fix knobs.

Each module is a runbook: `python -m playbook.labs.workloads.<name> --help`. Each writes a run directory through
playbook.probes that `playbook diagnose` reads.
"""
