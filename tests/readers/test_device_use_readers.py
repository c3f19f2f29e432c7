"""What a job says of the devices it uses, as the tools print it (readers/device_lines.py): inputs written apart from
tests/data/eval/heldout59 — Lightning's two accelerator-summary wordings, tensor2tensor's multi-GPU and default
shard lists, TensorFlow's MirroredStrategy, `nvidia-smi -L` unlabelled, under Horovod's and rank labels, run twice;
a table pasted with the trainer's lines (readers/nvidia_smi/table.py)."""

from __future__ import annotations

import pytest

from playbook.core.errors import UnknownFormatError
from playbook.model import schema
from playbook.readers import read_paths
from playbook.readers.device_lines import DeviceLines, device_names


def _summary(lines: list[str]) -> dict:
    d = DeviceLines()
    for no, line in enumerate(lines, start=1):
        d.feed(line, no)
    return d.summary()


@pytest.mark.parametrize(("line", "available", "used", "backend"), [
    ("GPU available: True (cuda), used: True", True, True, "cuda"),  # Lightning 2.x
    ("GPU available: True, used: False", True, False, None),  # Lightning 1.x
    ("[2023-05-02 10:01:12] INFO GPU available: False, used: False", False, False, None),
    ("GPU available: True (mps), used: False", True, False, "mps"),
])
def test_the_accelerator_summary_in_both_wordings(line, available, used, backend):
    (a,) = _summary([line])["accelerators"]
    assert (a["kind"], a["available"], a["used"], a["backend"]) == ("GPU", available, used, backend)


def test_a_tpu_line_is_its_own_kind_and_prose_is_not_read():
    s = _summary(["TPU available: False, using: 0 TPU cores", "Is a GPU available: yes, we used it."])
    assert [a["kind"] for a in s["accelerators"]] == ["TPU"] and s["accelerators"][0]["used"] is False


@pytest.mark.parametrize(("line", "devices"), [
    ("INFO:tensorflow:datashard_devices: ['/GPU:0', '/GPU:1', '/GPU:2']", ["GPU:0", "GPU:1", "GPU:2"]),
    ("I0611 10:02:11.1 140 devices.py:72] datashard_devices: ['']", [""]),  # worker_gpu=1: the default device
    ("INFO:tensorflow:datashard_devices: ['gpu:0', 'gpu:1', 'cpu:0']", ["gpu:0", "gpu:1", "cpu:0"]),
    ("INFO:tensorflow:Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/device:GPU:0', "
     "'/job:localhost/replica:0/task:0/device:GPU:1')", ["GPU:0", "GPU:1"]),
    ("I1009 05:47:56.317520 139781364750208 mirrored_strategy.py:341] Using MirroredStrategy with devices "
     "('/job:localhost/replica:0/task:0/device:CPU:0',)", ["CPU:0"]),
])
def test_the_devices_a_trainer_shards_over(line, devices):
    (sh,) = _summary([line])["shards"]
    assert sh["devices"] == devices and sh["line"] == 1


def test_device_names_keep_the_last_path_part():
    assert device_names("('/device:GPU:0', \"/job:worker/replica:0/task:1/device:GPU:3\")") == ["GPU:0", "GPU:3"]


def test_nvidia_smi_l_unlabelled_one_listing_and_a_second_run():
    lines = ["GPU 0: Tesla V100-SXM2-16GB (UUID: GPU-0c7b6e1e-6d2a-11e8-9c2d-fa7ae01bbebc)",
             "GPU 1: Tesla V100-SXM2-16GB (UUID: GPU-9f51a7d2-6d2a-11e8-9c2d-fa7ae01bbebc)",
             "GPU 0: Tesla V100-SXM2-16GB (UUID: GPU-0c7b6e1e-6d2a-11e8-9c2d-fa7ae01bbebc)"]
    rounds = _summary(lines)["listings"]
    assert [[len(t["gpus"]) for t in r] for r in rounds] == [[2], [1]]  # GPU 0 again: the listing was run again


def test_nvidia_smi_l_under_horovod_and_rank_labels():
    lines = ["[1,0]<stdout>:GPU 0: NVIDIA A10G (UUID: GPU-11111111-2222-3333-4444-555555555555)",
             "[1,1]<stdout>:No devices were found",
             "rank 2: GPU 0: NVIDIA A10G (UUID: GPU-11111111-2222-3333-4444-555555555555)",
             "'task 3: GPU 1: NVIDIA A10G (UUID: GPU-66666666-2222-3333-4444-555555555555)'"]
    (r,) = _summary(lines)["listings"]
    assert [(t["task"], [g["index"] for g in t["gpus"]]) for t in r] == [
        ("[1,0]<stdout>", [0]), ("[1,1]<stdout>", []), ("rank 2", [0]), ("task 3", [1])]


def test_a_task_with_two_gpus_is_one_listing():
    lines = ["PROCID=0: GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaaa-0000-0000-0000-000000000000)",
             "PROCID=0: GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbbbbbb-0000-0000-0000-000000000000)",
             "PROCID=1: GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-cccccccc-0000-0000-0000-000000000000)"]
    (r,) = _summary(lines)["listings"]
    assert [len(t["gpus"]) for t in r] == [2, 1]


def test_a_log_of_device_statements_alone_is_read_not_refused(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("Using 16bit native Automatic Mixed Precision (AMP)\nGPU available: True (cuda), used: False\n"
                 "TPU available: False, using: 0 TPU cores\n")
    b = read_paths([str(p)])
    (_, section), = schema.meta_sections(b.meta, schema.DEVICE_USE)
    assert [a["kind"] for a in section["accelerators"]] == ["GPU", "TPU"]


def test_plain_prose_is_still_refused(tmp_path):
    p = tmp_path / "notes.log"
    p.write_text("the GPU was available but we used the CPU\nno devices here\n")
    with pytest.raises(UnknownFormatError):
        read_paths([str(p)])


TABLE_450 = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 460.32.03    Driver Version: 460.32.03    CUDA Version: 11.2     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  Tesla T4            On   | 00000000:00:1E.0 Off |                    0 |
| N/A   61C    P0    69W /  70W |  14610MiB / 15109MiB |     97%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
|   1  Tesla T4            On   | 00000000:00:1F.0 Off |                    0 |
| N/A   40C    P0    27W /  70W |  14406MiB / 15109MiB |      0%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
"""


def test_a_table_pasted_with_the_trainers_lines_reads_both(tmp_path):
    p = tmp_path / "paste.txt"
    p.write_text(TABLE_450 + "\nINFO:tensorflow:Using MirroredStrategy with devices "
                 "('/job:localhost/replica:0/task:0/device:GPU:0',)\nEpoch 1/10\n")
    b = read_paths([str(p)])
    (_, section), = schema.meta_sections(b.meta, schema.DEVICE_USE)
    assert len(b.telemetry) == 2 and section["shards"][0]["devices"] == ["GPU:0"]
