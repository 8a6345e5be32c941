"""Report figures for calibrated probabilities and conformal sets (small pure functions).

Probabilities are ``(n, K)`` (rows sum to 1) or, for binary, ``(n,)`` = P(Y = 1); labels are
integers ``0..K−1``.

- ``expected_calibration_error``: equal-width bins over [0, 1]; ``Σ_b (n_b / n)·|acc_b − conf_b|``.
  Binary (``(n,)`` or K = 2): on P(Y = 1) against the 0/1 label. K > 2: top-label ECE (confidence =
  max probability, accuracy = argmax equals the label).
- ``brier_score``: multi-class Brier, mean over rows of ``Σ_k (p_k − 1[y = k])²``; for binary this is
  twice scikit-learn's ``brier_score_loss`` (which counts the positive class only).
- ``reliability_curve``: binary reliability-diagram data via ``sklearn.calibration.calibration_curve``
  (uniform bins), plus the count per non-empty bin.
- ``coverage`` / ``mean_set_size`` / ``set_size_distribution``: for boolean prediction sets (n, K).
"""

from __future__ import annotations

import numpy as np
from sklearn.calibration import calibration_curve

__all__ = [
    "expected_calibration_error",
    "brier_score",
    "reliability_curve",
    "coverage",
    "mean_set_size",
    "set_size_distribution",
]


def _probs_labels(probs, labels) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probs, dtype=float)
    if p.ndim == 1:
        p = np.column_stack([1.0 - p, p])
    y = np.asarray(labels).astype(int)
    if p.ndim != 2 or len(p) != len(y):
        raise ValueError(f"probs {np.shape(probs)} and labels {np.shape(labels)} do not match")
    if len(y) and (y.min() < 0 or y.max() >= p.shape[1]):
        raise ValueError(f"labels must lie in 0..{p.shape[1] - 1}")
    return p, y


def _bin_ids(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-width bins as scikit-learn's ``calibration_curve``: a value on an inner edge goes to the
    lower bin (bins ``[0, 1/B], (1/B, 2/B], …``)."""
    return np.searchsorted(np.linspace(0.0, 1.0, n_bins + 1)[1:-1], conf)


def expected_calibration_error(probs, labels, n_bins: int = 10) -> float:
    """ECE with ``n_bins`` equal-width bins (binary: on P(Y=1); K > 2: top-label)."""
    p, y = _probs_labels(probs, labels)
    if len(y) == 0:
        return float("nan")
    if p.shape[1] == 2:
        conf, hit = p[:, 1], (y == 1).astype(float)
    else:
        conf, hit = p.max(axis=1), (p.argmax(axis=1) == y).astype(float)
    bins = _bin_ids(conf, n_bins)
    ece = 0.0
    for b in np.unique(bins):
        m = bins == b
        ece += m.mean() * abs(hit[m].mean() - conf[m].mean())
    return float(ece)


def brier_score(probs, labels) -> float:
    """Multi-class Brier score: mean of ``Σ_k (p_k − 1[y = k])²`` (0 best, 2 worst)."""
    p, y = _probs_labels(probs, labels)
    onehot = np.zeros_like(p)
    onehot[np.arange(len(y)), y] = 1.0
    return float(np.mean(np.sum((p - onehot) ** 2, axis=1)))


def reliability_curve(probs, labels, n_bins: int = 10) -> dict[str, list[float] | list[int]]:
    """Binary reliability-diagram data: ``prob_pred`` (mean P(Y=1) per bin), ``prob_true`` (fraction of
    label 1), ``count`` (rows per bin); empty bins are left out, as scikit-learn does."""
    p, y = _probs_labels(probs, labels)
    if p.shape[1] != 2:
        raise ValueError("reliability_curve is for binary labels; for K > 2 report expected_calibration_error")
    pos = p[:, 1]
    prob_true, prob_pred = calibration_curve(y, pos, n_bins=n_bins, strategy="uniform")
    counts = np.bincount(_bin_ids(pos, n_bins), minlength=n_bins)
    return {
        "prob_pred": prob_pred.tolist(),
        "prob_true": prob_true.tolist(),
        "count": [int(c) for c in counts[counts > 0]],
    }


def _sets_labels(sets, labels) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(sets, dtype=bool)
    y = np.asarray(labels).astype(int)
    if s.ndim != 2 or len(s) != len(y):
        raise ValueError(f"sets {np.shape(sets)} and labels {np.shape(labels)} do not match")
    return s, y


def coverage(sets, labels) -> float:
    """Empirical coverage: fraction of rows whose human label is in the prediction set."""
    s, y = _sets_labels(sets, labels)
    return float(s[np.arange(len(y)), y].mean()) if len(y) else float("nan")


def mean_set_size(sets) -> float:
    """Average number of labels per prediction set."""
    s = np.asarray(sets, dtype=bool)
    return float(s.sum(axis=1).mean()) if len(s) else float("nan")


def set_size_distribution(sets) -> dict[int, int]:
    """Count of prediction sets of each size 0..K (0 = empty set, K = every label)."""
    s = np.asarray(sets, dtype=bool)
    sizes = np.bincount(s.sum(axis=1), minlength=s.shape[1] + 1) if s.ndim == 2 else np.zeros(1, int)
    return {k: int(c) for k, c in enumerate(sizes)}
