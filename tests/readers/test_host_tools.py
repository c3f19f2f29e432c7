"""Host telemetry as clusters already produce it (readers/host_tools.py, readers/node_exporter.py): real outputs of
vmstat, iostat, mpstat, sar, sadf, top and dstat (tests/data/host_telemetry, SOURCES.md) read into the host table
with the values expected.json works out by hand; node_exporter series (labelled synthetic, real series names)
as rates; and a host file beside a GPU log naming the host side of the GPU's drops."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from playbook.core.errors import InputError
from playbook.readers import detect, read_file, read_paths

DATA = Path(__file__).resolve().parents[1] / "data" / "host_telemetry"
EXPECTED = {k: v for k, v in json.loads((DATA / "expected.json").read_text()).items() if not k.startswith("_")}


@pytest.mark.parametrize("name", sorted(k for k, v in EXPECTED.items() if "error" not in v))
def test_real_case_values(name):
    want = EXPECTED[name]
    assert detect.detect(DATA / name) == "host_tools"
    b = read_file(DATA / name)
    host = b.host
    assert len(host) == want["rows"]
    assert set(host["host"]) == {want["host"]}
    assert host["time"].iloc[0] == pd.Timestamp(want["first_time"])
    assert host["time"].is_monotonic_increasing
    for row, column, value in want["checks"]:
        assert host[column].iloc[row] == pytest.approx(value, rel=1e-5, abs=1e-9), (row, column)  # hand figures to 8 digits
    for text in want["warns"]:
        assert any(text in w for w in b.warnings), (text, b.warnings)
    assert len(b.telemetry) == 0 and host["rss_mib"].isna().all()


def test_single_scrape_is_a_one_line_error():
    with pytest.raises(InputError, match="without two samples of a counter"):
        read_file(DATA / "node_exporter_scrape.prom")


def test_rows_that_do_not_fit_their_header_are_counted(tmp_path):
    lines = (DATA / "sar_d.txt").read_text().split("\n")
    lines.insert(4, "13:20:25         0.00      0.00      sda")  # a row cut short
    path = tmp_path / "sar_d.txt"
    path.write_text("\n".join(lines))
    b = read_file(path)
    assert len(b.host) == 5
    assert any("skipped 1 of" in w and "line 5" in w for w in b.warnings), b.warnings


def test_partitions_and_stacked_devices_count_once(tmp_path):
    text = ("Device            r/s     rkB/s   wkB/s\n"
            "sda              1.00   1024.00    0.00\n"
            "sda1             1.00   1024.00    0.00\n"
            "dm-0             1.00   1024.00    0.00\n"
            "nvme0n1          1.00   2048.00    0.00\n"
            "nvme0n1p2        1.00   2048.00    0.00\n")
    path = tmp_path / "iostat.txt"
    path.write_text(text)
    assert read_file(path).host["read_mib_s"].iloc[0] == pytest.approx(3.0)  # sda 1 MiB/s + nvme0n1 2 MiB/s


def test_a_training_log_with_one_pasted_vmstat_stays_a_training_log():
    head = "\n".join([f"step {i} | loss 2.{i:02d} | 310 ms" for i in range(40)]
                     + [" r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st",
                        " 2  0      0 812345 1234 567890    0    0    10    40 5000 9000 30 3 65  2  0"])
    assert "host_tools" not in detect.matches(head)


def test_a_training_log_that_starts_with_iostat_s_banner_stays_a_training_log(tmp_path):
    """A job that ran `iostat -x 10 &` before training: sysstat's banner is the log's first line. The banner alone
    made the file host_tools' (its 40 step lines then skipped as rows that fit no header, the steps lost); now
    under the banner too most lines must be sysstat tables, read or not (every sysstat output of sysstat's own
    tests is claimed as before)."""
    iostat = (DATA / "iostat_x_sysstat.txt").read_text().splitlines()[:8]
    path = tmp_path / "train.log"
    path.write_text("\n".join(iostat + [f"[2026-12-03 10:00:{i:02d}] step {i}/1000 | loss 2.{i:02d} | step_time 0.5s"
                                        for i in range(1, 41)]) + "\n")
    assert detect.detect(path) == "lines"
    assert len(read_file(path).steps) == 40


# --------------------------------------------------------------------------------------------------------------
# node_exporter (LABELLED SYNTHETIC values on node_exporter's real series names and label sets)

def _scrape(t_ms: int, idle: float, iowait: float, user: float, read: float, rx: float) -> list[str]:
    return [f'node_cpu_seconds_total{{cpu="0",mode="idle"}} {idle} {t_ms}',
            f'node_cpu_seconds_total{{cpu="0",mode="iowait"}} {iowait} {t_ms}',
            f'node_cpu_seconds_total{{cpu="0",mode="user"}} {user} {t_ms}',
            f'node_cpu_seconds_total{{cpu="1",mode="idle"}} {idle + 5} {t_ms}',
            f'node_cpu_seconds_total{{cpu="1",mode="iowait"}} 0 {t_ms}',
            f'node_cpu_seconds_total{{cpu="1",mode="user"}} {user} {t_ms}',
            f'node_disk_read_bytes_total{{device="nvme0n1"}} {read} {t_ms}',
            f'node_disk_read_bytes_total{{device="nvme0n1p1"}} {read} {t_ms}',
            f'node_network_receive_bytes_total{{device="eth0"}} {rx} {t_ms}',
            f'node_network_receive_bytes_total{{device="lo"}} {rx * 7} {t_ms}',
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="node1"}} 97 {t_ms}']


def test_node_exporter_counters_become_rates_beside_dcgm(tmp_path):
    t0 = 1_764_615_600_000
    # 10 s apart: cpu0 idle +4 s, iowait +5 s, user +1 s of 10 → busy 10% (iowait is not work), iowait 50%; cpu1
    # idle +4 s, user +1 s of 5 → busy 20%, iowait 0
    lines = _scrape(t0, 100, 10, 50, 0, 0) + _scrape(t0 + 10_000, 104, 15, 51, 10 * 2**20 * 10, 2**20 * 10)
    path = tmp_path / "node1.prom"
    path.write_text("\n".join(lines) + "\n")
    assert detect.detect(path) == "dcgm"
    b = read_file(path)
    assert len(b.telemetry) == 2
    assert len(b.host) == 1
    row = b.host.iloc[0]
    assert row["time"] == pd.Timestamp(t0 + 10_000, unit="ms", tz="UTC")
    assert row["cpu_pct"] == pytest.approx((10 + 20) / 2)
    assert row["cpu_max_core_pct"] == pytest.approx(20)
    assert row["iowait_pct"] == pytest.approx(25)  # 50% on cpu0, none on cpu1
    assert row["read_mib_s"] == pytest.approx(10)  # the partition is not counted twice
    assert row["net_rx_mib_s"] == pytest.approx(1)  # loopback left out


def test_swap_counters_become_the_hosts_swap_traffic(tmp_path):
    """node_vmstat_pswpin / _pswpout count pages (node_exporter's vmstat collector exports them by default); sysstat's
    JSON (`sadf -j`, sar -W) names them `swap-pages` {pswpin, pswpout} in pages per second."""
    t0 = 1_764_615_600_000
    lines = [f"node_vmstat_pswpin {a} {t}" for a, t in ((1000, t0), (3560, t0 + 10_000))]
    lines += [f"node_vmstat_pswpout {a} {t}" for a, t in ((500, t0), (1780, t0 + 10_000))]
    path = tmp_path / "node2.prom"
    path.write_text("\n".join(lines) + "\n")
    host = read_file(path).host
    assert len(host) == 1 and host["swap_mib_s"].iloc[0] == pytest.approx((256 + 128) * 4096 / 2**20)  # pages/s
    doc = {"sysstat": {"hosts": [{"nodename": "n3", "date": "2024-05-01", "statistics": [
        {"timestamp": {"date": "2024-05-01", "time": "10:00:00", "utc": 1, "interval": 1},
         "swap-pages": {"pswpin": 100.0, "pswpout": 28.0}}]}]}}
    path = tmp_path / "n3.json"
    path.write_text(json.dumps(doc))
    host = read_file(path).host
    assert host["swap_mib_s"].tolist() == pytest.approx([128 * 4096 / 2**20])


def test_node_exporter_query_range_json_alone(tmp_path):
    t0 = 1_764_615_600.0
    result = [{"metric": {"__name__": "node_cpu_seconds_total", "instance": "node7:9100", "cpu": "0", "mode": m},
               "values": [[t0 + 15 * i, str(v0 + dv * i)] for i in range(3)]}
              for m, v0, dv in (("idle", 1000, 3.0), ("system", 10, 12.0))]
    result.append({"metric": {"__name__": "node_disk_written_bytes_total", "instance": "node7:9100", "device": "sda"},
                   "values": [[t0 + 15 * i, str(15 * 2**20 * 4 * i)] for i in range(3)]})
    path = tmp_path / "range.json"
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}))
    b = read_file(path)
    assert len(b.telemetry) == 0
    assert list(b.host["host"]) == ["node7", "node7"]
    assert b.host["cpu_pct"].to_list() == pytest.approx([80.0, 80.0])  # 12 s of 15 busy
    assert b.host["write_mib_s"].to_list() == pytest.approx([4.0, 4.0])


# --------------------------------------------------------------------------------------------------------------
# A host file beside a GPU log (LABELLED SYNTHETIC: the GPU drops from 96% to 12% for 15 s of every 60 s)

_VMSTAT_T_HEADER = ("procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu----- -----timestamp-----",
                    " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st                 UTC")


def _paired(folder: Path, reads_in_dips: bool, swap_in_dips: bool = False, swap_kib_s=(300000, 240000)) -> Path:
    folder.mkdir()
    t0 = dt.datetime(2026, 12, 3, 10, 0, 0)
    smi = ["timestamp, index, utilization.gpu [%], power.draw [W]"]
    vm = list(_VMSTAT_T_HEADER)
    for s in range(600):
        t = t0 + dt.timedelta(seconds=s)
        dip = s % 60 >= 45
        smi.append(f"{t:%Y/%m/%d %H:%M:%S}.000, 0, {12 if dip else 96} %, {90 if dip else 280}.00 W")
        bi = 412000 if dip and reads_in_dips else 52000  # KiB/s; a network filesystem's reads do not show here
        us, idle, wa = (9, 50, 38) if dip else (30, 65, 2)
        si = so = 0
        if swap_in_dips and dip:  # swapped pages are disk traffic too: vmstat counts them in bi / bo
            si, so = swap_kib_s
            bi += si
        vm.append(f" 2  0  0 812345 1234 567890 {si} {so} {bi} {40 + so} 5000 9000 {us} 3 {idle} {wa} 0 "
                  f"{t:%Y-%m-%d %H:%M:%S}")
    (folder / "node1-gpu.csv").write_text("\n".join(smi) + "\n")
    (folder / "node1-vmstat.txt").write_text("\n".join(vm) + "\n")
    return folder


@pytest.mark.parametrize("reads_in_dips", [True, False])
def test_host_file_beside_gpu_log_names_the_host_side(tmp_path, reads_in_dips):
    from playbook import diagnose
    from playbook.knowledge import ids

    bundle = read_paths([_paired(tmp_path / "run", reads_in_dips)])
    assert len(bundle.telemetry) == 600 and len(bundle.host) == 600
    d = diagnose(bundle)
    lead = d.hypotheses[0]
    assert lead["id"] == ids.DATA_STARVATION
    metrics = {m["metric"]: m for m in d.detail["host_in_dips"]}
    assert metrics["iowait_pct"]["during"] == pytest.approx(38) and metrics["iowait_pct"]["between"] == 2
    assert any(e.startswith("CPU iowait rise 19.0× during the drops") for e in lead["evidence"]), lead["evidence"]
    reads = [e for e in lead["evidence"] if e.startswith("disk reads rise")]
    assert bool(reads) == reads_in_dips
    # CPUs waiting on I/O are not busy: no "CPU-bound" reading of an input blocked on storage
    assert metrics["cpu_pct"]["during"] == pytest.approx(12) and metrics["cpu_pct"]["between"] == pytest.approx(33)
    assert not any("CPU rise" in e or "host CPU rise" in e for h in d.hypotheses for e in h["evidence"])
    assert np.isfinite(bundle.host["read_mib_s"]).all()


def test_swapping_in_the_drops_is_memory_pressure_and_explains_the_disk_traffic_and_iowait(tmp_path):
    """The host swaps during the drops: its reads, writes and iowait rise with the swap traffic, as swapped pages go
    to and from a disk. They are swapping's symptoms: memory pressure leads, no input or checkpoint I/O reading."""
    from playbook import diagnose
    from playbook.knowledge import ids

    d = diagnose(read_paths([_paired(tmp_path / "run", reads_in_dips=False, swap_in_dips=True)]))
    assert d.verdict["id"] == ids.MEMORY_PRESSURE
    metrics = {m["metric"]: m for m in d.detail["host_in_dips"]}
    assert metrics["swap_mib_s"]["during"] == pytest.approx(540000 / 1024)
    evidence = [e for h in d.hypotheses for e in h["evidence"]]
    assert any(e.startswith("swapping rise") for e in evidence)
    assert not any(e.startswith(("disk reads rise", "disk writes rise", "CPU iowait rise")) for e in evidence)


def test_damaged_lines_are_bounded_work_and_one_line_errors(tmp_path):
    import time

    top = tmp_path / "top.txt"
    top.write_text("top - 10:00:00 up 1 day\n%Cpu(s): " + "1" * 1_000_000 + " us\n")
    start = time.perf_counter()
    with pytest.raises(InputError, match=r"top\.txt: no host samples found; skipped 1 of 1 rows \(line 2: no idle"):
        read_file(top)
    assert time.perf_counter() - start < 10  # bounded work: the field pattern is linear (was quadratic)
    sar = tmp_path / "sar.txt"
    sar.write_text("Linux 5.4 (h) \t01/02/20 \t_x86_64_\t(2 CPU)\n\n10:00:00 CPU %user %idle\n"
                   "10:00:01 all 1.0 9" + "9" * 400 + "\n10:00:02 all 1.0 90.0\n")
    b = read_file(sar)  # an idle share that overflows a float is a counted bad value, not an infinite one
    assert b.host["cpu_pct"].to_list() == [10.0]
    assert any("skipped 1 of 2 rows (line 4: bad %idle value" in w for w in b.warnings), b.warnings


def test_playbook_info_shows_what_the_host_file_held(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    run = _paired(tmp_path / "run", reads_in_dips=True)
    done = subprocess.run([sys.executable, "-m", "playbook", "info", "--json", str(run)], capture_output=True,
                          text=True, cwd=root, timeout=300)
    assert done.returncode == 0, done.stderr
    host = json.loads(done.stdout)["tables"]["host"]
    assert host["rows"] == 600 and host["hosts"] == ["node1-vmstat"]
    # 15 s of every 60 at 38% iowait, 45 s at 2%; reads 412,000 KiB/s in the drops, 52,000 between
    assert host["means"]["iowait_pct"] == pytest.approx(11.0, abs=1e-3)
    assert host["means"]["read_mib_s"] == pytest.approx((15 * 412000 + 45 * 52000) / 60 / 1024, abs=1e-3)
    text = subprocess.run([sys.executable, "-m", "playbook", "info", str(run)], capture_output=True, text=True,
                          cwd=root, timeout=300).stdout
    assert "means: cpu_pct" in text and "iowait_pct 11" in text


def test_dool_csv_with_per_cpu_groups_and_an_appended_run(tmp_path):
    # LABELLED SYNTHETIC values in dool's CSV layout (its source: '"dool %s CSV output"', Host:/Cmdline:/Date: rows
    # without the blank line dstat writes, then the group and name rows); appending to an existing file writes
    # two blank lines and a new Host/Cmdline/header block (dstat and dool alike)
    text = ('"dool 1.3.2 CSV output"\n"Author:","Scott Baker",,,,"URL:","https://github.com/scottchiefbaker/dool/"\n'
            '"Host:","gpu-node-3",,,,"User:","alice"\n'
            '"Cmdline:","/usr/bin/dool -T -c -C 0,1 -D sda --output h.csv",,,,"Date:","03 Dec 2026 10:00:00 UTC"\n'
            '"epoch","cpu0 usage",,,,"cpu1 usage",,,,"dsk/sda",\n'
            '"epoch","usr","sys","idl","wai","usr","sys","idl","wai","read","writ"\n'
            '1796292000.0,90.0,5.0,5.0,0.0,10.0,5.0,60.0,25.0,104857600.0,0.0\n'
            '1796292001.0,50.0,5.0,45.0,0.0,10.0,5.0,85.0,0.0,0.0,2097152.0\n'
            '\n\n"Host:","gpu-node-3",,,,"User:","alice"\n'
            '"Cmdline:","/usr/bin/dool --output h.csv 5",,,,"Date:","03 Dec 2026 11:00:00 UTC"\n'
            '"total cpu usage",,,,"net/total",\n"usr","sys","idl","wai","recv","send"\n'
            '20.0,10.0,60.0,10.0,1048576.0,524288.0\n20.0,10.0,70.0,0.0,0.0,0.0\n')
    path = tmp_path / "h.csv"
    path.write_text(text)
    assert detect.detect(path) == "host_tools"
    h = read_file(path).host
    assert list(h["host"].unique()) == ["gpu-node-3"]
    assert list(h["time"]) == [pd.Timestamp("2026-12-03T10:00:00Z"), pd.Timestamp("2026-12-03T10:00:01Z"),
                               pd.Timestamp("2026-12-03T11:00:00Z"), pd.Timestamp("2026-12-03T11:00:05Z")]
    # run 1: per CPU only: busy = 100 - idle - iowait → cpu0 95, cpu1 15 → mean 55, busiest 95; sda 100 MiB/s
    assert h["cpu_pct"].iloc[0] == pytest.approx(55) and h["cpu_max_core_pct"].iloc[0] == pytest.approx(95)
    assert h["iowait_pct"].iloc[0] == pytest.approx(12.5) and h["read_mib_s"].iloc[0] == pytest.approx(100)
    assert h["write_mib_s"].iloc[1] == pytest.approx(2)
    # run 2 (5 s interval from its command line): the total row; 1 MiB/s received
    assert h["cpu_pct"].iloc[2] == pytest.approx(30) and np.isnan(h["cpu_max_core_pct"].iloc[2])
    assert h["net_rx_mib_s"].iloc[2] == pytest.approx(1) and h["net_tx_mib_s"].iloc[2] == pytest.approx(0.5)


def test_query_range_json_with_dcgm_and_pre_0_16_node_exporter_names(tmp_path):
    t0 = 1_764_615_600.0
    gpu = {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "node2"},
           "values": [[t0 + 15 * i, "97"] for i in range(3)]}
    cpu = [{"metric": {"__name__": "node_cpu", "instance": "node2:9100", "cpu": "cpu0", "mode": m},
            "values": [[t0 + 15 * i, str(v0 + dv * i)] for i in range(3)]}
           for m, v0, dv in (("idle", 500, 6.0), ("iowait", 20, 6.0), ("user", 100, 3.0))]
    net = {"metric": {"__name__": "node_network_transmit_bytes", "instance": "node2:9100", "device": "ib0"},
           "values": [[t0 + 15 * i, str(i * 15 * 3 * 2**20)] for i in range(3)]}
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix",
                                                              "result": [gpu, *cpu, net]}}))
    b = read_file(path)
    assert len(b.telemetry) == 3 and set(b.telemetry["host"]) == {"node2"}
    assert list(b.host["host"]) == ["node2", "node2"]  # the port is not part of the host
    assert b.host["cpu_pct"].to_list() == pytest.approx([20.0, 20.0])  # 3 s of 15 working; 6 s waiting, 6 idle
    assert b.host["iowait_pct"].to_list() == pytest.approx([40.0, 40.0])
    assert b.host["net_tx_mib_s"].to_list() == pytest.approx([3.0, 3.0])


