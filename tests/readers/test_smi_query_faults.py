"""Memory faults `nvidia-smi -q` states (readers/nvidia_smi/query_text.py memory_faults): a pending or failed row
remap, pages pending retirement, uncorrectable errors since the driver loaded, as `ecc` events; a healthy section
states none. Sections written here in nvidia-smi's layout (4 spaces a level, `Key : Value` at column 42)."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.readers import read_file


def _kv(indent: int, key: str, value: str) -> str:
    return f"{' ' * indent}{key:<{42 - indent}}: {value}"


def _section(pending: str = "No", failed: str = "No", dram_uncorrectable: int = 0) -> str:
    return "\n".join([
        "==============NVSMI LOG==============", "",
        _kv(0, "Timestamp", "Thu Dec  3 10:00:00 2026"), _kv(0, "Driver Version", "550.54.15"), "",
        "GPU 00000000:18:00.0",
        _kv(4, "Product Name", "NVIDIA A100-SXM4-80GB"), _kv(4, "Minor Number", "2"),
        "    Utilization", _kv(8, "Gpu", "97 %"), _kv(8, "Memory", "40 %"),
        "    ECC Errors", "        Volatile",
        _kv(12, "SRAM Correctable", "0"), _kv(12, "SRAM Uncorrectable", "0"),
        _kv(12, "DRAM Correctable", "12"), _kv(12, "DRAM Uncorrectable", str(dram_uncorrectable)),
        "        Aggregate", _kv(12, "DRAM Uncorrectable", "3"),  # lifetime: may be years old, not read
        "    Remapped Rows", _kv(8, "Correctable Error", "0"), _kv(8, "Uncorrectable Error", "0"),
        _kv(8, "Pending", pending), _kv(8, "Remapping Failure Occurred", failed),
        "    GPU Power Readings", _kv(8, "Power Draw", "310.00 W"), ""])


def test_a_healthy_section_states_no_fault(tmp_path):
    p = tmp_path / "q.txt"
    p.write_text(_section())
    b = read_file(p)
    assert len(b.telemetry) == 1 and b.events.empty


def test_a_failed_remap_and_uncorrectable_errors_are_a_fault_of_that_gpu(tmp_path):
    p = tmp_path / "q.txt"
    p.write_text(_section(failed="Yes", dram_uncorrectable=2))
    b = read_file(p)
    assert list(b.events["kind"]) == ["ecc"] and len(b.telemetry) == 1
    detail = b.events["detail"].iloc[0]
    assert detail.startswith("GPU 2:") and "row remapping failed" in detail and "2 uncorrectable ECC errors" in detail
    assert diagnose(b).verdict["id"] == "hardware_fault"


def test_a_pasted_fault_section_alone_is_read(tmp_path):
    p = tmp_path / "paste.txt"
    p.write_text("    Retired Pages\n" + _kv(8, "Single Bit ECC", "0") + "\n" + _kv(8, "Double Bit ECC", "1") + "\n"
                 + _kv(8, "Pending Page Blacklist", "Yes") + "\n")
    b = read_file(p)
    assert list(b.events["kind"]) == ["ecc"] and "pending retirement" in b.events["detail"].iloc[0]
