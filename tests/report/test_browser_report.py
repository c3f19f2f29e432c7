"""The HTML report in a real browser (headless Chromium): the demo report (`playbook report`: the 64-GPU
sample, then the dflash poll), a lab page, and a triage of hostile inputs. From the DOM and a 1400×900
screenshot: the verdict card (verdict, GPU time lost, key figure) is in the first viewport, no image or link is
broken, nothing is fetched from the network, and markup in input values and file names stays text.
Skipped only when Debian's `chromium` is not installed (.ci/run installs it)."""

from __future__ import annotations

import base64
import html
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from conftest import ROOT
from test_report_triage import sample_report

from playbook.report.runner import Job, run_batch

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                "(apt-get install -y chromium; .ci/run installs it)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
         "--no-first-run", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
VIEWPORT = (1400, 900)
CARD_COLORS = {"confirmed": (0x26, 0x46, 0x53), "inconclusive": (0xE9, 0xA2, 0x3B), "refuted": (0x2A, 0x9D, 0x8F)}
SHOTS = Path(__file__).resolve().parents[2] / "reports" / "browser-test"  # kept for a person to look at


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=120)


def _dom(tmp_path, page: Path) -> str:
    res = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert res.returncode == 0, res.stderr[-1000:]
    return res.stdout


def _screenshot(tmp_path, page: Path, name: str) -> np.ndarray:
    from PIL import Image

    shot = tmp_path / f"{name}.png"
    res = _chromium(tmp_path, f"--screenshot={shot}", f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}", page.as_uri())
    assert res.returncode == 0 and shot.is_file(), res.stderr[-1000:]
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, SHOTS / shot.name)
    return np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB"), dtype=np.int16)


def _text(dom: str) -> str:
    dom = re.sub(r"<style\b.*?</style>", " ", dom, flags=re.DOTALL | re.IGNORECASE)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom)))


def _card_rows(pixels: np.ndarray, status: str) -> np.ndarray:
    """Screen rows where the card's 6 px status-coloured left border is drawn."""
    color = np.array(CARD_COLORS[status])
    left = pixels[:, : VIEWPORT[0] // 3]
    hit = (np.abs(left - color).sum(axis=2) < 30).sum(axis=1) >= 4
    return np.flatnonzero(hit)


def _viridis_share(pixels: np.ndarray) -> float:
    """Share of the screen in heatmap colours (viridis' yellow-green and dark-blue ends)."""
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    yellow = (r > 150) & (g > 180) & (b < 90)
    blue = (r < 90) & (g < 110) & (b > 90) & (b < 160)
    return float((yellow | blue).mean())


def _check_assets(dom: str, page: Path) -> None:
    """No script, no network fetch, every image decodes, every relative link resolves from the report folder."""
    assert "<script" not in dom.lower()
    assert 'http-equiv="Content-Security-Policy"' in dom and "script-src 'none'" in dom
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.sub(r"<a\b[^>]*>", "", dom))
    assert not re.search(r"url\(\s*['\"]?(?:https?:)?//", dom)
    from PIL import Image

    srcs = re.findall(r'<img[^>]+src="([^"]*)"', dom)
    for src in srcs:
        assert src.startswith("data:image/png;base64,"), src[:80]
        Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).verify()
    for href in re.findall(r'<a[^>]+href="([^"]*)"', dom):
        href = html.unescape(href)
        if href.startswith(("http://", "https://", "mailto:")) or href.startswith("#"):
            continue
        target = (page.parent / href.split("#", 1)[0]).resolve()
        assert target.exists(), f"{page.name}: broken link {href}"


