"""Writes the LABELED SYNTHETIC files of the thirty-fourth held-out round (deterministic):
    python tests/data/eval/heldout34/make_heldout34.py

GPU telemetry as experiment trackers and monitoring tools store or export it, in layouts the project had not been
scored on: W&B's run file `wandb-events.jsonl`, an MLflow file-store run directory (one file per metric, the metric's
name only in the path), ClearML's `Task.get_reported_scalars(x_axis="timestamp")` dump, Comet's
`APIExperiment.get_metrics()` list, a loop of `nvidia-smi -q -x`, a loop of `gpustat --json`, and Aim's
`Metric.dataframe(include_name=True, include_context=True)` concatenated to CSV. Each layout follows its writer's
source (SOURCES.md cites where). Each situation comes from a public issue thread that states figures and a cause
(SOURCES.md), none cited by an earlier round. No thread holds a pasted time series in these layouts, so every file
is written here from the thread's stated figures; what a thread does not state is drawn and named below.

- wandb_events_imagen_348.jsonl: lucidrains/imagen-pytorch#348 — 'GPU usage stays at ~25%, while GPU memory ... is
  almost 100% of available 24Gb'; replies name slow batch loading first. Drawn: W&B's system sampler (2 s samples,
  15 averaged into one row, so a row per ~30 s), 2 h, one 24 GB GPU at 350 W cap: gpu 17-34 % (mean ~25), memory
  allocated 96-99 %, 110-140 W.
- mlflow_ge2e_3/: funcwj/ge2e-speaker-verification#3 — 'Most of the time the GPU-Util is 0 (the gpu memory is
  indeed allocated)'; 'the runtime of the _sample func of SpeakerLoader ... cost 30-40s' against the maintainer's
  125 s per 1000 steps. Drawn: MLflow system metrics (10 s sampling, one sample a row), 1 h, one 11 GB GPU: one step
  (~0.2 s on the GPU) every 30-40 s, so ~6 % of samples catch it (15-70 %), the rest 0 %; 4.2 GB held throughout.
- clearml_scalars_diffsynth_786.json: modelscope/DiffSynth-Studio#786 — 'For every step, VideoDataset returns videos on
  the CPU and then transfers them to the GPU. This process is a bit slow and leads to fluctuating GPU utilization'.
  Drawn: ClearML's resource monitor (2 samples/s averaged over 30 s), 80 min, one 80 GB GPU: 30-s means 38-72 %
  (mean ~55), 61-66 GB used, `cpu_usage` 11-14 %.
- comet_metrics_digits_1443.json: NVIDIA/DIGITS#1443 — healthy: 'GPU Utilization 99%', 'Temperature 77 °C',
  'Memory 6.04 GB / 11.9 GB' on a TITAN X (Pascal) while one CPU core sits at 100 % (the data loader); the answer:
  'I dont think its an issue'. Drawn: Comet system metrics every 15 s, 30 min: 97-100 %, 225-245 W of 250 W,
  76-78 °C, 6.04-6.06 GB used.
- nvsmi_xml_matconvnet_fcn_40.xml: vlfeat/matconvnet-fcn#40 — a GTX 1080: 'At first, the speed is about 6Hz. However,
  after about an hour, the speed is about 5Hz ... If we restart the training process, the speed can recover'; reply:
  'I think your gpu overheated, so the fps become lower'. Drawn: `nvidia-smi -q -x -l 60`, 100 min: utilization
  97-99 % throughout, temperature 46 -> 83 °C over the first 40 min, then the thermal slowdown holds it at 83-84 °C
  while the graphics clock falls from 1898 to ~1580 MHz (-17 %, the thread's 6 -> 5 Hz) and power from ~175 to ~150 W.
- gpustat_json_thred_26.log: nouhadziri/THRED#26 — 'when I try 4 cards, there is also one card's GPU-Util always 0%
  ... the GPU-Util of one of the cards is still 20%'; 'An epoch training time on 8 gpus is almost 20 minutes longer
  than on a single gpu' (the model's towers are sharded over the cards by the code). Drawn: `gpustat --json` every
  5 s, 8 min, 4 GTX 1080 Ti: GPU 0 45-65 %, GPU 1 35-55 %, GPU 2 12-28 %, GPU 3 0 % holding 10.4 GB.
- aim_system_revisual_r1_8.csv: CSfufu/Revisual-R1#8 — GRPO (verl) on Qwen2.5-VL-7B: 'most of the time, the training
  process will stuck ... The CPU Util rate is very high when GPU Util rate is 0%, until it stucks for a long time'.
  Drawn: Aim's resource tracker (10 s), 60 min, 4 GPUs: cycles of ~6 min with the GPUs at 65-100 % (rollout and update)
  then 3-5 min with all at 0 % (memory held at 70-75 %) while `__system__cpu` reads 90-100 %.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RNG = np.random.RandomState(34)


def _r(lo: float, hi: float) -> float:
    return float(RNG.uniform(lo, hi))


def wandb_events() -> str:
    t0 = 1684160000.0  # 2023-05-15 14:13:20 UTC
    rows = []
    for i in range(240):  # a row per 30 s, 2 h
        util = _r(17, 34)
        watts = 105 + util * 1.2 + _r(-3, 3)
        rows.append({
            "system.gpu.0.gpu": round(util, 2), "system.gpu.0.memory": round(util * 0.55, 2),
            "system.gpu.0.memoryAllocated": round(_r(96, 99), 2), "system.gpu.0.temp": round(_r(58, 62), 2),
            "system.gpu.0.powerWatts": round(watts, 2), "system.gpu.0.powerPercent": round(100 * watts / 350, 2),
            "system.cpu": round(_r(9, 14), 2), "system.memory": round(_r(31, 33), 2),
            "system.disk": 61.2, "system.proc.memory.rssMB": round(_r(5210, 5260), 2),
            "system.proc.cpu.threads": 38,
            "_wandb": True, "_timestamp": round(t0 + 30 * (i + 1) + _r(0, 0.4), 6), "_runtime": 30 * (i + 1),
        })
    return "".join(json.dumps(r) + "\n" for r in rows)


def mlflow_run(root: Path) -> None:
    run = root / "mlruns" / "1" / "3f9c1e0a7b2d4c6e8a0b1c2d3e4f5a6b"
    metrics = run / "metrics" / "system"
    metrics.mkdir(parents=True, exist_ok=True)
    start_ms = 1553490000000  # 2019-03-25 05:00:00 UTC
    (run / "meta.yaml").write_text(
        "artifact_uri: file:///home/user/ge2e/mlruns/1/3f9c1e0a7b2d4c6e8a0b1c2d3e4f5a6b/artifacts\n"
        "end_time: null\nentry_point_name: ''\nexperiment_id: '1'\nlifecycle_stage: active\n"
        "name: ge2e-sre04\nrun_id: 3f9c1e0a7b2d4c6e8a0b1c2d3e4f5a6b\n"
        "run_uuid: 3f9c1e0a7b2d4c6e8a0b1c2d3e4f5a6b\nsource_name: ''\nsource_type: 4\nsource_version: ''\n"
        f"start_time: {start_ms}\nstatus: 1\ntags: []\nuser_id: user\n")
    util, mem_mb, mem_pct, cpu = [], [], [], []
    next_step = _r(2, 30)
    for k in range(360):  # 10 s sampling, 1 h
        ts = start_ms + 10_000 * (k + 1) + int(_r(0, 60))
        t = 10.0 * (k + 1)
        busy = 0.0
        if t >= next_step:  # a step fell in this 10 s window: the sample catches it ~6 % of the time
            if RNG.uniform() < 0.2:
                busy = round(_r(15, 70), 1)
            next_step += _r(30, 40)
        util.append(f"{ts} {busy} {k}\n")
        used = 4210.0 + round(_r(0, 4), 1)
        mem_mb.append(f"{ts} {used} {k}\n")
        mem_pct.append(f"{ts} {round(100 * used / 11264, 2)} {k}\n")
        cpu.append(f"{ts} {round(_r(11, 14), 1)} {k}\n")
    (metrics / "gpu_0_utilization_percentage").write_text("".join(util))
    (metrics / "gpu_0_memory_usage_megabytes").write_text("".join(mem_mb))
    (metrics / "gpu_0_memory_usage_percentage").write_text("".join(mem_pct))
    (metrics / "cpu_utilization_percentage").write_text("".join(cpu))


def clearml_scalars() -> str:
    t0 = 1754990000000  # 2025-08-12 09:13:20 UTC (ms)
    xs, util, used, free, temp, cpu = [], [], [], [], [], []
    for i in range(160):  # 30 s reports, 80 min
        xs.append(t0 + 30_000 * (i + 1) + int(_r(0, 300)))
        u = _r(38, 72)
        util.append(round(u, 3))
        g = _r(61, 66)
        used.append(round(g, 3))
        free.append(round(79.6 - g, 3))
        temp.append(round(_r(55, 63), 3))
        cpu.append(round(_r(11, 14), 3))

    def series(name: str, ys: list) -> dict:
        return {"x": xs, "y": ys}  # get_reported_scalars: {title: {series: {"x": [...], "y": [...]}}}

    doc = {
        ":monitor:gpu": {
            "gpu_0_utilization": series("gpu_0_utilization", util),
            "gpu_0_mem_usage": series("gpu_0_mem_usage", [round(100 * g / 79.6, 3) for g in used]),
            "gpu_0_mem_used_gb": series("gpu_0_mem_used_gb", used),
            "gpu_0_mem_free_gb": series("gpu_0_mem_free_gb", free),
            "gpu_0_temperature": series("gpu_0_temperature", temp),
        },
        ":monitor:machine": {
            "cpu_usage": series("cpu_usage", cpu),
            "memory_used_gb": series("memory_used_gb", [round(_r(41, 43), 3) for _ in xs]),
        },
    }
    return json.dumps(doc, indent=1) + "\n"


def comet_metrics() -> str:
    t0 = 1486540000000  # 2017-02-08 07:46:40 UTC (ms)
    out = []
    for i in range(120):  # 15 s, 30 min
        ts = t0 + 15_000 * (i + 1) + int(_r(0, 200))
        for name, value in (("sys.gpu.0.gpu_utilization", round(_r(97, 100))),
                            ("sys.gpu.0.used_memory", round(_r(6.04, 6.06) * 2**30)),
                            ("sys.gpu.0.total_memory", 12788498432),
                            ("sys.gpu.0.power_usage", round(_r(225, 245), 2)),
                            ("sys.gpu.0.temperature", round(_r(76, 78))),
                            ("sys.cpu.percent.avg", round(_r(24, 27), 1))):
            out.append({"metricName": name, "metricValue": str(value), "timestamp": ts, "step": None,
                        "epoch": None, "runContext": None})
    return json.dumps(out, indent=2) + "\n"


def nvsmi_xml() -> str:
    start = datetime(2016, 10, 10, 9, 0, 0)
    docs = []
    for i in range(100):  # 60 s, 100 min
        minute = i
        temp = 46 + 37 * min(minute / 40, 1.0) ** 0.7 + _r(-0.5, 0.5) if minute < 40 else _r(83, 84.4)
        slow = minute >= 40
        clock = 1898 if minute < 40 else 1898 - 318 * min((minute - 40) / 25, 1.0) + _r(-12, 12)
        power = 175 + _r(-4, 4) if minute < 40 else 175 - 25 * min((minute - 40) / 25, 1.0) + _r(-3, 3)
        util = round(_r(97, 99.4))
        stamp = (start + timedelta(seconds=60 * i)).strftime("%a %b %d %H:%M:%S %Y")
        reason = "Active" if slow else "Not Active"
        docs.append(f"""<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v8.dtd">
