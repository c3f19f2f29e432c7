"""The reading the forty-second held-out round (tests/data/eval/heldout42/SOURCES.md) asked for, on inputs written
here apart from the round's own files, from the tools' documentation:

- cgroup `cpu.stat` blocks, v1 (throttled_time in ns) and v2 (`_usec` keys), named by the prompt that printed them
  (readers.container_limits), priced by analysis.container_costs against the CPUThrottlingHigh threshold;
- `df` lines of /dev/shm in -h, -k and -m units, with or without the header (readers.container_limits);
- a sacct column holding a JSON object of GPU figures (a site's job comment), its meaning from the key words
  (readers.slurm_usage); a lone TRESUsageIn* column is no job id.
"""

from __future__ import annotations

import pytest

from playbook.readers import container_limits, detect, read_paths


def _limits(tmp_path, text: str) -> dict:
    from playbook.analysis.container_costs import summarize

    path = tmp_path / "paste.txt"
    path.write_text(text, encoding="utf-8")
    assert detect.matches(text)[0] == "container_limits"
    return summarize(read_paths([path]))


V2 = """root@node7:/# cat /sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/trainer.scope/cpu.stat
usage_usec 600000000
user_usec 590000000
system_usec 10000000
core_sched.force_idle_usec 0
nr_periods 12000
nr_throttled 3600
throttled_usec 150000000
nr_bursts 0
burst_usec 0
"""


def test_a_v2_block_is_named_by_its_path_and_priced_in_seconds(tmp_path):
    summary = _limits(tmp_path, V2)
    (group,) = summary["cgroups"]
    assert group == {"name": "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/trainer.scope", "version": 2,
                     "periods": 12000, "throttled": 3600, "throttled_s": 150.0, "usage_s": 600.0}
    (finding,) = summary["findings"]
    assert finding["hypothesis"] == "data_starvation" and finding["level"] == "high"  # 30 % ≥ 25 %
    assert finding["hosts"] == [group["name"]]
    assert "3,600 of 12,000 CFS periods (30%)" in finding["evidence"]
    assert "kept waiting 20% of the CPU time it sought" in finding["evidence"]  # 150 / (600 + 150)


def test_v1_throttled_time_is_nanoseconds_and_a_tenth_of_the_periods_is_moderate(tmp_path):
    summary = _limits(tmp_path, "$ cat /sys/fs/cgroup/cpu,cpuacct/cpu.stat\nnr_periods 200\nnr_throttled 20\n"
                                "throttled_time 2500000000\n")
    (group,) = summary["cgroups"]
    assert (group["version"], group["throttled_s"], group["usage_s"]) == (1, 2.5, None)
    assert group["name"] == "/sys/fs/cgroup/cpu,cpuacct"
    (finding,) = summary["findings"]
    assert finding["level"] == "moderate" and "2.5 s stopped" in finding["evidence"]


def test_two_blocks_without_a_prompt_between_are_two_cgroups(tmp_path):
    summary = _limits(tmp_path, "nr_periods 50\nnr_throttled 0\nthrottled_time 0\n\n"
                                "nr_periods 400\nnr_throttled 3\nthrottled_time 4000000\n")
    assert [(g["name"], g["periods"], g["throttled"]) for g in summary["cgroups"]] == [
        ("cgroup 1", 50, 0), ("cgroup 2", 400, 3)]
    assert summary["findings"] == []  # 0 % and 0.75 %: the quota is no cause
    assert len(summary["vouched"]) == 2
    assert "never stopped it" in summary["vouched"][0] and "seldom stopped it" in summary["vouched"][1]


@pytest.mark.parametrize(("text", "size", "used", "level"), [
    ("$ df -h\nFilesystem      Size  Used Avail Use% Mounted on\noverlay         200G   31G  170G  16% /\n"
     "tmpfs            64M     0   64M   0% /dev\nshm             512M  480M   32M  94% /dev/shm\n", 512.0, 480.0,
     "high"),  # nearly full
    ("$ df -k /dev/shm\nFilesystem     1K-blocks  Used Available Use% Mounted on\nshm                65536     0"
     "     65536   0% /dev/shm\n", 64.0, 0.0, "high"),  # Docker's default, in KiB blocks
    ("# df -m | grep shm\nshm 768 12 756 2% /dev/shm\n", 768.0, 12.0, "moderate"),
])
def test_df_of_dev_shm_in_every_unit(tmp_path, text, size, used, level):
    summary = _limits(tmp_path, text)
    (shm,) = summary["shm"]
    assert (shm["size_mib"], shm["used_mib"]) == (pytest.approx(size), pytest.approx(used))
    (finding,) = summary["findings"]
    assert finding["hypothesis"] == "memory_pressure" and finding["level"] == level


