"""A keyword's `a/b` that is (epoch, count), not (position, total): WeNet's `TRAIN Batch 4/203700` then `Batch
4/203800` (its executor prints `Batch {epoch}/{batch_idx}`). A total does not change while its position stays, so
when a keyword's b changes from one line to the next with its a the same, a is the epoch and b the count within it
(the step: b, counting on across epochs as columns.EpochRestarts does); when a changes with b the same, the fractions
are positions of a total, as read before. Records stored from the undecided lines are relabelled when it is decided.
"""

from __future__ import annotations

MAX_EARLY = 64  # lines of one keyword watched undecided (ranks printing the same fraction), then read as positions


class FractionPairs:
    """`step(key, a, b, lines)` for each keyword counter `key a/b` of the step scanner `lines` (grammar.StepLines)."""

    def __init__(self):
        self.decided: dict[str, bool] = {}  # keyword -> its fractions are (epoch, count) pairs
        self.early: dict[str, list[tuple[int, int, int]]] = {}  # keyword -> (record index, a, b) while undecided

    def step(self, key: str, a: int, b: int, lines) -> int | None:
        """The step `key a/b` names when its fractions are (epoch, count) pairs (the records stored from its earlier
        lines relabelled then); None while they read as a position and its total."""
        if key in self.decided:
            return lines.restarts.step(a, b) if self.decided[key] else None
        early = self.early.setdefault(key, [])
        if early and early[-1][1] == a and early[-1][2] != b:
            self.decided[key] = True
            for idx, a0, b0 in self.early.pop(key):
                if idx < len(lines.step) and lines.step[idx] == a0:
                    lines.step[idx] = lines.restarts.step(a0, b0)
            return lines.restarts.step(a, b)
        if early and early[-1][1] != a and early[-1][2] == b or len(early) >= MAX_EARLY:
            self.decided[key] = False
            del self.early[key]
            return None
        early.append((len(lines.step), a, b))
        return None
