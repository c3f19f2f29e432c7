"""The steps of an epoch from a log's `[i/N]` counters (readers/step_log/epoch_length.py), and a save reported in the
passive without a path (`optimizer saved`) read as a checkpoint (readers/event_lexicon.py). The logs here are LABELED
SYNTHETIC, written apart from the held-out file (tests/data/eval/heldout53) in other tools' wordings."""

from __future__ import annotations

import numpy as np
import pytest

from playbook.model import schema
from playbook.readers import read_paths
from playbook.readers.event_lexicon import CHECKPOINT
from playbook.readers.step_log.epoch_length import steps_per_epoch


def test_two_epochs_starts_give_the_epoch_length():
    step = np.array([980, 990, 1000, 1010])  # epoch 0's 980, 990; epoch 1's 0, 10 of 1000
    pos = np.array([980, 990, 0, 10])
    assert steps_per_epoch(step, pos) == 1000


@pytest.mark.parametrize(("step", "pos"), [
    (np.array([10, 20, 30]), np.array([10, 20, 30])),  # one epoch seen: its length is not in the rows
    (np.array([10, 20, 30]), np.array([-1, -1, -1])),  # no positions
    (np.array([10, 20]), None),
    (np.array([0, 1000, 2100]), np.array([0, 0, 1100])),  # a position past the length: no epoch of 1000
    (np.array([1000, 2000, 2500]), np.array([0, 0, 1200])),  # epoch starts that are not multiples of one length
])
def test_unknown_epoch_length(step, pos):
    assert steps_per_epoch(step, pos) is None


@pytest.mark.parametrize("line", ["optimizer saved", "Best model saved!", "model state has been saved",
                                  "rank-specific saved", "  Model was saved.", "weights saved"])
def test_a_saved_part_of_the_training_state_is_a_checkpoint(line):
    assert CHECKPOINT.search(line)


@pytest.mark.parametrize("line", ["config saved", "Results saved", "Figure saved to out.png", "tokenizer saved",
                                  "loss 0.31 saved", "the optimizer is saving memory with ZeRO"])
def test_other_saves_and_words_are_no_checkpoint(line):
    assert not CHECKPOINT.search(line)


def test_a_metric_logger_excerpt_across_an_epoch_states_its_length(tmp_path):
    rows = [("12:00:00", "Epoch: [3]  [1170/1200]"), ("12:00:10", "Epoch: [3]  [1180/1200]"),
            ("12:00:20", "Epoch: [3]  [1190/1200]"), ("12:00:45", "model saved"), ("12:00:55", "Epoch: [4]  [   0/1200]"),
            ("12:01:05", "Epoch: [4]  [  10/1200]"), ("12:01:15", "Epoch: [4]  [  20/1200]")]
    p = tmp_path / "train.log"
    p.write_text("".join(f"[{t}.000000] {m}" + ("  loss: 1.0  time: 1.0000  data: 0.0010  max mem: 9000" if "[" in m
                                                  else "") + "\n" for t, m in rows))
    b = read_paths([str(p)])
    assert b.meta[schema.EPOCH_STEPS] == {str(p): 1200}
    assert list(b.events["kind"]) == ["checkpoint"]
