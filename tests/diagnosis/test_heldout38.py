"""The thirty-eighth held-out round (tests/data/eval/heldout38/SOURCES.md): real GPU telemetry excerpts pasted in
public threads with a stated cause — nvtop's device lines (an idle GPU's link trained down), a grepped `nvidia-smi
-q` clock / temperature loop of a laptop GPU the fan cannot cool, two default `nvidia-smi` tables (a slow model
implementation; data-loading workers in disk sleep), the kernel's PCIe bandwidth line (a Gen4 card in a Gen3
board), NVRM Xid 48/64 and RmInitAdapter lines of two failing GPUs, a GSP reset-required pair. Each file's verdict
(one of the accepted ids) and the GPU or device it names (the fixes are tested apart:
tests/diagnosis/test_device_faults.py, tests/readers/test_smi_query_excerpts.py, tests/readers/test_nvtop_text.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from heldout_rounds import verdict_tests

from playbook.diagnosis import diagnose
from playbook.readers import read_paths

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout38"

ACCEPTED = {
    "nvtop6_gen1_idle_second_gpu.txt": ("healthy", "insufficient_data"),
    "surface299_smi_q_clock_temp_loop.txt": ("throttling", "insufficient_data"),
    "deeplab20_smi_2x2080ti_smp_model.txt": ("insufficient_data", "unexplained_slowdown", "launch_bound"),
    "pytorch_distributed2_smi_4x2080ti_loader_dstate.txt": ("data_starvation", "insufficient_data"),
    "cpux335_dmesg_pcie_bandwidth_limited.log": ("link_degradation", "insufficient_data"),
    "gpu_operator1146_xid48_dbe_rminit_failed.log": ("hardware_fault",),
    "sichek51_dmesg_gsp_reset_required.log": ("hardware_fault",),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)


@pytest.mark.parametrize(("name", "names"), [
    ("gpu_operator1146_xid48_dbe_rminit_failed.log", {"worker4 GPU 0000:0a:00", "worker4 GPU 0000:07:00"}),
    ("cpux335_dmesg_pcie_bandwidth_limited.log", {"cpux335_dmesg_pcie_bandwidth_limited PCI 0000:0c:00"}),
    # the lines name no device: the file stands for the host, no GPU is named
    ("sichek51_dmesg_gsp_reset_required.log", {"sichek51_dmesg_gsp_reset_required"}),
])
def test_the_failing_device_is_named(name, names):
    assert set(diagnose(read_paths([str(HERE / name)])).hypotheses[0]["names"]) == names


def test_gpus_outside_the_job_are_not_named_as_idle_ranks():
    d = diagnose(read_paths([str(HERE / "pytorch_distributed2_smi_4x2080ti_loader_dstate.txt")]))
    assert d.verdict["id"] == "insufficient_data" and not d.hypotheses[0]["names"]


def test_the_grepped_loop_is_read_poll_by_poll():
    t = read_paths([str(HERE / "surface299_smi_q_clock_temp_loop.txt")]).telemetry.sort_values("time")
    assert len(t) == 8 and list(t["sm_clock_mhz"])[:3] == [1657, 1657, 1657]
    assert t["temp_c"].between(84, 85).all()


def test_the_nvtop_lines_read_each_gpus_current_link():
    t = read_paths([str(HERE / "nvtop6_gen1_idle_second_gpu.txt")]).telemetry.sort_values("gpu")
    assert list(t["pcie_link_gen"]) == [3, 1] and list(t["pcie_link_width"]) == [16, 16]
