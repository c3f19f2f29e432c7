"""The fifty-fourth held-out round (tests/data/eval/heldout54/SOURCES.md): what managed-training platforms' own
profilers state about a run — SageMaker Debugger rule statuses pasted in project READMEs (LowGPUUtilization found,
all rules clear) and NVIDIA DLProf's expert-system feedback. Each file's verdict (one of the accepted ids); no file
names a rank (the fixes are tested apart: tests/readers/test_platform_rules.py)."""

from __future__ import annotations

from pathlib import Path

from heldout_rounds import verdict_tests

HERE = Path(__file__).resolve().parents[1] / "data" / "eval" / "heldout54"

ACCEPTED = {
    "dlprof_expert_1gpu_cloudclass.txt": ("data_starvation", "launch_bound"),
    "smdebug_lowgpu_issuesfound_batch.md": ("launch_bound", "insufficient_data"),
    "smdebug_lowgpu_issuesfound_g4dn.md": ("launch_bound", "insufficient_data"),
    "smdebug_all_noissuesfound.md": ("healthy", "insufficient_data"),
}
NOT_YET: dict[str, str] = {}

test_verdict, test_no_losing_run_is_called_healthy = verdict_tests(HERE, ACCEPTED, NOT_YET)
