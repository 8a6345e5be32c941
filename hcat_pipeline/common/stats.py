"""Bootstrap confidence intervals and claim strength (golden-eval §6.6), pure core.

``bootstrap_ci(values)`` → ``Estimate`` (estimate, ci_low, ci_high, n, method, note) through
``scipy.stats.bootstrap`` (percentile or BCa, B and seed configurable). Small or degenerate samples
are handled explicitly, never by a silent NaN from scipy:

- ``n == 0``: estimate and CI are NaN, ``note="empty"``;
- ``n == 1``: the estimate is the value, CI NaN (one case says nothing about spread), ``note="n<2"``;
- constant data: CI = [c, c] with ``note="constant"`` (every resample gives the same statistic);
- exact statistics (``count``, ``max``, ``min``, ``any``): the observed value of this sample is a
  fact, not an estimate; CI = [value, value], ``method="exact"``. Used by zero-tolerance gates
  (one PII leak is a FAIL, whatever a resample that misses it would say).

NaN in ``values`` raises (``dropna=True`` drops them and counts them in ``n_dropped``).

``paired_bootstrap_ci(a, b)`` bootstraps per-case differences ``a - b`` (same cases, same order).

``claim_strength(ci_low, ci_high, estimate, ...)`` → "strong" | "moderate" | "weak" | "insufficient"
from the CI width (relative to the metric's scale) and the effect size (distance of the estimate
from a reference value, 0 for a difference, in units of the CI half-width). Thresholds are module
constants (``CLAIM_RULES``) so the report can print them.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
from scipy import stats

Statistic = Literal["mean", "median", "p50", "p90", "p95", "p99", "sum", "count", "any", "max", "min", "std", "f1", "precision", "recall"]
Method = Literal["percentile", "bca"]
Strength = Literal["strong", "moderate", "weak", "insufficient"]

#: statistics that are the observed value of the sample (no resampling): count of truthy values,
#: any truthy value, extremes.
EXACT_STATISTICS = frozenset({"count", "any", "max", "min", "sum"})

DEFAULT_CONFIDENCE = 0.95
DEFAULT_N_BOOT = 1000
DEFAULT_SEED = 42

#: claim-strength rules: (strength, max relative CI width, min effect / half-width); checked in order.
#: "insufficient" is also returned when n < MIN_N_FOR_CLAIM or the CI is not finite.
CLAIM_RULES: tuple[tuple[str, float, float], ...] = (
    ("strong", 0.10, 3.0),
    ("moderate", 0.25, 1.5),
    ("weak", 0.50, 0.0),
)
MIN_N_FOR_CLAIM = 10


def _quantile(q: float) -> Callable:
    def f(x, axis=-1):
        return np.quantile(x, q, axis=axis)

    return f


def _confusion(code: int) -> Callable:
    """Over per-case codes 2·truth + prediction (0 TN, 1 FP, 2 FN, 3 TP): the count of one cell along ``axis``."""

    def count(x, axis=-1):
        return np.sum(np.asarray(x) == code, axis=axis)

    return count


def _ratio(num, den):
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


_TP, _FP, _FN = _confusion(3), _confusion(1), _confusion(2)
#: classification statistics over codes 2·truth + prediction (``classification_codes``): NaN where undefined
CLASSIFICATION = {
    "precision": lambda x, axis=-1: _ratio(_TP(x, axis), _TP(x, axis) + _FP(x, axis)),
    "recall": lambda x, axis=-1: _ratio(_TP(x, axis), _TP(x, axis) + _FN(x, axis)),
    "f1": lambda x, axis=-1: _ratio(2 * _TP(x, axis), 2 * _TP(x, axis) + _FP(x, axis) + _FN(x, axis)),
}


def classification_codes(truth, prediction) -> np.ndarray:
    """Per case 2·truth + prediction (booleans), the values the ``precision`` / ``recall`` / ``f1`` statistics read."""
    return 2 * np.asarray(truth, dtype=int) + np.asarray(prediction, dtype=int)


_FUNCS: dict[str, Callable] = {
    **CLASSIFICATION,
    "mean": np.mean,
    "median": np.median,
    "p50": _quantile(0.50),
    "p90": _quantile(0.90),
    "p95": _quantile(0.95),
    "p99": _quantile(0.99),
    "std": lambda x, axis=-1: np.std(x, axis=axis, ddof=1) if np.shape(x)[axis] > 1 else np.zeros(np.delete(np.shape(x), axis)),
    "sum": np.sum,
    "count": lambda x, axis=-1: np.sum(np.asarray(x) != 0, axis=axis),
    "any": lambda x, axis=-1: np.any(np.asarray(x) != 0, axis=axis).astype(float),
    "max": np.max,
    "min": np.min,
}


@dataclass(frozen=True)
class Estimate:
    """A statistic with its confidence interval and sample size."""

    statistic: str
    estimate: float
    ci_low: float
    ci_high: float
    n: int
    confidence: float
    method: str  # "percentile" | "bca" | "exact" | "none"
    note: str = ""  # "" | "empty" | "n<2" | "constant" | "bca→percentile"
    n_dropped: int = 0

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2.0

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.estimate:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}] (n={self.n})"


def as_array(values, *, dropna: bool = False, where: str = "values") -> tuple[np.ndarray, int]:
    """Float array of ``values`` (bools → 0/1); NaN raises unless ``dropna`` (then counted)."""
    try:
        arr = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: values must be numeric or boolean ({e})") from e
    nan = np.isnan(arr)
    n_nan = int(nan.sum())
    if n_nan:
        if not dropna:
            raise ValueError(f"{where}: {n_nan} of {arr.size} values are NaN/null; filter them or pass dropna=True")
        arr = arr[~nan]
    return arr, n_nan


def statistic_fn(statistic: str | Callable) -> Callable:
    if callable(statistic):
        return statistic
    try:
        return _FUNCS[statistic]
    except KeyError:
        raise ValueError(f"unknown statistic {statistic!r}; one of {sorted(_FUNCS)}") from None


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    statistic: str | Callable = "mean",
    confidence: float = DEFAULT_CONFIDENCE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    method: Method = "percentile",
    *,
    dropna: bool = False,
) -> Estimate:
    """Point estimate and bootstrap CI of ``statistic`` over ``values`` (see module doc for edge cases).

    A callable statistic must accept ``(x, axis=-1)`` like the numpy reductions.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if method not in ("percentile", "bca"):
        raise ValueError(f"method must be 'percentile' or 'bca', got {method!r}")
    arr, n_nan = as_array(values, dropna=dropna)
    name = statistic if isinstance(statistic, str) else getattr(statistic, "__name__", "custom")
    fn = statistic_fn(statistic)
    n = int(arr.size)
    common = dict(statistic=name, n=n, confidence=confidence, n_dropped=n_nan)
    if n == 0:
        return Estimate(estimate=math.nan, ci_low=math.nan, ci_high=math.nan, method="none", note="empty", **common)
    est = float(fn(arr, axis=-1))
    if isinstance(statistic, str) and statistic in EXACT_STATISTICS:
        return Estimate(estimate=est, ci_low=est, ci_high=est, method="exact", **common)
    if n == 1:
        return Estimate(estimate=est, ci_low=math.nan, ci_high=math.nan, method="none", note="n<2", **common)
    if np.all(arr == arr[0]):
        return Estimate(estimate=est, ci_low=est, ci_high=est, method=method, note="constant", **common)
    note = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", category=RuntimeWarning)  # BCa's acceleration on degenerate jackknives
        res = stats.bootstrap(
            (arr,),
            fn,
            n_resamples=n_boot,
            confidence_level=confidence,
            method="BCa" if method == "bca" else "percentile",
            vectorized=True,
            axis=-1,
            rng=np.random.default_rng(seed),
        )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if method == "bca" and not (math.isfinite(low) and math.isfinite(high)):
            # BCa is undefined when the jackknife has no spread (e.g. a quantile on very discrete data)
            res = stats.bootstrap(
                (arr,), fn, n_resamples=n_boot, confidence_level=confidence, method="percentile",
                vectorized=True, axis=-1, rng=np.random.default_rng(seed),
            )
            low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
            note = "bca→percentile"
    return Estimate(estimate=est, ci_low=low, ci_high=high, method=method if not note else "percentile", note=note, **common)


