"""What log collectors add to the text they carry, taken off before any reader sees it: terminal escapes, and the
one label a collector put before every line.

Terminal escapes (colours, cursor moves, OSC titles and links): a coloured logger (rich, colorlog, loguru), a TTY
container or `script` leaves them in a captured log; no format means anything by them.

A collector's label before every line of what it carried: Slurm `srun -l`'s task (`0: `), pdsh's host (`node7: `,
a name with a digit), `kubectl logs --prefix`'s `[pod/NAME/CONTAINER] `. One label on (nearly) every line says
nothing the file does not: it is taken off, so that the format it carries is read as it printed. Several labels name
ranks or hosts: they stay, for the readers that tell them apart (line_prefix).
"""

from __future__ import annotations

import re

_ESCAPES = re.compile(rb"\x1b(?:\[[0-?]{0,32}[ -/]{0,4}[@-~]|\][^\x07\x1b\n]{0,512}(?:\x07|\x1b\\)|[@-Z\\-_])")
_ESCAPE_CUT = re.compile(rb"\x1b(?:\[[0-?]{0,32}[ -/]{0,4}|\][^\x07\x1b\n]{0,512}\x1b?)?")  # cut by a chunk's end
_LABEL = re.compile(rb"^(?: {0,6}\d{1,6}: |(?=[\w.-]{0,63}\d)[A-Za-z][\w.-]{0,63}: "
                    rb"|\[pod/[^\]\s/]{1,253}/[^\]\s]{1,63}\] )")
LABEL_SHARE = 0.9  # of the head's non-blank lines carrying one label: fewer, and it is a line's own `name: ` text
MIN_LINES = 3  # a label on one or two lines cannot be told from their text


def strip_escapes(text: bytes) -> bytes:
    """`text` without terminal escape sequences."""
    return _ESCAPES.sub(b"", text) if b"\x1b" in text else text


def collector_label(head: bytes) -> bytes | None:
    """The one collector label that at least LABEL_SHARE of the complete, non-blank lines of `head` (MIN_LINES or
    more, the first 400 looked at) start with, else None."""
    lines = [ln for ln in head.split(b"\n")[:-1][:400] if ln.strip()]
    if len(lines) < MIN_LINES:
        return None
    labels = [m.group(0) if (m := _LABEL.match(ln)) else None for ln in lines]
    first = labels[0]
    if first is None or sum(label == first for label in labels) < LABEL_SHARE * len(lines):
        return None
    return first


class Unwrap:
    """Called on each chunk of a text stream in order: the chunk without terminal escapes and without the one
    collector label `head` shows on its lines (if any). An escape or (with a label) a line cut by a chunk's end
    waits for the next chunk; `final` flushes it."""

    def __init__(self, head: bytes) -> None:
        self.label = collector_label(strip_escapes(head))
        self.carry = b""

    def __call__(self, data: bytes, final: bool) -> bytes:
        if self.carry:
            data, self.carry = self.carry + data, b""
        if b"\x1b" in data:
            cut = data.rfind(b"\x1b", max(0, len(data) - 600))
            if not final and cut >= 0 and _ESCAPE_CUT.fullmatch(data, cut):
                data, self.carry = data[:cut], data[cut:]
            data = strip_escapes(data)
        if self.label is not None:
            end = len(data) if final else data.rfind(b"\n") + 1
            data, self.carry = data[:end], data[end:] + self.carry
            data = (b"\n" + data).replace(b"\n" + self.label, b"\n")[1:]
        return data
