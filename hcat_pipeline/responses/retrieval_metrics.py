"""Retrieval evaluation (golden-eval §10.2) and answerability (§10.4), per system.

* recall@k — share of the case's source chunks found in the top k;
* precision@k — share of the top-k retrieved passages that are source chunks (denominator: the
  number actually retrieved in the top k, at most k);
* reciprocal rank — 1 / rank of the first source chunk (0 when none retrieved); MRR is its mean;
* abstention rate — share of out-of-scope cases (expected_behavior "abstain") the system refused;
* false-refusal rate — share of answerable cases (expected_behavior "answer") it refused.

"Refused" comes from the project's one refusal detector (``metrics.refusal.is_refused``, the
same mode and threshold defaults as the ``refusal`` metric of ``metric_tables``).

A system whose passages carry its own ids (an http service: its document ids, not the project's chunk
ids) is matched by passage *text*: a returned passage stands for a source chunk when one's words are
mostly contained in the other's (``TEXT_MATCH`` of the smaller word set, either direction), so a
service retrieving the right text scores as it should instead of 0. Each row says how it was
matched (``matched_by``: chunk_id | text); without the chunk texts such a row is null, never 0.

Injected distractor passages (``distractor:…`` ids) are not retrieval output and are left out.
Retrieval figures use only answerable cases that have source chunks; closed-book (no retrieval)
gets nulls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl

from hcat_pipeline.metrics.refusal import DEFAULT_REFUSAL_MODE, DEFAULT_REFUSAL_THRESHOLD, Embed, refusal_probability
from hcat_pipeline.responses.retrieval import DISTRACTOR_PREFIX


def _clean(retrieved: Sequence[str]) -> list[str]:
    return [c for c in retrieved if not c.startswith(DISTRACTOR_PREFIX)]


def recall_at_k(retrieved: Sequence[str], relevant: Sequence[str], k: int) -> float | None:
    rel = set(relevant)
    if not rel:
        return None
    return len(rel & set(_clean(retrieved)[:k])) / len(rel)


def precision_at_k(retrieved: Sequence[str], relevant: Sequence[str], k: int) -> float | None:
    top = _clean(retrieved)[:k]
    if not top:
        return 0.0
    rel = set(relevant)
    return sum(c in rel for c in top) / len(top)


def reciprocal_rank(retrieved: Sequence[str], relevant: Sequence[str]) -> float:
    rel = set(relevant)
    for i, c in enumerate(_clean(retrieved), start=1):
        if c in rel:
            return 1.0 / i
    return 0.0


TEXT_MATCH = 0.6  # share of the smaller word set found in the other: the passage is that chunk's text


def _word_set(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9_]+", (text or "").lower()))


def text_matched_ids(passages: Sequence[str], sources: Sequence[str], chunk_texts: dict[str, str]) -> list[str]:
    """Each passage as the source chunk whose text it matches best (``TEXT_MATCH``), else ``external:<i>``."""
    src = [(c, _word_set(chunk_texts.get(c, ""))) for c in sources]
    out = []
    for i, p in enumerate(passages):
        w = _word_set(p)
        best, score = f"external:{i + 1}", 0.0
        for cid, cw in src:
            small = min(len(w), len(cw))
            s = len(w & cw) / small if small else 0.0
            if s >= TEXT_MATCH and s > score:
                best, score = cid, s
        out.append(best)
    return out


def _foreign(ids: Sequence[str], chunk_texts: dict[str, str] | None) -> bool:
    return chunk_texts is not None and any(c not in chunk_texts for c in _clean(ids))


def per_case_retrieval(responses: pl.DataFrame, golden: pl.DataFrame, k_by_system: dict[str, int] | None = None, *,
                       refusal_mode: str = DEFAULT_REFUSAL_MODE, refusal_threshold: float = DEFAULT_REFUSAL_THRESHOLD,
                       embed: Embed | None = None, chunk_texts: dict[str, str] | None = None) -> pl.DataFrame:
    """One row per case × system: recall/precision@k, reciprocal rank, refusal probability and refused
    (≥ ``refusal_threshold``; null for a failed response or an empty answer), expected behaviour. ``chunk_texts``
    (chunk id → text) lets passages with foreign ids be matched by text (see module doc)."""
    g = golden.select("case_id", "source_chunk_ids", "expected_behavior", "category").unique("case_id", keep="first")
    cols = [c for c in ("case_id", "system_id", "context_chunk_ids", "contexts", "answer", "error") if c in responses.columns]
    joined = responses.select(cols).join(g, on="case_id", how="left")
    answers = sorted({a for a, e in zip(joined["answer"], joined["error"]) if e is None and a is not None})
    p_refusal = dict(zip(answers, refusal_probability(answers, embed, refusal_mode)))
    rows = []
    for r in joined.iter_rows(named=True):
        k = (k_by_system or {}).get(r["system_id"]) or max(len(_clean(r["context_chunk_ids"] or [])), 1)
        ids = r["context_chunk_ids"] or []
        src = r["source_chunk_ids"] or []
        matched_by = "chunk_id"
        if _foreign(ids, chunk_texts):
            ids, matched_by = text_matched_ids(r.get("contexts") or [], src, chunk_texts or {}), "text"
        p = p_refusal.get(r["answer"]) if r["error"] is None else None
        rows.append({
            "case_id": r["case_id"],
            "system_id": r["system_id"],
            "k": k,
            "n_retrieved": len(_clean(ids)),
            "recall_at_k": recall_at_k(ids, src, k),
            "precision_at_k": precision_at_k(ids, src, k) if src else None,
            "reciprocal_rank": reciprocal_rank(ids, src) if src else None,
            "expected_behavior": r["expected_behavior"],
            "refusal_probability": p,
            "refused": None if p is None else p >= refusal_threshold,
            "failed": r["error"] is not None,
            "matched_by": matched_by,
        })
    schema = {"case_id": pl.String, "system_id": pl.String, "k": pl.Int64, "n_retrieved": pl.Int64,
              "recall_at_k": pl.Float64, "precision_at_k": pl.Float64, "reciprocal_rank": pl.Float64,
              "expected_behavior": pl.String, "refusal_probability": pl.Float64, "refused": pl.Boolean, "failed": pl.Boolean,
              "matched_by": pl.String}
    return pl.DataFrame(rows, schema=schema)


def retrieval_metrics_table(per_case: pl.DataFrame, no_retrieval_systems: Sequence[str] = ()) -> pl.DataFrame:
    """Per system: n_cases, failures, k, recall@k, precision@k, MRR, abstention and false-refusal rates."""
    answerable = pl.col("expected_behavior") == "answer"
    oos = pl.col("expected_behavior") == "abstain"
    with_src = answerable & pl.col("recall_at_k").is_not_null()
    out = (
        per_case.group_by("system_id", maintain_order=True)
        .agg(
            pl.len().alias("n_cases"),
            pl.col("failed").sum().cast(pl.Int64).alias("n_failed"),
            pl.col("k").max().alias("k"),
            with_src.sum().cast(pl.Int64).alias("n_retrieval_cases"),
            pl.col("recall_at_k").filter(with_src).mean().alias("recall_at_k"),
            pl.col("precision_at_k").filter(with_src).mean().alias("precision_at_k"),
            pl.col("reciprocal_rank").filter(with_src).mean().alias("mrr"),
            (oos & pl.col("refused").is_not_null()).sum().cast(pl.Int64).alias("n_out_of_scope"),
            pl.col("refused").filter(oos).cast(pl.Float64).mean().alias("abstention_rate"),
            (answerable & pl.col("refused").is_not_null()).sum().cast(pl.Int64).alias("n_answerable"),
            pl.col("refused").filter(answerable).cast(pl.Float64).mean().alias("false_refusal_rate"),
            pl.col("matched_by").unique().sort().str.join("+").alias("matched_by"),
        )
        .sort("system_id")
    )
    if no_retrieval_systems:
        none = pl.col("system_id").is_in(list(no_retrieval_systems))
        out = out.with_columns(
            [pl.when(none).then(None).otherwise(pl.col(c)).alias(c) for c in ("recall_at_k", "precision_at_k", "mrr")]
        )
    return out
