"""The reading the fourteenth held-out round (tests/data/eval/heldout14/SOURCES.md) asked for, on inputs written here
(LABELED SYNTHETIC), apart from the round's own files:

- a pasted `amd-smi monitor` session: the shell prompt that ran the tool and the notice amd-smi prints right after
  it are the tool's text (the file is read, not refused as plain text); AMD SMI 25's headings GFX% (the engine's
  busy share), GPU_T (the temperature) and VRAM_USAGE "used/total GB" (used size and total) are read;
- `nvidia-smi pmon`: the processes each GPU runs are kept (Bundle.meta[GPU_PROCESSES]) and `info` says a GPU is
  shared by two processes whose utilizations it sums.
"""

from __future__ import annotations

import numpy as np

from playbook.commands import info
from playbook.model import schema
from playbook.readers import amd_smi_text, headers, read_paths

SESSION = """\
alice@mi250-node:~$ amd-smi monitor
WARNING: User is missing the following required groups: video. Please add user to these groups.
GPU  POWER   GPU_T   MEM_T   GFX_CLK   GFX%   MEM%   ENC%   DEC%      VRAM_USAGE
  0  412 W   61 °C   58 °C  1700 MHz   88 %   41 %    N/A    0 %   52.3/64.0 GB
  1  398 W   60 °C   57 °C  1700 MHz   85 %   39 %    N/A    0 %   52.1/64.0 GB
alice@mi250-node:~$ amd-smi monitor
WARNING: User is missing the following required groups: video. Please add user to these groups.
GPU  POWER   GPU_T   MEM_T   GFX_CLK   GFX%   MEM%   ENC%   DEC%      VRAM_USAGE
  0  120 W   55 °C   52 °C   800 MHz    3 %    0 %    N/A    0 %   52.3/64.0 GB
  1  118 W   54 °C   51 °C   800 MHz    2 %    0 %    N/A    0 %   52.1/64.0 GB
"""


def test_amd_smi_session_paste_is_read(tmp_path):
    path = tmp_path / "monitor.txt"
    path.write_text(SESSION, encoding="utf-8")
    tele = read_paths([path]).telemetry.sort_values(["time", "gpu"])
    assert len(tele) == 4
    assert list(tele["util_pct"]) == [88, 85, 3, 2]
    assert list(tele["temp_c"]) == [61, 60, 55, 54]
    assert list(tele["sm_clock_mhz"]) == [1700, 1700, 800, 800]
    assert np.allclose(tele["mem_used_mib"], [52.3 * 1024, 52.1 * 1024, 52.3 * 1024, 52.1 * 1024], rtol=0.05)
    assert np.allclose(tele["mem_total_mib"], 64.0 * 1024, rtol=0.05)


def test_amd_smi_headings_by_meaning():
    assert headers.meaning("GFX%").role == "util_pct"
    assert headers.meaning("GPU_T").role == "temp_c"
    assert headers.meaning("MEM%").role == "mem_util_pct"
    # the abbreviation is read only after a device word: a lone "t" (a time column) or "gpu" stays what it was
    assert headers.meaning("t").role is None
    assert headers.meaning("gpu").role == "gpu"


def test_a_log_of_warnings_with_one_table_is_not_amd_smi():
    """A notice counts as the tool's only right after the prompt that ran it: a training log full of warnings that
    printed one table stays the line scanners'."""
    log = "\n".join(["WARNING: the learning rate scheduler was called before the optimizer step"] * 20
                    + SESSION.splitlines()[2:5])
    assert not amd_smi_text.sniff(log)


PMON = """\
# gpu        pid  type    fb    sm   mem   enc   dec   command
# Idx          #   C/G    MB     %     %     %     %   name
    0       4410     C  9100    71    30     -     -   python
    1       5120     C  2100    33    10     -     -   python
    1       5177     C  2080    35    11     -     -   python
    0       4410     C  9100    69    29     -     -   python
    1       5120     C  2100    31     9     -     -   python
    1       5177     C  2080    36    12     -     -   python
"""


def test_pmon_processes_per_gpu_are_kept_and_shown(tmp_path):
    path = tmp_path / "pmon.txt"
    path.write_text(PMON, encoding="utf-8")
    bundle = read_paths([path])
    procs = bundle.meta[schema.GPU_PROCESSES]
    assert procs == {schema.gpu_id("pmon", 0): ["4410"], schema.gpu_id("pmon", 1): ["5120", "5177"]}
    tele = bundle.telemetry.sort_values(["time", "gpu"])
    assert list(tele["util_pct"]) == [71, 68, 69, 67]
    text = info.render(info.summarize(bundle))
    assert "pmon:1 is shared by 2 processes (pids 5120, 5177)" in text
    assert "pmon:0 is shared" not in text

