"""Case validity for many cases at once: the batch entry points over ``validity`` (answerable cases) and
``variant_checks`` (variants and the other categories).

``validate_cases`` embeds every text once for the batch and adds what only the batch can see (near-duplicate
questions, incomplete counterfactual pairs); ``check_rows`` looks the cited chunks up and returns the rows with their
validity columns; ``validity_rate`` is the share of valid cases with its Wilson interval and n.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hcat_pipeline.golden.cases import cases_frame
from hcat_pipeline.golden.question_checks import wh_slot_problem
from hcat_pipeline.golden.validity import (
    HARD,
    VERDICTS,
    Embed,
    Validity,
    ValidityConfig,
    answerable_checks,
    combine,
    is_answerable,
    reference_text,
    source_sentences,
)
from hcat_pipeline.golden.variant_checks import base_question, pair_problems, variant_validity


def validate_cases(cases: list[dict], sources: dict[str, str], embed: Embed, config: ValidityConfig | None = None,
                   parse=None) -> list[Validity]:
    """One ``Validity`` per case, in order. ``sources``: case_id → its source text (the cited chunks joined).
    ``parse(texts) -> spaCy-like docs`` (optional): answerable questions whose wh-word fills no slot are malformed
    (``question_checks.wh_slot_problem``); without it that check is not run.

    Texts are embedded once for the batch. Variants are checked by ``variant_checks.variant_validity``; a case that is
    neither answerable nor a known variant kind gets the checks its category has."""
    cfg = config or ValidityConfig()
    texts = {c.get("query") or "" for c in cases} | {base_question(c.get("query") or "") for c in cases} | {reference_text(c) for c in cases}
    for c in cases:
        texts |= set(source_sentences(sources.get(c.get("case_id") or "", ""), cfg.min_sentence_words))
    uniq = sorted(t for t in texts if t)
    vecs = np.asarray(embed(uniq), dtype=np.float64) if uniq else np.zeros((0, 1))
    index = {t: i for i, t in enumerate(uniq)}

    def vec(t: str) -> np.ndarray:
        return vecs[index[t]] if t in index else np.asarray(embed([t]), dtype=np.float64)[0]

    out: list[Validity] = []
    for c in cases:
        src = sources.get(c.get("case_id") or "", "")
        if c.get("variant_kind") or not is_answerable(c):
            out.append(variant_validity(c, src, vec, cfg))
            continue
        checks, reasons = answerable_checks(c, src, vec, cfg)
        out.append(combine(checks, reasons, cfg))
    _mark_duplicates(cases, out, vec, cfg)
    _mark_garbled(cases, out, parse, cfg)
    pairs = pair_problems(cases)
    for c, v in zip(cases, out, strict=True):
        why = pairs.get(c.get("case_id") or "") if c.get("variant_kind") == "counterfactual" else None
        if why:
            v.reasons.append(why)
            v.score, v.verdict = min(v.score, cfg.hard_cap), "invalid"
    return out


def _mark_garbled(cases: list[dict], out: list[Validity], parse, cfg: ValidityConfig) -> None:
    if parse is None:
        return
    idx = [i for i, c in enumerate(cases) if not c.get("variant_kind") and is_answerable(c) and c.get("query")]
    for i, doc in zip(idx, parse([cases[i]["query"] for i in idx]), strict=True):
        if why := wh_slot_problem(doc):
            out[i].reasons.append(f"malformed: garbled: {why}")
            out[i].score, out[i].verdict = min(out[i].score, cfg.hard_cap), "invalid"


def _mark_duplicates(cases: list[dict], out: list[Validity], vec, cfg: ValidityConfig) -> None:
    """The later of two answerable base cases whose questions are near-duplicates is invalid."""
    seen: list[tuple[str, np.ndarray]] = []
    for c, v in zip(cases, out, strict=True):
        if c.get("variant_kind") or not is_answerable(c):
            continue
        qv = vec(c.get("query") or "")
        best = max(((float(qv @ sv), cid) for cid, sv in seen), default=(0.0, ""))
        if best[0] >= cfg.max_duplicate_similarity:
            v.reasons.append(f"near_duplicate: similarity {best[0]:.3f} to {best[1]}")
            v.score, v.verdict = min(v.score, cfg.hard_cap), "invalid"
        seen.append((c.get("case_id") or "", qv))


def validity_rate(verdicts: Sequence[str]) -> dict:
    """Share of valid cases with its Wilson 95 % interval and n."""
    from hcat_pipeline.common.stats import wilson_interval

    n = len(verdicts)
    k = sum(v == "valid" for v in verdicts)
    lo, hi = wilson_interval(k, n)
    return {"valid": k, "n": n, "rate": k / n if n else float("nan"), "ci_low": lo, "ci_high": hi,
            "by_verdict": {v: sum(x == v for x in verdicts) for v in VERDICTS}}  # fmt: skip



def with_validity(cases: list[dict], validities: Sequence[Validity]) -> list[dict]:
    """The cases with their ``validity_score`` / ``validity_verdict`` / ``validity_reasons`` columns (GOLDEN_SET)."""
    return [{**c, "validity_score": v.score, "validity_verdict": v.verdict, "validity_reasons": list(v.reasons)}
            for c, v in zip(cases, validities, strict=True)]  # fmt: skip


def reason_counts(checked: Sequence[dict]) -> dict[str, int]:
    """Cases per reason code of rows with ``validity_reasons`` (every code of ``HARD``, zeros included, plus any other
    code seen)."""
    out = dict.fromkeys(HARD, 0)
    for row in checked:
        for code in sorted({r.split(":", 1)[0] for r in row["validity_reasons"]}):
            out[code] = out.get(code, 0) + 1
    return out


def check_rows(rows: list[dict], chunk_text: dict[str, str], embed: Embed, config: ValidityConfig | None = None, parse=None) -> list[dict]:
    """Golden-set rows with their validity columns, each checked against its cited chunks (``source_chunk_ids`` looked
    up in ``chunk_text``; an id not found contributes nothing). The one place rows meet their sources."""
    return with_validity(rows, validate_cases(rows, sources_for(rows, chunk_text), embed, config, parse))


def sources_for(rows: list[dict], chunk_text: dict[str, str]) -> dict[str, str]:
    """case_id → the text of its cited chunks (``source_chunk_ids`` in ``chunk_text``; an id not found adds nothing)."""
    return {r["case_id"]: "\n".join(chunk_text.get(c, "") for c in r.get("source_chunk_ids") or []) for r in rows}


def import_check(chunk_text: dict[str, str], embed: Embed, keep_invalid: bool = False):
    """``check(frame)`` for ``cases.import_cases`` (``hcat import-cases``, the review page's curated versions): the
    validity columns on every case; an invalid case is a problem ``(0, reason)`` unless ``keep_invalid``. Cases whose
    chunks cannot be resolved are checked without a source (verdict at best unsure)."""

    def check(frame):
        checked = check_rows(frame.to_dicts(), chunk_text, embed)
        problems = [] if keep_invalid else [
            (0, f"case {r['case_id']}: invalid ({r['validity_score']:.2f}): {'; '.join(r['validity_reasons'])}")
            for r in checked if r["validity_verdict"] == "invalid"
        ]  # fmt: skip
        return cases_frame(checked), problems

    return check

