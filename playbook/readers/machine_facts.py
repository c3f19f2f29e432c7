"""What the machine-facts readers share (topo_matrix.py, lspci.py): a paste read whole into one
bundle.meta["environment:<file>"] section, its counted warnings beside it; no table rows (playbook.analysis.topology
reads the sections)."""

from __future__ import annotations

from pathlib import Path

from playbook.model import schema
from playbook.readers import textio

META_PREFIX = "environment:"


def read(path: str | Path, parse) -> schema.Bundle:
    """`parse(lines, path) -> (section, warnings)` on the file's text lines, as a Bundle holding the section."""
    text = textio.read_text(path)
    section, warnings = parse(text.split("\n"), str(path))
    bundle = schema.Bundle(inputs=[str(path)], warnings=warnings)
    bundle.meta[META_PREFIX + str(path)] = section
    return bundle
