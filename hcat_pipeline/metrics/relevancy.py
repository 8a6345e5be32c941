"""Context relevancy (HCAT paper §3.1) and answer relevancy (§3.4) by sentence similarity.

Sentences are embedded with L2-normalised vectors, so Sim(q_i, c_j) = cos θ_ij = e_qi · e_cj and
the similarity matrix of one row is one small matrix product. Registers ``context_relevancy`` and
``answer_relevancy`` (mean, weighted or minimax over the sentences, as the paper defines them).
"""

from __future__ import annotations

import numpy as np

from hcat_pipeline.metrics.aggregation import aggregate
from hcat_pipeline.metrics.registry import F32_LIST, metric


def similarity_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarities between the rows of ``a`` (m × d) and ``b`` (n × d), both normalised."""
    return np.asarray(a, dtype=np.float32) @ np.asarray(b, dtype=np.float32).T


def max_similarity(sim: np.ndarray, axis: int = 1) -> np.ndarray:
    """S_max per row (axis=1) or per column (axis=0) of a similarity matrix."""
    if sim.size == 0:
        return np.zeros(sim.shape[1 - axis] if sim.ndim == 2 else 0, dtype=np.float32)
    return sim.max(axis=axis)


def context_relevancy(query_vecs: np.ndarray, context_vecs: np.ndarray, method: str = "mean", weights=None) -> tuple[float | None, np.ndarray]:
    """S_c-relevancy: S_max(q_i) = max_j Sim(q_i, c_j), aggregated over the m query sentences.

    Returns (score, S_max per query sentence). ``None`` when either side has no sentence.
    """
    if len(query_vecs) == 0 or len(context_vecs) == 0:
        return None, np.zeros(0, dtype=np.float32)
    smax = max_similarity(similarity_matrix(query_vecs, context_vecs), axis=1)
    return aggregate(smax, method, weights), smax


def answer_relevancy(answer_vecs: np.ndarray, query_vecs: np.ndarray, method: str = "mean", weights=None) -> tuple[float | None, np.ndarray]:
    """S_a-relevancy: S_max(a_i) = max_j Sim(a_i, q_j), aggregated over the k answer sentences."""
    if len(answer_vecs) == 0 or len(query_vecs) == 0:
        return None, np.zeros(0, dtype=np.float32)
    smax = max_similarity(similarity_matrix(answer_vecs, query_vecs), axis=1)
    return aggregate(smax, method, weights), smax


# ---------------------------------------------------------------- registered metrics


@metric("context_relevancy", needs={"embed"}, embeds=("query", "context"), aggregations=("mean", "weighted", "minimax"),
        columns={"context_relevancy_smax": F32_LIST})  # fmt: skip
def context_relevancy_metric(batch, resources, options) -> dict[str, list]:
    """Context relevancy (§3.1): S_max of each query sentence against the context, aggregated."""
    return _relevancy(batch, options, "context_relevancy", "query", "context")


@metric("answer_relevancy", needs={"embed"}, embeds=("answer", "query"), aggregations=("mean", "weighted", "minimax"),
        columns={"answer_relevancy_smax": F32_LIST})  # fmt: skip
def answer_relevancy_metric(batch, resources, options) -> dict[str, list]:
    """Answer relevancy (§3.4): S_max of each answer sentence against the query, aggregated."""
    return _relevancy(batch, options, "answer_relevancy", "answer", "query")


def _relevancy(batch, options, name: str, side: str, other: str) -> dict[str, list]:
    score, smax_col = batch.column(), batch.column()
    method = options.method(name)
    for i in batch.rows(name):
        if batch.sentences(side, i) and batch.sentences(other, i):
            smax = max_similarity(batch.similarity(side, other, i), axis=1)
            score[i] = batch.aggregate(smax, method, side, i)
            smax_col[i] = smax.tolist()
    return {name: score, f"{name}_smax": smax_col}
