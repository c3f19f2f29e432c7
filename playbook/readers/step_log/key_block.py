"""A result dict printed one `key: value` a line, its step counter among the keys (the grammar's record lines).

Ray Tune prints each RLlib iteration's result as YAML with its keys sorted, so `time_this_iter_s: 2.78` comes before
`training_iteration: 5`, the record's counter, and a blank line ends the record. The `key: value` lines since the
last blank line (or the last record) are held; a counter line that is itself one `key: N` takes them as its fields.
"""

from __future__ import annotations

import re

# `time_this_iter_s: 2.78`, `  kl: 0.02`, a nested dict's head `info:`: one key and one value, the whole line
# (`INFO: fairseq2 - Checkpoint at step 20 saved.` is a message, no key line)
SINGLE_KEY = re.compile(r"[ \t]{0,16}[A-Za-z_][\w.\-]{0,80}:(?:[ \t]{1,8}[^ \t\n]{1,200})?[ \t]{0,8}$")
MAX_HELD = 200  # key lines held for one record: a dict longer than this is cut to its last lines


class KeyBlock:
    """Feed every line with `note`; `take` the held lines for a one-key counter line."""

    def __init__(self):
        self.held: list[str] = []

    def note(self, body: str) -> None:
        if not body.strip():
            self.held = []
        elif SINGLE_KEY.match(body):
            if len(self.held) >= MAX_HELD:
                del self.held[0]
            self.held.append(body.strip())
        else:
            self.held = []  # another kind of line: the held keys were no record's

    def take(self, body: str) -> str | None:
        """The held lines as one field text when `body` (a counter line) is a lone `key: N`, else None; the held
        lines are given once."""
        if not self.held or not SINGLE_KEY.match(body) or body.rstrip().endswith(":"):
            return None
        text, self.held = "\t".join(self.held[:-1] if self.held[-1] == body.strip() else self.held), []
        return text or None
