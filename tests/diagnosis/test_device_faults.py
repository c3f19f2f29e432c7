"""Faults a kernel or driver line states about one device: the NVIDIA driver failing to bring a GPU up or needing to
reset it (RmInitAdapter / rm_init_adapter failed, NV_ERR_RESET_REQUIRED, "GPU marked for reset") is a GPU out of
the job (gpu_lost → hardware_fault), and the verdict names the device the line names by its PCI address, with its
host (tests/data/eval/heldout38 holds the real pastes; these lines are written apart, in the formats the driver,
NVML and the kernel's PCI core print)."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.diagnosis.evidence.from_events import device_named
from playbook.readers import event_lexicon, read_paths


@pytest.mark.parametrize("line", [
    "NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0xffff:1227)",
    "NVRM: GPU 0001:00:00.0: rm_init_adapter failed, device minor number 0",
    "NVRM: rm_init_adapter failed, device minor number 3",
    "NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000062) returned "
    "from pRmApi->Control(pRmApi, hClient, hObject, cmd, pParams, paramsSize) @ rs_server.c:1489",
    "NVRM: nvAssertFailedNoLog: Assertion failed: Back to back GSP RPC timeout detected! GPU marked for reset "
    "@ kernel_gsp.c:2387",
])
def test_the_driver_failing_to_start_or_needing_to_reset_a_gpu_is_a_gpu_lost(line):
    assert event_lexicon.match(line).kind == "gpu_lost"


@pytest.mark.parametrize("line", [
    "NVRM: GPU 0000:3b:00.0: rm_init_adapter succeeded",  # the line the driver prints when it did start the GPU
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01",
    "rmInit reset the counters before the step",  # words near the needles, no driver statement
    # a command that searches for the words quotes them: the driver said nothing (the grep may have found none)
    '$ sudo dmesg | grep -E "RmInitAdapter failed!|GPU marked for reset|rm_init_adapter failed"',
    "root@node3:~# journalctl -k --grep='NV_ERR_RESET_REQUIRED|RmInitAdapter failed!'",
    "egrep 'Xid.*79|GPU has fallen off the bus' /var/log/kern.log",
])
def test_a_started_gpu_or_other_driver_words_are_no_event(line):
    assert event_lexicon.match(line) is None


@pytest.mark.parametrize(("text", "device"), [
    ("NVRM: Xid (PCI:0000:3B:00): 79, pid=1122, GPU has fallen off the bus.", "GPU 0000:3b:00"),
    ("NVRM: GPU 00000000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)", "GPU 0000:0a:00"),
    ("NVRM: GPU at PCI:0000:02:00: GPU-be29ae39-c771-a3b8-e7c3-83562ff86bbe", "GPU 0000:02:00"),
    ("NVRM: The NVIDIA GPU 0000:b3:00.0", "GPU 0000:b3:00"),
    ("Unable to determine the device handle for GPU0000:BA:00.0: GPU is lost.", "GPU 0000:ba:00"),
    ("pci 0000:41:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at 0000:40:01.1 "
     "(capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)", "PCI 0000:41:00"),
    ("pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer", "PCI 0000:00:03"),
    # the kernel's dev_printk names a device by its driver: "nvidia" is the GPU's own (AER on the GPU's end of the link)
    ("nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Inaccessible, (Unregistered Agent ID)",
     "GPU 0000:3b:00"),
    ("[  +0.000844] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)", "GPU 0000:03:00"),
    ("[Sun Jan 11 09:52:01 2026] 12:34:56 step 7 NVRM: nvAssertOkFailedNoLog", ""),  # times are no address
    ("NCCL WARN NET/IB : Got completion from peer 10.0.0.2<54862> with status=12", ""),
])
def test_the_device_a_line_names_is_its_pci_address(text, device):
    assert device_named(text) == device


def test_the_verdict_names_each_failing_gpu_with_its_host(tmp_path):
    log = tmp_path / "kern.log"
    log.write_text(
        "Mar  4 01:02:03 gpu-12 kernel: [  310.000001] NVRM: GPU 0000:61:00.0: RmInitAdapter failed! (0x26:0x56:1474)\n"
        "Mar  4 01:02:03 gpu-12 kernel: [  310.000002] NVRM: GPU 0000:61:00.0: rm_init_adapter failed, device minor "
        "number 2\n"
        "Mar  4 01:05:00 gpu-12 kernel: [  487.100000] NVRM: Xid (PCI:0000:c1:00): 79, pid=4242, name=python3, GPU "
        "has fallen off the bus.\n")
    v = diagnose(read_paths([str(log)])).verdict
    assert v["id"] == "hardware_fault"
    assert set(v["names"]) == {"gpu-12 GPU 0000:61:00", "gpu-12 GPU 0000:c1:00"}


def test_a_fault_line_without_an_address_names_its_host_only(tmp_path):
    log = tmp_path / "node7.log"
    log.write_text("2024-03-03T12:00:01+0000 node7 kernel: NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset "
                   "required [NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2874\n")
    v = diagnose(read_paths([str(log)])).verdict
    assert v["id"] == "hardware_fault" and v["names"] == ["node7"]


def test_a_link_below_its_capability_names_the_device_the_kernel_names(tmp_path):
    log = tmp_path / "boot.log"
    log.write_text("kernel: pci 0000:41:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link "
                   "at 0000:40:01.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)\n")
    v = diagnose(read_paths([str(log)])).verdict
    assert v["id"] == "link_degradation" and v["names"] == ["boot PCI 0000:41:00"]


@pytest.mark.parametrize("line", [
    "NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=grep, Graphics Exception",  # a process named grep
    "Mar  4 01:02:03 gpu-12 kernel: NVRM: GPU 0000:61:00.0: RmInitAdapter failed! (0x26:0x56:1474)",
])
def test_a_driver_line_that_names_grep_is_still_a_statement(line):
    assert event_lexicon.match(line) is not None
