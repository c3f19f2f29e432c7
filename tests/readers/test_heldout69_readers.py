"""The reading the sixty-ninth held-out round (tests/data/eval/heldout69/SOURCES.md) asked for, on logs written here
apart from the round's own files (LABELED SYNTHETIC: the layouts of the tools' own print statements, other values):

- a key word abbreviated by dropping its vowels reads as its noun (wav2letter++'s `bch(ms)`: the batch's time,
  `smp(ms)`: the wait for the sample; `stp`, `itr`, `btch`), where exactly one noun fits; `bsz`, `tps`, `std`, `bs`
  stay what they are;
- the sample's bare noun with a time unit is the data phase (`smp(ms)`, `Sample: 0.4 s`); `sample_time` is not;
- a step time whose name ends in a unit (`batch_time_ms`, `step_time_ms`) on lines without a step counter (one per
  epoch) times the step, as `batch_time` did;
- a time named like a total printed once (ESPnet2's lone `train_time=0.471` window line) is one step's when it holds
  its line's forward + backward + optimizer times and is under twice them; a part under half of them (`iter_time`)
  is no step's time, from one line as from many;
- the Tacotron feeders' `Generated N [train ]batches of size B in T sec` is a data_load event lasting T;
- icefall's `[train.py:1077] (2/4) ` after a source location is the line's rank (of a world of 4); a fraction
  without a source location before it, or one whose first number is not under the second, is none.
"""

from __future__ import annotations

import pytest

from playbook.core.errors import UnknownFormatError
from playbook.readers import read_paths
from playbook.readers.step_log.abbrev import noun, unabbreviate
from playbook.readers.step_log.vocab import classify


def _read(tmp_path, text, name="run.log"):
    p = tmp_path / name
    p.write_text(text)
    return read_paths([str(p)])


def _phase(steps, phase):
    return steps[steps["phase"] == phase].sort_values("step")["duration_s"].tolist()


@pytest.mark.parametrize(("word", "want"), [("bch", "batch"), ("btch", "batch"), ("smp", "sample"),
                                            ("smpl", "sample"), ("stp", "step"), ("itr", "iter")])
def test_a_vowel_dropped_word_reads_as_its_noun(word, want):
    assert noun(word) == want


@pytest.mark.parametrize("word", ["bsz", "tps", "wps", "std", "bs", "lr", "fwd", "bwd", "batch", "sample", "smpx",
                                  "sch", "b1c", "bchxyz"])
def test_other_words_are_no_abbreviation(word):
    assert noun(word) is None


def test_unabbreviate_spells_out_each_word():
    assert unabbreviate("bch_ms") == "batch_ms"
    assert unabbreviate("avg_smp_time") == "avg_sample_time"
    assert unabbreviate("loss_ctc") == "loss_ctc" and unabbreviate("") == ""


@pytest.mark.parametrize(("key", "unit", "want"), [
    ("bch(ms)", None, ("dur", 0)), ("stp_ms", None, ("dur", 0)), ("smp(ms)", None, ("phase", "data")),
    ("Sample", "s", ("phase", "data")), ("sample_ms", None, ("phase", "data"))])
def test_abbreviated_and_sample_keys(key, unit, want):
    assert classify(key, unit)[:2] == want


@pytest.mark.parametrize(("key", "unit"), [("sample_time", None), ("time_per_sample", None), ("samples", None),
                                           ("num_samples", None), ("sample", None)])
def test_sample_keys_that_are_no_wait(key, unit):
    role = classify(key, unit)
    assert role is None or role[:2] != ("phase", "data")


# wav2letter++'s getProgress() with `nupdates` (its later Train.cpp) and a timestamp at the end, three reports
W2L = "".join(
    f"epoch:        1 | nupdates:        {n:5d} | lr: 0.400000 | lrcriterion: 0.000000 | runtime: 00:04:0{i} | "
    f"bch(ms): {b:.2f} | smp(ms): {s:.2f} | fwd(ms): 70.10 | crit-fwd(ms): 9.00 | bwd(ms): 120.40 | optim(ms): "
    f"15.20 | loss:   40.12345 | train-TER: 80.10 | train-WER: 90.20 | dev-loss:   38.00000 | avg-isz: 1200 | "
    f"avg-tsz: 036 | max-tsz: 080 | hrs:   20.00 | thrpt(sec/sec): 380.00 | timestamp: 2021-01-02 03:0{i}:00\n"
    for i, (n, b, s) in enumerate([(1000, 231.00, 12.00), (2000, 228.00, 10.50), (3000, 610.00, 390.00)]))


