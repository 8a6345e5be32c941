"""The report's section on cheating read from the tool-call traces (golden-eval §7.5, ``gates.trace_cheating``): per system
the share of answers with a trace that were flagged (Wilson 95 % CI, n), and every flagged answer with the call named."""

from __future__ import annotations

import polars as pl

from hcat_pipeline.common.stats import wilson_interval
from hcat_pipeline.reports.campaign_report import Section


def trace_section(gaming: pl.DataFrame | None, responses: pl.DataFrame | None) -> tuple[Section, list[str]]:
    title = "Cheating read from the tool-call traces (golden-eval §7.5)"
    if gaming is None or "trace_cheating" not in gaming.columns:
        return Section.missing("trace_cheating", title, "grader_gaming is not materialized for this run (or predates trace reading)"), []
    traced = responses.filter(pl.col("tool_calls").is_not_null()) if responses is not None and "tool_calls" in responses.columns else None
    if traced is None or traced.height == 0:
        return Section.missing("trace_cheating", title, "no system returned tool calls this night (an HTTP system's tool_calls_path)"), []
    lines, rows = [], []
    flagged = gaming.filter(pl.col("trace_cheating"))
    for sid, part in sorted(traced.group_by("system_id"), key=lambda kv: kv[0][0]):
        n = part.height
        k = flagged.filter(pl.col("system_id") == sid[0]).height
        lo, hi = wilson_interval(k, n)
        lines.append(f"Tool-trace cheating: {sid[0]} {k} of {n} traced answers flagged, {k / n:.2f} [{lo:.2f}, {hi:.2f}] (n={n}).")
    for r in flagged.sort("system_id", "case_id").iter_rows(named=True):
        rows.append([r["system_id"], r["case_id"], r["evidence"] or ""])
    return Section("trace_cheating", title, columns=["system", "case", "evidence (the call named)"], rows=rows,
                   note="Outbound network access outside the allowed hosts, the evaluation's own files, shell or package-manager "
                   "calls, and citations no call touched; a flagged answer counts as gamed (it never wins a gate or a ranking). "
                   + " ".join(lines)), lines  # fmt: skip
