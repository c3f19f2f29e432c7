"""Jupyter notebooks (readers/notebook.py): what the cells printed, read as a log. LABELED SYNTHETIC: every
notebook is written here, in nbformat 4's layout (cells, outputs: stream text lists, display data)."""

from __future__ import annotations

import json

import pytest

from playbook.core.errors import InputError
from playbook.readers import detect, read_file


def _notebook(path, outputs: list[dict], extra_cells: list[dict] | None = None):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Train"]},
             {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": ["model.fit(ds)"],
              "outputs": outputs}, *(extra_cells or [])]
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4,
                                "nbformat_minor": 5}, indent=1))
    return path


def _keras(epochs: list[int]) -> list[str]:
    out = []
    for e, ms in enumerate(epochs, start=1):
        out += [f"Epoch {e}/{len(epochs)}\n",
                f"100/100 [==============================] - {ms * 100 // 1000}s {ms}ms/step - loss: 0.5\n"]
    return out


def test_a_notebooks_printed_training_log_is_read_as_the_log(tmp_path):
    """Keras' fit() output in a stream output, a figure's plain text after it: the epochs' step times are read."""
    p = _notebook(tmp_path / "train.ipynb", [
        {"name": "stdout", "output_type": "stream", "text": _keras([450, 440, 460, 455])},
        {"data": {"image/png": "iVBORw0KGgo=", "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
         "metadata": {}, "output_type": "display_data"}])
    assert detect.detect(p) == "notebook"
    b = read_file(p)
    assert b.steps["duration_s"].tolist() == pytest.approx([0.45, 0.44, 0.46, 0.455])


def test_tqdm_redraws_in_a_stderr_stream_are_lines_of_their_own(tmp_path):
    bars = "".join(f"\r{i}/50 [00:{i:02d}<00:00, 1.00it/s, loss=0.5]" for i in range(1, 51)) + "\n"
    p = _notebook(tmp_path / "bars.ipynb", [{"name": "stderr", "output_type": "stream", "text": [bars]}])
    b = read_file(p)
    assert len(b.steps) >= 40 and b.steps["duration_s"].median() == pytest.approx(1.0, rel=0.05)


def test_a_notebook_without_output_or_not_json_is_refused_in_one_line(tmp_path):
    with pytest.raises(InputError, match=r"empty\.ipynb: a notebook without printed output"):
        read_file(_notebook(tmp_path / "empty.ipynb", []))
    bad = tmp_path / "cut.ipynb"
    bad.write_text('{\n "cells": [\n  {\n   "cell_type": "code",\n   "outputs": [')
    with pytest.raises(InputError, match=r"cut\.ipynb: a notebook that is not valid JSON"):
        read_file(bad)
