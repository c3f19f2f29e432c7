"""Tables read by the meaning of their column names (playbook.readers.headers): one fixture per shape."""

import numpy as np
import pytest

from playbook.readers import detect, headers, read_file

T = "readers"


def _gpu(t, gpu, col, host=None):
    rows = t[(t["gpu"] == gpu) & ((t["host"] == host) if host else True)]
    return rows.sort_values("time")[col].tolist()


def test_custom_poller_keeps_clock_and_power_and_an_out_of_range_value_is_missing(data_dir):
    b = read_file(data_dir / T / "table_nvml_poller.csv")
    t = b.telemetry
    assert _gpu(t, 0, "sm_clock_mhz") == [1980.0, 1410.0, 1980.0]  # the row of the impossible power is kept
    assert _gpu(t, 0, "power_w")[:2] == [612.4, 190.2] and np.isnan(_gpu(t, 0, "power_w")[2])
    assert _gpu(t, 1, "power_w") == [605.1, 618.0, 611.7] and _gpu(t, 1, "temp_c") == [64.0, 65.0, 65.0]
    [w] = b.warnings
    assert "1 values outside what a GPU can report" in w and "power_w 1 (e.g. 1.4e+05)" in w


def test_time_host_gpu_header_keeps_every_host_and_gpu(data_dir):
    path = data_dir / T / "table_time_host_gpu.csv"
    assert detect.detect(path) == "generic_csv"
    t = read_file(path).telemetry
    assert sorted(set(zip(t["host"], t["gpu"], strict=True))) == [("node-a", 0), ("node-a", 1), ("node-b", 0)]
    assert _gpu(t, 1, "util_pct", "node-a") == [12.0, 88.0]
    assert str(t["time"].min()) == "2024-03-02 14:00:00+00:00"


@pytest.mark.parametrize("name", ["wandb_system.csv", "wandb_events.jsonl"])
def test_wandb_system_metrics_give_one_row_per_time_and_gpu(data_dir, name):
    b = read_file(data_dir / T / f"table_{name}")
    t = b.telemetry
    assert sorted(t["gpu"].unique()) == [0, 1]
    assert _gpu(t, 0, "util_pct") == [97.0, 12.0, 96.0] and _gpu(t, 0, "sm_clock_mhz") == [1980.0, 1410.0, 1980.0]
    assert _gpu(t, 0, "power_w") == [602.5, 180.2, 611.0] and _gpu(t, 0, "temp_c") == [64.0, 58.0, 65.0]
    assert _gpu(t, 0, "mem_util_pct") == [41.0, 3.0, 40.0]  # W&B "memory" is a percentage
    assert t["time"].min().timestamp() == pytest.approx(1709388015.25, abs=0.06)
    if name.endswith(".csv"):  # memoryAllocatedBytes -> MiB; the last row has no GPU 1 values: left out
        assert _gpu(t, 0, "mem_used_mib")[0] == pytest.approx(73443311616 / 2**20)
        assert len(_gpu(t, 1, "util_pct")) == 2
    else:  # a line that is not an object is skipped and counted
        assert any("skipped 1" in w and "not an object" in w for w in b.warnings)


def test_gpustat_json_reads_hosts_gpus_power_and_memory(data_dir):
    t = read_file(data_dir / T / "table_gpustat.json").telemetry
    assert set(t["host"]) == {"node-c"} and sorted(t["gpu"].unique()) == [0, 1]
    assert _gpu(t, 1, "util_pct") == [11.0, 96.0] and _gpu(t, 0, "power_w") == [612.0, 609.0]
    assert _gpu(t, 0, "power_limit_w") == [700.0, 700.0] and _gpu(t, 0, "mem_used_mib") == [70210.0, 70210.0]