def paired_bootstrap_ci(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    statistic: str | Callable = "mean",
    confidence: float = DEFAULT_CONFIDENCE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    method: Method = "percentile",
    *,
    dropna: bool = False,
) -> Estimate:
    """Bootstrap CI of ``statistic`` over per-case differences ``a - b`` (paired: same cases, same order).

    With ``dropna=True`` a case missing on either side is dropped from both.
    """
    ra = np.asarray(a, dtype=float).ravel()
    rb = np.asarray(b, dtype=float).ravel()
    if ra.size != rb.size:
        raise ValueError(f"paired_bootstrap_ci: a has {ra.size} cases, b has {rb.size}; pair them on case id first")
    diff = ra - rb
    return bootstrap_ci(diff, statistic, confidence, n_boot, seed, method, dropna=dropna)


def claim_strength(
    ci_low: float,
    ci_high: float,
    estimate: float,
    *,
    reference: float = 0.0,
    scale: float = 1.0,
    n: int | None = None,
    min_n: int = MIN_N_FOR_CLAIM,
) -> Strength:
    """How strongly a claim ``estimate`` (vs ``reference``) is supported (golden-eval §6.6).

    ``scale`` is the metric's range (1 for a [0, 1] score or a rate; 4 for a 1-5 rubric …): the CI width
    is judged relative to it. The effect is ``|estimate − reference|`` in CI half-widths. A CI that
    contains ``reference`` is at most "weak" (no direction established); wider than half the scale, or
    n below ``min_n``, or a non-finite CI is "insufficient".
    """
    if scale <= 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    if n is not None and n < min_n:
        return "insufficient"
    if not all(math.isfinite(v) for v in (ci_low, ci_high, estimate)):
        return "insufficient"
    width = (ci_high - ci_low) / scale
    half = (ci_high - ci_low) / 2.0
    effect = abs(estimate - reference) / half if half > 0 else math.inf
    straddles = ci_low <= reference <= ci_high
    for strength, max_width, min_effect in CLAIM_RULES:
        if width <= max_width and effect >= min_effect:
            if straddles and strength != "weak":
                return "weak"
            return strength  # type: ignore[return-value]
    return "insufficient"


