"""Reading mechanisms the thirty-fourth held-out round (tests/data/eval/heldout34/SOURCES.md: experiment-tracker and
monitor layouts) asked for, tested on inputs written here, apart from the held-out files: a series named by its
subject alone (`__system__gpu`) is the GPU's utilization; a column that says GPU outranks a bare row index; JSON
records of the long layout (a name field and a value field); series held as x / y arrays named by their keys; a
metric history file named by its path (MLflow's file store); a machine's memory is the host's."""

from __future__ import annotations

import json

import pytest

from playbook.core.errors import InputError
from playbook.readers import detect, headers, read_paths


def test_a_series_named_only_by_the_gpu_is_its_utilization():
    assert headers.meaning(headers.series_name("__system__gpu")).role == "util_pct"
    assert headers.meaning(headers.series_name("sys/gpu")).role == "util_pct"
    assert headers.series_name("gpu_3_memory_used") == "gpu_3_memory_used"  # other names as they are
    assert headers.meaning("gpu").role == "gpu"  # a column named gpu stays the GPU's identity


def test_a_column_that_says_gpu_outranks_a_bare_row_index():
    roles = headers.assign(["idx", "step", "value", "time", "metric.name", "metric.context.gpu"])
    assert [pos for pos, m in roles.items() if m.role == "gpu"] == [5]
    assert [pos for pos, m in headers.assign(["index", "util"]).items() if m.role == "gpu"] == [0]


def test_long_csv_with_a_row_counter_and_a_gpu_context_column(tmp_path):
    lines = ["idx,step,value,epoch,time,metric.name,metric.context.gpu"]
    for k in range(30):
        for g in (0, 1):
            lines.append(f"{k},{k},{40 + 50 * g},,2024-03-01 10:00:{k:02d}.{g}00000,__system__gpu,{g}")
        lines.append(f"{k},{k},12.5,,2024-03-01 10:00:{k:02d}.500000,__system__cpu,")
    path = tmp_path / "tracker_metrics.csv"
    path.write_text("\n".join(lines) + "\n")
    t = read_paths([str(path)]).telemetry
    assert sorted(t["gpu"].unique()) == [0, 1]
    assert t.groupby("gpu")["util_pct"].mean().round().to_dict() == {0: 40.0, 1: 90.0}
    assert len(t) == 60


def _records(n: int, t0: int = 1_700_000_000_000) -> list[dict]:
    out = []
    for i in range(n):
        ts = t0 + 5000 * i
        out += [{"key": "gpu_1_utilization_percentage", "value": 60 + i % 30, "timestamp": ts, "step": i},
                {"key": "gpu_1_power_usage_watts", "value": 200.5, "timestamp": ts, "step": i},
                {"key": "train_loss", "value": 0.5, "timestamp": ts + 7, "step": i}]
    return out


@pytest.mark.parametrize("n", [20, 1500])  # whole in the sniffed head, and an array longer than the head
def test_json_records_of_the_long_layout(tmp_path, n):
    path = tmp_path / "metric_points.json"
    path.write_text(json.dumps(_records(n), indent=2))
    assert detect.detect(path) == "documents"
    bundle = read_paths([str(path)])
    t = bundle.telemetry
    assert len(t) == n and set(t["gpu"]) == {1}  # one row per poll: a GPU's points at one time joined, loss left out
    assert t["power_w"].eq(200.5).all() and t["util_pct"].between(60, 89).all()
    assert not [w for w in bundle.warnings if "repeat the timestamp" in w]


def test_series_held_as_x_y_arrays_named_by_their_keys(tmp_path):
    xs = [1_700_000_000_000 + 10_000 * i for i in range(40)]
    doc = {"resources": {"gpu_2_utilization": {"x": xs, "y": [70.0] * 40},
                         "gpu_2_mem_used_gb": {"x": xs, "y": [20.0] * 40}},
           "machine": {"memory_used_gb": {"x": xs, "y": [90.0] * 40}, "cpu_usage": {"x": xs, "y": [5.0] * 40}}}
    path = tmp_path / "scalars.json"
    path.write_text(json.dumps(doc))
    t = read_paths([str(path)]).telemetry
    assert len(t) == 40 and set(t["gpu"]) == {2} and t["util_pct"].eq(70.0).all()
    assert t["mem_used_mib"].eq(20.0 * 1024).all()  # the GPU's 20 GB, not the machine's 90 GB


def test_a_machines_memory_is_the_hosts():
    assert headers.meaning("machine/memory_used_gb").role is None
    assert headers.meaning("gpu_0_mem_used_gb").role == "mem_used_mib"


def _metric_file(root, key: str, lines: list[str]):
    path = root / "exp" / "run42" / "metrics" / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(ln + "\n" for ln in lines))
    return path


