"""Stage 2 of the double calibration (HCAT paper §5.2): split conformal prediction sets.

On an independent hold-out (disjoint from the Stage 1 sample) with calibrated probabilities
``probs`` (n, K) and human labels ``y``:

1. non-conformity score  ``s_i = 1 − P(Y = y_i | x_i)``  (the paper's ``|y − f(x)|`` for binary);
2. ``q̂`` = the ``⌈(n+1)(1−α)⌉``-th smallest ``s_i``;
3. prediction set  ``T(x) = {k : 1 − P(Y = k | x) ≤ q̂} = {k : P(Y = k | x) ≥ 1 − q̂}``.

Under exchangeability the set holds the human label with probability at least ``1 − α``
(marginally, over hold-out and test draw) and, with continuous scores, at most
``1 − α + 1/(n+1)``.

**Too few hold-out labels.** When ``⌈(n+1)(1−α)⌉ > n`` (that is ``n < 1/α − 1``) no order statistic
qualifies; following the standard convention (Angelopoulos & Bates 2023; Vovk et al. 2005)
``q̂ = +∞`` and every label is in every set: the guarantee holds trivially and the sets say
nothing. ``SplitConformal.trivial`` flags it; ``label_sufficiency`` says how many labels are missing.

Binary sets (f = P(Y = 1 | x)), the four cases of the paper:
``{1}`` when f ≥ 1 − q̂ and f > q̂; ``{0}`` when f ≤ q̂ and f < 1 − q̂;
``{0, 1}`` when 1 − q̂ ≤ f ≤ q̂ (needs q̂ ≥ 0.5); ``∅`` when q̂ < f < 1 − q̂ (needs q̂ < 0.5).

The numpy below is the paper's procedure itself. ``crepes`` (0.9.1) ``ConformalClassifier`` with the
same hinge score ``1 − p̂`` gives identical sets with ``smoothing=False`` except when ``(n+1)α`` is
an integer: it keeps a label when its p-value is ``≥ α`` rather than ``> α``, one order statistic
more than the paper's ``q̂`` (checked on 400 random hold-outs, K = 2..5); by default it smooths
(randomises) the p-values and it exposes no ``q̂``. MAPIE's "lac" score is also ``1 − p̂`` but wants a
fitted estimator to wrap. Neither is worth a dependency for ten lines of order statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["SplitConformal", "conformal_rank", "set_labels"]

# (n+1)(1-α) is computed in floating point; e.g. 10·(1−0.7) = 3.0000000000000004 would round up to
# 4. A tolerance far below any meaningful α keeps the ceiling at the exact rational value.
_CEIL_EPS = 1e-9


def conformal_rank(n: int, alpha: float) -> int:
    """``⌈(n+1)(1−α)⌉``: the rank (1-based) of the order statistic that is ``q̂``; may exceed ``n``."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if n < 0:
        raise ValueError(f"n must be ≥ 0, got {n}")
    return max(1, math.ceil((n + 1) * (1.0 - alpha) - _CEIL_EPS))


def _as_probs(probs, name: str = "probs") -> np.ndarray:
    p = np.asarray(probs, dtype=float)
    if p.ndim == 1:  # binary given as P(Y = 1)
        p = np.column_stack([1.0 - p, p])
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n, K) with K ≥ 2 (or (n,) for binary P(Y=1)), got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{name} contains NaN or infinite values")
    if np.any(p < -1e-9) or np.any(p > 1 + 1e-9):
        raise ValueError(f"{name} must lie in [0, 1]")
    return p


@dataclass
class SplitConformal:
    """Split conformal classifier over calibrated probabilities (non-conformity ``1 − P(Y = y | x)``).

    >>> cp = SplitConformal(alpha=0.1).fit(probs_holdout, labels_holdout)
    >>> cp.qhat, cp.predict_sets(probs_new)   # bool (n_new, K)
    """

    alpha: float = 0.1

    def __post_init__(self) -> None:
        conformal_rank(1, self.alpha)  # validates alpha
        self.qhat: float | None = None
        self.n_: int = 0
        self.n_classes_: int = 0
        self.rank_: int = 0
        self.scores_: np.ndarray | None = None

    def fit(self, probs, labels) -> SplitConformal:
        p = _as_probs(probs)
        y = np.asarray(labels)
        if y.ndim != 1 or len(y) != len(p):
            raise ValueError(f"labels must have shape ({len(p)},), got {y.shape}")
        if len(y) and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= p.shape[1]):
            raise ValueError(f"labels must be integers in 0..{p.shape[1] - 1}")
        n = len(y)
        scores = 1.0 - p[np.arange(n), y.astype(int)]
        self.n_, self.n_classes_, self.scores_ = n, p.shape[1], scores
        self.rank_ = conformal_rank(n, self.alpha)
        self.qhat = math.inf if self.rank_ > n else float(np.sort(scores)[self.rank_ - 1])
        return self

    @property
    def trivial(self) -> bool:
        """True when ``q̂ = +∞`` (too few hold-out labels: every set holds every label)."""
        self._check_fitted()
        return math.isinf(self.qhat)

    def predict_sets(self, probs) -> np.ndarray:
        """Boolean (n, K): ``sets[i, k]`` is True when ``1 − P(Y = k | x_i) ≤ q̂``."""
        self._check_fitted()
        p = _as_probs(probs)
        if p.shape[1] != self.n_classes_:
            raise ValueError(f"fitted with K={self.n_classes_} classes, got probs with K={p.shape[1]}")
        return (1.0 - p) <= self.qhat

    def _check_fitted(self) -> None:
        if self.qhat is None:
            raise RuntimeError("SplitConformal is not fitted: call .fit(probs, labels) on the Stage 2 hold-out")

    def summary(self) -> dict:
        """What to record next to the sets: α, n, the rank used, q̂ (None when infinite), trivial."""
        self._check_fitted()
        return {
            "alpha": self.alpha,
            "n_holdout": self.n_,
            "n_classes": self.n_classes_,
            "rank": self.rank_,
            "qhat": None if math.isinf(self.qhat) else self.qhat,
            "trivial": self.trivial,
        }


def set_labels(sets: np.ndarray) -> list[str]:
    """Readable set per row: ``"{0}"``, ``"{1}"``, ``"{0,1}"``, ``"∅"`` (any K)."""
    sets = np.asarray(sets, dtype=bool)
    return ["{" + ",".join(str(k) for k in np.flatnonzero(row)) + "}" if row.any() else "∅" for row in sets]
