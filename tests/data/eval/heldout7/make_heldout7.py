"""Writes the seventh round of held-out cases (deterministic): python tests/data/eval/heldout7/make_heldout7.py

Distributed and multi-input runs from public threads whose cause of lost GPU time was stated there (the reporter's
fix that worked, a merged fix, or a controlled experiment). Every file is LABELED SYNTHETIC: written here in the
format of the tool's own print statement, carrying the figures and the real lines the thread shows; what the
thread does not state (hosts, counts, cadence, run length) is drawn and named below. Written before the engine saw
them and scored once as written (the first-try figure, in SOURCES.md).

- llamafactory_6111_ib_not_found/: hiyouga/LlamaFactory#6111 — two-node training no faster than one node; the
  pasted NCCL lines: NCCL_IB_DISABLE=0, NCCL_IB_HCA=mlx5_0..7, 'NET/IB : No device found.', 'NET/Socket : Using
  [0]eth0:10.47.14.218<0>', 'Using network Socket'; solved: RDMA was not enabled so the IB NICs were not found.
  Drawn: 2 nodes x 8 ranks, the Hugging Face Trainer's tqdm bar at ~4.0 s/it (twice the one-node 2.0 s/it for twice
  the batch: the same samples/s), log dicts every 10 steps, 300 steps.
- prime_rl_1599_no_libibverbs/: PrimeIntellect-ai/prime-rl#1599 — multi-node training used TCP sockets instead of
  InfiniBand because libibverbs.so was missing from the container: '0.2% MFU on 235B model training'; the PR adds
  libibverbs1 / ibverbs-providers. Drawn: NCCL 2.21 INFO lines of 2 nodes x 8 ranks ('Failed to open
  libibverbs.so[.1]', 'NET/Socket', 'Using network Socket', ring channels 'via NET/Socket/0'), the step log in
  torchtitan's format (mfu 0.2 %, ~58 s a step), 40 steps.
- bergson_444_rank0_only_work.log: EleutherAI/bergson#444 (merged) — EK-FAC runs abort with 'Watchdog caught
  collective operation timeout' right after 'Collecting gradients: 100%': rank 0 eigendecomposes and saves while
  every other rank waits in all_reduce(total_processed). Drawn: 8 ranks, tqdm of 2000 batches at ~1.2 s/it, the
  default 10-minute timeout, the ProcessGroupNCCL lines of torch 2.4.
- pytorch_114293_recompile_each_step.log: pytorch/pytorch#114293 (closed) — 'Recompilation triggered at each step of
  the loop': TORCH_LOGS=recompiles lines '[2023-11-21 19:02:27,364] torch._dynamo.guards.__recompiles: [DEBUG]
  Recompiling function accumulate in <ipython-input-6-4764417fa0ae>:6' about 2.4 s apart, each failing guard
  'L['start'] == N'. Drawn: 8 loop iterations continuing the pasted pattern.
- pytorch_121080_custom_op_recompiling.log: pytorch/pytorch#121080 (closed) — torch.compile with a custom C++ op
  'keeps recompiling': tqdm 'Training: 3it [00:18,  5.86s/it]' between symbolic_shapes 'create_env' / 'create_symbol
  s0 = 438948 for L['x'].size()[0]' lines of frame [0/N] for N = 1, 2, 3 ... (a new compile each iteration; the
  sampled graph's sizes change every batch). Drawn: 12 iterations, sizes drawn near the pasted ones.
- traceml_252_input_straggler/: traceopt-ai/traceml#252 — controlled 4x T4 DDP (ResNet-18, 300 steps): a 150 ms per
  batch dataloader stall injected on rank 2 only, measured 'Rank r2 input wait was 199.7ms vs median rank r0 at
  10.4ms'; ~362 ms steps. Drawn: PyTorch imagenet main.py progress lines (print-freq 10) on each rank, one file per
  rank; every rank's Time ~0.36 s (the others wait for rank 2 in the gradient all-reduce).
- horovod_824_nfs_share.log: horovod/horovod#824 — tf_cnn_benchmarks on V100s across servers 'suddenly slow down';
  the maintainer: 'could it be that your /share is too slow?'; the reporter: NFS between servers was very slow,
  data on local SSD made it fast (200 images/sec a GPU at full speed). Drawn: mpirun output of 2 workers
  ('[1,R]<stdout>:' prefix), batch 64 a GPU, display_every 10, 200 img/s for 300 steps then ~45 img/s for 500.
  Corrected after the first score: the first version left out the preamble (`Batch size:  128 global`) and printed
  each step's own rate, where tf_cnn_benchmarks prints the running mean (batch / mean of the step times so far).

Second batch (written after the fixes, scored once as written on the commit that adds it):
- nccl_631_p2p_disabled/: NVIDIA/nccl#631 — one node, training froze with 4 or more GPUs, NCCL_P2P_DISABLE=1 made
  it run; the maintainer: 'There won't be any problem, just reduced performance ... P2P not being functional is
  usually tied to ACS being enabled' (fix: disable ACS / VT-d, iommu=pt). Drawn: NCCL 2.12 INFO lines of 4 ranks
  (`NCCL_P2P_DISABLE set by environment to 1.`, ring channels `via SHM/direct/direct`), Lightning's tqdm bar at
  ~1.6 it/s for 600 steps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _write(name: str, lines: list[str]) -> None:
    path = HERE / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _hms(s: float) -> str:
    s = int(s)
    h, r = divmod(s, 3600)
    m, s = divmod(r, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def llamafactory_6111() -> None:
    rng = np.random.default_rng(6111)
    nccl = []
    for host, ip in (("node-0", "10.47.14.218"), ("node-1", "10.47.14.219")):
        for local in range(8):
            p = f"{host}:{4100 + local}:{4100 + local} [{local}]"
            nccl += [f"{p} NCCL INFO Bootstrap : Using eth0:{ip}<0>",
                     f"{p} NCCL INFO NCCL_IB_DISABLE set by environment to 0.",
                     f"{p} NCCL INFO NCCL_IB_HCA set to mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,"
                     "mlx5_6:1,mlx5_7:1",
                     f"{p} NCCL INFO NET/IB : No device found.",
                     f"{p} NCCL INFO NET/Socket : Using [0]eth0:{ip}<0>",
                     f"{p} NCCL INFO Using non-device net plugin version 0",
                     f"{p} NCCL INFO Using network Socket"]
    train = ["[INFO|trainer.py:2243] 2024-11-22 10:02:11,483 >> ***** Running training *****",
             "[INFO|trainer.py:2244] 2024-11-22 10:02:11,483 >>   Num examples = 76,800",
             "[INFO|trainer.py:2246] 2024-11-22 10:02:11,483 >>   Instantaneous batch size per device = 4",
             "[INFO|trainer.py:2249] 2024-11-22 10:02:11,483 >>   Total train batch size (w. parallel, distributed "
             "& accumulation) = 256",
             "[INFO|trainer.py:2250] 2024-11-22 10:02:11,483 >>   Gradient Accumulation steps = 4",
             "[INFO|trainer.py:2251] 2024-11-22 10:02:11,483 >>   Total optimization steps = 300"]
    t, n = 0.0, 300
    for step in range(1, n + 1):
        t += 4.0 * float(np.exp(0.03 * rng.standard_normal()))
        rate = t / step
        pct = 100 * step // n
        bar = "█" * (pct // 10)
        train.append(f"{pct:3d}%|{bar:<10}| {step}/{n} [{_hms(t)}<{_hms(rate * (n - step))}, {rate:5.2f}s/it]")
        if step % 10 == 0:
            loss = 1.9 - 0.4 * step / n + 0.02 * rng.standard_normal()
            train.append(f"{{'loss': {loss:.4f}, 'grad_norm': {0.6 + 0.05 * rng.standard_normal():.6f}, "
                         f"'learning_rate': {5e-5 * (1 - step / n):.4e}, 'epoch': {step / n:.2f}}}")
    _write("llamafactory_6111_ib_not_found/nccl.log", nccl)
    _write("llamafactory_6111_ib_not_found/train.log", train)


def prime_rl_1599() -> None:
    rng = np.random.default_rng(1599)
    nccl = []
    for node in range(2):
        host, ip = f"trainer-{node}", f"10.2.0.{11 + node}"
        for local in range(8):
            rank = node * 8 + local
            p = f"{host}:{2200 + local}:{2200 + local} [{local}]"
            nccl += [f"{p} NCCL INFO Bootstrap : Using eth0:{ip}<0>",
                     f"{p} NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
                     f"{p} NCCL INFO Failed to open libibverbs.so[.1]",
                     f"{p} NCCL INFO NET/Socket : Using [0]eth0:{ip}<0>",
                     f"{p} NCCL INFO Using network Socket",
                     f"{p} NCCL INFO ncclCommInitRank comm 0x55d0c{rank:03x}0 rank {rank} nranks 16 cudaDev {local} "
                     f"nvmlDev {local} busId {local + 1}8000 commId 0x7a1c2f3e4d5b6a79 - Init START"]
            if local in (0, 7):
                peer = (rank + 1) % 16
                nccl.append(f"{host}:{2200 + local}:{2300 + local} [{local}] NCCL INFO Channel 00/0 : {rank}[{local}] "
                            f"-> {peer}[{peer % 8}] [send] via NET/Socket/0")
    steps = []
    t = 0.0
    for step in range(1, 41):
        dt = 58.0 * float(np.exp(0.04 * rng.standard_normal()))
        t += dt
        mm, ss = divmod(int(t), 60)
        hh, mm = divmod(mm, 60)
        tps = 65536 / dt
        steps.append(f"[rank0]:[titan] 2026-01-14 {9 + hh:02d}:{mm:02d}:{ss:02d},{rng.integers(0, 999):03d} - root - "
                     f"INFO - step: {step:2d}  loss: {11.5 - 0.05 * step:7.4f}  memory: 61.20GiB(77.30%)  "
                     f"tps: {tps:,.0f}  tflops: {2.0 * tps / 1130:.2f}  mfu: 0.20%")
    _write("prime_rl_1599_no_libibverbs/nccl.log", nccl)
    _write("prime_rl_1599_no_libibverbs/train.log", steps)


def bergson_444() -> None:
    rng = np.random.default_rng(444)
    lines, t, n = [], 0.0, 2000
    for i in range(0, n + 1, 100):
        t = 1.24 * i
        pct = 100 * i // n
        bar = "█" * (pct // 10)
        lines.append(f"Collecting gradients: {pct:3d}%|{bar:<10}| {i}/{n} [{_hms(t)}<{_hms(1.24 * (n - i))},  "
                     "1.24s/it]")
    for r in range(1, 8):
        ms = 600000 + int(rng.integers(20, 99))
        lines.append(f"[rank{r}]:[E826 14:58:{12 + r:02d}.{rng.integers(1e8, 9e8)} ProcessGroupNCCL.cpp:632] [Rank {r}] "
                     "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4003, OpType=ALLREDUCE, NumelIn=1, "
                     f"NumelOut=1, Timeout(ms)=600000) ran for {ms} milliseconds before timing out.")
        lines.append(f"[rank{r}]:[E826 14:58:{12 + r:02d}.{rng.integers(1e8, 9e8)} ProcessGroupNCCL.cpp:1664] [PG 0 Rank "
                     f"{r}] Exception (either an error or timeout) detected by watchdog at work: 4003, last enqueued "
                     "NCCL work: 4003, last completed NCCL work: 4002.")
    _write("bergson_444_rank0_only_work.log", lines)


def pytorch_114293() -> None:
    lines, t = [], 24.941
    for start in range(3, 11):
        s = f"19:{2 + int(t // 60):02d}:{t % 60:06.3f}".replace(".", ",")
        p = f"[2023-11-21 {s}] torch._dynamo.guards.__recompiles: [DEBUG]"
        lines.append(f"{p} Recompiling function accumulate in <ipython-input-6-4764417fa0ae>:6")
        lines.append(f"{p}     triggered by the following guard failure(s):")
        for prev in range(start, 2, -1):
            lines.append(f"{p}     - L['start'] == {prev}                                               "
                         "# _dynamo/output_graph.py:366 in init_ambient_guards")
        t += 2.423 + 0.01 * (start % 3)
    _write("pytorch_114293_recompile_each_step.log", lines)


def pytorch_121080() -> None:
    rng = np.random.default_rng(121080)
    lines, t = [], 0.0
    for it in range(1, 13):
        dt = 5.86 * float(np.exp(0.08 * rng.standard_normal()))
        t += dt
        ss = 46.0 + t
        s = f"18:{11 + int(ss // 60):02d}:{ss % 60:06.3f}".replace(".", ",")
        p = f"[2024-03-02 {s}] [0/{it}] torch.fx.experimental.symbolic_shapes: [INFO]"
        s0, s2, s3 = (int(v * float(np.exp(0.05 * rng.standard_normal()))) for v in (438948, 656138, 131642))
        lines += [f"{p} create_env",
                  f"{p} create_symbol s0 = {s0} for L['x'].size()[0] [2, 9223372036854775806]",
                  f"{p} create_symbol s1 = 100 for L['x'].size()[1] [2, 9223372036854775806]",
                  f"{p} create_symbol s2 = {s2} for L['subgraphs'][0].sampled_csc.indices.size()[0] "
                  "[2, 9223372036854775806]",
                  f"{p} create_symbol s3 = {s3} for L['subgraphs'][0].sampled_csc.indptr.size()[0] "
                  "[2, 9223372036854775806]",
                  f"{p} set_replacement s2 = {s2}",
                  f"{p} produce_guards",
                  f"Training: {it}it [{_hms(t)}, {t / it:5.2f}s/it]"]
    _write("pytorch_121080_custom_op_recompiling.log", lines)


def traceml_252() -> None:
    rng = np.random.default_rng(252)
    n = 300
    base = 0.16 * np.exp(0.03 * rng.standard_normal(n))
    stall = 0.1897 + 0.01 * np.abs(rng.standard_normal(n))
    for r in range(4):
        data = stall if r == 2 else 0.0104 * np.exp(0.1 * rng.standard_normal(n))
        step = base + stall + 0.004 * np.abs(rng.standard_normal(n))
        lines, tsum, dsum = [], 0.0, 0.0
        for i in range(n):
            tsum += step[i]
            dsum += data[i]
            if i % 10 == 0:
                k = i + 1
                lines.append(f"Epoch: [0][{i:3d}/{n}]\tTime {step[i]:6.3f} ({tsum / k:6.3f})\tData {data[i]:6.3f} "
                             f"({dsum / k:6.3f})\tLoss {6.9 - 2.0 * i / n:.4e} ({6.9 - i / n:.4e})\tAcc@1 "
                             f"{10 + 20 * i / n:6.2f} ({10 + 10 * i / n:6.2f})\tAcc@5 {30 + 30 * i / n:6.2f} "
                             f"({30 + 15 * i / n:6.2f})")
        _write(f"traceml_252_input_straggler/rank{r}.log", lines)


def horovod_824() -> None:
    """tf_cnn_benchmarks under mpirun: each worker's preamble (benchmark_cnn.py print_info) and its step lines
    ('%i\t%s\t%.3f' % (step + 1, get_perf_timing_str(...), loss) at step 1 and every display_every), whose
    images/sec is batch_size / mean(step times so far): a running mean, not the step's own rate."""
    rng = np.random.default_rng(824)
    batch, n = 64, 800
    step_s = np.where(np.arange(n) < 300, batch / 200.0, batch / 45.0) * np.exp(0.02 * rng.standard_normal((2, n)))
    lines = []
    for w in range(2):
        lines += [f"[1,{w}]<stdout>:{text}" for text in (
            "Model:       resnet50", "Dataset:     imagenet", "Mode:        training", "SingleSess:  False",
            f"Batch size:  {2 * batch} global", f"             {batch} per device", f"Num batches: {n}",
            "Num epochs:  0.04", "Devices:     ['horovod/gpu:0']", "Data format: NCHW", "Optimizer:   sgd",
            "Variables:   horovod", "==========", "Generating training model", "Running warm up", "Done warm up",
            "Step\tImg/sec\ttotal_loss")]
    for i in range(n):
        if i == 0 or (i + 1) % 10 == 0:
            for w in range(2):
                times = step_s[w, : i + 1]
                speeds = batch / times
                mean = batch / float(np.mean(times))
                unc = float(np.std(speeds) / np.sqrt(len(speeds)))
                jit = float(1.4826 * np.median(np.abs(speeds - np.median(speeds))))
                lines.append(f"[1,{w}]<stdout>:{i + 1}\timages/sec: {mean:.1f} +/- {unc:.1f} (jitter = {jit:.1f})"
                             f"\t{7.9 - 0.001 * i:.3f}")
    _write("horovod_824_nfs_share.log", lines)


