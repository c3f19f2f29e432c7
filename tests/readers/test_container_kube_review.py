"""Review of the container / kubectl / sacct-comment readers (h42): inputs written here from the tools' own output
formats and from ordinary training logs that merely look alike."""

from __future__ import annotations

import pytest

from playbook.readers import detect, read_paths, slurm_usage


def _loguru_log(json_message: bool) -> str:
    lines = []
    for i in range(1, 41):
        t = f"2024-05-01 12:{i // 60:02d}:{i % 60:02d}.000"
        lines.append(f"{t} | INFO     | train:loop:88 - step {i * 10}/400 loss {2.0 - i * 0.01:.3f} step_time 0.512s")
        if i % 10 == 0:
            metrics = '{"gpu_util": 97.0, "gpu_mem_gb": 21.5, "lr": 0.0003}'
            lines.append(f"{t} | INFO     | {metrics}" if json_message else
                         f"{t} | INFO     | train:loop:95 - metrics {metrics}")
    return "\n".join(lines) + "\n"


def test_a_loguru_log_with_a_json_metrics_line_is_no_job_comment():
    """loguru's `time | level | message` lines with a JSON metrics message are a training log, not sacct cells."""
    for json_message in (False, True):
        text = _loguru_log(json_message)
        assert not slurm_usage.sniff(text)
        assert detect.matches(text)[0] == "lines"


def test_a_job_comment_paste_still_sniffs():
    assert slurm_usage.sniff('$ sacct -j 77 -o JobID,Comment -p\nJobID|Comment|\n77|{"gpu_util": 55, "ngpu": 1}|\n'
                             "77.batch||\n77.extern||\n")


LIGHTNING = "".join(f"Epoch 0: {p:3d}%|{'█' * (p // 10):<10}| {p * 5}/500 [00:{p // 10:02d}<01:30,  5.00it/s, "
                    f"loss={2.3 - p / 100:.2f}, v_num=0]\n" for p in range(10, 101, 10))


def test_kubectl_logs_prints_the_pods_own_log_not_kubectls():
    """`kubectl logs POD` prints the training's own lines (Lightning's `Epoch 0: 10%|...` read like `Key: value`
    fields): the log, not kubectl's printers; it was taken whole by kube_status and refused."""
    from playbook.readers import kube_status

    text = "$ kubectl logs -f trainer-worker-0\n" + LIGHTNING + "Status: epoch 0 done\n"
    assert not kube_status.sniff(text)
    assert detect.matches(text)[0] == "lines"


def _cadvisor(samples: list[tuple[int, int]]) -> str:
    out = []
    for n, (periods, throttled) in enumerate(samples):
        ts = 1_700_000_000_000 + 60_000 * n
        out += [f'container_cpu_cfs_periods_total{{container="trainer",pod="job-0"}} {periods} {ts}',
                f'container_cpu_cfs_throttled_periods_total{{container="trainer",pod="job-0"}} {throttled} {ts}']
    return "\n".join(out) + "\n"


def test_a_cadvisor_counter_that_resets_counts_its_increase_like_prometheus(tmp_path):
    """The container restarted between the second and third scrape (its counters start again from 0): the window's
    increase is 1000 + 500 + 1000 periods, 900 + 450 + 900 throttled (90 %), as Prometheus' increase() counts a
    reset; last − first (negative, taken as 0) had dropped the cgroup and refused the file."""
    from playbook.analysis.container_costs import summarize

    path = tmp_path / "cadvisor.txt"
    path.write_text(_cadvisor([(100000, 50000), (101000, 50900), (500, 450), (1500, 1350)]), encoding="utf-8")
    summary = summarize(read_paths([path]))
    (group,) = summary["cgroups"]
    assert (group["name"], group["periods"], group["throttled"]) == ("job-0/trainer", 2500, 2250)
    assert summary["findings"][0]["level"] == "high"


def _shm(tmp_path, text: str) -> list[tuple[float, float]]:
    from playbook.readers import container_limits

    path = tmp_path / "df.txt"
    path.write_text(text, encoding="utf-8")
    assert container_limits.sniff(text)
    bundle = read_paths([path])
    (section,) = bundle.meta.values()
    return [(round(m["size_mib"], 3), round(m["used_mib"], 3)) for m in section["shm"]]


def test_df_inode_counts_are_no_sizes(tmp_path):
    """`df -i` prints inodes under the same columns: 32768 inodes were read as a 32 MiB /dev/shm nearly full."""
    text = ("$ df -h /dev/shm\nFilesystem      Size  Used Avail Use% Mounted on\nshm  16G  1.2G   15G   8% /dev/shm\n"
            "$ df -i /dev/shm\nFilesystem      Inodes IUsed   IFree IUse% Mounted on\n"
            "shm              32768 32700      68  100% /dev/shm\n")
    assert _shm(tmp_path, text) == [(16384.0, 1228.8)]
    # without the command line the header says it
    assert _shm(tmp_path, text.replace("$ df -i /dev/shm\n", "")) == [(16384.0, 1228.8)]


