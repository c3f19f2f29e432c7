"""No analysis walks the telemetry row by row in Python (issue 31: diagnosis near-linear at thousands of GPUs).

A per-row loop is invisible at the tests' sizes and costs seconds at scale (held_memory's memory-size lookup took
5.6 s of 14.4 at 2,048 GPUs x 1 h before it became one groupby). Timing it would make a test that fails on a loaded
machine; counting does not: every text value an Arrow-backed column hands to Python is counted while `diagnose` runs
on a LABELED SYNTHETIC fleet, and the count must stay below the number of rows (distinct values, per-GPU names and
the table's head are fine; one value per row is not)."""

from __future__ import annotations

import pytest
from pandas.core.arrays.arrow.array import ArrowExtensionArray

from playbook.diagnosis import diagnose
from playbook.labs.synthetic import simulate_telemetry
from playbook.model import schema


@pytest.fixture
def counted(monkeypatch) -> dict[str, int]:
    """{"values": n}: how many values Arrow-backed columns have handed to Python since the test began."""
    counts = {"values": 0}
    iterate = ArrowExtensionArray.__iter__

    def counting(self):
        for value in iterate(self):
            counts["values"] += 1
            yield value

    monkeypatch.setattr(ArrowExtensionArray, "__iter__", counting)
    return counts


@pytest.mark.parametrize("scenario", ["oscillation", "straggler"])
def test_diagnose_hands_python_fewer_text_values_than_the_table_has_rows(counted, scenario):
    telemetry, _ = simulate_telemetry(scenario, hosts=4, gpus_per_host=8, duration_s=900.0)
    telemetry = telemetry.assign(mem_total_mib=81920.0, mem_clock_mhz=1593.0)  # columns per-row loops walked
    assert len(telemetry) >= 25_000
    before = counted["values"]
    d = diagnose(schema.Bundle(inputs=["synthetic"], telemetry=telemetry))
    spent = counted["values"] - before
    assert d.hypotheses and spent < len(telemetry) / 2, (spent, len(telemetry))


def test_the_counter_sees_a_row_loop(counted):
    """The guard can fail: a loop over the host column is counted row by row."""
    telemetry, _ = simulate_telemetry("oscillation", hosts=1, gpus_per_host=2, duration_s=60.0)
    assert isinstance(telemetry["host"].array, ArrowExtensionArray)
    before = counted["values"]
    hosts = [h for h in telemetry["host"]]  # noqa: C416 - the per-row loop the guard must see
    assert counted["values"] - before >= len(hosts) == len(telemetry)
