"""Review r6 of held-out round 60's local inference runtime lines (readers/token_rates.py), on wordings written
apart from the fixtures (LABELED SYNTHETIC figures in the tools' own print formats)."""

from __future__ import annotations

from playbook.readers.token_rates import TokenRates


def test_koboldcpp_debugmode_states_each_phase_both_ways():
    # koboldcpp gpttype_adapter.cpp with debugmode == 1: `Process:%.2fs (%.1fms/T = %.2fT/s), Generate:%.2fs
    # (%.1fms/T = %.2fT/s), Total:%.2fs (%.2fT/s)` — the time per token and the rate side by side
    rates = TokenRates()
    assert rates.feed("[12:00:01] CtxLimit:2048/8192, Amt:256/512, Init:0.01s, Process:1.50s (0.7ms/T = 1365.33T/s), "
                      "Generate:8.00s (31.2ms/T = 32.00T/s), Total:9.50s (26.95T/s)")
    assert [(r["phase"], round(r["tps"], 2)) for r in rates.summary()] == [("prompt", 1365.33), ("decode", 32.0)]
