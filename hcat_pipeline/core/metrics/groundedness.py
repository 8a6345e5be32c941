"""Groundedness by sentence similarity (HCAT paper §3.2.1).

S_max(a_i) = max_j Sim(a_i, c_j); S_groundedness = (1/k) Σ_i S_max(a_i); the least grounded answer
sentence i* = argmin_i S_max(a_i) is the potential hallucination. (The NLI variant, §3.2.2, lives
in ``groundedness_nli``.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hcat_pipeline.core.metrics.aggregation import aggregate
from hcat_pipeline.core.metrics.relevancy import max_similarity, similarity_matrix


@dataclass
class Groundedness:
    score: float | None
    smax: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))  # per answer sentence
    least_grounded_index: int | None = None  # i* = argmin_i S_max(a_i)


def groundedness_similarity(answer_vecs: np.ndarray, context_vecs: np.ndarray, method: str = "mean", weights=None, sim: np.ndarray | None = None) -> Groundedness:
    """``sim`` (k × n answer-by-context similarities) may be passed when already computed."""
    if len(answer_vecs) == 0 or len(context_vecs) == 0:
        return Groundedness(None)
    if sim is None:
        sim = similarity_matrix(answer_vecs, context_vecs)
    smax = max_similarity(sim, axis=1)
    return Groundedness(aggregate(smax, method, weights), smax, int(np.argmin(smax)))
