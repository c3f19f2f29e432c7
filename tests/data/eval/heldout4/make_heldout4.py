"""Writes the fourth round of held-out cases (deterministic): python tests/data/eval/heldout4/make_heldout4.py

GPU TELEMETRY that users pasted in public threads, in the format they pasted (or, where the thread shows a
screenshot, the nvidia-smi format closest to it). Every file is LABELED SYNTHETIC: written here to carry the
figures the thread states, not copied from it. Written before the engine saw them and scored once as written
(the first-try figure of this round; see SOURCES.md, which also gives each expected cause and why).

Formats (each from the tool itself, as in tests/data/heldout_telemetry and the readers' docstrings): the
`nvidia-smi` table of a 440-era driver (with `watch`'s "Every 0.1s: nvidia-smi   host: <date>" header, or the
date line nvidia-smi -l prints above each snapshot); `nvidia-smi --query-gpu=... --format=csv -l 1` ("timestamp"
as "%Y/%m/%d %H:%M:%S.%f"[:-3], values with their units); `nvidia-smi -q -d UTILIZATION,POWER,CLOCK,PERFORMANCE
-l 1` (535's section names: "GPU Power Readings", "Clocks Event Reasons"); `nvidia-smi dmon -s pucvmet`.

- megengine_2_watch_smi.txt: MegEngine/Models#2 — `watch -n0.1 nvidia-smi` on 8 GPUs training ResNet-50
  (batch 64 per GPU), "GPU-utilization almost oscillate between 60% - 100%", every epoch; the maintainer: "probably
  due to the insufficient data supply. By default we use 4 workers for each GPU ... Try doubling it". The GPU model
  is not named in the thread (drawn as V100-SXM2 16 GB); the dips come together on all GPUs (DDP ranks wait for
  the slowest loader), one every 2-5 s.
- pytorch_36285_one_snapshot.txt: pytorch/pytorch#36285 — one `nvidia-smi` table during DDP: GPU 0 at 0% (64 W),
  GPUs 1 and 2 at 100% (77 W, 80 W), 9174-9178 MiB each (the paste continues past GPU 2; only the three GPUs the
  stored thread shows are written). The user: "The training is good and speed is fast".
- matt_sh_thermal_query.csv: matt.sh/cloud-gpu-thermal-throttling — a cloud GPU at 100% utilization throttled to
  450-550 MHz (default 1755 MHz) at 88 C and half its power within 10 s of a clean start from 67 C; steps went
  from 0.7 s to 1.2-1.4 s. The post shows nvtop and Grafana screenshots; written as the query CSV (no clock event
  reasons logged). Board power limit drawn as 300 W (the GPU model is not named).
- open_clip_703_sw_power_cap_q.txt: mlfoundations/open_clip#703, rwightman: in `nvidia-smi -a`'s Clocks Event
  Reasons, "SW power cap and SW power slowdown aren't uncommon ... they are 'okay' as long as your utilization and
  power usage are high". Two A100-SXM4 (400 W) under full load, SW Power Cap Active on most polls, draw at the
  limit, SM clock 1275-1410 MHz.
- maskrcnn_659_dead_rank_smi.txt: facebookresearch/maskrcnn-benchmark#659 (Marcovaldong) — 4-GPU training; "one
  process dead ... the utilization of the other three gpus are maintained at 100%, but the training has been
  stopped". `nvidia-smi -l 10` on the 8-GPU host (GTX 1080 Ti, driver 387.26): GPUs 0-3 unused (P8, 16 W,
  0 MiB, as the paste shows), the job on GPUs 4-7; GPU 7's process dies 4 minutes in, the others stay at 100%
  utilization at ~60 W (a kernel spinning inside the collective, not computing).
- k8s_device_plugin_267_ecc_smi.txt: NVIDIA/k8s-device-plugin#267 — "GPU 1 has 1 Volatile Uncorr. ECC"; every
  pod scheduled on it fails ("RuntimeError: CUDA error: out of memory"). The table is a screenshot: GPU count and
  model drawn (2x Tesla V100-PCIE-32GB), GPU 0 training, GPU 1 holding a failed pod's context, idle.
- deepspeech_178_dmon_one_sample.txt: mozilla/DeepSpeech#178 — one `nvidia-smi dmon -s pucvmet` sample of 4 GPUs
  (sm 18-25%, 86-112 W, 70-84 C, pclk 1683-1784 MHz), pasted as an example of the output; no problem was
  diagnosed in the thread.
- megatron_1415_spiky_util.csv: NVIDIA/Megatron-LM#1415 — GPT-3 training, "the gpu utility varies so much, but
  other metrics is very steady"; the maintainer: "GPU utilization graph can be spiky during certain windows.
  Throughput may be a better way to judge performance." A dashboard screenshot in the thread; written as the query
  CSV of 8 H100s: utilization dipping to 70-90% on single polls at random, independently per GPU, power and SM
  clock steady.

Written after the first eight were scored and fixed, as a second batch (scored once as written, too):
- rtx6kpro_88_pcie_gen2.csv: local-inference-lab/rtx6kpro#88 — a udev rule meant to stop PCIe link-speed flapping
  left GPU e3:00.0 "at Gen2 x16 for three and a half hours of production training — roughly 8 GB/s instead of
  64 GB/s — with nothing logging an error and the card reporting 100 % utilisation throughout" (RTX PRO 6000
  Blackwell, Gen5 slots, behind PCIe switches). The query CSV of 8 of the host's GPUs (the reference system had
  17) polled every 5 s: every GPU at 100%, e3:00.0's pcie.link.gen.current 2 against the others' 5 (max 5); power
  drawn alike (the thread gives none).
"""

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
rng = np.random.default_rng(4)


