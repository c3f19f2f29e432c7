"""Every regular expression of the table readers, run on long adversarial strings: a pattern with super-linear
backtracking would take minutes on 100k characters and trip the timeout; linear ones take milliseconds.
(Nothing is timed: the timeout only catches a runaway.)"""

import re

import pytest

from playbook.analysis import nsys_profiles, rank_stragglers
from playbook.analysis.kineto import step_signatures
from playbook.diagnosis.evidence import from_events
from playbook.readers import (
    amd_smi_text,
    box_table,
    breakdown_table,
    clock_line,
    dcgm,
    dcgm_diag,
    detect,
    documents,
    event_lexicon,
    generic_csv,
    gpustat_text,
    headers,
    host_calls,
    host_columns,
    host_tools,
    influx,
    kineto,
    line_prefix,
    line_profile,
    lines,
    long_csv,
    lspci,
    nccl_log,
    nccl_tests,
    nvidia_smi,
    profiler_table,
    pstats_text,
    rank_reports,
    serving_metrics,
    slurm_usage,
    stack_samples,
    sysstat_json,
    tegrastats,
    textio,
    tfprof_text,
    topo_matrix,
    trtexec_summary,
)
from playbook.readers import (
    step_log as steps,
)
from playbook.readers.kineto import decode as kineto_decode
from playbook.readers.kineto import horovod as kineto_horovod
from playbook.readers.kineto import roles as kineto_roles
from playbook.readers.nvidia_smi import (
    dmon,
)
from playbook.readers.nvidia_smi import (
    fields as nvidia_smi_fields,
)
from playbook.readers.nvidia_smi import (
    query_text as smi_query_text,
)
from playbook.readers.nvidia_smi import (
    table as nvidia_smi_table,
)
from playbook.readers.step_log import column_table as step_column_table
from playbook.readers.step_log import columns as step_columns
from playbook.readers.step_log import epochs as step_epochs
from playbook.readers.step_log import grammar as step_grammar
from playbook.readers.step_log import key_block as step_key_block
from playbook.readers.step_log import reruns as step_reruns
from playbook.readers.step_log import smoothed as step_smoothed
from playbook.readers.step_log import span_line as step_span_line
from playbook.readers.step_log import timer_line as step_timer_line
from playbook.readers.step_log import vocab as step_vocab

MODULES = (textio, clock_line, generic_csv, nvidia_smi, nvidia_smi_fields, nvidia_smi_table, kineto, kineto_decode, kineto_roles, kineto_horovod, dcgm, dmon,
           headers, documents, detect, gpustat_text, influx, lines, long_csv, nccl_log, nccl_tests, smi_query_text, step_columns,
           step_grammar, step_vocab, steps, amd_smi_text, box_table, host_tools, host_columns, sysstat_json,
           event_lexicon, line_prefix, step_epochs, step_smoothed, step_reruns, step_key_block, step_span_line, topo_matrix, lspci,
           step_column_table, dcgm_diag, profiler_table, pstats_text, slurm_usage, nsys_profiles, from_events,
           step_signatures, rank_stragglers, rank_reports, host_calls, stack_samples, line_profile,
           tfprof_text, tegrastats, step_timer_line, breakdown_table, serving_metrics, trtexec_summary)  # nsys_profiles .. rank_stragglers read reader output
N = 100_000
BODIES = (" ", "\t", "0", "9.", "a", "A", "[", "(", "{", "}", '"', ",", ":", "=", "|", "-", "/", "%", "x", "\\",
          "0 ", "a ", "a=", 'a="', "}, ", "} ", ", ", "1/", "0x", "e", "1e", ": ", "\n", "[0", " |", "W /", "MiB ")
PREFIXES = ("", "|", "| 0 ", "| 0  A | 0000:00:00.0", "GPU 0 ", "DCGM_FI_DEV_GPU_UTIL{", "# gpu ", "Every 1.0s: x ",
            "iteration 1/ 2 |", "0", '"traceEvents": [', "<?xml", "Mon Jan  1 ", "2024/01/01 00:00:00", "step 1 ",
            "Epoch: [1]", "h:1:1 [0] NCCL INFO ", "[rank0]: ", "loss = ", "12/100 [", "Linux 5.4.0 (h) 04/18/19 ",
            "top - 10:00:00 ", "%Cpu(s): ", "13:20:19 ", "[  12.345678] ", "Dec  3 10:00:00 h kernel: ", "GPU[0] : ",
            "Out of memory: Killed process ", "#  Rank  0 Group  0 Pid  1 on h device  0 [0x1] ",
            "   8   2   float   sum   -1 ")


def _patterns():
    found = []
    for module in MODULES:
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                found.append(pytest.param(value, id=f"{module.__name__.rsplit('.', 1)[1]}.{name}"))
            elif isinstance(value, str) and name.startswith("_") and value.startswith("^"):  # used via pandas .str
                found.append(pytest.param(re.compile(value), id=f"{module.__name__.rsplit('.', 1)[1]}.{name}"))
            elif isinstance(value, tuple):  # a table of rows holding patterns (event_lexicon.LEXICON)
                rows = [row for row in value if isinstance(row, tuple)]
                found += [pytest.param(p, id=f"{module.__name__.rsplit('.', 1)[1]}.{name}[{i}]")
                          for i, row in enumerate(rows) for p in row if isinstance(p, re.Pattern)]
    return found


@pytest.mark.timeout(120)
@pytest.mark.parametrize("pattern", _patterns())
def test_pattern_is_linear_on_adversarial_input(pattern):
    text = pattern.pattern if isinstance(pattern.pattern, str) else pattern.pattern.decode("latin-1")
    assert text  # every pattern is exercised below; a runaway one trips the timeout instead of finishing
    subjects = [body * (N // len(body)) for body in BODIES]  # every body alone ...
    subjects += [prefix + body * (N // len(body)) for prefix in PREFIXES[1:] for body in (" ", "0", "a", "| ")]
    for s in subjects:  # ... and behind each prefix that lets an anchored pattern get going
        s += "\x00!"  # a character no pattern accepts at the end, so a match attempt has to fail late
        subject = s if isinstance(pattern.pattern, str) else s.encode("latin-1")
        pattern.search(subject)
        pattern.match(subject)


def test_header_tokenizer_and_unit_split_are_linear():
    for body in ("[", "(", "a", "aA", "0a", "%"):
        name = body * N
        assert len(headers.tokens(name)) <= len(name)
        headers.split_unit(name + "]")
        headers.meaning(name)
        generic_csv.normalize(name)


@pytest.mark.timeout(120)
def test_metric_logger_detection_is_linear_in_its_stamps():
    # a line of many `eta: H:MM:SS` stamps and no window means: the one pattern's lazy `.*?` after each stamp ran
    # to the line's end (quadratic: 4 lines of 64 KB took 21 s to read, 1 MB would take ~15 min); runaway = timeout
    line = "eta: 0:00:01 " * 80_000
    assert not step_smoothed.metric_logger(line)
    assert step_smoothed.metric_logger(line + "time: 0.5012  data: 0.0101")
    assert not step_smoothed.metric_logger("time: 0.5012  data: 0.0101  " + line)  # the means come after the eta
    assert not step_smoothed.metric_logger(line + "time: 0.5012 (0.4) data: 0.0101 (0.01)")  # median (global avg)
