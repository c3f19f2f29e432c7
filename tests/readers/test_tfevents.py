"""TensorBoard event files (playbook/readers/tfevents.py): the three files of tests/data/tfevents, written by the
real writer (torch.utils.tensorboard, make_tfevents.py) from real training loops, and files written here to the
format's specification (event.proto, summary.proto, tensor.proto; TFRecord framing) for what those do not hold:
other value encodings, GPU tags, damage."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

from playbook.core.errors import InputError
from playbook.diagnosis import diagnose
from playbook.model import schema
from playbook.readers import detect, read_paths, textio, tfevents, tfrecord

DATA = Path(__file__).resolve().parents[1] / "data" / "tfevents"


def _real(name: str) -> Path:
    return next((DATA / name).glob("events.out.tfevents.*"))


# ---------------------------------------------------------------- a writer to the specification

def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(number: int, wire: int, payload) -> bytes:
    key = _varint(number << 3 | wire)
    if wire == 0:
        return key + _varint(payload)
    if wire == 2:
        return key + _varint(len(payload)) + payload
    return key + payload  # fixed64 / fixed32 bytes


def _event(wall: float, step: int = 0, values: list[bytes] | None = None, version: str | None = None) -> bytes:
    out = _field(1, 1, struct.pack("<d", wall)) + (_field(2, 0, step) if step else b"")
    if version is not None:
        out += _field(3, 2, version.encode())
    if values is not None:
        out += _field(5, 2, b"".join(_field(1, 2, v) for v in values))
    return out


def _simple(tag: str, value: float) -> bytes:
    return _field(1, 2, tag.encode()) + _field(2, 5, struct.pack("<f", value))


def _tensor(tag: str, tensor: bytes, plugin: str | None = None) -> bytes:
    meta = _field(9, 2, _field(1, 2, _field(1, 2, plugin.encode()))) if plugin else b""
    return _field(1, 2, tag.encode()) + meta + _field(8, 2, tensor)


def _frame(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", tfrecord.masked_crc32c(length)) + data
            + struct.pack("<I", tfrecord.masked_crc32c(data)))


def _write(path: Path, events: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(_frame(e) for e in [_event(1.7e9, version="brain.Event:2")] + events))
    return path


def _steady(tag: str = "train/loss", n: int = 40, dt: float = 0.5, t0: float = 1.7e9) -> list[bytes]:
    return [_event(t0 + i * dt, i, [_simple(tag, 1.0 / (i + 1))]) for i in range(n)]


# ---------------------------------------------------------------- the format

def test_the_checksum_is_tfrecords_masked_crc32c():
    # CRC-32C's check value (RFC 3720 B.4: "123456789" -> 0xE3069283), masked as tensorflow/core/lib/hash/crc32c.h
    crc = 0xE3069283
    assert tfrecord.masked_crc32c(b"123456789") == ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) % 2**32


def test_real_writer_files_are_detected_and_a_text_naming_the_version_is_not():
    for name in ("data_wait", "new_style_scalars", "trainer_eval_stall"):
        assert detect.detect(_real(name)) == "tfevents"
    assert not tfevents.sniff("brain.Event:2 is the first record of an event file\n")


def test_new_style_scalars_are_float_tensors_read_as_numbers():
    series, notes, records = tfevents.scalars(_real("new_style_scalars"))
    s = series["Loss/train"]
    assert list(s.step) == list(range(150)) and records == 151 and not notes
    values = np.frombuffer(s.value, dtype=np.float64)
    assert np.isfinite(values).all() and 0.5 < values[0] < 5  # a cross-entropy over 10 classes
    assert np.all(np.diff(np.frombuffer(s.wall, dtype=np.float64)) > 0)


def test_a_data_bound_loop_is_data_starvation_from_its_phase_tags():
    bundle = read_paths([str(_real("data_wait"))])
    assert set(bundle.steps["phase"]) >= {"step", "data"}
    assert diagnose(bundle).verdict["id"] == "data_starvation"


def test_evaluations_are_events_and_their_pauses_a_periodic_stall():
    bundle = read_paths([str(_real("trainer_eval_stall"))])
    evals = bundle.events[bundle.events["kind"] == "eval"]
    assert evals["step"].tolist() == [40, 80, 120, 160, 200]
    assert (evals["duration_s"] > 0.5).all()  # eval/runtime: 40 batches of >= 20 ms each
    assert bundle.steps["host"].unique().tolist() == ["trainer_eval_stall"]  # the run's folder
    assert diagnose(bundle).verdict["id"] == "periodic_stall"


# ---------------------------------------------------------------- encodings the real files do not hold

@pytest.mark.parametrize(("tensor", "plugin", "expected"), [
    (_field(1, 0, 2) + _field(6, 2, struct.pack("<d", 0.125)), "scalars", 0.125),           # DT_DOUBLE double_val
    (_field(1, 0, 1) + _field(4, 2, struct.pack("<f", 2.5)), "scalars", 2.5),              # DT_FLOAT content
    (_field(1, 0, 9) + _field(10, 2, _varint(7)), None, 7.0),                              # DT_INT64 int64_val
    (_field(1, 0, 3) + _field(7, 2, _varint(-3)), "scalars", -3.0),                        # DT_INT32, negative
    (_field(1, 0, 19) + _field(13, 2, _varint(0x3C00)), "scalars", 1.0),                   # DT_HALF half_val
    (_field(1, 0, 14) + _field(4, 2, struct.pack("<f", 1.5)[2:]), "scalars", 1.5),         # DT_BFLOAT16 content
])
def test_one_number_tensors_of_every_scalar_dtype(tmp_path, tensor, plugin, expected):
    path = _write(tmp_path / "run" / "events.out.tfevents.1.h.1.0.v2",
                  [_event(1.7e9 + i, i, [_tensor("loss", tensor, plugin if i == 0 else None)]) for i in range(3)])
    series, _, _ = tfevents.scalars(path)
    assert np.frombuffer(series["loss"].value, dtype=np.float64).tolist() == [expected] * 3


def test_what_is_no_scalar_is_counted_not_read(tmp_path):
    histogram = _field(1, 0, 2) + _field(6, 2, struct.pack("<6d", 0, 1, 3, 1, 2, 5))  # a [2, 3] bucket tensor
    image = _field(1, 2, b"sample") + _field(4, 2, _field(1, 0, 8))
    path = _write(tmp_path / "run" / "events.out.tfevents.1.h.1.0", _steady(n=10) + [
        _event(1.7e9 + 11, 11, [_tensor("weights", histogram, "histograms")]),
        _event(1.7e9 + 12, 12, [image]), _event(1.7e9 + 13, 13, [_tensor("note", _field(1, 0, 7) + _field(
            8, 2, b"hello"), "text")])])
    series, notes, _ = tfevents.scalars(path)
    assert list(series) == ["train/loss"]
    assert notes == [f"{path}: not scalars, not read: 1 histograms summaries, 1 images, 1 text summaries"]


def test_gpu_tags_become_telemetry_beside_the_steps(tmp_path):
    events = [_event(1.7e9 + i, i, [_simple("train/loss", 1.0), _simple("system/gpu_0_utilization_percentage",
                                                                          90.0 if i % 4 else 10.0)])
              for i in range(40)]
    bundle = read_paths([str(_write(tmp_path / "run7" / "events.out.tfevents.1.h.1.0", events))])
    assert len(bundle.telemetry) == 40 and bundle.telemetry["util_pct"].min() == 10.0
    assert bundle.telemetry["host"].unique().tolist() == ["run7"]
    assert len(bundle.steps) == 39  # the first point closes no window


def test_a_tag_named_like_a_key_does_not_take_its_place(tmp_path):
    events = [_event(1.7e9 + i, i, [_simple("train/loss", 1.0), _simple("time", 3.0), _simple("step", 99.0)])
              for i in range(20)]
    bundle = read_paths([str(_write(tmp_path / "r" / "events.out.tfevents.1.h.1.0", events))])
    assert sorted(bundle.steps["step"].unique().tolist()) == list(range(1, 20))
    assert np.allclose(bundle.steps["duration_s"], 1.0)  # from the wall times, not the `time` tag's 3.0


# ---------------------------------------------------------------- damage: counted, never guessed past

def test_a_cut_last_record_is_a_note_and_the_rest_is_read(tmp_path):
    path = _write(tmp_path / "r" / "events.out.tfevents.1.h.1.0", _steady(n=30))
    path.write_bytes(path.read_bytes()[:-10])
    series, notes, _ = tfevents.scalars(path)
    assert len(series["train/loss"].step) == 29
    assert notes == [f"{path}: record 31: the file ends inside it (cut while written)"]


def test_a_length_that_fails_its_checksum_ends_the_readable_part(tmp_path):
    path = _write(tmp_path / "r" / "events.out.tfevents.1.h.1.0", _steady(n=30))
    raw = bytearray(path.read_bytes())
    record = len(_frame(_event(1.7e9, version="brain.Event:2"))) + 10 * len(_frame(_steady(n=30)[10]))
    raw[record + 2] ^= 0xFF  # the 12th record's length
    path.write_bytes(bytes(raw))
    series, notes, _ = tfevents.scalars(path)
    assert len(series["train/loss"].step) == 10
    assert notes == [f"{path}: record 12: its length fails its checksum (damaged); the rest of the file is not read"]


def test_an_event_that_does_not_parse_is_counted(tmp_path):
    garbled = b"\x0f\xff\xff"  # wire type 7 does not exist
    path = _write(tmp_path / "r" / "events.out.tfevents.1.h.1.0", _steady(n=5) + [garbled] + _steady(n=5, t0=1.7e9 + 9))
    series, notes, _ = tfevents.scalars(path)
    assert len(series["train/loss"].step) == 10
    assert notes == [f"{path}: skipped 1 of 12 records that do not parse as an Event (record 7: wire type 7)"]


def test_a_file_without_scalars_is_refused_in_one_line(tmp_path):
    path = _write(tmp_path / "r" / "events.out.tfevents.1.h.1.0", [_event(1.7e9 + 1, 1, [_tensor(
        "w", _field(1, 0, 2) + _field(6, 2, struct.pack("<2d", 1, 2)), "histograms")])])
    with pytest.raises(InputError) as exc:
        tfevents.read(path)
    assert str(exc.value) == (f"{path}: a TensorBoard event file with no scalar values in its 2 records "
                              "(not scalars, not read: 1 histograms summaries)")
    assert "\n" not in str(exc.value)


def test_the_run_is_the_folder_or_the_writers_host(tmp_path):
    assert tfevents.run_name(Path("logs/bert-base/events.out.tfevents.1700000000.node-3.example.com.77.0")) == \
        "bert-base"
    assert tfevents.run_name(Path("events.out.tfevents.1700000000.node-3.example.com.77.0.v2")) == \
        "node-3.example.com"
    assert textio.host_from_path("x.csv") == "x"


# ---------------------------------------------------------------- review r1: encodings and sizes the first tests missed

def test_a_bfloat16_in_half_val_is_read_as_a_bfloat16(tmp_path):
    # tensor.proto: half_val holds DT_HALF and DT_BFLOAT16 bits; TensorBoard's tensor_util writes a bfloat16 there
    # (SlowAppendBFloat16ArrayToTensorProto). 0x3FC0 is 1.5 as a bfloat16 (and 1.9375 as an IEEE half)
    tensor = _field(1, 0, 14) + _field(13, 2, _varint(0x3FC0))
    path = _write(tmp_path / "run" / "events.out.tfevents.1.h.1.0.v2",
                  [_event(1.7e9 + i, i, [_tensor("loss", tensor, "scalars")]) for i in range(3)])
    series, _, _ = tfevents.scalars(path)
    assert np.frombuffer(series["loss"].value, dtype=np.float64).tolist() == [1.5] * 3


def test_a_value_field_of_another_wire_type_is_no_number_not_the_files_end(tmp_path):
    # float_val / double_val as a varint: a field of an unexpected wire type, which protobuf parsers pass over;
    # it used to take the whole file down (TypeError: len() of an int)
    for number in (5, 6):
        odd = _tensor("odd", _field(1, 0, 1) + _field(number, 0, 3), "scalars")
        path = _write(tmp_path / f"r{number}" / "events.out.tfevents.1.h.1.0", _steady(n=20) + [
            _event(1.7e9 + 30, 30, [odd])])
        series, notes, _ = tfevents.scalars(path)
        assert list(series) == ["train/loss"] and len(series["train/loss"].step) == 20
        assert notes == [f"{path}: not scalars, not read: 1 tensors that hold no single number"]


def test_tags_that_differ_only_in_bytes_that_are_not_utf8_stay_apart(tmp_path):
    values = [_field(1, 2, b"loss\xff") + _field(2, 5, struct.pack("<f", 1.0)),
              _field(1, 2, b"loss\xfe") + _field(2, 5, struct.pack("<f", 2.0))]
    path = _write(tmp_path / "r" / "events.out.tfevents.1.h.1.0", [_event(1.7e9 + i, i, values) for i in range(5)])
    series, _, _ = tfevents.scalars(path)
    assert sorted(series) == ["loss\\xfe", "loss\\xff"]
    assert np.frombuffer(series["loss\\xff"].value, dtype=np.float64).tolist() == [1.0] * 5


def test_evaluations_logged_at_every_step_are_read_in_linear_time(tmp_path):
    # an evaluation tag logged at each of many steps: each step's tags were found by scanning every tag's whole
    # step array (quadratic: 20,000 steps took ~10 s). Counted, not timed: no step array is searched
    n = 3000
    events = [_event(1.7e9 + i * 0.1, i, [_simple("train/loss", 1.0), _simple("eval/loss", 1.0),
                                          _simple("eval/acc", 1.0)]) for i in range(n)]
    path = _write(tmp_path / "r" / "events.out.tfevents.1.h.1.0", events)
    series, _, _ = tfevents.scalars(path)
    searched = []

    class Watched(type(series["eval/loss"].step)):
        def __contains__(self, item):
            searched.append(item)
            return super().__contains__(item)

    for tag in ("eval/loss", "eval/acc"):
        series[tag].step = Watched("q", series[tag].step)
    events = tfevents._eval_events(series, ["eval/loss", "eval/acc"], "r", str(path), [])
    assert len(events) == n and not searched
    assert events["detail"].iloc[7] == "evaluation logged at step 7 (eval/loss, eval/acc)"


def _run_of_two_files(folder: Path, second_start: float, first_name: str = "events.out.tfevents.100.h.11.0",
                      second_name: str = "events.out.tfevents.200.h.22.0") -> tuple[Path, Path]:
    """A run's folder as a resumed run leaves it: the first process wrote steps 0-299 (0.5 s each) and died; the
    second, started `second_start` s after the first began, resumed from the checkpoint of step 200."""
    first = _write(folder / first_name, [_event(1.7e9 + i * 0.5, i, [_simple("train/loss", 1.0)]) for i in range(300)])
    second = _write(folder / second_name, [_event(1.7e9 + second_start + i * 0.5, 200 + i,
                                                  [_simple("train/loss", 1.0)]) for i in range(300)])
    return first, second


def test_a_run_resumed_into_a_second_event_file_is_a_restart_not_a_stall(tmp_path):
    # every writer opens a new file when it starts, so a resumed run is two files in one folder, read one by one:
    # the 450 s between them were read as a gap between steps (between_steps, 60% of the wall time lost)
    _first, second = _run_of_two_files(tmp_path / "run", second_start=600.0)
    bundle = read_paths([str(tmp_path / "run")])
    restarts = bundle.events[bundle.events["kind"] == "restart"]
    assert restarts["step"].tolist() == [200] and restarts["source"].tolist() == [str(second)]
    assert restarts["duration_s"].round(1).tolist() == [450.5]  # from the first file's last point at 149.5 s
    assert diagnose(bundle).verdict["id"] == "healthy"


@pytest.mark.parametrize(("second_start", "names"), [
    (100.0, {}),  # a writer beside the first one (it began before the first ended): no restart
    (600.0, {"first_name": "events.out.tfevents.100.h.11.0", "second_name": "events.out.tfevents.200.h.11.1"}),
])
def test_files_written_side_by_side_or_by_one_process_are_no_restart(tmp_path, second_start, names):
    _run_of_two_files(tmp_path / "run", second_start, **names)
    bundle = read_paths([str(tmp_path / "run")])
    assert "restart" not in set(bundle.events["kind"])


def test_an_earlier_file_without_summaries_is_no_run_before_this_one(tmp_path):
    _write(tmp_path / "run" / "events.out.tfevents.100.h.11.0", [])  # the version record alone
    _first, second = _run_of_two_files(tmp_path / "run", 600.0, first_name="events.out.tfevents.150.h.12.0")
    bundle = tfevents.read(second)
    assert len(bundle.events) == 1  # a restart after the file of steps 0-299
    second.parent.joinpath("events.out.tfevents.150.h.12.0").unlink()
    assert len(tfevents.read(second).events) == 0


def _keras_fit(run: Path, epochs: int = 6) -> None:
    """The layout of Keras' TensorBoard callback (keras/callbacks.py: `_train_dir = <log_dir>/train`,
    `_val_dir = <log_dir>/validation`; `epoch_` + the metric's name in both, `val_` taken off, step = the epoch):
    epochs of 40 s of training and 15 s of validation."""
    train, val = [], []
    for e in range(epochs):
        end = 1.7e9 + e * 55.0 + 55.0
        train.append(_event(end, e, [_simple("epoch_loss", 1.0 / (e + 1)), _simple("epoch_accuracy", 0.5)]))
        val.append(_event(end + 0.01, e, [_simple("epoch_loss", 1.2 / (e + 1)), _simple("epoch_accuracy", 0.4)]))
    _write(run / "train" / "events.out.tfevents.1700000000.h.7.0.v2", train)
    _write(run / "validation" / "events.out.tfevents.1700000001.h.7.1.v2", val)


def test_keras_validation_folder_is_the_runs_evaluation_not_a_second_host(tmp_path):
    # read as two hosts `train` and `validation` (two GPUs, each epoch's steps twice, the wall time doubled)
    _keras_fit(tmp_path / "20240101-120000")
    bundle = read_paths([str(tmp_path / "20240101-120000")])
    assert bundle.steps["host"].unique().tolist() == ["20240101-120000"]
    assert sorted(bundle.steps["step"]) == [1, 2, 3, 4, 5]
    evals = bundle.events[bundle.events["kind"] == "eval"]
    assert evals["step"].tolist() == list(range(6)) and evals["host"].unique().tolist() == ["20240101-120000"]
    assert any("an evaluation split of run 20240101-120000" in w for w in bundle.warnings)


def test_an_estimators_eval_folder_is_its_evaluation_and_a_run_named_test_is_a_run(tmp_path):
    model = tmp_path / "model_dir"
    _write(model / "events.out.tfevents.1.h.1.0", _steady(n=20))
    _write(model / "eval" / "events.out.tfevents.2.h.1.0", [_event(1.7e9 + 10.2, 10, [_simple("loss", 0.3)])])
    bundle = read_paths([str(model)])
    assert bundle.steps["host"].unique().tolist() == ["model_dir"]
    assert bundle.events[["kind", "step", "host"]].values.tolist() == [["eval", 10, "model_dir"]]
    alone = _write(tmp_path / "runs" / "test" / "events.out.tfevents.1.h.1.0", _steady(n=20))  # no split beside
    assert tfevents.split(alone) is None and len(read_paths([str(alone)]).steps) == 19


def test_an_evaluation_or_gpu_point_without_a_usable_wall_time_is_counted_by_its_record(tmp_path):
    # an eval value at wall time inf or 1e300 became an event at NaT (numpy's cast warnings on stderr, nothing
    # counted); a GPU point's skipped row was named by a "line" of this binary file
    events = [_event(1.7e9 + i, i, [_simple("train/loss", 1.0), _simple("gpu0/utilization", 50.0)]) for i in range(20)]
    events += [_event(float("inf"), 21, [_simple("eval/loss", 1.0)]), _event(1e300, 22, [_simple("eval/loss", 1.0)]),
               _event(1.7e9 + 23, 23, [_simple("eval/loss", 1.0)])]
    path = _write(tmp_path / "r" / "events.out.tfevents.1.h.1.0", events)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from a cast of inf
        bundle = read_paths([str(path)])
    assert bundle.events["step"].tolist() == [23] and bundle.events["time"].notna().all()
    assert f"{path}: 2 evaluation values with a wall time that is no time (NaN, inf or out of range) left out" \
        in bundle.warnings
    events[5] = _event(float("inf"), 5, [_simple("train/loss", 1.0), _simple("gpu0/utilization", 50.0)])
    bundle = read_paths([str(_write(path, events))])
    assert any(w.startswith(f"{path}: skipped 1 of 20 rows (record 7: bad time") for w in bundle.warnings)


def test_a_run_summary_logged_once_is_no_step_time(tmp_path):
    # Hugging Face's Trainer ends a run by logging its summary (train_runtime, train_samples_per_second, total_flos,
    # train_loss) at the last step, as `train/...` (integration_utils.rewrite_logs): `train/train_runtime` (the whole
    # run's seconds) was read as the step duration and the 99 steps without it were skipped (insufficient_data)
    events, t = [], 1.7e9
    for s in range(10, 1010, 10):
        t += 3.0
        events.append(_event(t, s, [_simple("train/loss", 1.0), _simple("train/learning_rate", 1e-4),
                                    _simple("train/epoch", s / 500)]))
        if s % 200 == 0:
            t += 30.0
            events.append(_event(t, s, [_simple("eval/loss", 1.0), _simple("eval/runtime", 30.0)]))
    events.append(_event(t + 1, 1000, [_simple("train/train_runtime", t - 1.7e9), _simple("train/total_flos", 1e15),
                                       _simple("train/train_samples_per_second", 50.0)]))
    bundle = read_paths([str(_write(tmp_path / "runs" / "Jan01_host" / "events.out.tfevents.1.host.1.0", events))])
    steps = bundle.steps[bundle.steps["phase"] == "step"]
    assert len(steps) == 99 and not any("skipped" in w for w in bundle.warnings)
    assert np.allclose(np.sort(steps["duration_s"])[:90], 0.3)  # 3 s over each window of 10 steps
    evals = bundle.steps[bundle.steps["phase"] == "eval"]  # each 30 s evaluation inside the next window's 10 steps
    assert evals["step"].tolist() == [210, 410, 610, 810] and np.allclose(evals["duration_s"], 3.0)
    assert diagnose(bundle).verdict["id"] == "periodic_stall"


@pytest.mark.parametrize("nested", [False, True])
def test_add_scalars_key_folders_of_an_evaluation_are_its_events(tmp_path, nested):
    # add_scalars("Loss", {"train": ..., "val": ...}) writes one folder a key inside the run's: PyTorch
    # <run>/Loss_train/ and <run>/Loss_val/ (writer.py: main_tag + "_" + tag), tensorboardX <run>/Loss/train/ and
    # <run>/Loss/val/, each with the tag `Loss`. The val folder was a host of its own whose five "steps" (50-step
    # windows spanning the pauses) turned the verdict to between_steps
    run = tmp_path / "run"
    main, train, val, t = [], [], [], 1.7e9
    for i in range(300):
        t += 0.2 + (5.0 if i % 50 == 49 else 0.0)
        main.append(_event(t, i, [_simple("train/lr", 0.1)]))
        train.append(_event(t, i, [_simple("Loss", 1.0 / (i + 1))]))
        if i % 50 == 49:
            val.append(_event(t + 0.01, i, [_simple("Loss", 0.5)]))
    _write(run / "events.out.tfevents.1700000000.h.5.0", main)
    keys = ("Loss/train", "Loss/val") if nested else ("Loss_train", "Loss_val")
    _write(run / keys[0] / "events.out.tfevents.1700000000.h.5.1", train)
    _write(run / keys[1] / "events.out.tfevents.1700000000.h.5.2", val)
    bundle = read_paths([str(run)])
    assert "Loss_val" not in set(bundle.steps["host"]) and "val" not in set(bundle.steps["host"])
    assert bundle.events[["kind", "host"]].drop_duplicates().values.tolist() == [["eval", "run"]]
    assert bundle.events["step"].tolist() == [49, 99, 149, 199, 249, 299]
    assert diagnose(bundle).verdict["id"] == "periodic_stall"


def test_a_gzipped_event_file_reads_as_the_file(tmp_path):
    # detection reads a compressed file decompressed (textio), so it took a gzipped event file (one attached to an
    # issue) for one; the reader then opened the compressed bytes: "no scalar values ... its length fails its checksum"
    import gzip

    src = _real("trainer_eval_stall")
    packed = tmp_path / "trainer_eval_stall" / (src.name + ".gz")
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(src.read_bytes()))
    assert detect.detect(packed) == "tfevents"
    plain, zipped = tfevents.scalars(src), tfevents.scalars(packed)
    assert zipped[2] == plain[2] and not zipped[1]
    assert list(zipped[0]["train/loss"].value) == list(plain[0]["train/loss"].value)


def test_points_logged_without_a_step_are_numbered_in_their_order(tmp_path):
    # add_scalar(tag, value) with no global_step (torch/tensorboardX and TF1's add_summary leave Event.step unset:
    # 0): every point at step 0 left no step at all (insufficient_data); the wall times still time the loop
    events = [_event(1.7e9 + i * 0.5 + (i // 10) * 3.0, 0, [_simple("loss", 1.0)]) for i in range(100)]
    path = _write(tmp_path / "r" / "events.out.tfevents.1.h.1.0", events)
    bundle = read_paths([str(path)])
    assert sorted(bundle.steps["step"]) == list(range(1, 100))
    assert f"{path}: every point of 100 was logged at step 0 (no step given): numbered in their order" \
        in bundle.warnings
    assert diagnose(bundle).verdict["id"] == "periodic_stall"


def test_split_folders_named_from_inside_the_run_name_it(tmp_path, monkeypatch):
    _keras_fit(tmp_path / "fit7")
    monkeypatch.chdir(tmp_path / "fit7")
    bundle = read_paths(["train", "validation"])
    assert set(bundle.steps["host"]) == set(bundle.events["host"]) == {"fit7"}


# ---------------------------------------------------------------- found on other people's event files (h39: a
# Hugging Face Trainer run evaluating at every logging step, Keras' epoch logs, Lightning's hparams)

def _trainer_evaluating_every_log(n_logs: int = 12, every: int = 100, step_s: float = 0.2,
                                  eval_s: float = 60.0) -> list[bytes]:
    """Hugging Face's TensorBoardCallback with logging_steps == eval_steps: train/* then eval/* (eval/runtime: the
    evaluation's seconds, speed_metrics) at every logged step, the eval's pause inside the next logging window."""
    out, t = [], 1.7e9
    for k in range(1, n_logs + 1):
        t += every * step_s
        out.append(_event(t, k * every, [_simple("train/loss", 1.0), _simple("train/epoch", k / n_logs)]))
        t += eval_s
        out.append(_event(t, k * every, [_simple("eval/loss", 1.0), _simple("eval/runtime", eval_s),
                                          _simple("eval/steps_per_second", 3.0), _simple("train/epoch", k / n_logs)]))
    return out


def test_an_evaluation_in_every_logging_window_is_its_eval_phase_not_training(tmp_path):
    # every window held one 60 s evaluation beside 100 steps of 0.2 s: the windows all alike (0.8 s a step), read as
    # a steady pace and called healthy while 75% of the wall time was evaluation
    path = _write(tmp_path / "runs" / "Apr09_host" / "events.out.tfevents.1.host.1.0", _trainer_evaluating_every_log())
    bundle = read_paths([str(path)])
    phase = bundle.steps.groupby("phase")["duration_s"].median()
    assert phase["eval"] == pytest.approx(0.6) and phase["step"] == pytest.approx(0.8)
    assert diagnose(bundle).verdict["id"] == "periodic_stall"


def test_logged_every_step_an_evaluation_stays_the_gap_it_paused(tmp_path):
    path = _write(tmp_path / "r" / "events.out.tfevents.1.h.1.0",
                  _trainer_evaluating_every_log(n_logs=30, every=1, step_s=0.5, eval_s=5.0))
    assert set(read_paths([str(path)]).steps["phase"]) == {"step"}


def test_keras_epoch_tags_make_the_records_epochs(tmp_path):
    _keras_fit(tmp_path / "fit")
    bundle = read_paths([str(tmp_path / "fit")])
    assert schema.record_unit(bundle) == "epoch"
    batches = [_event(1.7e9 + i, i, [_simple("batch_loss", 1.0), _simple("epoch", 0.0)]) for i in range(20)]
    bundle = read_paths([str(_write(tmp_path / "b" / "events.out.tfevents.1.h.1.0.v2", batches))])
    assert schema.record_unit(bundle) == "step"


def test_hparams_session_summaries_are_named_in_the_note(tmp_path):
    # torch.utils.tensorboard.summary.hparams (Lightning's log_hyperparams): values holding only the hparams plugin's
    # metadata, no tensor: "3 tensors that hold no single number" before
    meta = _field(9, 2, _field(1, 2, _field(1, 2, b"hparams") + _field(2, 2, b"\x12\x00")))
    path = _write(tmp_path / "version_0" / "events.out.tfevents.1.h.1.0",
                  [_event(1.7e9, 0, [_field(1, 2, b"_hparams_/experiment") + meta])] + _steady(n=10))
    _, notes, _ = tfevents.scalars(path)
    assert notes == [f"{path}: not scalars, not read: 1 hparams summaries"]


def test_a_string_tensor_without_a_plugin_is_named_in_the_note(tmp_path):
    # tf.estimator's evaluation writes `checkpoint_path` as a DT_STRING tensor with no plugin metadata
    # (estimator.py _write_checkpoint_path_to_summary): "1 tensors that hold no single number" before
    text = _field(1, 0, 7) + _field(8, 2, b"model_dir/model.ckpt-500")  # dtype DT_STRING, string_val
    path = _write(tmp_path / "model_dir" / "eval" / "events.out.tfevents.1.h",
                  [_event(1.7e9 + 1, 500, [_tensor("checkpoint_path", text)])] + _steady(n=5, t0=1.7e9 + 2))
    _, notes, _ = tfevents.scalars(path)
    assert notes == [f"{path}: not scalars, not read: 1 string tensors"]


def test_files_written_at_once_by_two_processes_are_two_writers_not_one_series(tmp_path):
    # DDP without a rank-0 guard: every rank opens a SummaryWriter in the run's folder and logs the same tags; read
    # as one host their steps merged into one series (398 rows became 199 steps on one rank)
    _run_of_two_files(tmp_path / "run", second_start=0.2)
    bundle = read_paths([str(tmp_path / "run")])
    assert sorted(bundle.steps["host"].unique()) == ["run (h pid 11)", "run (h pid 22)"]
    assert len(bundle.steps) == 2 * 299  # each file's first point closes no window
    assert any("another event file in its folder was written at the same time" in w for w in bundle.warnings)


def test_a_resumed_run_and_one_process_files_stay_one_writer(tmp_path):
    _run_of_two_files(tmp_path / "a", second_start=600.0)  # one after the other: a restart, not a second writer
    _run_of_two_files(tmp_path / "b", 100.0, first_name="events.out.tfevents.100.h.11.0",
                      second_name="events.out.tfevents.200.h.11.1")  # one process, two writers: left as it was
    for run in ("a", "b"):
        assert read_paths([str(tmp_path / run)]).steps["host"].unique().tolist() == [run]


def test_a_writer_is_its_host_and_pid_not_the_pid_alone(tmp_path):
    # ranks on different nodes (identical containers) often have one pid: read as one process, two nodes' files
    # written at once were merged into one series, and a run resumed on another node was no restart
    _run_of_two_files(tmp_path / "ddp", 0.2, "events.out.tfevents.100.nodeA.7.0", "events.out.tfevents.100.nodeB.7.0")
    hosts = read_paths([str(tmp_path / "ddp")]).steps["host"].unique().tolist()
    assert sorted(hosts) == ["ddp (nodeA pid 7)", "ddp (nodeB pid 7)"]
    _run_of_two_files(tmp_path / "resumed", 600.0, "events.out.tfevents.100.podA.1.0",
                      "events.out.tfevents.200.podB.1.0")
    bundle = read_paths([str(tmp_path / "resumed")])
    assert bundle.events["kind"].tolist() == ["restart"] and bundle.steps["host"].unique().tolist() == ["resumed"]


def test_a_resumed_run_overlapping_the_file_before_by_clock_skew_stays_one_writer(tmp_path):
    # resumed on another node whose clock runs 1 s behind: its first point 1 s before the first file's last one
    # (149.5 s); two writers share most of their spans, these 1 s of 150 s
    _run_of_two_files(tmp_path / "run", 148.5, "events.out.tfevents.100.nodeA.7.0", "events.out.tfevents.200.nodeB.9.0")
    bundle = read_paths([str(tmp_path / "run")])
    assert bundle.steps["host"].unique().tolist() == ["run"]
    assert not any("written at the same time" in w for w in bundle.warnings)


def test_a_file_named_with_a_filename_suffix_is_its_process_own(tmp_path):
    # SummaryWriter(".", filename_suffix=".attrs") for text beside SummaryWriter(".") for scalars, in one process
    # (tensorboard's EventFileWriter names "events.out.tfevents.%010d.%s.%s.%s" % (time, host, pid, uid) + suffix):
    # the suffixed name was read as no pid, and its text 0.49 s before the first scalar as a run restarted
    text = _field(1, 2, b"model") + _field(8, 2, _field(1, 0, 7) + _field(8, 2, b"cnn"))
    _write(tmp_path / "run" / "events.out.tfevents.1700000000.h.11.0.attrs", [_event(1.7e9 + 0.01, 0, [text])])
    _write(tmp_path / "run" / "events.out.tfevents.1700000000.h.11.1", _steady("loss", n=50, dt=1.0, t0=1.7e9 + 0.5))
    bundle = read_paths([str(tmp_path / "run")])
    assert "restart" not in set(bundle.events["kind"])
    _run_of_two_files(tmp_path / "ddp", 0.2, "events.out.tfevents.100.h.11.0_x", "events.out.tfevents.100.h.22.0_x")
    assert sorted(read_paths([str(tmp_path / "ddp")]).steps["host"].unique()) == ["ddp (h pid 11)", "ddp (h pid 22)"]
    assert tfevents._process("events.out.tfevents.1700000000.h.11.0_test_tensorboard") == ("h", "11")
    assert tfevents._process("events.out.tfevents.1700000000.h.11.0.v2") == ("h", "11")
    assert tfevents._process("events.out.tfevents.1700000000.node.example.com") is None  # TF1: no pid


def test_a_restart_is_found_past_a_file_without_summaries_between(tmp_path):
    # TF's profiler leaves events.out.tfevents.<time>.profile-empty (no summary) in the run's folder: sorted
    # between the first run's file and the resumed one's, it hid the restart (450 s read as a stall)
    first, second = _run_of_two_files(tmp_path / "run", 600.0)
    _write(tmp_path / "run" / "events.out.tfevents.150.profile-empty", [])
    restarts = tfevents.read(second).events
    assert restarts["kind"].tolist() == ["restart"] and restarts["duration_s"].round(1).tolist() == [450.5]
    assert first.name in restarts["detail"].iloc[0]


def test_a_folder_of_writers_reads_each_sibling_once(tmp_path, monkeypatch):
    # every file of a folder checks its siblings for a writer beside it: read to their ends for each file, a folder
    # of n files was n * (n - 1) reads
    for pid in range(11, 17):
        _run_of_two_files(tmp_path / "run", 0.2, f"events.out.tfevents.100.h.{pid}.0", f"events.out.tfevents.100.h.{pid + 10}.0")
    reads = []
    last_wall = tfevents._last_wall
    monkeypatch.setattr(tfevents, "_last_wall", lambda path: reads.append(path) or last_wall(path))
    tfevents._span_of.cache_clear()
    bundle = read_paths([str(tmp_path / "run")])
    assert bundle.steps["host"].nunique() == 12 and 0 < len(reads) == len(set(reads)) <= 12  # each file read once


def test_a_folder_past_the_files_checked_for_writers_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(tfevents, "MAX_SIBLINGS", 1)
    first, second = _run_of_two_files(tmp_path / "run", second_start=0.2)
    _write(tmp_path / "run" / "events.out.tfevents.300.h.33.0", _steady(n=5))
    bundle = tfevents.read(second)
    assert bundle.steps["host"].unique().tolist() == ["run"]  # not checked: read as the run's one series
    assert any(w.startswith(f"{second}: its folder holds 3 event files, more than 2: not checked for writers")
               for w in bundle.warnings)