def write(name, lines):
    (HERE / name).write_text("\n".join(lines) + "\n")


def smi_table(date, driver, gpus, watch_host=None):
    """One nvidia-smi snapshot (440-era layout). gpus: dicts name, bus, fan, temp, perf, pwr, cap, used, total,
    util, ecc."""
    stamp = f"{date:%a %b} {date.day:2d} {date:%H:%M:%S %Y}"  # nvidia-smi pads the day with a space
    out = []
    if watch_host:
        out += [f"Every 0.1s: nvidia-smi{' ' * 40}{watch_host}: {stamp}", ""]
    out += [stamp,
            "+-----------------------------------------------------------------------------+",
            f"| NVIDIA-SMI {driver:<23}Driver Version: {driver:<26}|" if float(driver.split(".")[0]) < 410 else
            f"| NVIDIA-SMI {driver:<13}Driver Version: {driver:<13}CUDA Version: 10.2     |",
            "|-------------------------------+----------------------+----------------------+",
            "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |",
            "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |",
            "|===============================+======================+======================|"]
    for i, g in enumerate(gpus):
        out.append(f"| {i:3d}  {g['name']:<19.19} On   | {g['bus']} Off | {g['ecc']:>20} |")
        out.append(f"| {g['fan']:>3}   {g['temp']:2d}C    {g['perf']:<2} {g['pwr']:5d}W / {g['cap']:3d}W |"
                   f" {g['used']:6d}MiB / {g['total']:5d}MiB | {g['util']:6d}%      Default |")
        out.append("+-------------------------------+----------------------+----------------------+")
    out += ["", "+-----------------------------------------------------------------------------+",
            "| Processes:                                                       GPU Memory |",
            "|  GPU       PID   Type   Process name                             Usage      |",
            "|=============================================================================|"]
    for i, g in enumerate(gpus):
        if g["used"] > 100:
            out.append(f"|  {i:3d}     {23000 + i:5d}      C   python{' ' * 32}{g['used'] - 11:5d}MiB |")
    out += ["+-----------------------------------------------------------------------------+", ""]
    return out


def megengine():
    t0, lines = datetime(2020, 3, 25, 10, 12, 0), []
    next_dip = 2
    for k in range(120):
        dip = k == next_dip
        if dip:
            next_dip = k + int(rng.integers(2, 6))
        gpus = []
        for g in range(8):
            util = int(rng.integers(58, 76)) if dip else int(rng.integers(96, 101))
            gpus.append(dict(name="Tesla V100-SXM2...", bus=f"00000000:{0x17 + g:02X}:00.0", fan="N/A",
                             temp=int(55 + util / 10 + rng.integers(0, 3)), perf="P0",
                             pwr=int(70 + 2.1 * util + rng.normal(0, 8)), cap=300, used=9871, total=16160,
                             util=util, ecc="0"))
        lines += smi_table(t0 + timedelta(seconds=k), "440.64", gpus, watch_host="ip-172-31-7-12")
    write("megengine_2_watch_smi.txt", lines)


def pytorch_36285():
    figures = [(61, 64, 9174, 0), (54, 77, 9178, 100), (52, 80, 9178, 100)]
    gpus = [dict(name="Tesla V100-SXM2...", bus=f"00000000:00:{0x17 + i:02X}.0", fan="N/A", temp=temp,
                 perf="P0", pwr=pwr, cap=300, used=used, total=16130, util=util, ecc="0")
            for i, (temp, pwr, used, util) in enumerate(figures)]
    write("pytorch_36285_one_snapshot.txt", smi_table(datetime(2020, 4, 9, 0, 12, 57), "410.104", gpus))


