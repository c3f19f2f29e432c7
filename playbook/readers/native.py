"""The readers' optional C extension (_native.c), or None where it was not built (no C compiler at install time).

What it does, each with a pure-Python path that gives the same result slower: nvidia-smi CSV rows parsed in one
pass (nvidia_smi/convert.py), newline offsets of a block (nvidia_smi), a table's columns moved into (gpu, time)
order straight from a reader's pieces (frames.py). Callers read `native.C` when they run, so a test can switch it
off (`monkeypatch.setattr(native, "C", None)`) and compare the two paths; PLAYBOOK_NO_NATIVE=1 in the environment
does the same for a whole run (to rule the extension out, or to time the Python path).
"""

from __future__ import annotations

import os

C = None
if os.environ.get("PLAYBOOK_NO_NATIVE", "") in ("", "0"):
    try:
        import playbook.readers._native as C
    except ImportError:  # pragma: no cover - the build skips it where no compiler is found
        C = None
