"""Notebook outputs and batch reports: `record` values inside notebooks, `collect` them back out."""

from playbook.report.scrapbook import MIME, collect, record, verdict

__all__ = ["MIME", "collect", "record", "verdict"]
