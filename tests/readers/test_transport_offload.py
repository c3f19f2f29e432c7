"""Round 61's mechanisms on inputs written apart from its files (LABELED SYNTHETIC: every log and table below is
written here from the tools' own formats — NCCL's param.cc echo, `nvidia-smi nvlink -s`, NCCL's NET/Socket init line,
nccl-tests' closing lines — and from how users paste run tables; none is a copy of a round-61 file):

- NCCL's `NCCL_X set by environment to V.` quoted alone, without its `host:pid:tid [dev] NCCL INFO` prefix;
- `nvidia-smi nvlink -s`: the link lines below each GPU line, active and `<inactive>`;
- P2P turned off by the environment where no channel line shows SHM: moderate alone, high where NVLink is stated;
- NCCL's socket transport on an IPoIB interface (ib0, ibp65s0) is a fallback even from one host's lines;
- nccl-tests' `# Avg bus bandwidth` without its rows is read, and cited beside the transport finding;
- a table of runs that differ by a setting: durations with units, `TOTAL/AVG` pairs, plain numbers under a header
  unit, quantity columns kept apart from settings; the slow side compared with the fast one; a setting named as an
  offload → h2d_copy; a setting whose name links to no cause → stated beside insufficient_data; a small difference
  or a table without times → nothing."""

from __future__ import annotations

from pathlib import Path

from playbook.analysis import nccl as nccl_analysis
from playbook.analysis import variant_runs
from playbook.diagnosis import diagnose
from playbook.readers import read_paths
from playbook.readers.device_lines import DeviceLines
from playbook.readers.nccl_log import NcclLines
from playbook.readers.variant_table import VariantTable, seconds


def _write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _top(path: str) -> dict:
    return diagnose(read_paths([path])).hypotheses[0]


def test_the_env_echo_is_read_without_its_prefix():
    s = NcclLines("quoted.log")
    assert s.feed(1, "NCCL_P2P_DISABLE set by environment to 1.")
    assert s.feed(2, "  `NCCL_IB_DISABLE set by environment to 0`")
    assert not s.feed(3, "I set NCCL_DEBUG to INFO in my script")  # not NCCL's wording
    frame, _, _ = s.result()
    assert frame[frame["kind"] == "env"]["detail"].tolist() == ["NCCL_P2P_DISABLE=1", "NCCL_IB_DISABLE=0"]


def test_nvlink_status_lines_belong_to_the_gpu_above_them():
    d = DeviceLines()
    lines = ["GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)",
             "\t Link 0: 26.562 GB/s", "\t Link 1: 26.562 GB/s", "\t Link 2: <inactive>",
             "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-66666666-7777-8888-9999-000000000000)",
             "\t Link 0: <inactive>"]
    assert all(d.feed(x.strip()) for x in lines)
    gpus = d.summary()["listings"][0][0]["gpus"]
    assert gpus[0]["nvlink"] == {"active": 2, "inactive": 1, "gb_s": 26.562}
    assert gpus[1]["nvlink"] == {"active": 0, "inactive": 1, "gb_s": 0.0}
    assert not DeviceLines().feed("Link 0: 25 GB/s")  # no GPU line above: not nvidia-smi's


def test_p2p_off_without_channels_is_moderate_alone_and_high_beside_nvlink(tmp_path):
    env = "NCCL_P2P_DISABLE set by environment to 1.\n"
    alone = _top(_write(tmp_path, "p2p_off.log", env))
    assert alone["id"] == "link_degradation"
    assert "NCCL_P2P_DISABLE=1" in " ".join(alone["evidence"]) and "NVLink (" not in " ".join(alone["evidence"])
    smi = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)\n"
           + "".join(f"\t Link {k}: 26.562 GB/s\n" for k in range(18)))
    both = _top(_write(tmp_path, "p2p_off_nvlink.log", smi + env))
    assert both["id"] == "link_degradation" and both["score"] > alone["score"]
    assert "18 links x 26.562 GB/s" in " ".join(both["evidence"])


def test_a_socket_on_an_ipoib_interface_is_a_fallback_even_from_one_host(tmp_path):
    ipoib = ("gpu7:4411:4411 [0] NCCL INFO NET/IB : No device found.\n"
             "gpu7:4411:4411 [0] NCCL INFO NET/Socket : Using [0]ibp65s0:10.20.0.7<0>\n")
    top = _top(_write(tmp_path, "ipoib.log", ipoib))
    assert top["id"] == "link_degradation" and "IPoIB interface ibp65s0" in " ".join(top["evidence"])
    eth = ipoib.replace("ibp65s0", "enp65s0")  # one host on Ethernet: nothing says the job spans nodes
    assert _top(_write(tmp_path, "eth.log", eth))["id"] != "link_degradation"
    hosts = nccl_analysis.host_transports(read_paths([str(tmp_path / "ipoib.log")]).nccl)
    assert hosts["network"].tolist() == ["Socket"]  # from the interface line alone (no `Using network` line)


