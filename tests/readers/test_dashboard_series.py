"""Dashboard exports of labelled series (heldout63's mechanisms, on layouts written here apart from its files):
a series with no GPU label beside per-GPU series of the same metric is a node's or a cluster's aggregate, not a GPU
(readers/headers.aggregates); the product name a label gives (`modelName`, `model`, `gpu_name`) is the GPU's part
(headers.models -> Bundle.meta GPU_MODELS), and the memory size the name states is its memory where memory.total
is not recorded (analysis/gpu_sharing.stated_total_mib)."""

from __future__ import annotations

import math

import pytest

from playbook.analysis.gpu_sharing import stated_total_mib
from playbook.model import schema
from playbook.readers import read_paths
from playbook.readers.headers import label_model


def _read(tmp_path, text: str, name: str = "panel.csv"):
    p = tmp_path / name
    p.write_text(text)
    return read_paths([str(p)])


def test_a_recording_rule_average_in_the_long_layout_is_no_gpu(tmp_path):
    # Grafana 7's "series as rows" (semicolons), two GPUs and the node's average a recording rule keeps
    rows = ['"Series";"Time";"Value"']
    for k in range(12):
        t = f"2025-02-03T10:{k:02d}:00+00:00"
        for name, v in (('DCGM_FI_DEV_GPU_UTIL{Hostname=""n1"", gpu=""0""}', 90),
                        ('DCGM_FI_DEV_GPU_UTIL{Hostname=""n1"", gpu=""1""}', 10),
                        ('instance:DCGM_FI_DEV_GPU_UTIL:avg{Hostname=""n1""}', 50)):
            rows.append(f'"{name}";"{t}";{v}')
    b = _read(tmp_path, "\n".join(rows) + "\n")
    assert sorted(b.telemetry["gpu"].unique()) == [0, 1] and set(b.telemetry["host"]) == {"n1"}
    assert any("1 series with no GPU label" in w and "instance:DCGM_FI_DEV_GPU_UTIL:avg" in w for w in b.warnings)


def test_a_host_level_series_beside_per_index_ones_is_no_gpu(tmp_path):
    # CloudWatch-agent style names (`metric dim=value`), the host's own series without an index
    head = "timestamp,nvidia_smi_utilization_gpu index=0 host=ip-10-0-0-5,nvidia_smi_utilization_gpu index=1 " \
           "host=ip-10-0-0-5,nvidia_smi_utilization_gpu host=ip-10-0-0-5"
    rows = [head] + [f"{1700000000000 + 60000 * k},97,95,96" for k in range(10)]
    b = _read(tmp_path, "\n".join(rows) + "\n")
    assert sorted(b.telemetry["gpu"].unique()) == [0, 1] and len(b.telemetry) == 20


def test_a_lone_series_without_a_gpu_label_is_still_the_one_gpu(tmp_path):
    # no per-GPU sibling: the one series is the file's GPU, as before
    rows = ['"Time","DCGM_FI_DEV_GPU_UTIL{Hostname=""n2""}"'] + [f"2025-02-03 10:00:{k:02d},{80 + k}" for k in range(10)]
    b = _read(tmp_path, "\n".join(rows) + "\n")
    assert len(b.telemetry) == 10 and not any("no GPU label" in w for w in b.warnings)


def test_the_product_name_a_label_gives_is_the_gpus_part(tmp_path):
    rows = ['"Time","agent.googleapis.com/gpu/utilization{gpu_number=""0"", model=""Tesla T4""}",'
            '"nvml_util{index=""1"", gpu_name=""NVIDIA L4""}","nvml_util{index=""2"", name=""trainer""}"']
    rows += [f"{1700000000 + 60 * k},50,60,70" for k in range(5)]
    b = _read(tmp_path, "\n".join(rows) + "\n")
    models = b.meta[schema.GPU_MODELS]
    assert set(models.values()) == {"Tesla T4", "NVIDIA L4"} and len(models) == 2  # a bare `name` is no model
    assert label_model({"modelName": "NVIDIA H100 80GB HBM3"}) == "NVIDIA H100 80GB HBM3"
    assert label_model({"name": "worker-3", "job": "x"}) is None


@pytest.mark.parametrize(("model", "mib"), [
    ("Tesla V100-SXM2-16GB", 16 * 1024), ("NVIDIA H100 80GB HBM3", 80 * 1024), ("NVIDIA A100-SXM4-40GB", 40 * 1024),
    ("Quadro RTX 8000 48 GB", 48 * 1024), ("NVIDIA H200", math.nan), ("Tesla T4", math.nan),
    ("NVIDIA GeForce RTX 3090", math.nan), ("GPU 1.5GB", math.nan), ("", math.nan)])
def test_the_memory_size_a_product_name_states(model, mib):
    got = stated_total_mib(model)
    assert (math.isnan(got) and math.isnan(mib)) or got == mib


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_excels_delimiter_line_is_part_of_the_export_not_a_skipped_line(tmp_path, bom):
    # "Download for Excel": `sep=X` first (Grafana's toCSV useExcelHeader), here over semicolons and the long layout
    rows = ["sep=;", '"Series";"Time";"Value"']
    rows += [f'"DCGM_FI_DEV_GPU_UTIL{{gpu=""{g}""}}";{1700000000000 + 15000 * k};{40 + g}' for k in range(8)
             for g in range(2)]
    p = tmp_path / "panel.csv"
    p.write_bytes(bom + "\r\n".join(rows).encode() + b"\r\n")
    b = read_paths([str(p)])
    assert len(b.telemetry) == 16 and b.telemetry["util_pct"].max() == 41 and not b.warnings
