"""The report's section on difficulty asked and measured (HCAT §2 step 5.3, ``golden.difficulty``): per query type and
level asked, the cases, the answers judged, the share judged correct (Wilson 95 % CI, n) and the question's word overlap
with its reference; per type whether the night measured the levels as asked."""

from __future__ import annotations

import polars as pl

from hcat_pipeline.golden.difficulty import TAG, difficulty_table
from hcat_pipeline.reports.campaign_report import Section

TITLE = "Difficulty asked and measured (HCAT §2 step 5.3)"


def difficulty_section(golden_set: pl.DataFrame | None, behaviour_checks: pl.DataFrame | None) -> tuple[Section, list[str]]:
    """(the section, the first screen's lines)."""
    if golden_set is None or "tags" not in golden_set.columns:
        return Section.missing("difficulty", TITLE, "the golden set is not available to this report"), []
    cases = golden_set.select("case_id", "query_type", "query", "reference_answer", "tags").to_dicts()
    if not any(t.startswith(TAG + ":") for c in cases for t in c["tags"] or []):
        return Section.missing("difficulty", TITLE, "no difficulty was asked at generation (the campaign file's "
                               "generation.difficulty_shares is empty)"), []  # fmt: skip
    verdicts = (behaviour_checks.select("case_id", "rule", "verdict").to_dicts()
                if behaviour_checks is not None and {"rule", "verdict"} <= set(behaviour_checks.columns) else [])  # fmt: skip
    rows, by_type = difficulty_table(cases, verdicts)
    table = [[r["query_type"], r["asked"], r["cases"], r["answers"], "–" if r["correct"] is None else f"{r['correct']:.2f}",
              "–" if r["ci_low"] is None else f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]", f"{r['overlap']:.2f}",
              by_type[r["query_type"]]] for r in rows]  # fmt: skip
    lines = [f"Difficulty {t}: {v}." for t, v in by_type.items()]
    return Section("difficulty", TITLE, columns=["query type", "asked", "cases", "answers judged", "correct", "95 % CI", "word overlap",
                                                "measured"], rows=table,
                   note="Each LLM-written question was asked a level (easy: the sentence's own words; hard: the writer's own "
                   "words). A type reads as asked when its hard questions were answered correctly less often than its easy ones "
                   "and share fewer words with their reference; questions made by rule were asked no level."), lines  # fmt: skip
