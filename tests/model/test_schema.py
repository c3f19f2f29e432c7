"""The data model's Bundle: merging and emptiness."""

from __future__ import annotations

import numpy as np
import pandas as pd

from playbook.model import schema


def test_a_bundle_with_only_a_reader_summary_is_not_empty():
    assert schema.Bundle().is_empty()
    assert not schema.Bundle(meta={"nsys:profile.csv": {"reports": {}}}).is_empty()
    assert schema.Bundle(meta={"run": {"playbook_run": 1}}).is_empty()  # run metadata alone is nothing to analyse


def test_extend_merges_rows_and_per_input_meta():
    t0 = pd.Timestamp("2026-01-01", tz="UTC")
    a = schema.Bundle(inputs=["a"], meta={"kineto": {0: {"rank": 0}}},
                      telemetry=schema.telemetry_frame({"time": [t0], "host": ["h"], "gpu": [0], "util_pct": [50]}))
    b = schema.Bundle(inputs=["b"], meta={"kineto": {1: {"rank": 1}}}, warnings=["b: skipped 1 of 2 rows"],
                      telemetry=schema.telemetry_frame({"time": [t0], "host": ["h"], "gpu": [1], "util_pct": [70]}))
    a.extend(b)
    assert a.inputs == ["a", "b"] and a.warnings == ["b: skipped 1 of 2 rows"]
    assert sorted(a.meta["kineto"]) == [0, 1] and a.telemetry["util_pct"].tolist() == [50.0, 70.0]


def test_an_empty_table_has_the_dtypes_of_a_table_of_no_rows_built_column_by_column():
    """builder() takes a fast path (empty typed arrays); a dict of zero-length columns takes the coercing one."""
    builders = {schema.telemetry_frame: "util_pct", schema.steps_frame: "duration_s", schema.events_frame: "duration_s",
                schema.host_frame: "cpu_pct", schema.trace_frame: "dur_us"}
    for builder, column in builders.items():
        fast, coerced = builder(), builder({column: []})
        pd.testing.assert_frame_equal(fast, coerced)
        for name in fast.columns:
            assert repr(fast[name].dtype) == repr(coerced[name].dtype), (builder.__name__, name)
            if isinstance(fast[name].dtype, pd.CategoricalDtype):
                assert fast[name].cat.categories.dtype == coerced[name].cat.categories.dtype


def test_an_owned_trace_table_holds_the_callers_arrays_and_an_unowned_one_copies_them():
    """owned=True (the Kineto reader's columns, given away): no copy and no 2-D consolidation; the values and dtypes
    are those of the default, copying build."""
    def columns():
        return {"ts_us": np.array([2.0, 1.0]), "dur_us": np.array([1.0, 3.0]), "pid": np.array([7, 8]),
                "name": pd.Series(["a", "b"], dtype="string")}
    given = columns()
    owned, copied = schema.trace_frame(given, owned=True), schema.trace_frame(columns())
    pd.testing.assert_frame_equal(owned, copied)
    assert np.shares_memory(owned["ts_us"].to_numpy(), given["ts_us"])
    copy_source = columns()
    assert not np.shares_memory(schema.trace_frame(copy_source)["ts_us"].to_numpy(), copy_source["ts_us"])
