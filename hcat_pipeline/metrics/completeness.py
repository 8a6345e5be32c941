"""Completeness (HCAT paper §3.3): max-similarity coverage and Wasserstein distance.

* §3.3.1 S_max(c_i) = max_j Sim(c_i, a_j); S_completeness = mean (or weighted mean) over the n
  context sentences. Context sentences with S_max(c_i) below a coverage threshold are "not covered".
* §3.3.2 W(C, A) = min_{γ ∈ Γ(p, q)} Σ_i Σ_j γ_ij d(c_i, a_j) with uniform weights p_i = 1/n,
  q_j = 1/k: solved exactly by optimal transport (POT ``ot.emd2``), and the paper's approximation
  W̃(C, A) = 1/(nk) Σ_i Σ_j d(c_i, a_j) (mean pairwise distance). d is the cosine distance 1 − cos
  (default) or the Euclidean distance between the embeddings. Lower = more complete.

Registers ``completeness_similarity`` (mean or weighted) and ``completeness_wasserstein``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from hcat_pipeline.metrics.aggregation import aggregate
from hcat_pipeline.metrics.registry import F32_LIST, STR_LIST, metric
from hcat_pipeline.metrics.relevancy import max_similarity, similarity_matrix

OT_METRICS = ("cosine", "euclidean")


def distance_matrix(sim: np.ndarray, metric: str = "cosine") -> np.ndarray:
    """Distances from a cosine-similarity matrix of normalised vectors: 1 − cos or ‖x − y‖ = √(2 − 2cos)."""
    sim = np.asarray(sim, dtype=np.float64)
    if metric == "cosine":
        return np.clip(1.0 - sim, 0.0, 2.0)
    if metric == "euclidean":
        return np.sqrt(np.clip(2.0 - 2.0 * sim, 0.0, 4.0))
    raise ValueError(f"ot_metric {metric!r}: expected one of {OT_METRICS}")


def wasserstein_distance(cost: np.ndarray, p: np.ndarray | None = None, q: np.ndarray | None = None) -> float:
    """Exact W = min_γ Σ γ_ij d_ij over transport plans with marginals p (rows), q (columns); uniform by default."""
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    n, k = cost.shape
    if n == 0 or k == 0:
        raise ValueError("Wasserstein distance of an empty distribution")
    if n == 1 or k == 1:  # a single point on one side: the only plan moves everything to it
        w = (np.full(n, 1.0 / n) if p is None else p) if k == 1 else (np.full(k, 1.0 / k) if q is None else q)
        return float((cost.ravel() * w).sum())
    import ot

    p = np.full(n, 1.0 / n) if p is None else np.asarray(p, dtype=np.float64)
    q = np.full(k, 1.0 / k) if q is None else np.asarray(q, dtype=np.float64)
    return float(ot.emd2(p, q, cost))


def mean_pairwise_distance(cost: np.ndarray) -> float:
    """The paper's approximation W̃ = 1/(nk) Σ_i Σ_j d(c_i, a_j)."""
    return float(np.asarray(cost, dtype=np.float64).mean())


@dataclass
class Completeness:
    score: float | None  # S_completeness (max-similarity coverage)
    smax: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))  # per context sentence
    wasserstein: float | None = None  # exact OT
    wasserstein_approx: float | None = None  # mean pairwise distance
    uncovered: list[int] = field(default_factory=list)  # context sentence positions with S_max < threshold


def completeness(
    context_vecs: np.ndarray,
    answer_vecs: np.ndarray,
    method: str = "mean",
    weights=None,
    coverage_threshold: float = 0.5,
    ot_metric: str = "cosine",
    sim_answer_context: np.ndarray | None = None,
    wasserstein: bool = True,
) -> Completeness:
    """All completeness figures for one row. ``sim_answer_context`` (k × n) may be passed to reuse it."""
    if len(context_vecs) == 0 or len(answer_vecs) == 0:
        return Completeness(None)
    sim = sim_answer_context.T if sim_answer_context is not None else similarity_matrix(context_vecs, answer_vecs)
    smax = max_similarity(sim, axis=1)
    out = Completeness(aggregate(smax, method, weights), smax, uncovered=[int(i) for i in np.flatnonzero(smax < coverage_threshold)])
    if wasserstein:
        cost = distance_matrix(sim, ot_metric)
        out.wasserstein = wasserstein_distance(cost)
        out.wasserstein_approx = mean_pairwise_distance(cost)
    return out


# ---------------------------------------------------------------- registered metrics


@metric("completeness_similarity", needs={"embed"}, embeds=("context", "answer"), aggregations=("mean", "weighted"),
        columns={"completeness_smax": F32_LIST, "uncovered_context_sentences": STR_LIST})  # fmt: skip
def completeness_similarity_metric(batch, resources, options) -> dict[str, list]:
    """Completeness (§3.3.1): S_max of each context sentence against the answer; the context sentences not covered."""
    out = {c: batch.column() for c in ("completeness_similarity", "completeness_smax", "uncovered_context_sentences")}
    method = options.method("completeness_similarity")
    for i in batch.rows("completeness_similarity"):
        ctx = batch.sentences("context", i)
        if ctx and batch.sentences("answer", i):
            smax = max_similarity(batch.similarity("context", "answer", i), axis=1)
            out["completeness_similarity"][i] = batch.aggregate(smax, method, "context", i)
            out["completeness_smax"][i] = smax.tolist()
            out["uncovered_context_sentences"][i] = [ctx[j] for j in np.flatnonzero(smax < options.coverage_threshold)]
    return out


@metric("completeness_wasserstein", needs={"embed"}, embeds=("context", "answer"),
        columns={"completeness_wasserstein_approx": pl.Float64})  # fmt: skip
def completeness_wasserstein_metric(batch, resources, options) -> dict[str, list]:
    """Completeness as a transport cost (§3.3.2): exact W(C, A) by optimal transport; the paper's mean pairwise approximation."""
    out = {c: batch.column() for c in ("completeness_wasserstein", "completeness_wasserstein_approx")}
    for i in batch.rows("completeness_wasserstein"):
        if batch.sentences("context", i) and batch.sentences("answer", i):
            cost = distance_matrix(batch.similarity("context", "answer", i), options.ot_metric)
            out["completeness_wasserstein"][i] = wasserstein_distance(cost)
            out["completeness_wasserstein_approx"][i] = mean_pairwise_distance(cost)
    return out