def test_a_roomy_dev_shm_is_no_finding(tmp_path):
    summary = _limits(tmp_path, "tmpfs            16G  1.2G   15G   8% /dev/shm\n")
    assert summary["findings"] == [] and summary["shm"][0]["size_mib"] == 16 * 1024


def test_a_log_that_mentions_the_counters_is_still_a_log():
    log = "\n".join([f"epoch 1 step {i} loss 0.{i} time 0.31s" for i in range(20)] + ["nr_periods 10",
                                                                                        "nr_throttled 2"])
    assert not container_limits.sniff(log)
    assert not container_limits.sniff("Filesystem Size Used Avail Use% Mounted on\n/dev/sda1 100G 1G 99G 1% /\n")


def test_a_throttled_cgroup_is_the_verdict_and_an_unthrottled_one_no_loss(tmp_path):
    from playbook.diagnosis import diagnose

    bad, good = tmp_path / "bad.txt", tmp_path / "good.txt"
    bad.write_text(V2, encoding="utf-8")
    good.write_text("nr_periods 5000\nnr_throttled 0\nthrottled_time 0\n", encoding="utf-8")
    assert diagnose(read_paths([bad])).verdict["id"] == "data_starvation"
    verdict = diagnose(read_paths([good])).verdict
    assert verdict["id"] in ("healthy", "insufficient_data")
    if verdict["id"] == "insufficient_data":  # says what it read, not "nothing usable"
        assert "a container's limits" in verdict["sentence"] and "nothing usable" not in verdict["sentence"]


def test_a_job_comment_json_reads_by_its_key_words(tmp_path):
    from playbook.analysis.job_usage import jobs_of

    path = tmp_path / "sacct.txt"
    path.write_text("JobID|Comment\n4711|{\"ncpu\": 8, \"max_gpu_util\": 45, \"gpu_mem_gb\": 3.5, \"gpus\": 2}\n"
                    "4712|{\"note\": \"no gpu here\"}\n", encoding="utf-8")
    (job,) = jobs_of(read_paths([path]))
    assert (job["job"], job["stat"], job["util_pct"], job["mem_mib"], job["gpus"]) == ("4711", "max", 45.0, 3584.0, 2)


def test_a_json_document_without_sacct_cells_is_not_a_job_comment():
    from playbook.readers import slurm_usage

    assert not slurm_usage.sniff('{"gpu_util": 99.0, "gpu_mem_max": 1279.0}\n')
    assert slurm_usage.sniff('   {"gpu_util": 80, "ngpu": 1}|\n')


def test_a_lone_usage_column_names_no_job(tmp_path):
    from playbook.analysis.job_usage import jobs_of

    path = tmp_path / "sacct.txt"
    path.write_text("$ sacct -j 9 -o TRESUsageInAve -p\ncpu=00:10:00,gres/gpumem=2G,gres/gpuutil=40,mem=1G|\n",
                    encoding="utf-8")
    (job,) = jobs_of(read_paths([path]))
    assert (job["job"], job["util_pct"], job["mem_mib"]) == ("", 40.0, 2048.0)


def _pod_events(tmp_path, text: str):
    path = tmp_path / "kubectl.txt"
    path.write_text(text, encoding="utf-8")
    assert detect.matches(text)[0] == "kube_status"
    ev = read_paths([path]).events
    return sorted(zip(ev["host"], ev["kind"], strict=True))


def test_get_pods_rows_with_a_namespace_name_the_pods_that_ended(tmp_path):
    text = ("$ kubectl get pods -A\n"
            "NAMESPACE   NAME                 READY   STATUS             RESTARTS      AGE\n"
            "ml          trainer-worker-0     0/1     OOMKilled          2 (40s ago)   3h\n"
            "ml          trainer-worker-1     0/1     CrashLoopBackOff   5 (2m ago)    3h\n"
            "ml          trainer-worker-2     1/1     Running            0             3h\n"
            "ml          tensorboard-5d8f     1/1     Running            1 (1h ago)    3h\n")
    assert _pod_events(tmp_path, text) == [("tensorboard-5d8f", "worker_failed"), ("trainer-worker-0", "host_oom"),
                                           ("trainer-worker-1", "worker_failed")]