def test_wav2letter_reports_read_batch_time_and_phases(tmp_path):
    steps = _read(tmp_path, W2L).steps
    assert _phase(steps, "step") == pytest.approx([0.231, 0.228, 0.610])
    assert _phase(steps, "data") == pytest.approx([0.012, 0.0105, 0.390])
    assert _phase(steps, "fwd") == pytest.approx([0.0701] * 3)
    assert _phase(steps, "bwd") == pytest.approx([0.1204] * 3) and _phase(steps, "optimizer") == pytest.approx(
        [0.0152] * 3)


def test_epoch_lines_with_a_unit_named_step_time(tmp_path):
    text = "epoch: 1 | batch_time_ms: 557.78 | data_time_ms: 538.41\nepoch: 2 | batch_time_ms: 520.89 | " \
           "data_time_ms: 501.88\nepoch 3 step_time_ms: 500.00\n"
    steps = _read(tmp_path, text).steps
    assert _phase(steps, "step") == pytest.approx([0.55778, 0.52089, 0.5])
    assert _phase(steps, "data") == pytest.approx([0.53841, 0.50188])


ESPNET = ("[host] 2023-05-01 10:00:00,000 (trainer:777) INFO: 3epoch:train:201-300batch: iter_time=1.2e-04, "
          "forward_time=0.210, loss_ctc=50.1, loss=40.2, backward_time=0.180, grad_norm=40.1, clip=100.000, "
          "optim_step_time=0.030, optim0_lr0=1.0e-04, train_time=0.{t}\n")


def test_a_lone_espnet_window_line_reads_train_time(tmp_path):
    steps = _read(tmp_path, ESPNET.format(t="560")).steps
    assert _phase(steps, "step") == pytest.approx([0.56])  # 0.42 s of stages: one step, not iter_time's 0.12 ms


def test_a_lone_total_far_over_its_stages_is_no_step(tmp_path):
    # 4.2 s against 0.42 s of stages: a window's or a run's total, not one step's time: the line times no step
    with pytest.raises(UnknownFormatError, match="without a step time"):
        _read(tmp_path, ESPNET.format(t="560").replace("train_time=0.560", "train_time=4.200"))


@pytest.mark.parametrize(("line", "seconds"), [
    ("Generated 32 batches of size 32 in 121.880 sec", 121.88),
    ("Generated 64 train batches of size 36 in 219.496 sec", 219.496),
    ("Generated 8 test batches of size 12 in 3.012 sec", 3.012)])
def test_a_tacotron_feeder_line_is_a_data_load(tmp_path, line, seconds):
    events = _read(tmp_path, line + "\n").events
    assert events["kind"].tolist() == ["data_load"]
    assert events["duration_s"].tolist() == pytest.approx([seconds])


def test_other_generated_lines_are_no_data_load(tmp_path):
    p = tmp_path / "g.log"
    p.write_text("Generated 32 samples in 12.0 sec\nstep 1 loss 0.5 time 0.2s\nstep 2 loss 0.4 time 0.2s\n")
    events = read_paths([str(p)]).events
    assert "data_load" not in set(events["kind"]) if len(events) else True


ICEFALL = ("2024-02-01 10:00:{s:02d},000 INFO [train.py:1077] ({r}/4) Epoch 1, batch {b}, loss[loss=0.31, over 9000.00 "
           "frames. ], tot_loss[loss=0.33, over 180000.00 frames. ], batch size: 60, lr: 4.50e-02, grad_scale: 2.0\n")