def test_mpstat_beside_gpu_log_names_the_busiest_core(tmp_path):
    # LABELLED SYNTHETIC: the same GPU drops; mpstat -P ALL 1 shows CPU 0 (a single-threaded loader) at 99% in the
    # drops and 40% between, the other three cores near idle, so the host mean rises far less than the one core
    from playbook import diagnose

    run = _paired(tmp_path / "run", reads_in_dips=False)
    (run / "node1-vmstat.txt").unlink()
    t0 = dt.datetime(2026, 12, 3, 10, 0, 0)
    lines = ["Linux 6.8.0 (node1) \t12/03/2026 \t_x86_64_\t(4 CPU)"]
    head = "CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle"
    for s in range(600):
        t = t0 + dt.timedelta(seconds=s)
        lines += ["", f"{t:%H:%M:%S}     {head}"] if s % 20 == 0 else []
        cores = [99.0 if s % 60 >= 45 else 40.0, 8.0, 7.0, 9.0]
        for name, busy in [("all", sum(cores) / 4), *((str(i), c) for i, c in enumerate(cores))]:
            lines.append(f"{t:%H:%M:%S}     {name:>3}  {busy - 2:6.2f}    0.00    2.00    0.00    0.00    0.00"
                         f"    0.00    0.00    0.00  {100 - busy:6.2f}")
    (run / "node1-mpstat.txt").write_text("\n".join(lines) + "\n")
    bundle = read_paths([run])
    assert list(bundle.host["host"].unique()) == ["node1"]  # from mpstat's banner
    assert bundle.host["cpu_max_core_pct"].max() == pytest.approx(99)
    d = diagnose(bundle)
    evidence = [e for h in d.hypotheses for e in h["evidence"]]
    assert any(e.startswith("the busiest CPU core rise 2.5× during the drops (99 vs 40") for e in evidence), evidence


