"""notebooks/40_regression_compare.ipynb runs headlessly with small parameters and confirms that `compare` names
the injected cause (recompilation, linked to the padding change rather than the cold compile cache)."""

from __future__ import annotations

import pytest
from nbrun import run_notebook


@pytest.mark.slow
def test_regression_compare_notebook_confirms_the_injected_cause(tmp_path):
    rec = run_notebook("40_regression_compare.ipynb", tmp_path, steps=24, repeats=1, n_boot=400,
                       out_dir=str(tmp_path / "runs"))
    v = rec["verdict"]
    assert v["status"] == "confirmed", v["summary"]
    f = v["figures"]
    assert f["top_cause"] == "recompilation" == rec["top_cause"]
    assert 0 < f["throughput_ratio"] < 0.5 and f["ratio_hi"] < 1
    assert f["shapes_gap_closed"] > 0.5 > f["cache_gap_closed"]
    assert 0.5 < f["top_share"] <= 1.5
