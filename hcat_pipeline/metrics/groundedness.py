"""Groundedness by sentence similarity (HCAT paper §3.2.1).

S_max(a_i) = max_j Sim(a_i, c_j); S_groundedness = (1/k) Σ_i S_max(a_i); the least grounded answer
sentence i* = argmin_i S_max(a_i) is the potential hallucination.

Registers ``groundedness_similarity`` and ``groundedness_nli`` (§3.2.2: σ(D) per answer sentence
from the NLI scorer — ``groundedness_nli.groundedness_nli_batch`` over an ``NLIModel``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from hcat_pipeline.metrics.aggregation import aggregate
from hcat_pipeline.metrics.registry import F32_LIST, F64_LIST, metric
from hcat_pipeline.metrics.relevancy import max_similarity, similarity_matrix


@dataclass
class Groundedness:
    score: float | None
    smax: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))  # per answer sentence
    least_grounded_index: int | None = None  # i* = argmin_i S_max(a_i)


def groundedness_similarity(
    answer_vecs: np.ndarray, context_vecs: np.ndarray, method: str = "mean", weights=None, sim: np.ndarray | None = None
) -> Groundedness:
    """``sim`` (k × n answer-by-context similarities) may be passed when already computed."""
    if len(answer_vecs) == 0 or len(context_vecs) == 0:
        return Groundedness(None)
    if sim is None:
        sim = similarity_matrix(answer_vecs, context_vecs)
    smax = max_similarity(sim, axis=1)
    return Groundedness(aggregate(smax, method, weights), smax, int(np.argmin(smax)))


# ---------------------------------------------------------------- registered metrics


NLI_BOUNDARY = 0.5  # σ(D) at D = 0: the NLI head's decision boundary (entailed above)

@metric("groundedness_similarity", needs={"embed"}, embeds=("answer", "context"), aggregations=("mean",),
        columns={"groundedness_smax": F32_LIST, "least_grounded_sentence": pl.String, "least_grounded_smax": pl.Float64})  # fmt: skip
def groundedness_similarity_metric(batch, resources, options) -> dict[str, list]:
    """Groundedness by similarity (§3.2.1): S_max of each answer sentence against the context; the least grounded one."""
    out = {
        c: batch.column()
        for c in ("groundedness_similarity", "groundedness_smax", "least_grounded_sentence", "least_grounded_smax")
    }
    method = options.method("groundedness_similarity")
    for i in batch.rows("groundedness_similarity"):
        answer = batch.sentences("answer", i)
        if answer and batch.sentences("context", i):
            g = groundedness_similarity(
                batch.vectors("answer", i), batch.vectors("context", i), method, sim=batch.similarity("answer", "context", i)
            )
            out["groundedness_similarity"][i] = g.score
            out["groundedness_smax"][i] = g.smax.tolist()
            out["least_grounded_sentence"][i] = answer[g.least_grounded_index]
            out["least_grounded_smax"][i] = float(g.smax[g.least_grounded_index])
    return out


@metric("groundedness_nli", needs={"nli"}, aggregations=("mean",),
        columns={"nli_sigma": F64_LIST, "nli_distance": F64_LIST, "least_grounded_sentence_nli": pl.String,
                 "unsupported_sentences": pl.Int64})  # fmt: skip
def groundedness_nli_metric(batch, resources, options) -> dict[str, list]:
    """Groundedness by NLI (§3.2.2): mean σ(D) over the answer sentences against the context (the head of the row's task: qa, dialogue, summary); the least grounded one;
    ``unsupported_sentences``: how many sentences the head does not find entailed (σ(D) < 0.5, its decision boundary D = 0)
    — an answer with one is a hallucination (the hallucination_rate gate)."""
    from hcat_pipeline.metrics.groundedness_nli import groundedness_nli_batch

    out = {c: batch.column() for c in ("groundedness_nli", "nli_sigma", "nli_distance", "least_grounded_sentence_nli", "unsupported_sentences")}
    rows = [i for i in batch.valid if batch.sentences("answer", i) and batch.sentences("context", i)]
    if not rows:
        return out
    tasks = [batch.tasks[i] or options.task for i in rows]  # the row's `task` column, else the call's (default qa)
    results = groundedness_nli_batch(
        [(batch.sentences("answer", i), batch.sentences("context", i)) for i in rows], resources.get("nli"), tasks
    )
    for i, r in zip(rows, results):
        g, sigma = r["groundedness_nli"], [float(x) for x in r["nli_sigma"]]
        out["groundedness_nli"][i] = None if g is None or g != g else float(g)  # NaN (no scorable sentence) -> null
        out["nli_sigma"][i] = sigma
        out["nli_distance"][i] = [float(x) for x in r["nli_distance"]]
        out["unsupported_sentences"][i] = sum(s < NLI_BOUNDARY for s in sigma) if sigma else None
        if sigma:
            scored = [s for s in batch.sentences("answer", i) if s and s.strip()]  # the sentences the scorer saw
            out["least_grounded_sentence_nli"][i] = scored[int(np.argmin(sigma))]
    return out
