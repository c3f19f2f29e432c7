"""Jupyter notebooks (.ipynb): the training output a cell printed, read as the log it is.

A notebook (nbformat 4: a JSON document of `cells`, each code cell with its `outputs`) keeps what the training loop
printed in its stream outputs (`{"output_type": "stream", "name": "stdout" | "stderr", "text": [...]}`: Keras'
progress lines, a Trainer's log dicts, tqdm's bars with their carriage returns) and in the plain-text form of
results and displays (`data["text/plain"]`). Those texts, cell by cell in order, are handed to the line scanners
(lines.scan) as one log named after the notebook; line numbers count the output lines, not the JSON file's (said
in a warning when anything is skipped). Images, HTML and widget outputs are not text a log holds: passed over.
"""

from __future__ import annotations

from pathlib import Path

from playbook.core.errors import InputError
from playbook.model import schema
from playbook.readers import lines, textio


def sniff(head: str) -> bool:
    """A JSON document whose first keys are a notebook's (`cells` holding `cell_type`s)."""
    start = head.lstrip()[:1]
    return start == "{" and '"cells"' in head and '"cell_type"' in head


def output_lines(doc: dict) -> list[str]:
    """The lines the notebook's code cells printed (streams, then plain-text results), in cell order."""
    out: list[str] = []
    for cell in doc.get("cells") or []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs") or []:
            if not isinstance(output, dict):
                continue
            if output.get("output_type") == "stream":
                text = output.get("text")
            else:
                text = (output.get("data") or {}).get("text/plain") if isinstance(output.get("data"), dict) else None
            if isinstance(text, list):
                text = "".join(t for t in text if isinstance(t, str))
            if isinstance(text, str):
                out += text.splitlines()  # tqdm's `\r` redraws become lines of their own, as a terminal log has them
    return out


def read(path: str | Path, tz: str = "UTC", **_opts) -> schema.Bundle:
    """The log a notebook's cells printed, read by every line scanner."""
    path = Path(path)
    notes: list[str] = []
    text = textio.read_text(path, warnings=notes)
    try:
        doc = textio.json_loads(text)
    except ValueError as exc:
        raise InputError(f"{path}: a notebook that is not valid JSON ({textio.json_error(exc)})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: not a Jupyter notebook (no cells)")
    printed = output_lines(doc)
    if not any(line.strip() for line in printed):
        raise InputError(f"{path}: a notebook without printed output (run its cells, or pass the training log)")
    bundle = lines.scan(path, tz=tz, lines=printed)
    bundle.warnings[:0] = notes
    if any(w.startswith(str(path)) and " line " in w for w in bundle.warnings):
        bundle.warnings.append(f"{path}: line numbers above count the notebook's printed output lines "
                               f"({len(printed)}), not the lines of its JSON")
    return bundle
