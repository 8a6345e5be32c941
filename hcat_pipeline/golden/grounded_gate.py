"""The validity gate of the grounded happy path (``golden.grounded``): what the generation loop keeps of the selected
rows. A question without a referent (``no_referent``), a round trip that disagrees (``roundtrip_disagrees``), a case
the validity does not accept (``accepted``: ``case_invalid``), yes/no beyond a third of a stratum (``yes_no_quota``).
No Dagster import."""

from __future__ import annotations

from hcat_pipeline.golden.case_checks import sources_for, validate_cases
from hcat_pipeline.golden.cases import case_from_query
from hcat_pipeline.golden.grounded import WH_RULE, YES_NO_RULE
from hcat_pipeline.golden.question_checks import referent_problem, roundtrip_problem
from hcat_pipeline.golden.yes_no import yes_no_quota

MAX_ANCHOR_RANK = 2  # the reference sentence must be an extractive reader's first or second pick for the question


def is_grounded(row: dict) -> bool:
    """A row made by this module (its reference is a source sentence by construction)."""
    name = row.get("prompt_name") or ""
    return name.startswith("query_grounded_") or name in (YES_NO_RULE.name, WH_RULE.name)


def accepted(case: dict, validity) -> tuple[bool, str]:
    """(kept, why not): valid, and for an LLM-written open question the round trip closes — an extractive reader of the
    source ranks the reference sentence among its top ``MAX_ANCHOR_RANK`` for the question (it was written *for* it)."""
    if validity.verdict != "valid":
        return False, f"{validity.verdict}: {'; '.join(validity.reasons) or f'score {validity.score:.2f}'}"
    rank = validity.checks.get("anchor_rank", 1.0)
    if case["query_type"] != "yes_no" and rank > MAX_ANCHOR_RANK:
        return False, f"anchor_rank {rank:.0f} > {MAX_ANCHOR_RANK}: the question is not best answered by its reference sentence"
    return True, ""


def _rejection(r: dict, reason: str, detail: str) -> dict:
    return {"query_id": r["query_id"], "query_type": r["query_type"], "chunk_id": r["chunk_id"], "source_chunk_ids": list(r["source_chunk_ids"]),
            "query": r.get("query"), "reference_answer": r.get("reference_answer"), "stage": "validity", "reason": reason, "detail": detail}  # fmt: skip


def validity_gate(kept: list[dict], chunk_text: dict[str, str], embed, cache: dict | None = None, parse=None) -> tuple[list[dict], list[dict]]:
    """Split selected grounded rows into (kept, rejections): a question without a referent (``no_referent``), a round
    trip that disagrees (``roundtrip_disagrees``), a case the validity does not accept (``accepted``: ``case_invalid``),
    yes/no beyond a third of a stratum (``yes_no_quota``). Rows not made here pass through. ``cache``: query id → validity
    verdict, reused across the generation loop's rounds (a row's verdict depends on the row and its sources only)."""
    grounded = [r for r in kept if is_grounded(r)]
    if not grounded:
        return kept, []
    rejections, checked = [], []
    for r in grounded:
        if problem := referent_problem(r.get("query") or ""):
            rejections.append(_rejection(r, "no_referent", problem))
        elif problem := roundtrip_problem(r):
            rejections.append(_rejection(r, "roundtrip_disagrees", problem))
        else:
            checked.append(r)
    cache = {} if cache is None else cache
    cases = [{**case_from_query(r), "query_id": r["query_id"]} for r in checked if r["query_id"] not in cache]
    if cases:
        cache.update({c["query_id"]: accepted(c, v) for c, v in zip(cases, validate_cases(cases, sources_for(cases, chunk_text), embed, parse=parse),
                                                                        strict=True)})
    verdicts = {r["query_id"]: cache[r["query_id"]] for r in checked}
    dropped = {x["query_id"] for x in rejections}
    out = []
    for r in kept:
        if r["query_id"] in dropped:
            continue
        ok, why = verdicts.get(r["query_id"], (True, ""))
        if ok:
            out.append(r)
        else:
            rejections.append(_rejection(r, "case_invalid", why))
    out, over = yes_no_quota(out, is_grounded, _rejection)
    return out, rejections + over
