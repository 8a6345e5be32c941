"""The 3PL item response function and the fit's bounds and priors: the definitions every IRT module shares
(imports nothing else of ``irt``, so ``model``, ``likelihood``, ``start`` and ``information`` form no circle)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit


@dataclass(frozen=True)
class IRTBounds:
    """Box bounds of L-BFGS-B on the item parameters (θ needs none: it is standardised, so |θ| ≤ √(n − 1)).

    The paper's code used a ∈ [0.5, 1.5], b ∈ [0.01, 1], c ∈ [0.2, 0.4], θ ∈ [−3, 3].
    """

    a: tuple[float, float] = (0.05, 6.0)
    b: tuple[float, float] = (-6.0, 6.0)
    c: tuple[float, float] = (0.0, 0.5)


@dataclass(frozen=True)
class IRTPriors:
    """Weak priors (None switches one off): a soft limit |θ| ≲ theta_limit, b ~ N(0, b_sd²), log a ~ N(0, log_a_sd²),
    c ~ Beta(c_beta).

    Not needed for identifiability (θ is standardised). Standardisation leaves one taker free to run away (a taker
    at the 3PL guessing floor has a flat likelihood as θ → −∞, and the others' scale is absorbed by a), so θ beyond
    ±theta_limit (standardised units; a N(0, 1) population passes ±4 with probability 6e-5) pays a quadratic
    penalty (|θ| − L)²/(2·0.25²); inside it θ is free. The item priors keep items that every taker (or no taker) got
    right from running to the bounds, and c from drifting where few low-θ takers inform it (as BILOG's Beta prior).
    """

    theta_limit: float | None = 4.0
    b_sd: float | None = 4.0
    log_a_sd: float | None = 1.5
    c_beta: tuple[float, float] | None = (2.0, 8.0)


def irt_probability(theta, a, b, c) -> np.ndarray:
    """3PL probability of a correct answer, shape (len(theta), len(a)); 2PL when c = 0, 1PL when also a = 1."""
    theta, a, b, c = (np.asarray(v, dtype=float) for v in (theta, a, b, c))
    return c + (1.0 - c) * expit(a * (theta[:, None] - b))