<nvidia_smi_log>
	<timestamp>{stamp}</timestamp>
	<driver_version>367.57</driver_version>
	<attached_gpus>1</attached_gpus>
	<gpu id="0000:01:00.0">
		<product_name>GeForce GTX 1080</product_name>
		<performance_state>P2</performance_state>
		<clocks_throttle_reasons>
			<clocks_throttle_reason_gpu_idle>Not Active</clocks_throttle_reason_gpu_idle>
			<clocks_throttle_reason_applications_clocks_setting>Not Active</clocks_throttle_reason_applications_clocks_setting>
			<clocks_throttle_reason_sw_power_cap>Not Active</clocks_throttle_reason_sw_power_cap>
			<clocks_throttle_reason_hw_slowdown>{reason}</clocks_throttle_reason_hw_slowdown>
			<clocks_throttle_reason_sync_boost>Not Active</clocks_throttle_reason_sync_boost>
			<clocks_throttle_reason_unknown>Not Active</clocks_throttle_reason_unknown>
		</clocks_throttle_reasons>
		<fb_memory_usage>
			<total>8113 MiB</total>
			<used>5121 MiB</used>
			<free>2992 MiB</free>
		</fb_memory_usage>
		<utilization>
			<gpu_util>{util} %</gpu_util>
			<memory_util>{round(util * 0.6)} %</memory_util>
		</utilization>
		<temperature>
			<gpu_temp>{round(temp)} C</gpu_temp>
			<gpu_temp_max_threshold>99 C</gpu_temp_max_threshold>
			<gpu_temp_slow_threshold>96 C</gpu_temp_slow_threshold>
		</temperature>
		<power_readings>
			<power_state>P2</power_state>
			<power_management>Supported</power_management>
			<power_draw>{power:.2f} W</power_draw>
			<power_limit>180.00 W</power_limit>
		</power_readings>
		<clocks>
			<graphics_clock>{round(clock)} MHz</graphics_clock>
			<sm_clock>{round(clock)} MHz</sm_clock>
			<mem_clock>4513 MHz</mem_clock>
		</clocks>
		<max_clocks>
			<graphics_clock>1911 MHz</graphics_clock>
			<sm_clock>1911 MHz</sm_clock>
			<mem_clock>5005 MHz</mem_clock>
		</max_clocks>
	</gpu>

