"""Review of the container / kubectl / sacct-comment readers (h42): inputs written here from the tools' own output
formats and from ordinary training logs that merely look alike."""

from __future__ import annotations

from playbook.readers import detect, slurm_usage


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