def test_top_batch_refreshes_past_midnight_with_per_cpu_lines(tmp_path):
    # LABELLED SYNTHETIC values in procps top's layout (`top - HH:MM:SS up ...`, `%Cpu(s):`, `%Cpu0  :` with 1)
    cpu = "{:5.1f} us,  0.0 sy,  0.0 ni, {:5.1f} id, {:5.1f} wa,  0.0 hi,  0.0 si,  0.0 st"
    text = "\n".join(["top output captured at the start of the job", "",
                      "top - 23:59:58 up 2 days,  1:00,  1 user,  load average: 1.00, 1.00, 1.00",
                      "%Cpu(s): " + cpu.format(10, 80, 10), "",
                      "top - 00:00:03 up 2 days,  1:00,  1 user,  load average: 1.00, 1.00, 1.00",
                      "%Cpu(s): " + cpu.format(50, 50, 0), "%Cpu0  : " + cpu.format(90, 10, 0),
                      "%Cpu1  : " + cpu.format(10, 90, 0)]) + "\n"
    path = tmp_path / "top.txt"
    path.write_text(text)
    h = read_file(path).host
    assert list(h["time"]) == [pd.Timestamp("1970-01-01T23:59:58Z"), pd.Timestamp("1970-01-02T00:00:03Z")]
    assert h["cpu_pct"].to_list() == pytest.approx([10.0, 50.0])
    assert h["iowait_pct"].to_list() == pytest.approx([10.0, 0.0])
    assert np.isnan(h["cpu_max_core_pct"].iloc[0]) and h["cpu_max_core_pct"].iloc[1] == pytest.approx(90)


