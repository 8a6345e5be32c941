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

``sequential_review`` is the other known answer (``benchmarks/labels_to_decision.py``): a labelled file, a reviewer who
answers the product's queue from its labels and stops the moment the gate decides; how many labels that took, and
whether the interval at that moment covers the file's true rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from hcat_pipeline.calibration.active import MIN_LABELS_TO_DECIDE, active_ppi, cross_fit, folds_of
from hcat_pipeline.calibration.calibrators import Calibrator
from hcat_pipeline.calibration.design import design_uniforms, draw, inclusion_probabilities
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
    trainable = queued.copy()
    if extra is not None:  # labels a reviewer gave while browsing: they train (other folds), never rectify
        trainable[extra] = True
    f = cross_fit(night.scores, folds, trainable, night.labels, method)
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


Mode = Literal["design", "uniform_ppi", "labels_only", "labels_only_exact"]
MODES: tuple[Mode, ...] = ("design", "uniform_ppi", "labels_only", "labels_only_exact")


@dataclass(frozen=True)
class Review:
    """One simulated reviewer working a queue until the gate decides: the labels given, the decision, and whether the
    interval at that moment covers the file's true human-pass rate."""

    labels: int
    decision: str  # above | below | undecided (the queue ran out first)
    covered: bool
    estimate: float
    ci_low: float
    ci_high: float


def _exact(y: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """The labels' mean and its two-sided Clopper-Pearson interval (the gates' exact bound, ``gates.certificate``)."""
    from scipy.stats import beta

    k, n = int(np.nansum(y)), int(np.isfinite(y).sum())
    a = (1 - confidence) / 2
    low = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return k / n, low, high


def sequential_review(scores, labels, prior_p, level: float, seed: int, *, mode: Mode = "design", method: Method = "platt",
                      budget_share: float = 0.5, check_every: int = 5, confidence: float = 0.95) -> Review:  # fmt: skip
    """A reviewer answers the queue in order from ``labels`` (the file's human labels) and stops the moment the
    anytime-valid interval decides the rate against ``level`` (checked every ``check_every`` labels, from
    ``MIN_LABELS_TO_DECIDE`` on). ``mode``: ``design`` (the product's: π from ``prior_p``, an expected
    ``budget_share`` of the answers asked, cross-fitted ``method``), ``uniform_ppi`` (every answer asked in a random
    order, the same estimator), ``labels_only`` (the same order, the labels' mean with the same confidence sequence),
    ``labels_only_exact`` (Clopper-Pearson after every check: not valid under stopping when decided; for reference)."""
    s, y_all = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    n = s.size
    keys = [str(i) for i in range(n)]
    pi = inclusion_probabilities(prior_p, np.zeros(n, bool), budget_share * n) if mode == "design" else np.ones(n)
    order, queued = draw(keys, pi, seed)
    folds = folds_of(design_uniforms(keys, seed, "fold"))
    queue = np.flatnonzero(queued)[np.argsort(order[queued], kind="stable")]
    y = np.full(n, np.nan)
    truth, last = float(y_all.mean()), None
    for j, idx in enumerate(queue, start=1):
        y[idx] = y_all[idx]
        if j < MIN_LABELS_TO_DECIDE or (j % check_every and j != queue.size):
            continue
        if mode == "labels_only_exact":
            est, low, high = _exact(y, confidence)
            decision = "above" if low >= level else "below" if high < level else "undecided"
            last = Review(j, decision, low <= truth <= high, est, low, high)
        else:
            labelled = np.isfinite(y)
            f = np.zeros(n) if mode == "labels_only" else cross_fit(s, folds, labelled, np.nan_to_num(y), method)
            e = active_ppi(f, pi, order, queued, y, confidence=confidence, anytime=True, power_tuning=mode != "labels_only")
            decision = e.decision(level)
            last = Review(j, decision, e.ci_low <= truth <= e.ci_high, e.estimate, e.ci_low, e.ci_high)
        if last.decision != "undecided":
            break
    return last
