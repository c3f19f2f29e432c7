"""Review r8: Excel's `sep=X` delimiter line (generic_csv._EXCEL_SEP names `,` `;` tab `|`) with a tab: the line's
strip takes the tab with it, so `sep=\\t` was read as a tool's message above the header (a skip warning). Export
written here (LABELED SYNTHETIC): a joined-by-time panel, tab-separated, CRLF."""

from __future__ import annotations

from playbook.readers import read_paths


def test_a_tab_delimiter_line_is_part_of_the_export(tmp_path):
    rows = ["sep=\t", '"Time"\t"DCGM_FI_DEV_GPU_UTIL{gpu=""0""}"']
    rows += [f"2025-01-01 00:{k:02d}:00\t{90 + k % 5}" for k in range(12)]
    p = tmp_path / "panel.tsv"
    p.write_bytes("\r\n".join(rows).encode() + b"\r\n")
    b = read_paths([str(p)])
    assert len(b.telemetry) == 12 and not b.warnings
