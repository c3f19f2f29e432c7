"""Review r7: readers/variant_table.py on a hostile table (written apart from the round's excerpts)."""

from __future__ import annotations

import time

from playbook.readers.variant_table import VariantTable


def test_a_wide_table_of_equal_times_is_read_in_linear_time():
    # 1500 time columns of the same value in 200 rows (2.4 MB): the whole run's column was sought by comparing each
    # column with every other in every row (quadratic: ~30 s here)
    n, rows = 1500, 200
    lines = ["| run | " + " | ".join(f"step time {i}" for i in range(n)) + " |", "|" + "---|" * (n + 1)]
    lines += [f"| r{r} | " + " | ".join("1.5 s" for _ in range(n)) + " |" for r in range(rows)]
    t = VariantTable()
    t0 = time.process_time()  # CPU seconds of this process: a hang guard, other jobs do not count
    for line in lines:
        t.feed(line)
    s = t.summary()
    assert time.process_time() - t0 < 5.0
    assert s is not None and s["tables"][0]["whole"] == "step time 0"