def test_df_block_size_comes_from_the_header(tmp_path):
    """`df -B1` prints bytes under `1B-blocks` (were read as KiB: 64 MiB as 64 GiB); `-B1M` under `1M-blocks`."""
    assert _shm(tmp_path, "$ df -B1 /dev/shm\nFilesystem     1B-blocks  Used Available Use% Mounted on\n"
                          "shm             67108864 0 67108864   0% /dev/shm\n") == [(64.0, 0.0)]
    assert _shm(tmp_path, "Filesystem     1M-blocks  Used Available Use% Mounted on\n"
                          "shm                   64    60         4  94% /dev/shm\n") == [(64.0, 60.0)]


def test_df_with_a_type_column(tmp_path):
    """`df -hT` puts the filesystem type after its name (the lines were not read at all)."""
    assert _shm(tmp_path, "$ df -hT\nFilesystem     Type     Size  Used Avail Use% Mounted on\n"
                          "overlay        overlay  100G   20G   80G  20% /\n"
                          "shm            tmpfs     64M   60M  4.0M  94% /dev/shm\n") == [(64.0, 60.0)]


def test_a_grep_option_is_not_dfs(tmp_path):
    assert _shm(tmp_path, "$ df -k | grep -i shm\nshm 65536 1024 64512 2% /dev/shm\n") == [(64.0, 1.0)]


DESCRIBE = """$ kubectl describe pod trainer-0 -n ml
Name:             trainer-0
Namespace:        ml
Labels:           app=trainer
                  training.kubeflow.org/job-name=bert
                  training.kubeflow.org/replica-type=master
Status:           Running
Containers:
  pytorch:
    Image:          nvcr.io/nvidia/pytorch:24.03-py3
    Command:
      torchrun
      --nproc_per_node=8
      train.py
    State:          Running
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    Restart Count:  1
    Limits:
      cpu:             16
      memory:          64Gi
      nvidia.com/gpu:  8
    Requests:
      cpu:             16
      memory:          64Gi
      nvidia.com/gpu:  8
    Mounts:
      /dev/shm from dshm (rw)
      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-x (ro)
Conditions:
  Type              Status
  Initialized       True
  Ready             True
  ContainersReady   True
  PodScheduled      True
Volumes:
  dshm:
    Type:       EmptyDir (a temporary directory that shares a pod's lifetime)
    Medium:     Memory
Tolerations:                 node.kubernetes.io/not-ready:NoExecute op=Exists for 300s
                             node.kubernetes.io/unreachable:NoExecute op=Exists for 300s
Events:
  Type     Reason   Age                From     Message
  ----     ------   ----               ----     -------
  Normal   Started  12m (x2 over 50m)  kubelet  Started container pytorch
"""


def test_a_whole_describe_pod_is_kubectls_output(tmp_path):
    """kubectl's describe printer indents the continuation of a field (Labels, Tolerations), a container's command,
    its limits (`cpu: 16`), mounts and the conditions table: kubectl's too, not lines outside its grammar (a whole
    describe was refused and the OOM kill named 'describe')."""
    from playbook.readers import kube_status

    assert kube_status.sniff(DESCRIBE)
    path = tmp_path / "describe.txt"
    path.write_text(DESCRIBE, encoding="utf-8")
    events = read_paths([path]).events
    assert list(zip(events["kind"], events["host"], strict=True)) == [("host_oom", "trainer-0")]


def test_a_job_comment_of_a_job_on_no_gpu_is_no_gpu_work(tmp_path):
    """A CPU job's comment (`"ngpu": 0`, every GPU figure 0) is no GPU idle: it was read as GPUs idle 100 % of the
    job (unexplained_slowdown); TRESUsageIn* passes over such a step the same way."""
    from playbook.core.errors import PlaybookError

    path = tmp_path / "sacct.txt"
    path.write_text('$ sacct -j 55 -o JobID,Comment -p\nJobID|Comment|\n55|{"gpu_util": 0.0, "gpu_mem_max": 0.0, '
                    '"gpu_power": 0.0, "ncpu": 4, "ngpu": 0}|\n55.batch||\n', encoding="utf-8")
    with pytest.raises(PlaybookError, match="sacct.txt: "):  # one line naming the file: nothing on a GPU
        read_paths([path])
    # a GPU the job held and never used is the idle it is
    path.write_text('55|{"gpu_util": 0.0, "gpu_mem_max": 0.0, "ngpu": 1}|\n', encoding="utf-8")
    from playbook.analysis.job_usage import jobs_of

    (job,) = jobs_of(read_paths([path]))
    assert (job["util_pct"], job["gpus"]) == (0.0, 1)


