"""An events-only verdict states the checkpoint / evaluation seconds it could not weigh (diagnosis/answer.py
`_events_words`): ranks save side by side, so their seconds are one rank's, not the sum over ranks. LABELED SYNTHETIC
logs written apart from tests/data/eval/heldout50."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.readers import read_paths


def test_four_ranks_saving_side_by_side_are_not_four_times_the_seconds(tmp_path):
    lines = []
    for when, base in (("12:00", 40), ("12:30", 42)):  # two saves, each on ranks 0-3 at once (~45 s of wall time)
        lines += [f"2023-02-01 {when}:0{r},000 [Rank {r}] INFO checkpoint saved in {base + r}.0 s to ckpt/save"
                  for r in range(4)]
    path = tmp_path / "ranks.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    d = diagnose(read_paths([str(path)]))
    assert d.verdict["id"] == "insufficient_data"
    first = d.hypotheses[0]["evidence"][0]
    assert "checkpoint 88 s in 2 sections on the slowest of 4 ranks" in first, first
    assert "340 s" not in first
