"""Regression triage: GOOD ran at full speed, BAD does not — what changed, and is the difference even real?

    from playbook.readers.rundir import read_run
    from playbook.diagnosis.regression.verdict import compare_runs
    r = compare_runs([read_run("runs/good")], [read_run("runs/bad")])   # one Bundle per run, any number a side
    r.verdict, r.causes[0]["id"], r.to_json()

runs.py (step 1: one row per step, its wall time split into causes), costs.py (steps 2-3: throughput and each
cause's change with intervals), environment.py (step 5: what changed between the runs), verdict.py (step 4,
`compare_runs`, the verdict and the JSON contract), text.py (numbers for reports).

Method (pure functions; no thresholds tuned to fixtures):

1. Per run, one row per step (playbook.model.schema steps table): the step's wall time (start of the next step minus its
   own start, so time spent between steps counts; its duration when start times are unknown), its work (tokens,
   summed over ranks), its phases and the seconds of each event kind in it. With several ranks the row is the
   critical rank's: the one that waited least in the collective (else the slowest) — the others' waiting is a
   consequence of it. An event's seconds are exclusive: an event nested inside a longer one (a GC pause inside a
   recompile) belongs to the outer one; event time is taken out of the phase it overlapped, so the step splits
   into causes that add up to its wall time:
     data → data_starvation, h2d → h2d_copy, collective → collective_straggler, checkpoint/eval/log phases and
     checkpoint/eval events → periodic_stall, compile/recompile events → recompilation, gc events → gc_pause,
     time between steps → between_steps, every other phase (fwd, bwd, optimizer, the unphased rest) →
     slower_compute — except, with several ranks, the critical rank's compute beyond the median rank's, which
     is a straggler's excess (→ collective_straggler).
   An event kind logged without durations is costed by the excess of the steps holding it over the run's median.
2. Throughput and cost per unit of work. With tokens on both sides, every per-step cost is expressed per token
   and scaled to GOOD's tokens per step (so a changed batch size does not read as a regression); otherwise per
   step. Noise: a circular block bootstrap over steps (block length by Politis-White, so autocorrelated steps
   are not counted as independent; its spread widened for the bootstrap's known variance bias and for the noise
   of that variance estimate, stats.block_bootstrap_widening), hierarchical over runs when a side has several.
   With ≥ 2 runs a side the throughput interval also covers a Student t interval on the runs' log throughputs
   (runs are the independent units and a bootstrap over few runs understates their variance; the run-to-run
   variance is pooled over both sides, i.e. taken to be the machine's). The throughput ratio BAD/GOOD gets a 95%
   interval; "no significant difference" when it holds 1. The step-time distributions are compared by Cliff's
   delta (the Mann-Whitney effect size; p-value on autocorrelation-deflated sample sizes) and the median ratio.
3. Each cause's change in seconds per step gets its own bootstrap interval and p-value (for event causes, also a
   Poisson rate test of their counts per step — conditional binomial — either test sufficing, Bonferroni). When
   the slowdown is significant, causes are ranked by (1 - p) × the share of the slowdown they account for
   (clipped to 0-1); otherwise by (1 - p) × (1 - exp(-change / 5% of GOOD's step)), the impact scale of
   diagnosis.ranking, and only causes whose own change is significant are listed.
4. The utilization pattern (oscillation, period, duty cycle, synchrony, per-GPU status, top hypothesis) comes from
   playbook.diagnosis.diagnose of each run. Without step logs on both sides, the causes are the hypotheses whose
   diagnose score rose from GOOD to BAD, and mean utilization replaces throughput (labelled as such).
5. The environment diff (meta.json "env" from playbook.probes.fingerprint, the run's configuration and command
   line, hardware read from telemetry) links every changed item to the causes it can produce (a compile cache or
   a shape setting → recompilation; NCCL_* → collective_straggler; loader settings → data_starvation, ...), and
   ranks it by the measured score of those causes.
"""
