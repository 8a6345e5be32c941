"""The judge's items from a campaign run: one ``JudgeItem`` per response, with what each rubric dimension needs.

* ``claims`` — for ``contradiction_detection``: a comparison case's true claim (from the source) and the false claim
  that contradicts it, as the golden set records them in the case's constraints (misleading-premise and distractor
  variants, ``golden.robustness``); empty for every other case (the dimension is then skipped with its reason);
* ``handling`` — for ``sensitive_care``: a sensitivity test's expected handling (``golden.sensitive``); "" elsewhere;
* ``languages`` — for ``cross_lingual_accuracy`` (computed only when the dimension is asked): the languages of the
  answer and of its passages (langid, ``common.language.detect_language``); fewer than two: skipped.

No dagster import.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl

from hcat_pipeline.common.tool_calls import tool_trace
from hcat_pipeline.judge.scoring import JudgeItem

CLAIM_PREFIXES = ("true claim (source):", "false claim:")


def case_claims(constraints: Sequence[str] | None) -> tuple[str, ...]:
    """The true / false claims among a case's constraints (in their order)."""
    return tuple(c for c in (constraints or []) if str(c).startswith(CLAIM_PREFIXES))


def item_languages(answer: str | None, contexts: Sequence[str]) -> tuple[str, ...]:
    """The languages (langid) of the answer and its passages, in order of appearance."""
    from hcat_pipeline.common.language import detect_language

    texts = [t for t in (answer, *contexts) if t and t.strip()]
    return tuple(dict.fromkeys(detect_language(t)[0] for t in texts))


def claims_by_case(golden_set: pl.DataFrame | None) -> dict[str, tuple[str, ...]]:
    """case_id → its true / false claims; empty for a golden set without constraints (it has no comparison case)."""
    if golden_set is None or "constraints" not in golden_set.columns:
        return {}
    return {r["case_id"]: case_claims(r["constraints"]) for r in golden_set.select("case_id", "constraints").iter_rows(named=True)}


_STEP = re.compile(r"^\s*(?:\d+[.)]|[-*•]|step \d+:?|first(?:ly)?,|second(?:ly)?,|then,?|next,?|finally,?)\s+|\b(?:because|therefore|"
                   r"so that|since|thus|hence|which means)\b", re.I | re.M)


def reasoning_steps(answer: str | None) -> str:
    """The answer's reasoning steps — its numbered or bulleted lines and its sentences that give a reason ("because",
    "therefore", "first,") — joined, when it shows at least two; "" otherwise (``reasoning_faithfulness`` is skipped)."""
    parts = [p.strip() for p in re.split(r"\n+|(?<=[A-Za-z)][.!?])\s+", answer or "") if p.strip()]
    steps = [p for p in parts if _STEP.search(p)]
    return "\n".join(steps) if len(steps) >= 2 else ""


def handling_by_case(golden_set: pl.DataFrame | None) -> dict[str, str]:
    """case_id → the expected handling of a sensitivity test (``golden.sensitive.case_handling``); other cases absent."""
    from hcat_pipeline.golden.sensitive import case_handling

    if golden_set is None or "constraints" not in golden_set.columns:
        return {}
    rows = golden_set.select("case_id", "constraints").iter_rows(named=True)
    return {r["case_id"]: h for r in rows if (h := case_handling(r["constraints"]))}


def judge_items(frame: pl.DataFrame, golden_set: pl.DataFrame, dimensions: Sequence[str]) -> list[JudgeItem]:
    """``frame``: the run's responses (case_id, system_id, answer, query, contexts) joined with ``reference_answer``."""
    claims, handling = claims_by_case(golden_set), handling_by_case(golden_set)
    multilingual = "cross_lingual_accuracy" in dimensions
    items = []
    for r in frame.iter_rows(named=True):
        contexts = list(r["contexts"] or [])
        items.append(JudgeItem(f"{r['case_id']}|{r['system_id']}", r["answer"], r["query"] or "", contexts, r["reference_answer"],
                               claims=claims.get(r["case_id"], ()), handling=handling.get(r["case_id"], ""),
                               steps=reasoning_steps(r["answer"]) if "reasoning_faithfulness" in dimensions else "",
                               tool_calls=tool_trace(r.get("tool_calls")) if "tool_use_correctness" in dimensions else "",
                               languages=item_languages(r["answer"], contexts) if multilingual else ()))  # fmt: skip
    return items