def nccl_631() -> None:
    rng = np.random.default_rng(631)
    nccl, host = [], "dgx-ws"
    for d in range(4):
        p = f"{host}:{5100 + d}:{5100 + d} [{d}]"
        nccl += [f"{p} NCCL INFO Bootstrap : Using eno1:192.168.1.20<0>",
                 f"{p} NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
                 f"{p} NCCL INFO cudaDriverVersion 11060"]
        if d == 0:
            nccl.append("NCCL version 2.12.10+cuda11.6")
        q = f"{host}:{5100 + d}:{5200 + d} [{d}]"
        nccl += [f"{q} NCCL INFO NCCL_P2P_DISABLE set by environment to 1.",
                 f"{q} NCCL INFO Setting affinity for GPU {d} to ffff,ffffffff",
                 f"{q} NCCL INFO Channel 00/02 :    0   1   2   3",
                 f"{q} NCCL INFO Channel 01/02 :    0   1   2   3",
                 f"{q} NCCL INFO Trees [0] {d + 1 if d < 3 else -1}/-1/-1->{d}->{d - 1} "
                 f"[1] {d + 1 if d < 3 else -1}/-1/-1->{d}->{d - 1}"]
        for ch in (0, 1):
            nccl.append(f"{q} NCCL INFO Channel {ch:02d} : {d}[{d + 1}{'a' if d % 2 else 'b'}000] -> {(d + 1) % 4}"
                        f"[{(d + 1) % 4 + 1}{'b' if d % 2 else 'a'}000] via SHM/direct/direct")
        nccl += [f"{q} NCCL INFO Connected all rings", f"{q} NCCL INFO Connected all trees",
                 f"{q} NCCL INFO comm 0x55a0{d}c0 rank {d} nranks 4 cudaDev {d} busId {d + 1}a000 - Init COMPLETE"]
    train, t, n = [], 0.0, 600
    for i in range(1, n + 1):
        t += (1 / 1.6) * float(np.exp(0.04 * rng.standard_normal()))
        if i % 5 == 0:
            pct = 100 * i // n
            train.append(f"Epoch 0:  {pct:2d}%|{'█' * (pct // 10):<10}| {i}/{n} [{_hms(t)}<{_hms(t / i * (n - i))}, "
                         f"{i / t:.2f}it/s, loss={2.3 - 0.8 * i / n:.3f}, v_num=0]")
    _write("nccl_631_p2p_disabled/nccl.log", nccl)
    _write("nccl_631_p2p_disabled/train.log", train)


if __name__ == "__main__":
    for make in (llamafactory_6111, prime_rl_1599, bergson_444, pytorch_114293, pytorch_121080, traceml_252,
                 horovod_824, nccl_631):
        make()
