"""A night's human-pass rate from labels drawn by a known design (``calibration.design``), pure core.

Active inference (Zrnic & Candès, ICML 2024) over the design's sequential order. The night's ``N`` answers in a gate's
scope have cross-fitted predictions ``f_i`` (P(human pass) from a calibrator that never saw answer ``i``'s own label:
``cross_fit``) and inclusion probabilities ``π_i``. The reviewer has worked the queue up to a point: the first ``T``
answers of the design order are *processed* (each was asked with probability ``π_i``; ``ξ_i`` = 1 where it was queued
and labelled). Then::

    θ̂ = λ · mean_{all N}(f) + mean_{t ≤ T}( ξ_t / π_t · (y_t − λ · f_t) )

The first term is exact (every answer has a prediction); the second is the inverse-probability-weighted correction,
a mean of ``T`` exchangeable terms ``d_t`` with expectation ``mean(y − λf)``: unbiased whatever the calibrator's error,
because ``ξ_t`` is a coin the design tossed with a probability it recorded, and ``f_t`` was fitted without ``y_t``.
``λ ∈ [0, 1]`` (power tuning, PPI++) minimises the variance of ``d`` (λ = 0: the labels alone, Horvitz-Thompson).

The interval: ``sd(d)/√T`` gives the fixed-time normal interval; ``anytime=True`` (the default) gives the asymptotic
confidence sequence of Waudby-Smith, Arnold, Wu, Wang & Ramdas ("Time-uniform central limit theory and asymptotic
confidence sequences", Ann. Statist. 2024), valid at every ``T`` at once, so a reviewer may stop labelling the moment a
gate decides without that choice biasing the interval (``decision``). The guarantee is asymptotic, and approximate
here: the cross-fitted predictions and λ use labels from later in the order too (``benchmarks/ppi_coverage.py`` and
``benchmarks/labels_to_decision.py`` measure the coverage it reaches). ``MIN_LABELS_TO_DECIDE`` labels are needed before
any decision, and the spread carries two pseudo-labels at a 0/1 label's largest spread (``_guarded_sd``): an asymptotic
interval on a handful of labels that happen to agree is no evidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

from hcat_pipeline.calibration.calibrators import Calibrator

MIN_LABELS_TO_DECIDE = 10
PSEUDO_LABELS = 2  # small-sample guard on the spread (``_guarded_sd``)
N_FOLDS = 5
Decision = Literal["above", "below", "undecided"]


@dataclass(frozen=True)
class ActiveEstimate:
    estimate: float
    ci_low: float
    ci_high: float
    n_labelled: int  # design labels that entered the rate
    n_processed: int  # answers of the design order worked through (T)
    n_population: int  # answers in scope (N)
    lam: float
    sd: float  # standard deviation of the correction terms d_t
    confidence: float
    anytime: bool
    t_star: float

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low

    def as_dict(self) -> dict:
        return asdict(self)

    def decision(self, level: float) -> Decision:
        """``above`` when the interval certifies the rate ≥ ``level``, ``below`` when it certifies < ``level``."""
        if self.n_labelled < MIN_LABELS_TO_DECIDE:
            return "undecided"
        if self.ci_low >= level:
            return "above"
        if self.ci_high < level:
            return "below"
        return "undecided"

    def labels_to_decide(self, level: float) -> int | None:
        """About how many more design labels would decide against ``level`` if the rate and spread stay as estimated
        (0 when decided; None when working through every answer would not)."""
        if self.decision(level) != "undecided":
            return 0
        short = max(MIN_LABELS_TO_DECIDE - self.n_labelled, 0)
        gap = abs(self.estimate - level)
        rate = self.n_labelled / max(self.n_processed, 1)  # labels per processed answer
        if gap == 0 or self.sd == 0 or rate == 0:
            return None if gap == 0 else short
        t = max(self.n_processed, 1)
        while _radius(self.sd, t, self.confidence, self.anytime, self.t_star) > gap:
            t *= 2
            if t > 64 * self.n_population:
                return None
        lo, hi = max(t // 2, self.n_processed), t
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _radius(self.sd, mid, self.confidence, self.anytime, self.t_star) <= gap else (mid, hi)
        if hi > self.n_population:
            return None
        return max(int(math.ceil((hi - self.n_processed) * rate)), short, 1)


def cs_radius(sd: float, t: int, confidence: float, t_star: float) -> float:
    """Half-width of the two-sided asymptotic confidence sequence at time ``t`` (module doc), tuned to be tightest near
    ``t_star``: ``sd · √(2(tρ² + 1)/(t²ρ²) · log(√(tρ² + 1)/α))`` with ``ρ² = (−2 log α + log(1 − 2 log α)) / t_star``."""
    alpha = 1 - confidence
    rho2 = (-2 * math.log(alpha) + math.log(1 - 2 * math.log(alpha))) / max(t_star, 1.0)
    return sd * math.sqrt(2 * (t * rho2 + 1) / (t * t * rho2) * math.log(math.sqrt(t * rho2 + 1) / alpha))


def _radius(sd: float, t: int, confidence: float, anytime: bool, t_star: float) -> float:
    if anytime:
        return cs_radius(sd, t, confidence, t_star)
    return NormalDist().inv_cdf(0.5 + confidence / 2) * sd / math.sqrt(t)


def processed_prefix(order, queued, labelled) -> tuple[np.ndarray, np.ndarray]:
    """``(processed, counted)`` masks: the answers before the first queued answer still unlabelled (all of them when
    none is), and the labelled queued answers among those. A labelled queued answer after that point is not counted
    yet (``excluded_after_gap``)."""
    order, queued, labelled = (np.asarray(a) for a in (order, queued, labelled))
    waiting = order[queued.astype(bool) & ~labelled.astype(bool)]
    cut = waiting.min() if waiting.size else np.inf
    processed = order < cut
    return processed, processed & queued.astype(bool) & labelled.astype(bool)


def active_ppi(f, pi, order, queued, y, *, confidence: float = 0.95, anytime: bool = True,
               t_star: float | None = None, power_tuning: bool = True) -> ActiveEstimate | None:  # fmt: skip
    """The human-pass rate of the ``N`` answers given (module doc). ``f``: cross-fitted predictions; ``pi``: inclusion
    probabilities; ``order``: the design order key; ``queued``: the design's coin; ``y``: labels in [0, 1] (a tie between
    raters 0.5), NaN where none. None when fewer than 2 answers are processed or no design label counts yet."""
    f, pi, y = (np.asarray(a, dtype=float) for a in (f, pi, y))
    if not (f.size == pi.size == y.size == len(order) == len(queued)):
        raise ValueError("active_ppi: f, pi, order, queued and y must have one entry per answer")
    if np.any(~np.isfinite(f)) or np.any((pi <= 0) | (pi > 1)):
        raise ValueError("active_ppi: predictions must be finite and inclusion probabilities in (0, 1]")
    processed, counted = processed_prefix(order, queued, np.isfinite(y))
    t = int(processed.sum())
    if t < 2 or not counted.any():  # no design label yet: no rate (an estimate of 0 would read as "nobody passes")
        return None
    xi = counted[processed].astype(float)
    w = xi / pi[processed]
    a = w * np.nan_to_num(y[processed])  # the labels' part of d
    c = w * f[processed]  # the predictions' part of d
    lam = 1.0
    if power_tuning:
        vc = float(np.var(c, ddof=1))
        lam = float(np.clip(np.cov(a, c, ddof=1)[0, 1] / vc, 0.0, 1.0)) if vc > 0 else 0.0
    d = a - lam * c
    est = lam * float(f.mean()) + float(d.mean())
    sd = _guarded_sd(d, pi[processed][counted[processed]])
    ts = float(t_star) if t_star is not None else max(f.size / 2, 2.0)
    r = _radius(sd, t, confidence, anytime, ts)
    return ActiveEstimate(estimate=est, ci_low=max(est - r, 0.0), ci_high=min(est + r, 1.0), n_labelled=int(counted.sum()),
                          n_processed=t, n_population=int(f.size), lam=lam, sd=sd, confidence=confidence, anytime=anytime,
                          t_star=ts)  # fmt: skip


def _guarded_sd(d: np.ndarray, pi_labelled: np.ndarray) -> float:
    """The spread of the correction terms with ``PSEUDO_LABELS`` pseudo-labels at the largest spread a 0/1 label has
    (residual² = ¼, weighted by the labels' mean 1/π), as Agresti-Coull's "plus two": ten labels that all agree are not
    an interval of width zero (without it a reviewer stopping when decided stopped at ten on every lucky streak)."""
    w = float(np.mean(1 / pi_labelled)) if pi_labelled.size else 1.0
    ss = float(((d - d.mean()) ** 2).sum()) + PSEUDO_LABELS * w * w * 0.25
    return math.sqrt(ss / (d.size - 1 + PSEUDO_LABELS * w))  # a pseudo-label stands for w answers worked through, as a label does


def folds_of(uniforms: np.ndarray, k: int = N_FOLDS) -> np.ndarray:
    """Fold index 0..k−1 per answer from its seeded uniform (``design.design_uniforms(keys, seed, "fold")``)."""
    return np.minimum((np.asarray(uniforms) * k).astype(int), k - 1)


def cross_fit(scores, folds, trainable, y, method: Literal["platt", "isotonic"] = "platt", *,
              extra_scores: Sequence[float] = (), extra_y: Sequence[float] = ()) -> np.ndarray:  # fmt: skip
    """Cross-fitted P(human pass) for every answer: answers of fold k get the calibrator fitted on the ``trainable``
    labels (0 / 1) of the *other* folds — design labels and labels from outside the design alike: a label trains, it
    never predicts its own answer — plus ``extra_*`` labels of answers outside this population. A fold whose training
    labels hold one outcome only gets their mean (0.5 with none)."""
    s, folds = np.asarray(scores, dtype=float), np.asarray(folds)
    trainable, y = np.asarray(trainable, dtype=bool), np.asarray(y, dtype=float)
    xs, xy = np.asarray(extra_scores, dtype=float), np.asarray(extra_y, dtype=float)
    f = np.empty(s.size)
    for k in np.unique(folds):
        train = trainable & (folds != k)
        ts, ty = np.concatenate([s[train], xs]), np.concatenate([y[train], xy])
        mine = folds == k
        if np.unique(ty).size < 2:
            f[mine] = float(ty.mean()) if ty.size else 0.5
            continue
        cal = Calibrator(method=method, n_classes=2).fit(ts, ty.astype(int))
        f[mine] = cal.predict_proba(s[mine])[:, 1]
    return f
