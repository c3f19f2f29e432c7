"""Levanter's log head after its time is the JAX process index (readers/line_prefix.py, held-out round 57):
logging.py init_logger's f"%(asctime)s - {jax.process_index()} - %(name)s - %(filename)s:%(lineno)d - %(levelname)s ::
%(message)s" (datefmt "%Y-%m-%dT%H:%M:%S"). Lines written here from that format, apart from
tests/data/eval/heldout57/levanter486; a dash-separated line of another logger is no process index."""

from __future__ import annotations

from playbook.readers.line_prefix import Prefix


def test_levanter_head_gives_the_process_index_level_and_message():
    p = Prefix("UTC")
    rank, t, body = p.split("2024-05-01T10:00:00 - 3 - levanter.trainer - trainer.py:412 - INFO :: Saving checkpoint "
                            "at step 100 to gs://bucket/run/step-100")
    assert rank == 3 and t > 0 and p.level == "INFO"
    assert body == "Saving checkpoint at step 100 to gs://bucket/run/step-100"
    rank, _, body = p.split("2024-05-01T10:00:01 - 12 - levanter.checkpoint - checkpoint.py:246 - WARNING :: slow save")
    assert rank == 12 and body == "slow save" and p.level == "WARNING"


def test_another_loggers_dashes_are_no_process_index():
    p = Prefix("UTC")
    rank, _, _ = p.split("2024-05-01 10:00:00 - 3 - loss 2.31")  # a bare number between dashes: a value, not a process
    assert rank == -1
    rank, _, _ = p.split("2024-05-01 10:00:00 - root - INFO - step 3 done")
    assert rank == -1