def test_icefall_rank_of_world_after_the_source_location(tmp_path):
    text = "".join(ICEFALL.format(s=s, r=2, b=b) for s, b in ((0, 50), (20, 100), (40, 150)))
    steps = _read(tmp_path, text).steps
    assert set(steps["rank"]) == {2}


@pytest.mark.parametrize("prefix", ["2024-02-01 10:00:{s:02d},000 INFO (1/3) ",  # no source location before it
                                    "2024-02-01 10:00:{s:02d},000 INFO [train.py:9] (5/4) "])  # not a rank of 4
def test_other_fractions_are_no_rank(tmp_path, prefix):
    text = "".join((prefix + "Epoch 1, batch {b}, loss 0.3, batch size: 60\n").format(s=s, b=b)
                   for s, b in ((0, 50), (20, 100), (40, 150)))
    steps = _read(tmp_path, text).steps
    assert 1 not in set(steps["rank"]) and 5 not in set(steps["rank"])


# the same place in a single process's own log format holding a count of a total: `(epoch/epochs)` or a progress
# `(done/total)` after `[train.py:120]` (LABELED SYNTHETIC: a script's `logging.info(f"({epoch}/{epochs}) ...")`
# behind icefall's formatter); the third epoch slower, as a healthy run's epochs may be
COUNTED = "2024-02-01 10:{m:02d}:{s:02d},000 INFO [train.py:120] ({e}/3) batch {b}, loss: 0.5, batch time: {t:.3f}s\n"


def _epochs(total=3, per=30):
    rows, n = [], 0
    for e in range(1, total + 1):
        for b in range(1, per + 1):
            n += 1
            rows.append(COUNTED.format(m=n // 60, s=n % 60, e=e, b=b, t=0.25 if e < total else 0.40))
    return "".join(rows)


def test_an_epoch_count_in_the_rank_place_is_no_rank(tmp_path):
    steps = _read(tmp_path, _epochs()).steps
    assert steps["rank"].nunique() == 1  # one process: its epochs are no ranks the others wait for


@pytest.mark.parametrize("start", [0, 1])
def test_a_batch_count_in_the_rank_place_is_no_rank(tmp_path, start):
    # `({i}/{len(loader)})` each logged batch, from 0 (enumerate) or 1, starting again each epoch as ranks interleaved
    # on a console seem to
    text = "".join(f"2024-02-01 10:{e}0:{i:02d},000 INFO [train.py:120] ({i}/40) step {e * 40 + i}, loss 0.5, "
                   f"step_time 0.25s\n" for e in range(3) for i in range(start, 40))
    assert _read(tmp_path, text).steps["rank"].nunique() == 1


def test_two_totals_in_the_rank_place_are_counts(tmp_path):
    # the epoch of 3 on the training lines, the validation batch of 8 on others: one process
    text = "".join(COUNTED.format(m=0, s=b, e=1, b=b, t=0.25) for b in range(1, 20)) + "".join(
        f"2024-02-01 10:01:{v:02d},000 INFO [train.py:140] ({v}/8) val batch {v}, val_loss 0.6\n" for v in range(1, 8)
    ) + "".join(COUNTED.format(m=2, s=b, e=2, b=19 + b, t=0.25) for b in range(1, 20))
    assert _read(tmp_path, text).steps["rank"].nunique() == 1


def test_icefall_ranks_interleaved_or_appended_stay_ranks(tmp_path):
    # all ranks' lines on one console, each stamped by its own clock (a later rank's line a few ms earlier than the
    # line printed before it), and one rank's file appended after another's (the clock starts again): ranks
    mixed = "".join(ICEFALL.format(s=s, r=r, b=b).replace(",000 ", f",{40 - 10 * r:03d} ")
                    for s, b in ((0, 50), (20, 100), (40, 150)) for r in range(4))
    assert set(_read(tmp_path, mixed, "mixed.log").steps["rank"]) == {0, 1, 2, 3}
    appended = "".join(ICEFALL.format(s=s, r=r, b=b) for r in (0, 1) for s, b in ((0, 50), (20, 100), (40, 150)))
    assert set(_read(tmp_path, appended, "appended.log").steps["rank"]) == {0, 1}