def query_csv(name, header, rows):
    write(name, [", ".join(header)] + [", ".join(r) for r in rows])


def stamp(t):
    return t.strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


def matt_thermal():
    t0, rows = datetime(2024, 3, 2, 14, 0, 0), []
    temp = 67.0
    for k in range(380):
        t = t0 + timedelta(seconds=k, milliseconds=int(rng.integers(0, 20)))
        if k < 20:  # idle
            util, clock, power = 0, 210, 32.0 + rng.normal(0, 1)
        else:
            temp = min(88.0, temp + 3.0) if k < 27 else 88.0 + rng.normal(0, 0.6)
            if k < 25:
                util, clock, power = 100, 1755, 292.0 + rng.normal(0, 4)
            else:
                util, clock, power = 100, int(rng.integers(450, 551)), 150.0 + rng.normal(0, 6)
        rows.append([stamp(t), "0", f"{util} %", f"{clock} MHz", f"{power:.2f} W", "300.00 W", f"{temp:.0f}"])
    query_csv("matt_sh_thermal_query.csv",
              ["timestamp", "index", "utilization.gpu [%]", "clocks.sm [MHz]", "power.draw [W]",
               "power.limit [W]", "temperature.gpu"], rows)


def q_record(t, bus, minor, util, mem_util, power, clock, capped):
    state = "Active" if capped else "Not Active"
    return [f"GPU {bus}",
            f"    Minor Number                          : {minor}",
            "    Performance State                     : P0",
            "    Clocks Event Reasons",
            "        Idle                              : Not Active",
            "        Applications Clocks Setting       : Not Active",
            f"        SW Power Cap                      : {state}",
            "        HW Slowdown                       : Not Active",
            "            HW Thermal Slowdown           : Not Active",
            "            HW Power Brake Slowdown       : Not Active",
            "        Sync Boost                        : Not Active",
            "        SW Thermal Slowdown               : Not Active",
            "        Display Clock Setting             : Not Active",
            "    Utilization",
            f"        Gpu                               : {util} %",
            f"        Memory                            : {mem_util} %",
            "        Encoder                           : 0 %",
            "        Decoder                           : 0 %",
            "    GPU Power Readings",
            f"        Power Draw                        : {power:.2f} W",
            "        Current Power Limit               : 400.00 W",
            "        Requested Power Limit             : 400.00 W",
            "        Default Power Limit               : 400.00 W",
            "        Min Power Limit                   : 100.00 W",
            "        Max Power Limit                   : 400.00 W",
            "    Clocks",
            f"        Graphics                          : {clock} MHz",
            f"        SM                                : {clock} MHz",
            "        Memory                            : 1215 MHz",
            "        Video                             : 1155 MHz",
            "    Max Clocks",
            "        Graphics                          : 1410 MHz",
            "        SM                                : 1410 MHz",
            "        Memory                            : 1215 MHz",
            "        Video                             : 1290 MHz",
            ""]


def open_clip_q():
    t0, lines = datetime(2023, 10, 25, 9, 0, 0), []
    for k in range(120):
        t = t0 + timedelta(seconds=k)
        lines += ["", "==============NVSMI LOG==============", "",
                  f"Timestamp                                 : {t.strftime('%a %b %d %H:%M:%S %Y')}",
                  "Driver Version                            : 535.104.05",
                  "CUDA Version                              : 12.2", "",
                  "Attached GPUs                             : 2"]
        for g, bus in enumerate(("00000000:07:00.0", "00000000:0F:00.0")):
            capped = rng.random() < 0.8
            power = min(400.0, 392.0 + rng.normal(0, 6)) if capped else 360.0 + rng.normal(0, 12)
            clock = int(rng.integers(1275, 1346)) if capped else int(rng.integers(1350, 1411))
            lines += q_record(t, bus, g, int(rng.integers(98, 101)), int(rng.integers(38, 52)), power, clock,
                              capped)
    write("open_clip_703_sw_power_cap_q.txt", lines)