def test_local_times_across_a_daylight_saving_change(tmp_path):
    # LABELLED SYNTHETIC values in sar -u's layout; Europe/Berlin moved from +01:00 to +02:00 at 02:00 on 2024-03-31
    text = ("Linux 6.1.0 (h) \t03/31/24 \t_x86_64_\t(2 CPU)\n\n"
            "01:59:00        CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
            "01:59:00        all     10.00      0.00      0.00      0.00      0.00     90.00\n"
            "02:30:00        all     10.00      0.00      0.00      0.00      0.00     90.00\n"
            "03:01:00        all     10.00      0.00      0.00      0.00      0.00     90.00\n")
    path = tmp_path / "sar_u.txt"
    path.write_text(text)
    b = read_paths([str(path)], tz="Europe/Berlin")
    # each time in its own offset (the day's midnight offset put 03:01 at 02:01Z); 02:30 that day is no time
    assert list(b.host["time"]) == [pd.Timestamp("2024-03-31T00:59:00Z"), pd.Timestamp("2024-03-31T01:01:00Z")]
    assert any("skipped 1 of" in w and "line 5: a time not placed in Europe/Berlin" in w for w in b.warnings), \
        b.warnings


def test_damaged_dstat_csv_and_sysstat_json_are_counted_not_crashes(tmp_path):
    lines = (DATA / "dstat_072.csv").read_text().split("\n")
    rows = sum(1 for ln in lines[7:] if ln.strip())
    lines.insert(8, '"' + "1" * 200_000)  # a field past the csv module's limit
    dstat = tmp_path / "dstat.csv"
    dstat.write_text("\n".join(lines))
    b = read_file(dstat)
    assert len(b.host) == rows
    assert any("skipped 1 of" in w and "line 9: unreadable CSV" in w for w in b.warnings), b.warnings
    doc = json.loads((DATA / "mpstat_T.json").read_text())
    stats = doc["sysstat"]["hosts"][0]["statistics"]
    stats[0]["cpu-load"][0]["idle"] = 10**400  # an integer past a float's range: no value
    stats.append({"timestamp": "10:00:00", "cpu-load": 5})  # not a list: no rows
    mp = tmp_path / "mpstat.json"
    mp.write_text(json.dumps(doc))
    h = read_file(mp).host
    assert len(h) == len(stats) - 1 and np.isfinite(h["cpu_pct"].dropna()).all()