def test_describe_reads_on_the_pod_named_by_its_name_field(tmp_path):
    text = ("# kubectl describe -n ml po\n"
            "Name:         llm-sft-master-0\n"
            "Namespace:    ml\n"
            "Containers:\n"
            "  pytorch:\n"
            "    State:          Waiting\n"
            "      Reason:       CrashLoopBackOff\n"
            "    Last State:     Terminated\n"
            "      Reason:       OOMKilled\n"
            "      Exit Code:    137\n"
            "Events:\n"
            "  Type     Reason   Age   From     Message\n"
            "  ----     ------   ----  ----     -------\n"
            "  Warning  Evicted  2m    kubelet  The node was low on resource: ephemeral-storage. Threshold quantity: "
            "1Gi, available: 200Mi.\n")
    assert _pod_events(tmp_path, text) == [("llm-sft-master-0", "host_oom"), ("llm-sft-master-0", "job_cancelled")]


def test_get_events_rows_are_on_their_object(tmp_path):
    text = ("LAST SEEN   TYPE      REASON    OBJECT          MESSAGE\n"
            "3m          Warning   Evicted   pod/data-w-1    The node had condition: [MemoryPressure].\n"
            "3m          Normal    Killing   pod/data-w-1    Stopping container loader\n")
    assert _pod_events(tmp_path, text) == [("data-w-1", "host_oom")]


def test_a_training_log_that_runs_kubectl_is_still_a_log():
    from playbook.readers import kube_status

    log = "\n".join(["$ kubectl logs trainer-0"] + [f"step {i} loss 0.{i} 0.31 s/it" for i in range(20)])
    assert not kube_status.sniff(log)


def test_an_evicted_pod_is_named_by_the_memory_verdict(tmp_path):
    from playbook.diagnosis import diagnose

    path = tmp_path / "kubectl.txt"
    path.write_text("$ kubectl describe pod resnet-train-7\nStatus:   Failed\nReason:   Evicted\n"
                    "Message:  The node was low on resource: memory. Container main was using 61Gi, which exceeds "
                    "its request of 32Gi.\n", encoding="utf-8")
    d = diagnose(read_paths([path]))
    assert d.verdict["id"] == "memory_pressure" and d.hypotheses[0]["names"] == ["resnet-train-7"]


CADVISOR = """# HELP container_cpu_cfs_periods_total Number of elapsed enforcement period intervals.
# TYPE container_cpu_cfs_periods_total counter
container_cpu_cfs_periods_total{container="loader",namespace="ml",pod="vit-train-0"} {p}
container_cpu_cfs_periods_total{container="",namespace="ml",pod="vit-train-0"} {p}
# HELP container_cpu_cfs_throttled_periods_total Number of throttled period intervals.
# TYPE container_cpu_cfs_throttled_periods_total counter
container_cpu_cfs_throttled_periods_total{container="loader",namespace="ml",pod="vit-train-0"} {t}
container_cpu_cfs_throttled_periods_total{container="",namespace="ml",pod="vit-train-0"} {t}
# HELP container_cpu_cfs_throttled_seconds_total Total time duration the container has been throttled.
# TYPE container_cpu_cfs_throttled_seconds_total counter
container_cpu_cfs_throttled_seconds_total{container="loader",namespace="ml",pod="vit-train-0"} {s}
container_cpu_usage_seconds_total{container="loader",cpu="total",namespace="ml",pod="vit-train-0"} {u}
"""


def _scrape(p, t, s, u):
    return CADVISOR.replace("{p}", str(p)).replace("{t}", str(t)).replace("{s}", str(s)).replace("{u}", str(u))


