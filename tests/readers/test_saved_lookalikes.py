"""A passive 'X saved' line that says the save did not happen is no checkpoint (readers/event_lexicon.CHECKPOINT): an
early-stopping script's `Model not saved` every epoch the metric did not improve. LABELED SYNTHETIC lines."""

from __future__ import annotations

import pytest

from playbook.readers.event_lexicon import CHECKPOINT


@pytest.mark.parametrize("line", ["Model not saved.", "model was not saved", "No optimizer state saved",
                                  "Best model never saved", "weights have not been saved"])
def test_a_save_that_did_not_happen_is_no_checkpoint(line):
    assert not CHECKPOINT.search(line)


@pytest.mark.parametrize("line", ["optimizer saved", "Best model saved!", "model state has been saved",
                                  "rank-specific saved", "  Model was saved."])
def test_a_save_stated_done_stays_a_checkpoint(line):
    assert CHECKPOINT.search(line)