def test_nccl_tests_closing_average_alone_is_read_and_cited(tmp_path):
    log = ("n1:10:10 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/1\n"
           "n2:20:20 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/IB/1\n"
           "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.5 \n#\n")
    top = _top(_write(tmp_path, "avg.log", log))
    assert top["id"] == "link_degradation"
    assert "average bus bandwidth of 12.5 GB/s" in " ".join(top["evidence"])


def test_cells_of_a_run_table_are_durations_only_with_a_unit():
    assert seconds("150s") == 150.0 and seconds("`0.752s`".strip("`")) == 0.752
    assert seconds("6s/0.02s", "TOTAL/AVG FORWARD TIME") == 6.0
    assert seconds("2.5 min") == 150.0 and seconds("850", "step time (ms)") == 0.85
    assert seconds("850", "step time") is None and seconds("15.24 GiB") is None


def _table(lines: list[str]) -> dict | None:
    t = VariantTable()
    for x in lines:
        t.feed(x)
    return t.summary()


def test_a_run_table_splits_settings_measures_whole_and_phases():
    s = _table(["| model | offload_optimizer | step time (ms) | optimizer (ms) | peak mem |",
                "|---|:---:|---:|---:|---:|",
                "| 7B | none | 850 | 40 | 71.2 GiB |",
                "| 7B | cpu | 2900 | 2100 | 38.5 GiB |",
                "| 13B | none | 1500 | 70 | 78.9 GiB |",
                "| 13B | cpu | 5200 | 3900 | 52.0 GiB |",
                "done"])
    t = s["tables"][0]
    assert t["whole"] == "step time (ms)" and t["phases"] == ["optimizer (ms)"]
    assert t["settings"] == ["model", "offload_optimizer"] and t["rows"][1]["measures"] == {"peak mem": "38.5 GiB"}
    found, notes = [], []
    variant_runs.findings("t.md", s, found, lambda share: "high" if share >= 0.2 else None, notes)
    assert [f["hypothesis"] for f in found] == ["h2d_copy"] and not notes
    assert "offload_optimizer=cpu takes 5.2 s" in found[0]["evidence"]  # the larger loss: 13B
    assert "optimizer (ms) 0.07 → 3.9 s" in found[0]["evidence"]


def test_a_run_table_diagnosed_from_a_file(tmp_path):
    text = ("Results (A100 80GB, bs=8):\n\n"
            "config | cpu offload | time per iter\n"
            "--- | --- | ---\n"
            "baseline | off | 1.10 s\n"
            "zero3 | on | 3.30 s\n")
    top = _top(_write(tmp_path, "ab.txt", text))
    assert top["id"] == "h2d_copy" and "cpu offload=on takes 3.3 s" in " ".join(top["evidence"])


def test_a_setting_that_names_no_cause_is_stated_beside_insufficient_data(tmp_path):
    text = ("| variant | wall time |\n| -- | -- |\n| A | 10 min |\n| B | 25 min |\n")
    top = _top(_write(tmp_path, "variants.md", text))
    assert top["id"] == "insufficient_data"
    assert "variant=B takes 1500 s against 600 s with variant=A" in " ".join(top["evidence"])


def test_no_finding_from_a_small_difference_or_a_table_without_times():
    small = _table(["| run | offload | step time |", "|--|--|--|", "| a | off | 1.00 s |", "| b | on | 1.03 s |"])
    found: list = []
    variant_runs.findings("s.md", small, found, lambda share: "moderate" if share >= 0.05 else None)
    assert found == []
    assert _table(["| run | offload | accuracy |", "|--|--|--|", "| a | off | 91.2% |", "| b | on | 91.1% |"]) is None


def test_ib_in_use_with_its_out_of_band_socket_on_ipoib_is_no_fallback(tmp_path):
    # NCCL's IB transport names the IPoIB interface it bootstraps over (`; OOB ibs65:...`): verbs are in use
    log = ("a1:7:7 [0] NCCL INFO Bootstrap : Using ibs65:10.10.10.100<0>\n"
           "a1:7:7 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ibs65:10.10.10.100<0>\n"
           "a2:8:8 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ibs65:10.10.10.101<0>\n"
           "a1:7:9 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n"
           "a2:8:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0/GDRDMA\n")
    bundle = read_paths([_write(tmp_path, "ib_ok.log", log)])
    hosts = nccl_analysis.host_transports(bundle.nccl)
    assert hosts["network"].tolist() == ["IB", "IB"]
    assert nccl_analysis.link_findings(hosts) == []
