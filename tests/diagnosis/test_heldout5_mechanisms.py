"""The mechanisms the fifth held-out round (tests/data/eval/heldout5/SOURCES.md) asked for, each on inputs written
here (LABELED SYNTHETIC), apart from the round's own files: a slow prefix spent waiting for input is starvation,
not warm-up; an event logged at every step is no evidence for the slow ones; NCCL facts alone name the fabric."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from playbook.analysis import step_times as sa
from playbook.analysis.accounting import Accounting, Bucket
from playbook.diagnosis import attribution, diagnose
from playbook.knowledge import ids
from playbook.readers import read_paths


def _imagenet_log(path, prefix_data_s: float, n: int = 48, slow: int = 10):
    """pytorch/examples imagenet/main.py progress lines, one per step: `slow` leading steps of 2.4 s (of which
    `prefix_data_s` in Data), then 0.18 s steps waiting 0.01 s."""
    rng = np.random.default_rng(15)
    lines = []
    for i in range(n):
        data = prefix_data_s if i < slow else 0.01
        t = (2.4 if i < slow else 0.18) * float(np.exp(0.01 * rng.standard_normal()))
        lines.append(f"Epoch: [0][{i}/{n}]\tTime {t:.3f} ({t:.3f})\tData {data:.3f} ({data:.3f})\t"
                     f"Loss 6.9000 (6.9000)\tPrec@1 0.100 (0.100)\tPrec@5 0.500 (0.500)")
    path.write_text("\n".join(lines) + "\n")
    return read_paths([str(path)])


def test_warmup_prefix_waiting_for_input_is_not_warmup():
    d = np.r_[np.full(10, 2.4), np.full(38, 0.18)]
    assert sa.warmup_steps(d) == 10  # no phase known: a silent slow start is warm-up
    assert sa.warmup_steps(d, waiting=np.r_[np.full(10, 2.2), np.full(38, 0.01)]) == 1
    assert sa.warmup_steps(d, waiting=np.full(48, 0.01)) == 10  # slow in compute (compiling): warm-up


def test_slow_first_steps_in_the_data_phase_are_lost_not_warmup(tmp_path):
    starved = diagnose(_imagenet_log(tmp_path / "starved.log", prefix_data_s=2.2))
    assert starved.verdict["id"] == ids.DATA_STARVATION
    assert starved.accounting["warmup_s"] < 3.0 and starved.accounting["lost_share"] > 0.5
    compiling = diagnose(_imagenet_log(tmp_path / "compiling.log", prefix_data_s=0.01))
    assert compiling.accounting["warmup_s"] > 20.0  # the same slow start in compute stays warm-up


def _acc(buckets):
    return Accounting("wall", 1000.0, buckets, 0.01, "test", interval_s=25.0, step_gap=1)


def test_event_at_every_step_is_no_evidence_for_the_slow_ones():
    steps = pd.DataFrame({"step": range(21), "rank": -1, "phase": "step", "duration_s": 25.0})
    slow = Bucket("slow_stretches", 400.0, steps=list(range(7, 21)))
    every = pd.DataFrame({"kind": "eval", "step": range(21), "time": pd.NaT})
    assert attribution._events_on(slow, _acc([slow]), every, steps) is None
    only_slow = every[every["step"] >= 7]
    hit = attribution._events_on(slow, _acc([slow]), only_slow, steps)
    assert hit is not None and hit[0] == ids.PERIODIC_STALL


def test_sparser_event_reaching_the_next_line_stays_evidence():
    # lines every 100 steps, a checkpoint numbered at every other line slowing the line after it: the event's window
    # reaches both lines, yet it sits beside only half of them, so it still says why the slow ones are slow
    steps = pd.DataFrame({"step": range(100, 2001, 100), "rank": -1, "phase": "step", "duration_s": 60.0})
    slow = Bucket("recurring_slow", 300.0, steps=list(range(300, 2001, 200)))
    saves = pd.DataFrame({"kind": "checkpoint", "step": range(200, 2001, 200), "time": pd.NaT})
    acc = Accounting("wall", 2000.0, [slow], 0.01, "test", interval_s=60.0, step_gap=100)
    hit = attribution._events_on(slow, acc, saves, steps)
    assert hit is not None and hit[0] == ids.PERIODIC_STALL


@pytest.mark.timeout(120)
def test_the_no_evidence_rule_is_linear_in_the_run_s_steps():
    # 200,000 logged steps, an evaluation at every other one, every tenth slow: the rule filtered the whole events
    # table once per step line (a 30,000-step log spent 45 s there, 200,000 would take ~10 min: the timeout is a
    # runaway guard, nothing is timed); the answers are the rule's, at scale
    n = 200_000
    steps = pd.DataFrame({"step": range(1, n + 1), "rank": -1, "phase": "step", "duration_s": 0.5})
    slow = Bucket("recurring_slow", 1000.0, steps=list(range(10, n + 1, 10)))
    evals = pd.DataFrame({"kind": "eval", "step": range(2, n + 1, 2), "time": pd.NaT})
    assert attribution._events_on(slow, _acc([slow]), evals, steps) is None  # beside every line, as common off it
    saves = pd.DataFrame({"kind": "checkpoint", "step": range(10, n + 1, 10), "time": pd.NaT})
    hit = attribution._events_on(slow, _acc([slow]), saves, steps)  # at the slow steps only: evidence
    assert hit == (ids.PERIODIC_STALL, f"checkpoint events at {n // 10} of {n // 10} slow steps")


def _nccl_log(path, networks: dict[str, str]):
    """NCCL INFO init lines of two ranks per host, each host on the given network ("IB", with GPUDirect RDMA, or
    "Socket")."""
    lines = ["NCCL version 2.20.5+cuda12.4"]
    for h, (host, net) in enumerate(networks.items()):
        for local in range(2):
            rank, p = 2 * h + local, f"{host}:{100 + local}:{200 + local} [{local}] NCCL INFO"
            dev = "[0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>" if net == "IB" else f"[0]eth0:10.0.{h}.1<0>"
            lines += [f"{p} NET/{net} : Using {dev}", f"{p} Using network {net}",
                      f"{p} comm 0x{rank:x} rank {rank} nranks 4 cudaDev {local} busId 1000 - Init START",
                      f"{p} Channel 00/0 : {(rank + 2) % 4}[{local}] -> {rank}[{local}] [receive] via NET/{net}/0{'/GDRDMA' if net == 'IB' else ''}"]
    path.write_text("\n".join(lines) + "\n")
    return read_paths([str(path)])


def test_nccl_facts_alone_name_sockets_on_every_host(tmp_path):
    d = diagnose(_nccl_log(tmp_path / "socket.log", {"node-a": "Socket", "node-b": "Socket"}))
    assert d.verdict["id"] == ids.LINK_DEGRADATION
    assert d.hypotheses[1]["id"] == ids.INSUFFICIENT_DATA  # the cost still needs a time axis
    ib = diagnose(_nccl_log(tmp_path / "ib.log", {"node-a": "IB", "node-b": "IB"}))
    assert ib.verdict["id"] == ids.INSUFFICIENT_DATA  # nothing wrong in the facts: they cannot vouch for health