def test_prompts_with_a_space_or_a_host_name_the_command_and_the_cgroup(tmp_path):
    """RHEL's `[user@host dir]$` and conda's `(base) ` prompts hold a space: `df -m` after one was not seen, its MiB
    read as KiB (768 MiB as 0.75 MiB: memory_pressure high); `user@host:/path#` names the cgroup by the path."""
    from playbook.analysis.container_costs import summarize

    path = tmp_path / "paste.txt"
    path.write_text("(base) [alice@gpu3 ~]$ df -m | grep shm\nshm 768 12 756 2% /dev/shm\n"
                    "root@trainer-0:/sys/fs/cgroup# cat cpu.stat\nnr_periods 100\nnr_throttled 0\n"
                    "throttled_usec 0\n", encoding="utf-8")
    summary = summarize(read_paths([path]))
    assert [(m["size_mib"], m["used_mib"]) for m in summary["shm"]] == [(768.0, 12.0)]
    assert [g["name"] for g in summary["cgroups"]] == ["/sys/fs/cgroup"]


@pytest.mark.parametrize("prompt", ["[alice@login1 ~]$ ", "(base) alice@login1:~$ "])
def test_kubectl_after_a_prompt_with_a_space_is_its_command(tmp_path, prompt):
    """A RHEL or conda prompt before kubectl: the paste was not kubectl's (the command an unknown line), the
    eviction named by the file, not the pod."""
    path = tmp_path / "k.txt"
    path.write_text(f"{prompt}kubectl describe pod trainer-0 -n ml\nStatus:   Failed\nReason:   Evicted\n"
                    "Message:  The node was low on resource: memory.\n", encoding="utf-8")
    assert detect.matches(path.read_text())[0] == "kube_status"
    assert list(read_paths([path]).events["host"]) == ["trainer-0"]


def test_a_training_log_after_get_pods_is_not_read_as_describe_fields(tmp_path):
    """`Key: value` lines are kubectl's only in a describe: Lightning's `Epoch 0: 10%|...` bars pasted after
    `kubectl get pods` were taken as kubectl fields, the whole paste read as kubectl's and the log's steps dropped."""
    from playbook.readers import kube_status

    text = ("$ kubectl get pods\nNAME        READY   STATUS    RESTARTS     AGE\n"
            "trainer-0   1/1     Running   2 (5m ago)   1h\n" + LIGHTNING)
    assert not kube_status.sniff(text)


def test_sacct_after_a_conda_prompt_names_its_fields(tmp_path):
    """`(base) [alice@login1 ~]$ sacct ... -n -p`: the fields come from the command (no header with -n); the
    command after a conda env's prefix was not seen and the step refused."""
    from playbook.analysis.job_usage import jobs_of

    path = tmp_path / "sacct.txt"
    path.write_text("(base) [alice@login1 ~]$ sacct -j 812 -o JobID,TRESUsageInAve -n -p\n"
                    "812.0|cpu=00:40:01,gres/gpumem=3G,gres/gpuutil=22,mem=4G|\n", encoding="utf-8")
    (job,) = jobs_of(read_paths([path]))
    assert (job["job"], job["stat"], job["util_pct"]) == ("812.0", "mean", 22.0)


def test_a_job_comment_after_other_columns_is_read_with_its_job(tmp_path):
    """`sacct -o User,NCPUS,JobID,Comment -p`: the job id is under JobID, not the first cell (the row was refused)."""
    from playbook.analysis.job_usage import jobs_of

    path = tmp_path / "sacct.txt"
    path.write_text('User|NCPUS|JobID|Comment|\nalice|8|4711|{"gpu_util": 61.5, "ngpu": 1}|\nalice|8|4711.batch|||\n',
                    encoding="utf-8")
    (job,) = jobs_of(read_paths([path]))
    assert (job["job"], job["util_pct"]) == ("4711", 61.5)


def test_kubectl_get_all_names_the_pod_without_its_kind(tmp_path):
    """`kubectl get all` (or --show-kind) prints `pod/NAME`: the pod is NAME, as describe and get events name it."""
    path = tmp_path / "all.txt"
    path.write_text("$ kubectl get all\nNAME            READY   STATUS      RESTARTS   AGE\n"
                    "pod/trainer-0   0/1     OOMKilled   0          5m\npod/trainer-1   1/1     Running     0          5m\n",
                    encoding="utf-8")
    assert list(read_paths([path]).events["host"]) == ["trainer-0"]