</nvidia_smi_log>
""")
    return "".join(docs)


def gpustat_json() -> str:
    start = datetime(2020, 5, 13, 10, 0, 0)
    levels = ((45, 65), (35, 55), (12, 28), (0, 0))
    mem = (9850, 9120, 8640, 10420)
    out = []
    for i in range(96):  # 5 s, 8 min
        gpus = []
        for g, (lo, hi) in enumerate(levels):
            util = round(_r(lo, hi)) if hi else 0
            gpus.append({
                "index": g, "uuid": f"GPU-5e1d7c0{g}-2b9a-4f1c-9d3e-7a6b5c4d3e2{g}",
                "name": "GeForce GTX 1080 Ti", "temperature.gpu": 34 + round(util * 0.4),
                "fan.speed": 23 + round(util * 0.3), "utilization.gpu": util,
                "power.draw": 58 + round(util * 1.6), "enforced.power.limit": 250,
                "memory.used": mem[g], "memory.total": 11178,
                "processes": [{"username": "litong", "command": "python", "gpu_memory_usage": mem[g] - 10,
                               "pid": 31415}],
            })
        doc = {"hostname": "gpu-server", "query_time": (start + timedelta(seconds=5 * i, microseconds=137000 + 911 * i))
               .isoformat(), "gpus": gpus}
        out.append(json.dumps(doc, indent=4, separators=(",", ": ")) + "\n")
    return "".join(out)


def aim_csv() -> str:
    start = datetime(2025, 6, 17, 14, 0, 0)
    n = 360  # 10 s, 60 min
    busy = np.zeros(n, dtype=bool)
    t = 0
    while t < n:
        work = int(_r(33, 39))  # ~6 min of rollout and update
        busy[t:t + work] = True
        t += work + int(_r(18, 30))  # then 3-5 min with the GPUs idle and the CPU pegged
    lines = ["idx,step,value,epoch,time,metric.name,metric.context.gpu"]
    for name in ("__system__cpu", "__system__gpu", "__system__gpu_memory_percent"):
        for g in ((None,) if name == "__system__cpu" else range(4)):
            for k in range(n):
                stamp = (start + timedelta(seconds=10 * k, microseconds=int(_r(0, 900000)))).isoformat(" ")
                if name == "__system__cpu":
                    value = _r(90, 100) if not busy[k] else _r(18, 30)
                elif name == "__system__gpu":
                    value = _r(65, 100) if busy[k] else 0.0
                else:
                    value = _r(70, 75)
                lines.append(f"{k},{k},{value:.4f},,{stamp},{name},{'' if g is None else g}")
    return "\n".join(lines) + "\n"


def main() -> None:
    (HERE / "wandb_events_imagen_348.jsonl").write_text(wandb_events())
    mlflow_run(HERE / "mlflow_ge2e_3")
    (HERE / "clearml_scalars_diffsynth_786.json").write_text(clearml_scalars())
    (HERE / "comet_metrics_digits_1443.json").write_text(comet_metrics())
    (HERE / "nvsmi_xml_matconvnet_fcn_40.xml").write_text(nvsmi_xml())
    (HERE / "gpustat_json_thred_26.log").write_text(gpustat_json())
    (HERE / "aim_system_revisual_r1_8.csv").write_text(aim_csv())


if __name__ == "__main__":
    main()
