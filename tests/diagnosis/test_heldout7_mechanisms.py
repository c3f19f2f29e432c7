"""The mechanisms the seventh held-out round (tests/data/eval/heldout7/SOURCES.md) asked for, each on inputs written
here (LABELED SYNTHETIC), apart from the round's own files."""

from __future__ import annotations

from playbook.diagnosis import diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def _two_nodes(sought: list[str]) -> list[str]:
    """NCCL INFO lines of 2 hosts x 2 ranks that all end on sockets, with `sought` lines before the choice."""
    out = []
    for h in range(2):
        for d in range(2):
            p = f"gpu{h:02d}:{700 + d}:{700 + d} [{d}] NCCL INFO"
            out += [f"{p} Bootstrap : Using ens1:10.0.0.{h + 1}<0>", *(f"{p} {s}" for s in sought),
                    f"{p} NET/Socket : Using [0]ens1:10.0.0.{h + 1}<0>", f"{p} Using network Socket",
                    f"{p} ncclCommInitRank comm 0x5{h}{d}0 rank {2 * h + d} nranks 4 cudaDev {d} busId {d}1000 "
                    "commId 0x1 - Init START"]
    return out


def _steps(n: int = 120) -> list[str]:
    return [f"[rank0]:[titan] 2026-02-01 10:{s // 60:02d}:{s % 60:02d},000 - root - INFO - step: {s:3d}  loss: 9.0000  "
            f"memory: 20.00GiB(25.00%)  tps: 900  tflops: 1.10  mfu: 0.40%" for s in range(1, n + 1)]


def _diagnose(tmp_path, nccl: list[str]):
    (tmp_path / "nccl.log").write_text("\n".join(nccl) + "\n")
    (tmp_path / "train.log").write_text("\n".join(_steps()) + "\n")
    return diagnose(read_paths([str(tmp_path / "nccl.log"), str(tmp_path / "train.log")]))


def test_socket_fallback_after_nccl_looked_for_infiniband_is_the_verdict(tmp_path):
    for sought in (["Failed to open libibverbs.so[.1]"], ["NET/IB : No device found."],
                   ["NCCL_IB_HCA set to mlx5_0:1,mlx5_1:1"]):
        d = _diagnose(tmp_path, _two_nodes(sought))
        assert d.verdict["id"] == ids.LINK_DEGRADATION, (sought, d.verdict)


def test_sockets_alone_stay_a_moderate_finding(tmp_path):
    # nothing shows an IB fabric was expected: plain Ethernet nodes, where sockets are the fabric's own limit
    d = _diagnose(tmp_path, _two_nodes([]))
    link = next(h for h in d.hypotheses if h["id"] == ids.LINK_DEGRADATION)
    assert d.verdict["id"] != ids.LINK_DEGRADATION and link["score"] < 0.5


def _compile_log(path, iterations: int, recompile_from: int) -> None:
    """TORCH_LOGS=dynamic lines of frame 0 under tqdm without a total, one compile id per iteration from
    `recompile_from` on (before it, the same compiled graph runs again)."""
    lines = []
    for it in range(1, iterations + 1):
        attempt = max(0, it - recompile_from + 1)
        if it == 1 or it >= recompile_from:
            lines += [f"I0405 10:00:{it:02d}.000000 140 torch/fx/experimental/symbolic_shapes.py:2750] [0/{attempt}] "
                      "create_env",
                      f"[2024-04-05 10:00:{it:02d},100] [0/{attempt}] torch.fx.experimental.symbolic_shapes: [INFO] "
                      f"create_symbol s0 = {1000 + it} for L['x'].size()[0] [2, 9223372036854775806]"]
        lines.append(f"Epoch 0: {it}it [00:{2 * it:02d},  2.00s/it]")
    path.write_text("\n".join(lines) + "\n")


def test_a_new_compile_id_of_a_frame_is_a_recompile_and_tqdm_without_total_times_steps(tmp_path):
    path = tmp_path / "compile.log"
    _compile_log(path, 20, 5)
    b = read_paths([str(path)])
    assert len(b.steps) == 20 and abs(float(b.steps["duration_s"].median()) - 2.0) < 1e-9
    rc = b.events[b.events["kind"] == "recompile"]
    assert len(rc) == 16  # compile ids [0/1] .. [0/16]; [0/0] is the first compile


def test_recompiles_at_most_steps_are_a_storm_not_a_healthy_pace(tmp_path):
    path = tmp_path / "storm.log"
    _compile_log(path, 20, 2)
    assert diagnose(read_paths([str(path)])).verdict["id"] == ids.RECOMPILATION
    _compile_log(path, 20, 19)  # two recompiles late in a steady run: no storm
    d = diagnose(read_paths([str(path)]))
    assert "storm" not in " ".join(e for h in d.hypotheses for e in h["evidence"])


def _rank_logs(tmp_path, data_s: dict[int, float], step_s: float = 0.5, n: int = 200) -> list[str]:
    """PyTorch imagenet main.py progress lines (print-freq 10) of 4 ranks, one file each; `data_s`: a rank's wait
    for its batches (0.01 s where not given), every rank's step `step_s`."""
    paths = []
    for r in range(4):
        d = data_s.get(r, 0.01)
        lines = [f"Epoch: [0][{i:3d}/{n}]\tTime {step_s:6.3f} ({step_s:6.3f})\tData {d:6.3f} ({d:6.3f})\t"
                 f"Loss 6.9000e+00 (6.9000e+00)" for i in range(0, n, 10)]
        (tmp_path / f"rank{r}.log").write_text("\n".join(lines) + "\n")
        paths.append(str(tmp_path / f"rank{r}.log"))
    return paths


