"""Hostile file-system inputs (issue 17): only regular files are opened, folders are walked without following
symlinked folders, and each file is read once by its identity (device, inode)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from playbook.core.errors import InputError
from playbook.readers import read_paths

SMI = "smi_units.csv"


@pytest.fixture
def smi(data_dir):
    return data_dir / "readers" / SMI


def _rows(paths) -> tuple[int, list[str]]:
    b = read_paths(paths)
    return len(b.telemetry), b.warnings


def test_same_file_named_twice_or_linked_is_read_once(tmp_path, smi):
    once, _ = _rows([smi])
    assert once > 0
    n, warnings = _rows([smi, smi])
    assert n == once and any("the same file as" in w and SMI in w for w in warnings)
    os.symlink(smi, tmp_path / "alias.csv")
    os.link(shutil.copy(smi, tmp_path / "copy.csv"), tmp_path / "hard.csv")
    n, warnings = _rows([smi, tmp_path])  # alias.csv points out of tmp_path; hard.csv is copy.csv again
    assert n == 2 * once
    assert sum("the same file as" in w for w in warnings) == 1
    assert any("1 symlinked files point outside the folder" in w and "alias.csv" in w for w in warnings)
    os.symlink(tmp_path / "copy.csv", tmp_path / "inner.csv")  # within the folder: followed, and read once
    n, warnings = _rows([tmp_path])
    assert n == once and sum("the same file as" in w for w in warnings) == 2


def test_a_symlinked_file_out_of_the_folder_is_not_followed_nor_echoed(tmp_path, smi):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:root:/root:/bin/bash\nhunter2 step 1 loss 0.5\n")
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(smi, folder)
    for k in range(5):
        os.symlink(secret, folder / f"link{k}.log")
    b = read_paths([folder])
    assert len(b.telemetry) > 0
    [w] = [w for w in b.warnings if "symlinked" in w]
    assert w.startswith(f"{folder}: 5 symlinked files point outside the folder and were not followed: ")
    assert "link0.log" in w and "(+2 more)" in w
    assert not any("root:" in w or "hunter2" in w for w in b.warnings)


def test_an_unknown_file_is_described_without_its_text(tmp_path):
    p = tmp_path / "passwd"
    p.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
    with pytest.raises(InputError) as err:
        read_paths([p])
    assert str(p) in str(err.value) and "root" not in str(err.value).replace(str(p), "")


def test_symlinked_folders_are_not_followed(tmp_path, smi):
    once, _ = _rows([smi])
    r1 = tmp_path / "runs" / "r1"
    r1.mkdir(parents=True)
    shutil.copy(smi, r1)
    os.symlink("r1", tmp_path / "runs" / "latest")  # latest -> r1 must not double the samples
    os.symlink("..", r1 / "self")  # a loop back up the tree
    n, warnings = _rows([tmp_path / "runs"])
    assert n == once
    assert any("latest: symlinked folder not followed" in w for w in warnings)
    n, _ = _rows([tmp_path / "runs" / "latest"])  # named explicitly, a symlink is followed
    assert n == once


def test_self_loop_and_two_loops_finish_reading_each_file_once(tmp_path, smi):
    once, _ = _rows([smi])
    d = tmp_path / "d"
    d.mkdir()
    shutil.copy(smi, d)
    os.symlink("../d", d / "self")  # ln -s ../d d/self
    assert _rows([d])[0] == once
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    shutil.copy(smi, a / "x.csv")
    os.symlink("../b", a / "b")
    os.symlink("../a", b / "a")
    n, warnings = _rows([a, b, d])
    assert n == 2 * once and any("symlinked folder not followed" in w for w in warnings)


def test_deep_folders_are_walked_without_recursion(tmp_path, smi):
    deep = tmp_path
    for _ in range(1100):  # deeper than Python's recursion limit (os.makedirs itself recurses)
        deep = deep / "x"
        deep.mkdir()
    shutil.copy(smi, deep)
    try:
        assert _rows([tmp_path])[0] == _rows([smi])[0]
    finally:  # pytest's clean-up (shutil.rmtree) recurses: take the tower down from the bottom
        (deep / SMI).unlink()
        while deep != tmp_path:
            deep.rmdir()
            deep = deep.parent


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused_without_blocking(tmp_path, smi):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"pipe.csv: is a FIFO \(named pipe\), not a regular file"):
        read_paths([fifo])
    shutil.copy(smi, tmp_path)
    n, warnings = _rows([tmp_path])  # inside a folder: a warning, the rest is read
    assert n > 0 and any("pipe.csv: skipped, a FIFO" in w for w in warnings)
    os.symlink("/dev/zero", tmp_path / "zero.csv")
    with pytest.raises(InputError, match="zero.csv: is a character device"):
        read_paths([tmp_path / "zero.csv"])
    for command in ("info", "diagnose", "report"):
        extra = ["--out", str(tmp_path / "out")] if command == "report" else []
        r = subprocess.run([sys.executable, "-m", "playbook", command, str(fifo), *extra], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert "not a regular file" in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_a_folder_of_many_files_is_concatenated_once(tmp_path, smi, monkeypatch):
    """A folder of N files is merged in one concat (rows concatenated grow like N, not N^2 as when each file was
    appended to the growing bundle: 1k files took 7 s, 10k over 120 s). Measured in rows, not seconds."""
    import pandas as pd

    from playbook.model import schema

    seen = []
    real = pd.concat

    def counting(frames, *args, **kwargs):
        frames = list(frames)
        seen.append(sum(len(f) for f in frames))
        return real(frames, *args, **kwargs)

    monkeypatch.setattr(schema.pd, "concat", counting)
    rows = {}
    for n in (10, 40):
        folder = tmp_path / f"n{n}"
        folder.mkdir()
        for k in range(n):
            shutil.copy(smi, folder / f"node{k}.csv")
        seen.clear()
        assert len(read_paths([folder]).telemetry) == 6 * n
        rows[n] = sum(seen)
    assert rows[40] <= 4 * rows[10] + 6 * 40, rows  # linear: 4x the files, 4x the rows through concat
