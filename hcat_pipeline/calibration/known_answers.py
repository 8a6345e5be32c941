"""Simulated nights with a known human-pass rate: the known answers the labelling design and its estimator are checked
against (``benchmarks/ppi_coverage.py`` runs 1,000 nights a regime; the tests run a few hundred), pure core.

A night: ``n`` answers with a machine score ``s ~ Beta(2.5, 1.5)``; strict raters pass an answer only when
``s + h > 0.7``, ``h ~ N(0, 0.15)`` a factor the score does not see, so no calibrator of ``s`` is perfect. The truth is
the night's own share of passes (the finite population a gate speaks of). Regimes (how labels were chosen):

* ``uniform`` — the design with every π equal (``budget / n``), the estimator of ``calibration.active``;
* ``design`` — the product's design (``calibration.design``: π from an earlier night's calibrator, judge flags on the
  answers near that calibrator's 0.5 raise π);
* ``design_flagged`` — the design, plus ``n_flagged`` labels a reviewer gave while browsing the lowest-scored answers
  (outside the design: they train the calibrator and must not enter the rate);
* ``queue_order`` — the queue before the design: the ``budget`` answers closest to P = 0.5 labelled, the calibrator
  fitted on them and PPI run as if they were random (``calibration.ppi.ppi_mean``): the failure the design replaces;
* ``uniform_in_sample`` — uniform random labels, the old estimator (in-sample fit, ``ppi_mean``): the comparator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from hcat_pipeline.calibration.active import active_ppi, cross_fit, folds_of
from hcat_pipeline.calibration.calibrators import Calibrator
from hcat_pipeline.calibration.design import draw, inclusion_probabilities
from hcat_pipeline.calibration.ppi import ppi_mean

Regime = Literal["uniform", "design", "design_flagged", "queue_order", "uniform_in_sample"]
REGIMES: tuple[Regime, ...] = ("uniform", "design", "design_flagged", "queue_order", "uniform_in_sample")
Method = Literal["platt", "isotonic"]


@dataclass(frozen=True)
class Night:
    scores: np.ndarray
    labels: np.ndarray  # every answer's human label (the reviewer sees one only when asked)

    @property
    def truth(self) -> float:
        return float(self.labels.mean())


@dataclass(frozen=True)
class Outcome:
    covered: bool
    width: float
    estimate: float
    truth: float
    n_labels: int  # labels that entered the rate


def simulate_night(rng: np.random.Generator, n: int = 400, cut: float = 0.7, hidden_sd: float = 0.15) -> Night:
    s = rng.beta(2.5, 1.5, n)
    y = (s + rng.normal(0.0, hidden_sd, n) > cut).astype(float)
    return Night(s, y)


def _calibrator(night: Night, idx: np.ndarray, method: Method) -> Calibrator | None:
    y = night.labels[idx].astype(int)
    return Calibrator(method=method, n_classes=2).fit(night.scores[idx], y) if np.unique(y).size == 2 else None


def _prior_p(rng: np.random.Generator, night: Night, method: Method, n_prior: int = 40) -> np.ndarray:
    """P(pass) from a calibrator fitted on an earlier night's uniform labels (the design's uncertainty at queue time)."""
    earlier = simulate_night(rng, night.scores.size)
    cal = _calibrator(earlier, rng.choice(earlier.scores.size, n_prior, replace=False), method)
    return np.full(night.scores.size, 0.5) if cal is None else cal.predict_proba(night.scores)[:, 1]


def _active(rng, night: Night, method: Method, pi: np.ndarray, *, extra: np.ndarray | None = None,
            anytime: bool = False, confidence: float = 0.95) -> Outcome:  # fmt: skip
    keys = [str(i) for i in range(night.scores.size)]
    seed = int(rng.integers(2**31))
    order, queued = draw(keys, pi, seed)
    y = np.where(queued, night.labels, np.nan)  # the reviewer answered the whole queue
    folds = folds_of(rng.random(night.scores.size))
    ex = np.arange(0) if extra is None else extra
    f = cross_fit(night.scores, folds, queued, night.labels, method, extra_scores=night.scores[ex], extra_y=night.labels[ex])
    est = active_ppi(f, pi, order, queued, y, confidence=confidence, anytime=anytime)
    t = night.truth
    return Outcome(est.ci_low <= t <= est.ci_high, est.width, est.estimate, t, est.n_labelled)


def _in_sample(night: Night, idx: np.ndarray, method: Method, confidence: float) -> Outcome:
    cal = _calibrator(night, idx, method)
    p = np.full(night.scores.size, night.labels[idx].mean()) if cal is None else cal.predict_proba(night.scores)[:, 1]
    rest = np.setdiff1d(np.arange(night.scores.size), idx)
    est = ppi_mean(night.labels[idx], p[idx], p[rest], confidence)
    t = night.truth
    return Outcome(est.ci_low <= t <= est.ci_high, est.width, est.estimate, t, idx.size)


def run_regime(regime: Regime, method: Method, rng: np.random.Generator, *, n: int = 400, budget: int = 60,
               n_flagged: int = 30, anytime: bool = False, confidence: float = 0.95) -> Outcome:  # fmt: skip
    """One simulated night under ``regime`` (module doc)."""
    night = simulate_night(rng, n)
    if regime == "uniform":
        return _active(rng, night, method, np.full(n, budget / n), anytime=anytime, confidence=confidence)
    if regime in ("design", "design_flagged"):
        p = _prior_p(rng, night, method)
        flags = np.abs(p - 0.5) < 0.1  # the judge disagrees near the boundary
        pi = inclusion_probabilities(p, flags, budget)
        extra = np.argsort(night.scores)[:n_flagged] if regime == "design_flagged" else None
        return _active(rng, night, method, pi, extra=extra, anytime=anytime, confidence=confidence)
    if regime == "queue_order":
        p = _prior_p(rng, night, method)
        return _in_sample(night, np.argsort(np.abs(p - 0.5), kind="stable")[:budget], method, confidence)
    if regime == "uniform_in_sample":
        return _in_sample(night, rng.choice(n, budget, replace=False), method, confidence)
    raise ValueError(f"unknown regime {regime!r}; one of {REGIMES}")


def coverage(regime: Regime, method: Method, nights: int, seed: int = 0, **kw) -> dict:
    """Coverage, mean width, bias and mean labels used over ``nights`` simulated nights."""
    rng = np.random.default_rng(seed)
    out = [run_regime(regime, method, rng, **kw) for _ in range(nights)]
    cov = float(np.mean([o.covered for o in out]))
    return {"regime": regime, "method": method, "nights": nights, "coverage": cov,
            "coverage_se": float(np.sqrt(cov * (1 - cov) / nights)), "width": float(np.mean([o.width for o in out])),
            "bias": float(np.mean([o.estimate - o.truth for o in out])), "labels": float(np.mean([o.n_labels for o in out]))}  # fmt: skip