def maskrcnn_dead_rank():
    t0, lines = datetime(2019, 7, 20, 15, 40, 0), []
    idle = dict(name="GeForce GTX 108...", fan="20%", temp=28, perf="P8", pwr=16, cap=250, used=0, total=11172,
                util=0, ecc="N/A")
    for k in range(60):  # -l 10: ten minutes
        gpus = [dict(idle, bus=f"00000000:{b:02X}:00.0", temp=27 + i) for i, b in enumerate((4, 5, 8, 9))]
        for i, b in enumerate((0x84, 0x85, 0x88, 0x89)):
            dead = k >= 24 and i == 3
            if dead:
                gpus.append(dict(idle, bus=f"00000000:{b:02X}:00.0", temp=36))
            elif k >= 24:  # the survivors wait inside the collective: a resident kernel, no work
                gpus.append(dict(idle, bus=f"00000000:{b:02X}:00.0", fan="35%", temp=47, perf="P2",
                                 pwr=int(58 + rng.integers(0, 8)), used=7431, util=100))
            else:
                gpus.append(dict(idle, bus=f"00000000:{b:02X}:00.0", fan="55%", temp=int(rng.integers(70, 78)),
                                 perf="P2", pwr=int(rng.integers(190, 241)), used=7431,
                                 util=int(rng.integers(92, 101))))
        lines += smi_table(t0 + timedelta(seconds=10 * k), "387.26", gpus)
    write("maskrcnn_659_dead_rank_smi.txt", lines)


def k8s_ecc():
    t0, lines = datetime(2021, 9, 29, 10, 0, 0), []
    for k in range(60):  # -l 5
        gpus = [dict(name="Tesla V100-PCIE...", bus="00000000:3B:00.0", fan="N/A", temp=int(rng.integers(62, 67)),
                     perf="P0", pwr=int(rng.integers(205, 245)), cap=250, used=27315, total=32510,
                     util=int(rng.integers(95, 101)), ecc="0"),
                dict(name="Tesla V100-PCIE...", bus="00000000:D8:00.0", fan="N/A", temp=38, perf="P0",
                     pwr=int(rng.integers(36, 40)), cap=250, used=309, total=32510, util=0, ecc="1")]
        lines += smi_table(t0 + timedelta(seconds=5 * k), "450.80.02", gpus)
    write("k8s_device_plugin_267_ecc_smi.txt", lines)


def deepspeech_dmon():
    write("deepspeech_178_dmon_one_sample.txt", [
        "# gpu   pwr  temp    sm   mem   enc   dec  mclk  pclk pviol tviol    fb  bar1 sbecc dbecc   pci rxpci txpci",
        "# Idx     W     C     %     %     %     %   MHz   MHz     %  bool    MB    MB  errs  errs  errs  MB/s  MB/s",
        "    0   111    83    25     7     0     0  4513  1683     0     0 11651     2     -     -     0    41     8",
        "    1   111    84    18     5     0     0  4513  1733     0     0 11653     2     -     -     0    25    14",
        "    2   112    80    24     7     0     0  4513  1759     0     0 11653     2     -     -     0    33    10",
        "    3    86    70    18     6     0     0  4513  1784     0     0 11660     2     -     -     0    62     5"])


def megatron_spiky():
    t0, rows = datetime(2025, 2, 18, 3, 0, 0), []
    for k in range(600):
        t = t0 + timedelta(seconds=k)
        for g in range(8):
            util = int(rng.integers(70, 91)) if rng.random() < 0.12 else int(rng.integers(97, 101))
            rows.append([stamp(t + timedelta(milliseconds=3 * g)), str(g), f"{util} %",
                         f"{int(rng.integers(1965, 1981))} MHz", f"{615 + rng.normal(0, 15):.2f} W", "700.00 W",
                         f"{int(rng.integers(58, 66))}"])
    query_csv("megatron_1415_spiky_util.csv",
              ["timestamp", "index", "utilization.gpu [%]", "clocks.sm [MHz]", "power.draw [W]",
               "power.limit [W]", "temperature.gpu"], rows)


def rtx6kpro_pcie():
    t0, rows = datetime(2026, 8, 28, 9, 0, 0), []
    buses = ("21", "41", "61", "81", "A1", "C1", "E3", "F1")
    for k in range(120):
        t = t0 + timedelta(seconds=5 * k)
        for g, bus in enumerate(buses):
            gen = 2 if bus == "E3" else 5
            rows.append([stamp(t + timedelta(milliseconds=4 * g)), str(g), f"00000000:{bus}:00.0",
                         f"{int(rng.integers(99, 101))} %", f"{520 + rng.normal(0, 25):.2f} W", "600.00 W",
                         str(gen), "5", "16", "16"])
    query_csv("rtx6kpro_88_pcie_gen2.csv",
              ["timestamp", "index", "pci.bus_id", "utilization.gpu [%]", "power.draw [W]", "power.limit [W]",
               "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max"],
              rows)


if __name__ == "__main__":
    megengine()
    pytorch_36285()
    matt_thermal()
    open_clip_q()
    maskrcnn_dead_rank()
    k8s_ecc()
    deepspeech_dmon()
    megatron_spiky()
    rtx6kpro_pcie()
