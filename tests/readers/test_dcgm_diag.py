"""`dcgmi diag` results (readers/dcgm_diag.py): failed or warned tests per GPU become events named by their own
words; the boxes here are written for these tests in DCGM 3.x's layout (tests/data/eval/heldout15 holds real ones)."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import detect, read_file


def _box(rows: list[tuple[str, str]]) -> str:
    """A `dcgmi diag` box: 27-wide name cells, 48-wide result cells, messages wrapped at the cell's width."""
    out = ["Successfully ran diagnostic for group.", "+" + "-" * 27 + "+" + "-" * 48 + "+",
           "| Diagnostic                | Result                                         |",
           "+" + "=" * 27 + "+" + "=" * 48 + "+"]
    for name, text in rows:
        if name.startswith("-----"):
            out.append(f"|{name:-<27}+{'-' * 48}|")
            continue
        pieces = [text[i:i + 46] for i in range(0, len(text), 46)] or [""]
        out.append(f"| {name:<26}| {pieces[0]:<47}|")
        out += [f"| {'':<26}| {p:<47}|" for p in pieces[1:]]
    return "\n".join(out + ["+" + "-" * 27 + "+" + "-" * 48 + "+", ""])


PCIE = [("-----  Deployment  ", ""), ("Persistence Mode", "Pass"), ("-----  Integration  ", ""),
        ("PCIe", "Pass - GPUs: 0, 1, 3"), ("", "Fail - GPU: 2"),
        ("Warning", "GPU 2 GPU to Host bandwidth of 3.1 GB/s is below the minimum of 20.0 GB/s; check the link "
                    "width and generation"),
        ("-----  Hardware  ", ""), ("GPU Memory", "Pass - All")]


def test_a_failed_test_is_an_event_of_its_gpu_named_by_its_words(tmp_path):
    p = tmp_path / "diag.txt"
    p.write_text(_box(PCIE))
    assert detect.detect(p) == "dcgm_diag"
    ev = read_file(p).events
    assert list(ev["kind"]) == ["pcie_error"] and list(ev["host"]) == ["GPU 2"]
    assert "bandwidth of 3.1 GB/s is below the minimum of 20.0 GB/s; check the link width" in ev["detail"].iloc[0]
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "link_degradation" and "GPU 2" in d.verdict["sentence"]


@pytest.mark.parametrize("rows, kind", [
    ([("Diagnostic", "Fail - GPU: 5")], "diag_fail"),  # no message: the test's own kind
    ([("Memory Bandwidth", "Fail - GPU: 1"), ("Warning", "GPU 1 Xid 79 occurred during the test")], "ecc"),
    ([("Persistence Mode", "Fail"), ("Error", "Persistence mode for GPU 0 is disabled")], "diag_setup"),
    ([("-----  Deployment  ", ""), ("Error", "GPU 6 has uncorrectable memory errors and row remappings are pending")],
     "ecc"),
])
def test_each_failure_takes_the_kind_its_words_name(tmp_path, rows, kind):
    p = tmp_path / "diag.txt"
    p.write_text(_box(rows))
    assert set(read_file(p).events["kind"]) == {kind}


def test_a_box_that_passed_has_no_event(tmp_path):
    p = tmp_path / "pass.txt"
    p.write_text(_box([("PCIe", "Pass - All"), ("GPU Memory", "Pass - All"), ("EUD Test", "Skip - All")]))
    b = read_file(p)
    assert b.events.empty and b.meta[f"dcgm_diag:{p}"] == {"tests": 3, "failed": 0, "warned": 0}


def test_a_failed_hardware_test_without_a_message_is_a_fault_of_its_gpu(tmp_path):
    p = tmp_path / "diag.txt"
    p.write_text(_box([("-----  Hardware  ", ""), ("Diagnostic", "Pass - GPUs: 0, 1, 2, 3, 4, 6, 7"),
                       ("", "Fail - GPU: 5")]))
    d = diagnose(read_file(p))
    assert d.verdict["id"] == "hardware_fault" and "GPU 5" in d.verdict["sentence"]