def test_node_exporter_counter_reset_is_no_rate(tmp_path):
    # LABELLED SYNTHETIC series (node_exporter's names): the host restarts between the 2nd and 3rd scrape, so
    # both counters fall; that interval has no rate (it read 0 MiB/s of disk reads)
    t0 = 1_700_000_000_000
    disk = [0, 10 * 2**20, 2**20, 11 * 2**20]
    idle, user = [100, 105, 1, 6], [100, 105, 1, 8]
    lines = [f'node_disk_read_bytes_total{{device="sda",instance="n1:9100"}} {v} {t0 + i * 10_000}'
             for i, v in enumerate(disk)]
    lines += [f'node_cpu_seconds_total{{cpu="0",mode="{mode}",instance="n1:9100"}} {v} {t0 + i * 10_000}'
              for mode, values in (("idle", idle), ("user", user)) for i, v in enumerate(values)]
    path = tmp_path / "scrapes.prom"
    path.write_text("\n".join(lines) + "\n")
    h = read_file(path).host
    assert h["read_mib_s"].iloc[[0, 2]].to_list() == pytest.approx([1.0, 1.0]) and np.isnan(h["read_mib_s"].iloc[1])
    assert np.isnan(h["cpu_pct"].iloc[1]) and h["cpu_pct"].iloc[2] == pytest.approx(100 * 7 / 12)