def _check_first_screen(tmp_path, page: Path, name: str, status: str, figure: bool = True) -> str:
    dom = _dom(tmp_path, page)
    _check_assets(dom, page)
    card = re.search(r'<section class="pb-card" id="verdict".*?</section>', dom, re.DOTALL)
    assert card, f"{page.name}: no verdict card"
    text = _text(card.group(0))
    assert text.strip().startswith(status.upper() + ":")
    if figure:
        assert "GPU time lost" in text and "next" in text and "playbook " in text
        assert re.search(r'<img alt="heatmap[^"]*" src="data:image/png', card.group(0))
    # the card comes before any other block of the notebook
    assert dom.index('id="verdict"') < min((dom.find(s) for s in ("About this notebook", "1 Hypothesis")
                                             if dom.find(s) > 0), default=len(dom))
    pixels = _screenshot(tmp_path, page, name)
    rows = _card_rows(pixels, status)
    assert len(rows) > (300 if figure else 60) and rows.min() < VIEWPORT[1] / 2, (name, len(rows), rows[:3])
    if figure:
        assert _viridis_share(pixels[rows.min():]) > 0.05  # the heatmap is drawn inside the first viewport
    return dom


@pytest.fixture(scope="module")
def demo():
    out, res = sample_report()
    assert res.returncode == 0, res.stderr[-2000:]
    return out


def test_demo_index_leads_with_the_64_gpu_verdict_and_names_each_runs_inputs(demo, tmp_path):
    # telemetry alone cannot tell a checkpoint every 60 s from a loader refill: the card says "likely", the status
    # inconclusive (the verdict words follow the scores: confirmed needs 0.8 and the next cause 0.2 behind)
    dom = _check_first_screen(tmp_path, demo / "index.html", "demo-index", "inconclusive")
    text = _text(dom)
    assert "64 GPUs" in text and "periodic stall" in text.lower() and "playbook report --labs 12" in text
    assert text.index("data/samples/synthetic-64gpu") < text.index("data/samples/dflash-8gpu")
    assert not re.search(r"""[\[{]["']""", text)  # the run's parameters as text, not a JSON or Python list
    assert 'href="01_triage-synthetic-64gpu.html"' in dom and 'href="01_triage-dflash-8gpu.html"' in dom
    card = _text(re.search(r'<section class="pb-card" id="verdict".*?</section>', dom, re.DOTALL).group(0))
    assert "SYNTHETIC — generated, not a measurement" in card  # the 64-GPU sample is not a measurement
    # the docs travel with the report: linked inside the folder (_check_assets resolved every link)
    assert 'href="guide/runbook.html"' in dom and (demo / "guide" / "field-guide.html").is_file()


@pytest.mark.parametrize("name, status", [("01_triage-synthetic-64gpu", "inconclusive"),
                                          ("01_triage-dflash-8gpu", "inconclusive")])
def test_each_triage_page_opens_with_its_verdict_card(demo, tmp_path, name, status):
    dom = _check_first_screen(tmp_path, demo / f"{name}.html", name, status)
    text = _text(dom)
    for section in ("1 Hypothesis", "2 Measurement", "Period analysis", "GPU status", "Ranked hypotheses",
                    "4 Verdict"):
        assert section in text, section
    assert "read_paths(" not in text and "import " not in text  # input cells are left out
    assert "{'" not in text and "period_s = None" not in text  # no dict reprs
    assert dom.count('id="verdict"') == 1  # the verdict is not repeated in the bar
    assert 'href="guide/field-guide.html"' in dom  # the report's own copy, not a path into the checkout
    assert not re.search(r"\d+ of 1 GPUs|\b1 hosts\b", text) and "`" not in text  # Markdown rendered


_MEASURE = """<script>
const w = document.documentElement.clientWidth;
const wide = [...document.querySelectorAll('table')].filter(t => t.getBoundingClientRect().right > w + 1
  || (t.parentElement && t.parentElement.scrollWidth > t.parentElement.clientWidth + 1));
document.body.setAttribute('data-wide-tables', wide.map(t => (t.innerText || '').slice(0, 60)).join(' | '));
document.body.setAttribute('data-measured', String(w));
</script>"""


