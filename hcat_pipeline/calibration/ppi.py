"""Prediction-powered inference for a night's human-pass rate (Angelopoulos et al. 2023, "Prediction-Powered
Inference" and PPI++; the estimator ARES uses), pure core.

The quantity a reviewer wants is the share of the night's answers a *human* would pass. Humans labelled a few of them
(``y`` on the labelled sample); the calibrated machine gives every answer a probability ``f`` that a human would pass it.
PPI uses both: the machine's mean over all answers, corrected by the machine's error measured where humans looked::

    θ̂_λ = λ · mean(f_unlabelled) + mean(y − λ · f_labelled)
    Var  = λ² · var(f_unlabelled) / N + var(y − λ · f_labelled) / n

with the power-tuned λ = Cov(y, f) / ((1 + n / N) · Var(f)) clipped to [0, 1] (PPI++: λ = 0 is the labels-only
estimate, λ = 1 classical PPI). The interval is valid whatever the machine's bias (the rectifier removes it) and narrower
than the labels-only interval when the machine predicts the labels. Labelled answers must be a *uniform* random sample
of the night's answers and the machine fitted on other labels: the gates no longer use this estimator (their labels come
from the design of ``calibration.design`` and are read by ``calibration.active``); it stays as the uniform-PPI
comparator of ``benchmarks/ppi_coverage.py``, where the old queue's order (closest to 0.5 first, fitted on the same
labels) shows the failure it was.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np


@dataclass(frozen=True)
class PPIEstimate:
    estimate: float
    ci_low: float
    ci_high: float
    n_labelled: int
    n_unlabelled: int
    lam: float
    confidence: float
    labels_only: float  # the mean of the human labels alone …
    labels_only_ci_low: float  # … and its normal interval, for comparison
    labels_only_ci_high: float

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low

    def as_dict(self) -> dict:
        return asdict(self)


def _var(x: np.ndarray) -> float:
    return float(np.var(x, ddof=1)) if x.size > 1 else 0.0


def ppi_mean(y_labelled, f_labelled, f_unlabelled, confidence: float = 0.95, *, power_tuning: bool = True) -> PPIEstimate:
    """PPI(++) estimate and CI of the mean of ``y`` (module doc); ``f_*`` are the machine's predictions of ``y``."""
    y = np.asarray(y_labelled, dtype=float).ravel()
    fl = np.asarray(f_labelled, dtype=float).ravel()
    fu = np.asarray(f_unlabelled, dtype=float).ravel()
    if y.size != fl.size:
        raise ValueError(f"ppi_mean: {y.size} labels but {fl.size} predictions for them")
    if y.size < 2 or fu.size < 1:
        raise ValueError(f"ppi_mean: needs ≥ 2 labelled and ≥ 1 unlabelled item (got {y.size}, {fu.size})")
    if not (np.isfinite(y).all() and np.isfinite(fl).all() and np.isfinite(fu).all()):
        raise ValueError("ppi_mean: labels and predictions must be finite (drop unscored items first)")
    n, big_n = y.size, fu.size
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    lam = 1.0
    if power_tuning:
        vf = _var(np.concatenate([fl, fu]))
        cov = float(np.cov(y, fl, ddof=1)[0, 1]) if n > 1 else 0.0
        lam = float(np.clip(cov / ((1 + n / big_n) * vf), 0.0, 1.0)) if vf > 0 else 0.0
    est = lam * float(fu.mean()) + float((y - lam * fl).mean())
    se = math.sqrt(lam**2 * _var(fu) / big_n + _var(y - lam * fl) / n)
    only, only_se = float(y.mean()), math.sqrt(_var(y) / n)
    return PPIEstimate(estimate=est, ci_low=max(est - z * se, 0.0), ci_high=min(est + z * se, 1.0), n_labelled=n,
                       n_unlabelled=big_n, lam=lam, confidence=confidence, labels_only=only,
                       labels_only_ci_low=max(only - z * only_se, 0.0), labels_only_ci_high=min(only + z * only_se, 1.0))  # fmt: skip


def crossing_score(pass_probability, level: float = 0.5, lo: float = 0.0, hi: float = 1.0, grid: int = 2001) -> float | None:
    """The lowest raw score in [lo, hi] at which ``pass_probability(scores)`` (a calibrator's P(human pass), monotone
    non-decreasing) reaches ``level``: the threshold the human labels set. None when it never does."""
    xs = np.linspace(lo, hi, grid)
    p = np.asarray(pass_probability(xs), dtype=float)
    hit = np.flatnonzero(p >= level)
    return None if hit.size == 0 else float(xs[hit[0]])