def test_short_tool_names_mean_nothing_outside_their_tools_header(tmp_path):
    # a whitespace table with an `id` (or `bi` / `bo`) column is no vmstat: it read as a host 98.5% busy
    for name, text in (("steps.txt", "id   step   loss    time\n0    1      2.31    0.52\n1    2      2.20    0.50\n"
                                     "2    3      2.11    0.51\n3    4      2.05    0.49\n"),
                       ("gpus.txt", "rank  id  util  mem\n0  0  95  1000\n1  1  94  1000\n"),
                       ("io.txt", "r  w  bi  bo\n1 2 3 4\n5 6 7 8\n")):
        path = tmp_path / name
        path.write_text(text)
        assert detect.matches(path.read_text()).count("host_tools") == 0, name
    vmstat = tmp_path / "vmstat.txt"  # vmstat's own header still reads them
    vmstat.write_text("procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n"
                      " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n"
                      " 1  0      0 100000   1000  50000    0    0  2048     0  100  200 20  5 70  5  0\n")
    h = read_file(vmstat).host
    assert h["cpu_pct"].to_list() == [25.0] and h["read_mib_s"].to_list() == [2.0]


def test_a_share_or_rate_out_of_range_is_counted_and_info_still_prints(tmp_path):
    # two %iowait cells of 1e308: their mean was infinite and `playbook info` failed formatting its means
    from playbook.commands import info

    sar = tmp_path / "sar.txt"
    sar.write_text("Linux 5.4 (h) \t01/02/20 \t_x86_64_\t(2 CPU)\n\n10:00:00 CPU %user %iowait %idle\n"
                   "10:00:01 all 1.0 1e308 90.0\n10:00:02 all 1.0 1e308 90.0\n10:00:03 all 1.0 5.0 80.0\n")
    b = read_paths([str(sar)])
    assert b.host["iowait_pct"].tolist()[2] == 5.0 and b.host["iowait_pct"].isna().sum() == 2
    assert b.host["cpu_pct"].tolist() == [10.0, 10.0, 15.0]
    assert any("2 values out of range" in w for w in b.warnings), b.warnings
    assert "means: cpu_pct 11.667, iowait_pct 5" in info.render(info.summarize(b))


