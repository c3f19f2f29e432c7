"""A stated `step_time` printed once every N steps between a progress bar's refreshes: where the bar's counter shows
N steps between two such prints, the value may be the window's time (a callback's `time.time() - last_log`), not
one step's; the bar's rate, which times every step, keeps its place (a healthy run must not read N times slower).
Printed on every step (the bar's counter one apart), the stated time still wins. Inputs written apart."""

from __future__ import annotations

from playbook.readers import read_paths


def _durations(tmp_path, rows: list[str]):
    p = tmp_path / "trainer.log"
    p.write_text("\n".join(rows) + "\n")
    return read_paths([str(p)]).steps["duration_s"].dropna()


def test_a_step_time_printed_every_ten_steps_does_not_outrank_the_bar(tmp_path):
    rows = []
    for n, i in enumerate(range(10, 810, 10)):
        rows.append(f"{{'step_time': 6.2, 'loss': {1.5 - n / 200:.3f}}}")
        rows.append(f" 5%|#         | {i}/2000 [00:{n % 60:02d}<10:00,  1.61it/s]")
    d = _durations(tmp_path, rows)
    assert len(d) and d.between(0.55, 0.7).all(), d.describe()


def test_a_step_time_printed_every_step_still_wins(tmp_path):
    rows = []
    for n, i in enumerate(range(100, 160)):
        rows.append(f"{{'step_time': {0.5 + (n % 3) * 0.01:.2f}, 'loss': 1.0}}")
        rows.append(f" 5%|#         | {i}/2000 [00:{n % 60:02d}<10:00,  1.61it/s]")
    d = _durations(tmp_path, rows)
    assert len(d) and d.between(0.49, 0.53).all(), d.describe()
