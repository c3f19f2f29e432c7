"""Which fields of an nvidia-smi log pyarrow can parse straight to float64 (no text column, trim and cast).

A value written without a unit (`--format=csv,nounits`, or a unitless field such as `index` or `temperature.gpu`)
is a plain number after the space nvidia-smi writes behind each comma; pyarrow's CSV reader trims that space and
parses the number itself, where a text column costs a trim pass and a cast pass over millions of strings (the
unit-bearing values, "79 %", still need them). Splitting at single spaces to separate the units from the numbers
was measured too: pyarrow's tokenizing of twice the cells cost what the casts saved (2.45 vs 2.46 CPU s on 5.5 M rows).

The choice comes from one sample row (the piece's first) and is checked, not trusted: a value in a typed column
that is not a number (`[N/A]`, a unit) fails the parse, and the caller then reads the piece with every field as
text, as before. So it changes the speed, never the table.
"""

from __future__ import annotations

from playbook.readers.nvidia_smi.fields import NUMERIC

NUMBER_KINDS = ("float", "index")  # converter kinds whose values are plain numbers when clean


def number_fields(sample: str, kinds: dict[int, str], n_fields: int) -> frozenset[int]:
    """Positions of the fields to parse as float64 in rows written like `sample` (one data line, no newline):
    those the converter reads as numbers (`kinds`: its kind of each field it reads) whose sample value is a bare
    number. Empty when the sample does not split into `n_fields` cells."""
    cells = sample.split(",")
    if len(cells) != n_fields:
        return frozenset()
    return frozenset(pos for pos, kind in kinds.items() if kind in NUMBER_KINDS and NUMERIC.match(cells[pos]))
