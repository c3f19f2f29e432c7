"""Regenerate the flight-recorder fixtures in this folder: `python tests/data/flight_recorder/make_dumps.py`.

Written for this project (not taken from a real job): plain dicts in the layout torch's FlightRecorder::dump()
writes (version "2.10"; keys from torch/csrc/distributed/c10d/FlightRecorder.hpp), pickled with protocol 2 like
torch's C++ pickler (plain containers only), and the JSON form of FlightRecorder::dump_json() (0 for unseen times,
strings in pg_status).

hang/nccl_trace_rank_{0..3}   4 ranks, default group "0" (ranks 0-3) and a tensor-parallel group "1" (ranks 0-1).
                              Ranks 0, 1 and 3 called all_reduce #42 of group "0" and wait in it (state started);
                              rank 2's last call was #41 (completed): rank 2 is behind (enqueue lag). Group "1"
                              is in step (all_gather #17 completed on both ranks).
json/nccl_trace_rank_{0,1}    the JSON form, 2 ranks, in step except rank 1 started but did not finish #8
                              (completion lag) of group "0".
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

HERE = Path(__file__).resolve().parent
T0 = 1_732_000_000_000_000_000  # epoch ns
FRAMES = [{"name": "all_reduce", "filename": "/opt/conda/lib/python3.11/site-packages/torch/distributed/"
                                             "distributed_c10d.py", "line": 2806},
          {"name": "train_step", "filename": "/work/train.py", "line": 88}]


def entry(record_id: int, pg: tuple[str, str], pg_id: int, seq: int, name: str, state: str, t: int,
          sizes: list[list[int]], dtype: str = "Float", json_form: bool = False) -> dict:
    started = t + 20_000 if state in ("started", "completed") else None
    completed = t + 4_000_000 if state == "completed" else None
    e = {
        "frames": FRAMES, "record_id": record_id, "pg_id": pg_id, "process_group": list(pg) if json_form else pg,
        "thread_name": "pt_main_thread", "thread_id": "140231331821376", "collective_seq_id": seq,
        "p2p_seq_id": 0, "op_id": seq, "profiling_name": name, "time_created_ns": t,
        "input_sizes": sizes, "input_dtypes": [dtype] * len(sizes), "output_sizes": sizes,
        "output_dtypes": [dtype] * len(sizes), "state": state,
        "time_discovered_started_ns": started, "time_discovered_completed_ns": completed,
        "retired": state == "completed", "timeout_ms": 600000, "is_p2p": False,
    }
    if state == "completed":
        e["duration_ms"] = 3.98
    if json_form:
        e.pop("frames")
        e["time_discovered_started_ns"] = started or 0
        e["time_discovered_completed_ns"] = completed or 0
    return e


def hang_dump(rank: int) -> dict:
    entries, rid = [], 0
    last = 41 if rank == 2 else 42
    for seq in range(38, last + 1):
        state = "started" if seq == 42 else "completed"
        entries.append(entry(rid, ("0", "default_pg"), 0, seq, "nccl:all_reduce", state, T0 + seq * 100_000_000,
                             [[4096, 1024]]))
        rid += 1
    if rank in (0, 1):
        for seq in (16, 17):
            entries.append(entry(rid, ("1", "tp"), 1, seq, "nccl:_allgather_base", "completed",
                                 T0 + seq * 200_000_000, [[1024, 512]], "BFloat16"))
            rid += 1
    pg_config = {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}}
    pg_status = {"0": {"last_enqueued_collective": last, "last_started_collective": last,
                       "last_completed_collective": 41}}
    if rank in (0, 1):
        pg_config["1"] = {"name": "1", "desc": "tp", "ranks": "[0, 1]"}
        pg_status["1"] = {"last_enqueued_collective": 17, "last_started_collective": 17,
                          "last_completed_collective": 17}
    return {"version": "2.10", "comm_lib_version": "2.21.5", "pg_config": pg_config, "pg_status": pg_status,
            "entries": entries}


def json_dump(rank: int) -> dict:
    entries = [entry(i, ("0", "default_pg"), 0, seq, "nccl:all_reduce",
                     "started" if (rank == 1 and seq == 8) else "completed", T0 + seq * 50_000_000,
                     [[256, 256]], json_form=True) for i, seq in enumerate(range(5, 9))]
    done = 7 if rank == 1 else 8
    return {"version": "2.10", "comm_lib_version": "2.21.5",
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
            "pg_status": {"0": {"last_enqueued_collective": "8", "last_started_collective": "8",
                                "last_completed_collective": str(done)}},
            "entries": entries}


def main() -> None:
    (HERE / "hang").mkdir(exist_ok=True)
    (HERE / "json").mkdir(exist_ok=True)
    for r in range(4):
        (HERE / "hang" / f"nccl_trace_rank_{r}").write_bytes(pickle.dumps(hang_dump(r), protocol=2))
    for r in range(2):
        (HERE / "json" / f"nccl_trace_rank_{r}").write_text(json.dumps(json_dump(r)))


if __name__ == "__main__":
    main()