def estimate_strength(est: Estimate, *, reference: float = 0.0, scale: float = 1.0, min_n: int = MIN_N_FOR_CLAIM) -> Strength:
    """``claim_strength`` of an ``Estimate``."""
    return claim_strength(est.ci_low, est.ci_high, est.estimate, reference=reference, scale=scale, n=est.n, min_n=min_n)


def wilson_interval(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n (nan, nan when n = 0).

    Contains k/n by construction: at k = n (or k = 0) the bound is exactly 1 (or 0) — the formula's
    centre ± half lands a last bit inside it for some n (n = 29: 0.9999999999999999 < 1 = k/n)."""
    if n <= 0:
        return float("nan"), float("nan")
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return min(max(0.0, centre - half), p), max(min(1.0, centre + half), p)


def seeded_uniforms(keys: Sequence[str], seed: int, salt: str) -> np.ndarray:
    """A seeded uniform in (0, 1) per key (blake2b of seed, salt and key): the same key and seed give the same draw on
    every machine, whatever the order of ``keys`` — what a sampling design with known inclusion probabilities draws on."""
    def unit(key: str) -> float:
        digest = hashlib.blake2b(f"{seed}|{salt}|{key}".encode(), digest_size=8).digest()
        return (int.from_bytes(digest, "big") + 0.5) / 2.0**64

    return np.array([unit(k) for k in keys], dtype=float)