@pytest.mark.parametrize("name", ["01_triage-synthetic-64gpu", "01_triage-dflash-8gpu", "guide/runbook"])
def test_every_table_fits_a_1400_px_window(demo, tmp_path, name):
    """Measured in the browser: no table runs past the window or scrolls inside its box at 1,400 px. The page
    forbids scripts, so a copy without its policy, with one measuring script, is what is opened."""
    page = (demo / f"{name}.html").read_text(encoding="utf-8")
    probe = demo / f"{name}.measure.html"
    probe.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
                     .replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    try:
        res = _chromium(tmp_path, f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}", "--dump-dom", probe.as_uri())
    finally:
        probe.unlink()
    assert res.returncode == 0, res.stderr[-1000:]
    measured = re.search(r'data-wide-tables="([^"]*)" data-measured="(\d+)"', res.stdout)
    assert measured and int(measured.group(2)) > 1300, res.stdout[-500:]
    assert measured.group(1) == "", f"{name}: tables wider than the window: {measured.group(1)}"


@pytest.fixture(scope="module")
def lab_report(tmp_path_factory):
    """A prepared lab notebook (records a verdict and draws a figure) through the batch runner."""
    src = tmp_path_factory.mktemp("nbs")
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("repeats: int = 2  # runs per variant")
    params.metadata["tags"] = ["parameters"]
    key = nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nfrom playbook.report.scrapbook import "
                                    "verdict\nfig, ax = plt.subplots(); ax.bar(['fault', 'fix'], [50, 98]);")
    key.metadata["tags"] = ["key-figure"]  # as the labs tag their throughput-by-variant cell
    nb.cells = [nbformat.v4.new_markdown_cell("# 12 · A prepared lab\n\n**Summary:** a verdict and a figure."),
                params, key,
                nbformat.v4.new_code_cell("verdict('inconclusive', 'fault runs at 50% of no-fault (95% interval "
                                          "20%-80%); the fix at 98% (95% interval 40%-160%)', fault_ratio=0.5, "
                                          "fix_ratio=0.98);")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = src / "12_prepared_lab.ipynb"
    nbformat.write(nb, path)
    out = tmp_path_factory.mktemp("lab-report")
    run_batch([Job(str(path), {"repeats": 2}, "12_prepared_lab", "A prepared lab")], out, progress=False)
    return out


def test_a_lab_page_opens_with_its_verdict(lab_report, tmp_path):
    dom = _check_first_screen(tmp_path, lab_report / "12_prepared_lab.html", "lab-page", "inconclusive",
                              figure=False)
    text = _text(dom)
    assert "fault ratio" in text
    assert "-p repeats 4" in text and "playbook report --labs 12" not in text  # next: more repeats, not this page
    card = re.search(r'<section class="pb-card" id="verdict".*?</section>', dom, re.DOTALL).group(0)
    assert re.search(r'<img alt="the lab\'s key figure[^"]*" src="data:image/png', card)  # its tagged figure
    _check_first_screen(tmp_path, lab_report / "index.html", "lab-index", "inconclusive", figure=False)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """Triage of a CSV whose file name and one value carry markup."""
    data = tmp_path_factory.mktemp("hostile")
    lines = ["timestamp, index, utilization.gpu [%], power.draw [W]"]
    for i in range(120):
        for g in range(2):
            lines.append(f"2026/01/01 10:{i * 5 // 60:02d}:{i * 5 % 60:02d}.000, {g}, "
                         f"{90 if i % 12 < 9 else 20} %, 400.0 W")
    lines.insert(10, '2026/01/01 10:00:40.000, 0, "><img src=x onerror=alert(9)> %, 400.0 W')
    (data / "gen<svg onload=alert(3)>.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path_factory.mktemp("hostile-report") / "r"
    res = subprocess.run([sys.executable, "-m", "playbook", "report", str(data), "--out", str(out),
                          "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return out


def test_markup_in_input_values_and_file_names_stays_text(hostile, tmp_path):
    for page in (hostile / "01_triage.html", hostile / "index.html"):
        dom = _dom(tmp_path, page)
        _check_assets(dom, page)
        assert not re.search(r"<img[^>]*onerror", dom, re.IGNORECASE)
        assert not re.search(r"<svg[^>]*onload", dom, re.IGNORECASE)
        assert not re.search(r'<img[^>]+src="x"', dom)
    text = _text(_dom(tmp_path, hostile / "01_triage.html"))
    assert "onerror=alert(9)>" in text and "gen<svg onload=alert(3)>" in text  # shown, as text
    _screenshot(tmp_path, hostile / "01_triage.html", "hostile-triage")
