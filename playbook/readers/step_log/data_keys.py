"""Which step-log keys name the wait for input (the step grammar's `data` phase; readers/step_log/vocab.py):
`data_time`, `loader_time`, glued forms (`dataload_ms`, `datawait`), an RL learner's environment steps (SoundSpaces'
`env-time`), and a wait named verb first (Open-AnimateAnyone's `load_data_time`, `get_batch_time`,
`next_batch_time`, `read_input_ms`), the sample's bare noun with a time unit (wav2letter++'s `smp(ms)`)."""

from __future__ import annotations

DATA_KEYS = {"data", "data_time", "datatime", "dataloader", "data_wait", "data_load", "data_loading",
             "dataloader_time", "data_load_time", "data_loading_time", "data_wait_time", "last_data_time",
             "data_ms", "data_s", "load_time", "wait_data", "input_time", "data_t"}
# verbs a wait may be named by, before what it fetches
FETCH_VERBS = ("load", "loading", "fetch", "fetching", "get", "read", "reading", "next", "wait", "waiting")


def names_data_wait(k: str, words: list[str], has_unit: bool, avg_words: tuple[str, ...]) -> bool:
    """Whether the normalised key `k` (its `words`; `has_unit`: a time unit stated or glued) times the data wait."""
    # `avg_reader_cost`, DLLogger's `train.data_time`: still the data wait
    lead = words[1:] if len(words) > 1 and words[0] in (*avg_words, "train", "training") else words
    fetched = len(lead) > 1 and lead[0] in FETCH_VERBS and lead[1].startswith(("data", "batch", "input", "sample"))
    if fetched:
        lead = lead[1:]  # `load_data_time` reads as `data_time`; `get_batch_time` as the batch's fetch
    timed = has_unit or "time" in words or "wait" in words or "cost" in words
    # a lead word that is, or opens with, data / reader / loader / input; an RL learner's input is its environments'
    # the bare noun of the sample with a time unit is a stage named by what it produces, the wait for it
    # (wav2letter++'s `smp(ms)`, its sampletimer around the dataset iterator; DGL's `Sample: 0.41s`); `sample_time`
    # (a sampling stage or a time per sample) and `time_per_sample` are not read as the wait
    sampled = has_unit and lead in (["sample"], ["sampling"])
    return k in DATA_KEYS or "generator" in words or timed and (
        lead[0].startswith(("data", "reader", "loader", "input")) or lead[0] in ("env", "envs", "environment") or
        fetched and lead[0] in ("batch", "batches", "sample", "samples") or sampled)
