"""Aggregating per-sentence scores into one score (HCAT paper §3.1, §3.3.1, §3.4).

* ``mean``: S = (1/m) Σ S_max(q_i)
* ``weighted``: S = Σ w_i S_max(q_i) with w_i ≥ 0, Σ w_i = 1 (weights are normalised here)
* ``minimax``: S = min_i S_max(q_i) — the least-addressed sentence decides

Which methods a metric defines (the paper: minimax for context and answer relevancy only, the
weighted mean for context relevancy, completeness and answer relevancy, the simple mean for every
metric) is declared with the metric itself (``registry.metric(..., aggregations=...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hcat_pipeline.corpus.chunking import approx_token_count

METHODS = ("mean", "weighted", "minimax")


def aggregate(values: Sequence[float] | np.ndarray, method: str = "mean", weights: Sequence[float] | np.ndarray | None = None) -> float | None:
    """Aggregate per-sentence scores; ``None`` for an empty list."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return None
    if method == "mean":
        return float(v.mean())
    if method == "minimax":
        return float(v.min())
    if method == "weighted":
        if weights is None:
            return float(v.mean())
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != v.shape:
            raise ValueError(f"weights: {w.shape} values for {v.shape} scores")
        if (w < 0).any():
            raise ValueError("weights must be non-negative")
        total = w.sum()
        return float(v.mean()) if total <= 0 else float((w / total) @ v)
    raise ValueError(f"aggregation {method!r}: expected one of {METHODS}")


def token_weights(sentences: Sequence[str]) -> np.ndarray:
    """Default sentence weights for the weighted mean: proportional to the sentence's token count."""
    return np.asarray([max(1, approx_token_count(s)) for s in sentences], dtype=np.float64)


WeightFn = Callable[[Sequence[str]], np.ndarray]