def test_a_swap_trickle_does_not_explain_a_network_filesystems_iowait(tmp_path):
    """iowait rises 38% against 2% in the drops with no local disk traffic (a network filesystem) while the host
    swaps in a trickle (10 KiB/s, counted in bi as vmstat does): the disk traffic barely moves, so swapping blocks
    no CPU on I/O and the iowait stays the input's (review4: the trickle explained it away and read memory_pressure)."""
    from playbook import diagnose
    from playbook.knowledge import ids

    d = diagnose(read_paths([_paired(tmp_path / "run", reads_in_dips=False, swap_in_dips=True, swap_kib_s=(10, 0))]))
    assert d.verdict["id"] == ids.DATA_STARVATION
    assert any(e.startswith("CPU iowait rise 19.0×") for e in d.hypotheses[0]["evidence"])


def test_swap_bursts_at_random_seconds_are_not_in_the_drops(tmp_path):
    """Drops three times as long as the busy stretches between them, and the host swaps 50 MiB/s in bursts at
    random seconds (3% of them), in the drops and between alike: a long drop holds a burst more often than a short
    gap, so most drops' means exceeded the typical gap's (0), and the run read memory_pressure (review4: 46 of 59
    drops 'higher'). Against the gaps' pooled rate they are not."""
    from playbook import diagnose
    from playbook.knowledge import ids

    rng = np.random.default_rng(0)
    folder = tmp_path / "run"
    folder.mkdir()
    t0 = dt.datetime(2026, 12, 3, 10, 0, 0)
    smi = ["timestamp, index, utilization.gpu [%], power.draw [W]"]
    vm = list(_VMSTAT_T_HEADER)
    for s in range(3600):
        t = t0 + dt.timedelta(seconds=s)
        dip = s % 60 >= 15
        smi.append(f"{t:%Y/%m/%d %H:%M:%S}.000, 0, {12 if dip else 96} %, {90 if dip else 280}.00 W")
        si = 50000 if rng.random() < 0.03 else 0
        vm.append(f" 2  0  0 812345 1234 567890 {si} 0 {52000 + int(rng.normal(0, 3000)) + si} "
                  f"{40 + int(rng.normal(0, 5))} 5000 9000 30 3 65 2 0 {t:%Y-%m-%d %H:%M:%S}")
    (folder / "node1-gpu.csv").write_text("\n".join(smi) + "\n")
    (folder / "node1-vmstat.txt").write_text("\n".join(vm) + "\n")
    d = diagnose(read_paths([folder]))
    swap = {m["metric"]: m for m in d.detail["host_in_dips"]}["swap_mib_s"]
    assert swap["p_value"] > 0.05 and swap["higher"] < swap["drops"] / 2
    assert d.verdict["id"] != ids.MEMORY_PRESSURE
    assert not any(e.startswith("swapping rise") for h in d.hypotheses for e in h["evidence"])


@pytest.mark.parametrize("swap_kib_s", [(10, 0), (40, 40), (200, 200)])
def test_a_swap_trickle_is_no_evidence_of_its_own(tmp_path, swap_kib_s):
    """The network-filesystem run of the test above, its host swapping a trickle in the drops (10-200 KiB/s in and
    out, counted in bi / bo as vmstat does): tens of pages a second stall no loader. First try (review5): each read
    'swapping rise from ~0' as memory_pressure evidence, and 40 KiB/s out read 'disk writes rise 2.0x' (40 -> 80
    KiB/s) as a checkpoint's writes and the verdict periodic_stall; the iowait (38% vs 2%) is the input's."""
    from playbook import diagnose
    from playbook.knowledge import ids

    run = _paired(tmp_path / "run", reads_in_dips=False, swap_in_dips=True, swap_kib_s=swap_kib_s)
    d = diagnose(read_paths([run]))
    assert d.verdict["id"] == ids.DATA_STARVATION
    evidence = [e for h in d.hypotheses for e in h["evidence"]]
    assert not any(e.startswith(("swapping rise", "disk writes rise", "disk reads rise")) for e in evidence)
    assert any(e.startswith("CPU iowait rise 19.0×") for e in d.hypotheses[0]["evidence"])


