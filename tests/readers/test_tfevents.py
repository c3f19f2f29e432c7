"""TensorBoard event files (playbook/readers/tfevents.py): the three files of tests/data/tfevents, written by the
real writer (torch.utils.tensorboard, make_tfevents.py) from real training loops, and files written here to the
format's specification (event.proto, summary.proto, tensor.proto; TFRecord framing) for what those do not hold:
other value encodings, GPU tags, damage."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from playbook.core.errors import InputError
from playbook.diagnosis import diagnose
from playbook.readers import detect, read_paths, textio, tfevents

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
    return (length + struct.pack("<I", tfevents.masked_crc32c(length)) + data
            + struct.pack("<I", tfevents.masked_crc32c(data)))


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
    assert tfevents.masked_crc32c(b"123456789") == ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) % 2**32


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
