"""Aggregating per-sentence scores into one score (HCAT paper §3.1, §3.3.1, §3.4).

* ``mean``: S = (1/m) Σ S_max(q_i)
* ``weighted``: S = Σ w_i S_max(q_i) with w_i ≥ 0, Σ w_i = 1 (weights are normalised here)
* ``minimax``: S = min_i S_max(q_i) — the least-addressed sentence decides

The paper defines minimax for context relevancy and answer relevancy only, the weighted mean for
context relevancy, completeness and answer relevancy, and the simple mean for every metric.
``ALLOWED`` records that; a method a metric does not define falls back to ``mean`` (recorded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hcat_pipeline.core.chunking import approx_token_count

METHODS = ("mean", "weighted", "minimax")

ALLOWED: dict[str, tuple[str, ...]] = {
    "context_relevancy": ("mean", "weighted", "minimax"),  # §3.1
    "groundedness_similarity": ("mean",),  # §3.2.1 (+ arg-min: the least grounded sentence)
    "completeness_similarity": ("mean", "weighted"),  # §3.3.1
    "answer_relevancy": ("mean", "weighted", "minimax"),  # §3.4
}


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


def resolve(metric: str, method: str | dict[str, str]) -> str:
    """The method actually used for ``metric``: the requested one if the paper defines it, else mean."""
    m = method.get(metric, "mean") if isinstance(method, dict) else method
    if m not in METHODS:
        raise ValueError(f"aggregation {m!r} for {metric}: expected one of {METHODS}")
    return m if m in ALLOWED.get(metric, ("mean",)) else "mean"


def token_weights(sentences: Sequence[str]) -> np.ndarray:
    """Default sentence weights for the weighted mean: proportional to the sentence's token count."""
    return np.asarray([max(1, approx_token_count(s)) for s in sentences], dtype=np.float64)


WeightFn = Callable[[Sequence[str]], np.ndarray]