def _sysstat_doc(section: str, row: dict, samples: int = 5) -> str:
    """A sysstat JSON document as cifsiostat / tapestat / pidstat -o JSON print it (print_gal_header, then one
    statistics entry per interval: a timestamp and the tool's own section)."""
    stats = [{"timestamp": f"10:00:{i:02d}", section: [row]} for i in range(samples)]
    return json.dumps({"sysstat": {"hosts": [{"nodename": "gpu-node1", "sysname": "Linux", "release": "5.15.0",
                                              "machine": "x86_64", "number-of-cpus": 64, "date": "12/03/2026",
                                              "statistics": stats}]}}, indent="\t")


def test_cifsiostat_json_is_the_hosts_network_filesystem_reads(tmp_path):
    """cifsiostat -o JSON (sysstat cifsiostat.c write_json_cifs_stat): a CIFS mount's reads are the input's reads,
    which iostat's disks do not see; its default unit is bytes (rB/s). First try (review5): 'no host samples found
    (a host tools (...) header without rows under it)'; cifsiostat -k (rkB/s) is a case of test_real_case_values."""
    path = tmp_path / "cifs.json"
    path.write_text(_sysstat_doc("filesystem", {"fs_name": "\\\\srv\\data", "rB/s": 2 * 2.0**20, "wB/s": 0.0,
                                                "rops/s": 10.0, "wops/s": 0.0, "fo/s": 1.0, "fc/s": 1.0}))
    assert read_paths([str(path)]).host["read_mib_s"].to_numpy() == pytest.approx([2.0] * 5)


@pytest.mark.parametrize("tool, section, row", [
    ("tapestat", "tape", {"tape_device": "st0", "r/s": 0, "w/s": 12, "kB_read/s": 0, "kB_wrtn/s": 6000}),
    ("pidstat", "task-cpu-load", {"uid": 1000, "pid": 4242, "usr": 95.0, "system": 3.0, "cpu": 98.0,
                                  "cpu_nr": 3, "cmd": "python"})])
def test_sysstat_json_of_other_tools_names_what_it_held(tmp_path, tool, section, row):
    """tapestat / pidstat -o JSON hold no host metric read here: the one-line error names the sections the
    document held. First try (review5): 'no host samples found (a host tools (...) header without rows under it)'
    — there is no header, and the rows were there."""
    path = tmp_path / f"{tool}.json"
    path.write_text(_sysstat_doc(section, row))
    with pytest.raises(InputError) as err:
        read_paths([str(path)])
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and f"'{section}'" in msg and "header without rows" not in msg


@pytest.mark.parametrize("stray", ["xxxx", "[12345.678] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus",
                                   "x" * 1_000_000, "Terminated"])
def test_a_stray_line_inside_a_table_does_not_end_it(tmp_path, stray):
    """`vmstat -t 1 | tee` with one stray line in the middle (a kernel message, a shell's job notice, junk): a line
    without numbers read as a new header, so the rows under it fitted no table. First try (review5): 'not telemetry
    this playbook can read (... no line of its 103 understood)', or for a 1 MB line half the rows dropped without a
    word. The stray line is counted; the rows after it stay under their header."""
    rows = [f" 2  0  0 812345 1234 567890 0 0 1024 40 5000 9000 30 3 62 5 0 2026-12-03 10:{s // 60:02d}:{s % 60:02d}"
            for s in range(100)]
    path = tmp_path / "node1-vmstat.txt"
    path.write_text("\n".join([*_VMSTAT_T_HEADER, *rows[:50], stray, *rows[50:]]) + "\n")
    b = read_paths([str(path)])
    assert len(b.host) == 100 and b.host["read_mib_s"].to_numpy() == pytest.approx([1.0] * 100)
    assert any("skipped 1 of 101 rows (line 53: " in w for w in b.warnings), b.warnings  # (a line with numbers
    # fits no table: 'N values under 17 columns')


def test_an_unread_table_after_a_read_one_stays_unread():
    """sar -A's tables this reader does not use (interrupts, paging) follow the ones it reads: their rows fit their
    own header and are not taken for the table above."""
    b = read_paths([str(DATA / "sar_A_head.txt")])
    assert not any("not a row of the table above" in w for w in b.warnings)


@pytest.mark.parametrize("name, column", [("sar_d.txt", "read_mib_s"), ("sar_n_DEV.txt", "net_rx_mib_s")])
def test_a_log_appended_twice_reads_its_traffic_once(tmp_path, name, column):
    """The same sar -d / sar -n DEV report twice in one file (a log appended twice, or the clock set back over
    times already read): summed over devices, each time's rows were added up. First try (review5): twice the disk
    and network traffic (sar -d 8.1 -> 16.2 MiB/s), no warning."""
    once = read_paths([str(DATA / name)]).host
    (tmp_path / name).write_text((DATA / name).read_text() * 2)
    twice = read_paths([str(tmp_path / name)])
    assert twice.host[column].to_numpy() == pytest.approx(once[column].to_numpy())
    assert any("repeat a time and device already read" in w for w in twice.warnings)
