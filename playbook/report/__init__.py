"""Notebook outputs and batch reports: `record` values inside notebooks, `collect` them back out."""

from playbook.report.record import MIME, collect, record, verdict

__all__ = ["MIME", "collect", "record", "verdict"]
