"""Text from the inputs on a terminal: control characters shown, never obeyed.

A log line, a kernel name or a file name can carry ESC sequences or other control characters (a JSON "\\u001b" decodes
to one, a raw one sits in a line); written as they are, they move the cursor, recolour or retitle the user's
terminal. `visible` shows each as its escape (ESC as `\\x1b`), keeping newlines and tabs. The HTML reports escape
their own way (html.escape); JSON output is escaped by json.dumps.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, and the C1 controls (0x80-0x9f: a lone 0x9b is a CSI on some terminals)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` with every control character but newline and tab written as its \\xNN escape."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text) if _CONTROL.search(text) else text