def test_one_rank_waiting_for_its_batches_while_the_others_wait_for_it_is_a_straggler_finding(tmp_path):
    # the verdict stays the loader's (data_starvation, as heldout27's torchrun_slow_loader_rank labels it); the
    # straggler finding says the other ranks wait for it, so its wait is lost on every rank
    d = diagnose(read_paths(_rank_logs(tmp_path, {1: 0.3})))
    assert d.verdict["id"] == ids.DATA_STARVATION
    straggler = next(h for h in d.hypotheses if h["id"] == ids.COLLECTIVE_STRAGGLER)
    assert straggler["names"] == ["rank 1"] and straggler["lost_share"] > 0.5  # 0.3 of every rank's 0.5 s step
    assert "rank 1 waits for its batches 60% of its step" in " ".join(straggler["evidence"])


def test_every_rank_waiting_for_its_batches_stays_data_starvation(tmp_path):
    d = diagnose(read_paths(_rank_logs(tmp_path, {r: 0.3 for r in range(4)})))
    assert d.verdict["id"] == ids.DATA_STARVATION


def test_a_tab_separated_table_under_mpirun_tags_is_read(tmp_path):
    # tf_cnn_benchmarks under mpirun --tag-output: the preamble's batch size, a tab-separated header naming the
    # counter, rows whose rate cell names itself (`images/sec: 250.0 +/- ...`)
    lines = ["[1,0]<stdout>:Batch size:  32 global", "[1,0]<stdout>:             32 per device",
             "[1,0]<stdout>:Step\tImg/sec\ttotal_loss"]
    lines += [f"[1,0]<stdout>:{s}\timages/sec: 250.0 +/- 1.0 (jitter = 2.0)\t7.500" for s in range(10, 210, 10)]
    path = tmp_path / "tf_cnn.log"
    path.write_text("\n".join(lines) + "\n")
    b = read_paths([str(path)])
    assert len(b.steps) == 20 and set(b.steps["rank"]) == {0}
    assert abs(float(b.steps["duration_s"].median()) - 32 / 250.0) < 1e-9


def _one_node(env: list[str]) -> list[str]:
    """NCCL INFO lines of one host's 2 ranks connected through SHM, with `env` settings printed first."""
    out = []
    for d in range(2):
        p = f"box:{800 + d}:{900 + d} [{d}] NCCL INFO"
        out += [*(f"{p} {e}" for e in env), f"{p} Channel 00/02 :    0   1",
                f"{p} Channel 00 : {d}[{d + 1}000] -> {1 - d}[{2 - d}000] via SHM/direct/direct",
                f"{p} comm 0x5{d}0 rank {d} nranks 2 cudaDev {d} busId {d + 1}000 - Init COMPLETE"]
    return out


def test_shm_because_the_environment_turned_p2p_off_is_the_verdict(tmp_path):
    d = _diagnose(tmp_path, _one_node(["NCCL_P2P_DISABLE set by environment to 1."]))
    assert d.verdict["id"] == ids.LINK_DEGRADATION
    d = _diagnose(tmp_path, _one_node([]))  # SHM that NCCL chose itself (no P2P path): a moderate finding
    assert d.verdict["id"] != ids.LINK_DEGRADATION


def _recompiles(n: int, tail: list[str] = (), guard: str = "L['offset'] == {i}") -> list[str]:
    """TORCH_LOGS=recompiles records of one function, by default a guard on a Python int that changes every call."""
    out = []
    for i in range(n):
        p = f"[2025-06-01 12:00:{2 * i:02d},100] torch._dynamo.guards.__recompiles: [DEBUG]"
        out += [f"{p} Recompiling function step_fn in /src/train.py:40", f"{p}     triggered by the following guard "
                "failure(s):", f"{p}     - " + guard.format(i=i + 1)]
    return out + list(tail)


def test_recompiles_of_one_frame_up_to_torch_s_limit_name_the_cause_without_step_times(tmp_path):
    # LABELED SYNTHETIC: events only; 8 recompiles of one frame (torch's recompile_limit) are recompilation, 5 on new
    # shapes are not enough to tell (a few shapes compiled once each are normal); 5 on a changing int are (round 43:
    # a counter the frame was specialised on recompiles on every new value)
    shape = "tensor 'L['x']' size mismatch at index 0. expected {i}, actual 9"
    for n, want, guard in ((8, ids.RECOMPILATION, shape), (5, ids.INSUFFICIENT_DATA, shape),
                           (5, ids.RECOMPILATION, "L['offset'] == {i}")):
        (tmp_path / f"r{n}.log").write_text("\n".join(_recompiles(n, guard=guard)) + "\n")
        d = diagnose(read_paths([str(tmp_path / f"r{n}.log")]))
        assert d.verdict["id"] == want, (n, d.verdict)
    # torch's own warning that a frame hit the limit names it with fewer records in the log
    limit = ["W0601 12:00:30.100000 158 torch/_dynamo/convert_frame.py:1551] [0/8] torch._dynamo hit "
             "config.recompile_limit (8)", "W0601 12:00:30.100000 158 torch/_dynamo/convert_frame.py:1551] [0/8]"
             "    function: 'step_fn' (/src/train.py:40)"]
    (tmp_path / "hit.log").write_text("\n".join(_recompiles(2, limit)) + "\n")
    d = diagnose(read_paths([str(tmp_path / "hit.log")]))
    assert d.verdict["id"] == ids.RECOMPILATION and "limit" in d.hypotheses[0]["evidence"][0]