def test_cadvisor_series_read_as_the_pods_and_containers_cgroups(tmp_path):
    summary = _limits(tmp_path, _scrape(1000, 400, 90.5, 300.0))
    groups = {g["name"]: g for g in summary["cgroups"]}
    assert set(groups) == {"vit-train-0/loader", "vit-train-0"}  # the pod's own cgroup: container=""
    assert (groups["vit-train-0/loader"]["throttled"], groups["vit-train-0/loader"]["throttled_s"],
            groups["vit-train-0/loader"]["usage_s"]) == (400, 90.5, 300.0)
    (finding,) = summary["findings"]  # the container's cgroup is inside the pod's: one quota, one finding
    assert finding["level"] == "high" and finding["hosts"] == ["vit-train-0", "vit-train-0/loader"]  # 40 %


def test_a_scrape_loop_counts_the_windows_increase_not_the_totals(tmp_path):
    """Two scrapes: since the first, 100 periods of which 2 throttled (2 %: no cause), although the totals since
    the container began read 40 %."""
    summary = _limits(tmp_path, _scrape(1000, 400, 90.5, 300.0) + _scrape(1100, 402, 90.6, 310.0))
    loader = next(g for g in summary["cgroups"] if g["name"] == "vit-train-0/loader")
    assert (loader["periods"], loader["throttled"]) == (100, 2)
    assert loader["throttled_s"] == pytest.approx(0.1) and loader["usage_s"] == pytest.approx(10.0)
    assert summary["findings"] == []


def test_info_lists_each_cgroup_and_dev_shm(tmp_path):
    from playbook.analysis.inventory import has_content, render, summarize

    path = tmp_path / "limits.txt"
    path.write_text(V2 + "$ df -h /dev/shm\nshm 64M 12M 52M 19% /dev/shm\n", encoding="utf-8")
    summary = summarize(read_paths([path]))
    assert has_content(summary)
    text = render(summary)
    assert "trainer.scope: cgroup v2, throttled 3,600 of 12,000 CFS periods (30%)" in text
    assert "/dev/shm (shm): 64 MiB, 12 MiB used" in text


def test_kubectl_output_with_no_pod_ended_is_refused_in_one_line(tmp_path):
    from playbook.core.errors import PlaybookError

    path = tmp_path / "pods.txt"
    path.write_text("$ kubectl get pods\nNAME      READY   STATUS    RESTARTS   AGE\ntrain-0   1/1     Running   0"
                    "          2d\n", encoding="utf-8")
    with pytest.raises(PlaybookError, match="no pod ended"):
        read_paths([path])


def test_sibling_cgroups_are_two_findings_nested_ones_one(tmp_path):
    block = "nr_periods 100\nnr_throttled 50\nthrottled_usec 9000000\n"
    text = "".join(f"$ cat /sys/fs/cgroup/{where}/cpu.stat\n{block}" for where in (
        "kubepods.slice/pod-a.slice", "kubepods.slice/pod-a.slice/loader.scope", "kubepods.slice/pod-b.slice"))
    summary = _limits(tmp_path, text)
    assert sorted(f["hosts"] for f in summary["findings"]) == [
        ["/sys/fs/cgroup/kubepods.slice/pod-a.slice", "/sys/fs/cgroup/kubepods.slice/pod-a.slice/loader.scope"],
        ["/sys/fs/cgroup/kubepods.slice/pod-b.slice"]]


@pytest.mark.parametrize("command", ["sstat -a -j 812 -no JobID,TRESUsageInAve -p",
                                     "[root@gpu3 ~]# sstat -j 812 --format=JobID,TRESUsageInAve -n -p"])
def test_sstat_of_a_running_step_reads_like_sacct(tmp_path, command):
    from playbook.analysis.job_usage import jobs_of

    path = tmp_path / "sstat.txt"
    path.write_text(f"{command}\n812.0|cpu=00:40:01,gres/gpumem=3G,gres/gpuutil=22,mem=4G|\n", encoding="utf-8")
    (job,) = jobs_of(read_paths([path]))
    assert (job["job"], job["stat"], job["util_pct"], job["mem_mib"]) == ("812.0", "mean", 22.0, 3072.0)


def test_every_line_of_a_v2_block_is_understood(tmp_path):
    """The kernel's optional keys (core_sched.force_idle_usec, nr_bursts, burst_usec) are cpu.stat lines too: no
    line is counted as skipped."""
    path = tmp_path / "cpu.stat"
    path.write_text(V2, encoding="utf-8")
    assert read_paths([path]).warnings == []