def test_a_metric_file_is_named_by_its_path(tmp_path):
    util = _metric_file(tmp_path, "system/gpu_1_utilization_percentage",
                        [f"{1_700_000_000_000 + 10_000 * i} {float(i % 2 * 90)} {i}" for i in range(50)])
    assert detect.detect(util) == "metric_file"
    t = read_paths([str(util)]).telemetry
    assert len(t) == 50 and set(t["gpu"]) == {1} and set(t["host"]) == {"run42"}
    assert t["util_pct"].mean() == pytest.approx(45.0)
    gaps = t["time"].diff().dt.total_seconds().dropna()
    assert gaps.eq(10).all()


def test_a_metric_file_of_no_gpu_metric_is_one_line_error(tmp_path):
    loss = _metric_file(tmp_path, "train_loss", ["1700000000000 0.5 0", "1700000010000 0.4 1"])
    with pytest.raises(InputError, match=r"train_loss.*no GPU reading this playbook uses"):
        read_paths([str(loss)])


def test_a_bad_line_in_a_metric_file_is_counted(tmp_path):
    lines = [f"{1_700_000_000 + 10 * i} 50.0 {i}" for i in range(20)]
    lines[7] = "1700000070 garbled"
    bundle = read_paths([str(_metric_file(tmp_path, "gpu_0_utilization_percentage", lines))])
    assert len(bundle.telemetry) == 19
    assert any("line 8" in w for w in bundle.warnings), bundle.warnings


def test_two_numbers_a_line_without_an_epoch_is_not_a_metric_file():
    assert not detect.module("metric_file").sniff("12 50.0 0\n13 60.0 1\n")


def test_an_infinite_reading_is_counted_not_dropped(tmp_path):
    """MLflow writes `inf` as it logs it; a value past float range reads as inf too. The row vanished without a
    word (a per-GPU column group kept only rows with a finite value); now the physics check counts and blanks it."""
    folder = tmp_path / "run" / "metrics" / "system"
    folder.mkdir(parents=True)
    (folder / "gpu_0_utilization_percentage").write_text(
        "1700000000000 50 0\n1700000001000 inf 1\n1700000002000 1e500 2\n1700000003000 70 3\n")
    bundle = read_paths([folder / "gpu_0_utilization_percentage"])
    assert len(bundle.telemetry) == 4 and bundle.telemetry["util_pct"].isna().sum() == 2
    assert any("2 values outside what a GPU can report" in w for w in bundle.warnings), bundle.warnings


def test_a_wide_record_with_a_name_and_a_value_field_is_read_wide(tmp_path):
    # review rev48b: a record holding its GPU readings in fields of their own beside `name` (the node) and `value`
    # was taken for a long-layout point of a series `node1` and dropped, the file refused
    recs = [{"name": "node1", "value": 1, "time": 1700000000 + i, "gpu": g, "utilization.gpu": 50 + 40 * g}
            for i in range(10) for g in (0, 1)]
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(recs))
    t = read_paths([str(path)]).telemetry
    assert t.groupby("gpu")["util_pct"].mean().to_dict() == {0: 50.0, 1: 90.0}


def test_of_two_name_fields_the_one_naming_a_gpu_metric_names_the_point(tmp_path):
    # InfluxDB Flux rows of telegraf's nvidia_smi input: the tag `name` (the product) beside `_field` / `_value`
    recs = [{"name": "NVIDIA A100-SXM4-80GB", "index": str(g), "_time": f"2024-01-01T00:00:{i:02d}Z",
             "_field": "utilization_gpu", "_value": 50 + 40 * g, "_measurement": "nvidia_smi"}
            for i in range(10) for g in (0, 1)]
    path = tmp_path / "flux.json"
    path.write_text(json.dumps(recs))
    t = read_paths([str(path)]).telemetry
    assert t.groupby("gpu")["util_pct"].mean().to_dict() == {0: 50.0, 1: 90.0}


def test_a_gpu_column_holding_the_product_name_does_not_displace_the_index(tmp_path):
    """A bare `gpu` column of product names beside a real `index` (review): it outranked the index and merged the two
    GPUs into one; a qualified name (`metric.context.gpu` beside Aim's row counter `idx`) still wins."""
    path = tmp_path / "gpus.csv"
    path.write_text("timestamp,index,gpu,utilization.gpu [%]\n" + "".join(
        f"2026-01-01 00:00:0{t},{g},NVIDIA A100,{50 + 10 * g + t}\n" for t in range(3) for g in range(2)))
    tel = read_paths([path]).telemetry
    assert sorted(tel["gpu"].unique()) == [0, 1] and len(tel) == 6
    assert headers.assign(["idx", "metric.context.gpu", "value"])[1].role == "gpu"
