"""Statements of a run near its memory limit, read by what they mean (held-out round 73; written apart from its files,
from the tools' own wording): an out-of-memory placed at a step (`step 5 OOM`), the recompute technique's name
(`gradient checkpointing`, `activation checkpointing`) that writes no checkpoint, and a managed-memory setting
(llama.cpp GGML_CUDA_ENABLE_UNIFIED_MEMORY, TensorFlow TF_FORCE_UNIFIED_MEMORY, RAPIDS RMM managed_memory) that lets
a model larger than the GPU page in from host memory; and a sentence of prose that names an evaluation opens none."""

from __future__ import annotations

import pytest

from playbook.diagnosis import diagnose
from playbook.readers import event_lexicon, model_placement, read_paths


@pytest.mark.parametrize("line", [
    "-> step 12 OOM",
    "step=7: OOM (peak 79.6 GiB)",
    "iteration 3400 OOM, restarting from the last checkpoint",
    "OOM at step 120 with seq_len 8192",
    "the job OOMed in epoch 3",
    "[rank3] OOM during iteration 57",
])
def test_an_oom_placed_at_a_step_is_an_oom_event(line):
    hit = event_lexicon.match(line)
    assert hit is not None and hit.kind == "oom"


@pytest.mark.parametrize("line", [
    "to avoid OOM we lower the batch",
    "|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |",
    "step 12 loss 2.31 room 4",  # a word that holds the letters
    "step 12 | batch_oom_retries 0",
])
def test_words_that_place_no_oom_at_a_step(line):
    hit = event_lexicon.match(line)
    assert hit is None or hit.kind != "oom"


@pytest.mark.parametrize("line", [
    "Add gradient checkpointing to save GPU memory.",
    "We use activation checkpointing to save memory at a 20% cost in step time",
    "Applied selective activation checkpointing to the model",
    "--gradient_checkpointing True saves ~40% of the activation memory",
    "gradient-checkpointing saved 30 GB",
])
def test_the_recompute_technique_is_no_checkpoint_save(line):
    assert not event_lexicon.CHECKPOINT.search(line)


@pytest.mark.parametrize("line", [
    "Saving checkpoint to /ckpt/step_500",
    "[2024-05-01 10:00:00] checkpoint saved to s3://bucket/run/step_1000",
    "Writing checkpoint at step 2000",
    "Saved checkpoint for the gradient checkpointing run to out/ckpt-3",
])
def test_a_checkpoint_save_is_still_one(line):
    assert event_lexicon.CHECKPOINT.search(line)


@pytest.mark.parametrize(("line", "mode"), [
    ("GGML_CUDA_ENABLE_UNIFIED_MEMORY=1 ./llama-server -m model.gguf -ngl 99", "GGML_CUDA_ENABLE_UNIFIED_MEMORY=1"),
    ("$ export GGML_CUDA_ENABLE_UNIFIED_MEMORY=1", "GGML_CUDA_ENABLE_UNIFIED_MEMORY=1"),
    ("TF_FORCE_UNIFIED_MEMORY=true python train.py", "TF_FORCE_UNIFIED_MEMORY=1"),
    ("rmm.reinitialize(managed_memory=True, pool_allocator=False)", "managed_memory=1"),
])
def test_a_managed_memory_setting_is_a_placement(line, mode):
    p = model_placement.Placements()
    assert p.feed(line)
    assert p.summary() == [{"model": None, "cpu_share": None, "how": "managed", "mode": mode}]


@pytest.mark.parametrize("line", [
    "export GGML_CUDA_ENABLE_UNIFIED_MEMORY=0",
    "rmm.reinitialize(managed_memory=False)",
    "Is GGML_CUDA_ENABLE_UNIFIED_MEMORY supported on Windows?",
])
def test_a_managed_memory_setting_off_or_named_places_nothing(line):
    p = model_placement.Placements()
    p.feed(line)
    assert p.summary() == []


def test_a_run_in_managed_memory_is_memory_pressure_at_most_possible(tmp_path):
    f = tmp_path / "launch.txt"
    f.write_text("$ GGML_CUDA_ENABLE_UNIFIED_MEMORY=1 ./llama-cli -m llama-70b-q4.gguf -ngl 99 -p hello\n"
                 "llama_perf_context_print:        load time =   41873.55 ms\n")
    d = diagnose(read_paths([str(f)]))
    assert d.verdict["id"] == "memory_pressure" and d.verdict["confidence"] == "possible"
    assert "managed memory" in " ".join(d.hypotheses[0]["evidence"])


def test_an_oom_stated_at_a_step_ends_the_run_on_memory_pressure(tmp_path):
    f = tmp_path / "profile.log"
    f.write_text("iter 0 peak_mem 61.2 GiB\niter 1 peak_mem 77.9 GiB\niter 2 OOM\n")
    assert diagnose(read_paths([str(f)])).verdict["id"] == "memory_pressure"


@pytest.mark.parametrize(("line", "marks"), [
    ("At the same time, the time cost does not increase too much and the current results (i.e., the evaluation "
     "scores on the testing dataset) are more or less OK.", False),
    ("We ran the validation on a separate node so that the training job would not have to wait for it at all", False),
    ("***** Running Evaluation *****", True),
    ("Evaluation at step 500: loss 2.104, accuracy 0.61", True),
    ("INFO 2024-03-01 10:00:01 running evaluation on the held-out validation split of the corpus for the model now",
     True),  # a figure (the time stamp): a line the run printed
])
def test_a_sentence_of_prose_is_no_evaluation_marker(line, marks):
    assert event_lexicon.eval_marker(line) is marks