def test_nvidia_smi_xml_reads_clocks_power_reasons_and_links(data_dir):
    path = data_dir / T / "table_smi_q.xml"
    assert detect.detect(path) == "documents"
    t = read_file(path).telemetry
    assert len(t) == 4 and sorted(t["gpu"].unique()) == [0, 1]
    assert _gpu(t, 0, "util_pct") == [98.0, 12.0] and _gpu(t, 1, "sm_clock_mhz") == [1275.0, 1410.0]
    assert _gpu(t, 0, "power_w") == [385.21, 120.40] and _gpu(t, 1, "throttle_reasons") == [4.0, 0.0]
    assert _gpu(t, 0, "mem_used_mib") == [70210.0] * 2 and _gpu(t, 0, "mem_total_mib") == [81920.0] * 2
    assert _gpu(t, 0, "pcie_tx_mib_s") == [1.0, 1.0] and _gpu(t, 0, "pcie_link_width") == [16.0, 16.0]
    assert _gpu(t, 0, "temp_c") == [64.0, 60.0]  # gpu_temp, not the max threshold or the memory temperature
    # current_power_limit the enforced limit, default_power_limit the board's (not min/max/requested)
    assert _gpu(t, 1, "power_limit_w") == [400.0] * 2 and _gpu(t, 1, "power_default_limit_w") == [400.0] * 2


@pytest.mark.parametrize("name", ["smi_event_reasons.csv", "throttle_custom.csv"])
def test_per_reason_columns_become_the_nvml_bitmask(data_dir, name):
    t = read_file(data_dir / T / f"table_{name}").telemetry
    if name.startswith("smi"):
        assert _gpu(t, 0, "throttle_reasons") == [0.0, 1.0]        # gpu_idle
        assert _gpu(t, 1, "throttle_reasons") == [4.0, 4.0 + 32.0]  # sw_power_cap, + sw_thermal
        assert _gpu(t, 1, "sm_clock_mhz") == [1410.0, 1200.0]
    else:
        assert _gpu(t, 0, "throttle_reasons") == [4.0, 12.0]        # sw_power_cap, + hw_slowdown


@pytest.mark.parametrize("name, role", [
    ("sweep_id", None), ("process_id", None), ("pid", None), ("rank", None), ("gpu_name", None),
    ("gpu", "gpu"), ("index", "gpu"), ("device", "gpu"), ("pci.bus_id", "gpu"), ("uuid", "gpu"),
    ("node", "host"), ("hostname", "host"), ("_runtime", "time"), ("epoch_ms", "time"),
    ("Frequency", "sm_clock_mhz"), ("Power (W)", "power_w"), ("clocks.max.sm", None), ("mclk", "mem_clock_mhz"),
    ("temperature.memory_temp", None), ("utilization.encoder_util", None), ("pcie_tx_bytes", "pcie_tx_mib_s"),
])
def test_header_meaning(name, role):
    assert headers.meaning(name).role == role


def test_value_ranges_set_units_the_name_leaves_out():
    m = headers.meaning("power")
    assert headers.factor(m, np.array([250_000.0, 300_000.0])) == pytest.approx(1e-3)  # NVML milliwatts
    assert headers.factor(headers.meaning("gpu_util"), np.array([0.5, 0.97])) == 100.0  # a fraction


def test_repeated_records_are_found_by_hash_and_confirmed_as_text(monkeypatch):
    import pandas as pd

    from playbook.readers import step_log

    records = pd.DataFrame({"step": ["1", "2", "1", "3", "2"], "time": [0.5, 0.6, 0.5, 0.7, 0.61]})
    assert step_log._repeated_rows(records).tolist() == [False, False, True, False, False]
    nested = pd.DataFrame({"step": [[0, 1], [0, 1], [0, 2]], "loss": [1.0, 1.0, 1.0]})  # DLLogger's [epoch, iter]
    assert step_log._repeated_rows(nested).tolist() == [False, True, False]
    # every row hashing alike (a collision) drops nothing the text does not repeat
    monkeypatch.setattr(pd.util, "hash_pandas_object", lambda frame, index=False: pd.Series([7] * len(frame)))
    assert step_log._repeated_rows(records).tolist() == [False, False, True, False, False]
