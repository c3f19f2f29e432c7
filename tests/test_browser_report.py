"""The HTML report renders in a real browser: headless Chromium finds the sections and figures, and the
screenshot is not blank. Skipped only when Debian's `chromium` is not installed (.ci/run installs it)."""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import numpy as np
import pytest
from test_report_triage import sample_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                "(apt-get install -y chromium; .ci/run installs it)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
         "--no-first-run", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=120)


def _text(dom: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))


@pytest.fixture(scope="module")
def report():
    out, res = sample_report()
    assert res.returncode == 0, res.stderr[-2000:]
    return out


def test_index_renders_with_links_and_badges(report, tmp_path):
    res = _chromium(tmp_path, "--dump-dom", (report / "index.html").as_uri())
    assert res.returncode == 0, res.stderr[-1000:]
    dom = res.stdout
    assert "GPU utilization playbook: report" in _text(dom)
    assert 'href="01_triage.html"' in dom and 'href="01_triage.ipynb"' in dom
    assert re.search(r'class="badge badge-ok"', dom)
    assert re.search(r'class="badge badge-(confirmed|refuted|inconclusive)"', dom)


def test_triage_page_has_every_section_and_figure_but_no_code(report, tmp_path):
    res = _chromium(tmp_path, "--dump-dom", (report / "01_triage.html").as_uri())
    assert res.returncode == 0, res.stderr[-1000:]
    dom, text = res.stdout, _text(res.stdout)
    for section in ("1 Hypothesis", "2 Measurement", "Per-GPU timelines", "Period analysis", "GPU status",
                    "Ranked hypotheses", "4 Verdict"):
        assert section in text, section
    assert re.search(r"Verdict: (CONFIRMED|REFUTED|INCONCLUSIVE)", text)
    figures = re.findall(r'<img[^>]+src="data:image/png;base64,', dom)
    assert len(figures) >= 5  # heatmap, host lines, spectrum, folded cycle, status table
    assert "read_paths(inputs)" not in text and "import " not in text  # input cells are left out
    assert "report index" in text


def test_screenshot_is_not_blank(report, tmp_path):
    from PIL import Image

    shot = tmp_path / "triage.png"
    res = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,2400",
                    (report / "01_triage.html").as_uri())
    assert res.returncode == 0 and shot.is_file(), res.stderr[-1000:]
    pixels = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("L"), dtype=float)
    assert pixels.shape == (2400, 1200)
    assert pixels.std() > 20  # a blank or single-colour page has ~0
    assert (pixels < 200).mean() > 0.03  # text and figures cover a few percent of the page at least
