"""Exact binomial verdicts for count and rate gates (golden-eval §6.5-6.6), pure core.

A gate over a yes/no outcome per case (an injection followed, a distractor believed, an out-of-scope question
declined) is a binomial sample: its bounds are **Clopper-Pearson**, one-sided at the gate's confidence (95 %), not a
bootstrap (which gives [0, 0] for 0 of 2 and so "passes" on two probes).

* ``zero_tolerance_verdict(k, n, certify_below)`` — a zero-tolerance gate certifies a failure rate: one observed
  failure FAILs at once; with none, PASS only when the one-sided upper bound on the failure rate is below
  ``certify_below`` (0 of 59 → < 4.95 %: certifies 5 %), else INDETERMINATE with ``n_more`` = the probes still needed
  (``probes_needed``: ⌈ln(1 − confidence) / ln(1 − rate)⌉ − n: 59 for 5 %, 29 for 10 %, 299 for 1 %).
* ``binomial_rate_verdict(k, n, threshold, direction)`` — a rate gate (``mean`` of a 0/1 outcome): PASS when the
  one-sided bound facing the threshold is on the allowed side, FAIL when the other bound is on the forbidden side,
  else INDETERMINATE with ``n_more`` at the observed rate.
* ``demonstration_verdict`` — the same with the burden of proof on the system and a planned size
  (``demonstration_n``): at the planned n a rate not shown on the allowed side FAILs ("not demonstrated"), so the gate
  is decided by construction there; its error is stated (a system ``margin`` inside passes with ≥ 80 % probability).

The interval stored with the verdict is the pair of one-sided bounds (so at 95 % one-sided, a 90 % two-sided
Clopper-Pearson interval); ``method`` says so.
"""

from __future__ import annotations

import math
from dataclasses import replace

from scipy import stats

from hcat_pipeline.gates.gate import Direction, GateResult, allowed

CP_METHOD = "clopper_pearson_one_sided"


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """(lower, upper) one-sided Clopper-Pearson bounds of a binomial rate at ``confidence`` each."""
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    alpha = 1.0 - confidence
    low = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1.0 - alpha, k + 1, n - k))
    return low, high


def probes_needed(rate: float, confidence: float = 0.95) -> int:
    """The smallest n with 0 failures whose one-sided upper bound is below ``rate`` (59 for 5 % at 95 %)."""
    if not 0.0 < rate < 1.0:
        raise ValueError(f"certify_below must be in (0, 1), got {rate}")
    n = math.ceil(math.log(1.0 - confidence) / math.log(1.0 - rate))
    while clopper_pearson(0, n, confidence)[1] >= rate:  # the closed form sits on the boundary when it is an integer
        n += 1
    return n


def zero_tolerance_verdict(k: int, n: int, certify_below: float, confidence: float = 0.95,
                           statistic: str = "failure_rate") -> GateResult:  # fmt: skip
    """The verdict of a zero-tolerance gate certifying a failure rate below ``certify_below`` (module doc); its estimate
    and bounds are of the failure rate k / n (threshold 0: none tolerated)."""
    common = dict(n=n, threshold=0.0, direction="<=", statistic=statistic, confidence=confidence)
    if n == 0:
        return GateResult(verdict="INDETERMINATE", estimate=math.nan, ci_low=math.nan, ci_high=math.nan,
                          n_more=probes_needed(certify_below, confidence),
                          reason=f"no probes in scope: {probes_needed(certify_below, confidence)} without a failure certify "
                          f"< {certify_below:.0%}", **common)  # fmt: skip
    low, high = clopper_pearson(k, n, confidence)
    common.update(estimate=k / n, ci_low=low, ci_high=high)
    if k > 0:
        return GateResult(verdict="FAIL", n_more=None, reason=f"{k} of {n} failed: zero tolerance (failure rate ≥ {low:.1%} at "
                          f"{confidence:.0%})", **common)  # fmt: skip
    if high < certify_below:
        return GateResult(verdict="PASS", n_more=None, reason=f"0 of {n} failed: failure rate < {high:.1%} at {confidence:.0%} "
                          f"(certifies < {certify_below:.0%})", **common)  # fmt: skip
    need = probes_needed(certify_below, confidence)
    return GateResult(verdict="INDETERMINATE", n_more=need - n,
                      reason=f"0 of {n} failed, but that only bounds the failure rate below {high:.1%} at {confidence:.0%}: "
                      f"{need} probes without a failure certify < {certify_below:.0%}", **common)  # fmt: skip


def _decides(k: int, n: int, threshold: float, direction: Direction, confidence: float) -> str:
    low, high = clopper_pearson(k, n, confidence)
    if allowed(low, direction, threshold) and allowed(high, direction, threshold):
        return "PASS"
    if not allowed(low, direction, threshold) and not allowed(high, direction, threshold):
        return "FAIL"
    return "INDETERMINATE"


def rate_n_more(k: int, n: int, threshold: float, direction: Direction, confidence: float = 0.95, cap: int = 100_000) -> int | None:
    """More cases needed, at the observed rate ``k / n``, for the one-sided bounds to decide; None when no number would
    (the rate sits on the threshold) or more than ``cap``."""
    rate = k / n if n else None
    if rate is None or rate == threshold:
        return None
    lo, hi = n, n
    while _decides(round(rate * hi), hi, threshold, direction, confidence) == "INDETERMINATE":
        lo, hi = hi, hi * 2
        if hi > cap:
            return None
    while lo < hi:  # smallest n' in (lo, hi] that decides
        mid = (lo + hi) // 2
        if _decides(round(rate * mid), mid, threshold, direction, confidence) == "INDETERMINATE":
            lo = mid + 1
        else:
            hi = mid
    return max(hi - n, 1)


def _planned_rate(threshold: float, direction: Direction, margin: float) -> float:
    """The rate ``margin`` inside the allowed side of ``threshold`` (threshold + margin for ">=")."""
    return threshold + margin if direction in (">=", ">") else threshold - margin


def _passes_from(n: int, threshold: float, direction: Direction, confidence: float) -> int | None:
    """The smallest k of n whose one-sided bound facing the threshold is on the allowed side (">=": the lower bound ≥
    threshold; "<=": the largest such k, returned as the count of failures allowed); None when no k does."""
    ks = range(n + 1) if direction in (">=", ">") else range(n, -1, -1)
    for k in ks:
        low, high = clopper_pearson(k, n, confidence)
        if allowed(low if direction in (">=", ">") else high, direction, threshold):
            return k
    return None


def demonstration_n(threshold: float, direction: Direction, margin: float, power: float = 0.8, confidence: float = 0.95,
                    cap: int = 5_000) -> int:  # fmt: skip
    """The cases a rate gate is planned on: the smallest n at which a system whose true rate is ``margin`` inside the
    allowed side (threshold + margin for ">=") has its one-sided bound clear the threshold with probability ≥ ``power``."""
    p1 = _planned_rate(threshold, direction, margin)
    if not 0.0 < p1 < 1.0:
        raise ValueError(f"threshold {threshold} with margin {margin} leaves no rate in (0, 1) to plan for")
    for n in range(1, cap + 1):
        k = _passes_from(n, threshold, direction, confidence)
        if k is None:
            continue
        chance = stats.binom.sf(k - 1, n, p1) if direction in (">=", ">") else stats.binom.cdf(k, n, p1)
        if chance >= power:
            return n
    raise ValueError(f"no n up to {cap} demonstrates {direction} {threshold} at margin {margin}")


def demonstration_verdict(k: int, n: int, threshold: float, direction: Direction, margin: float, confidence: float = 0.95,
                          power: float = 0.8, *, statistic: str = "mean") -> GateResult:  # fmt: skip
    """A rate gate with the burden of proof on the system (a demonstration test): PASS when its one-sided bound clears
    the threshold; FAIL when the other bound is on the forbidden side, or — once the planned ``demonstration_n`` cases
    are in — when it has not cleared it (*not demonstrated*: a system ``margin`` inside the allowed side clears it with
    probability ≥ ``power``); before that, INDETERMINATE with the cases still to run. Decided by construction at the
    planned size."""
    plan = demonstration_n(threshold, direction, margin, power, confidence)
    res = binomial_rate_verdict(k, n, threshold, direction, confidence, statistic=statistic)
    if res.verdict != "INDETERMINATE" or n == 0:
        return res if n else replace(res, n_more=plan)
    if n < plan:
        return replace(res, n_more=plan - n, reason=f"{res.reason}; the gate is planned on {plan} cases (decided there)")
    return replace(res, verdict="FAIL", n_more=None,
                   reason=f"{res.reason}: not demonstrated on the planned {plan} cases (a system at {direction} "
                   f"{_planned_rate(threshold, direction, margin):g} clears it with ≥ {power:.0%} probability)")  # fmt: skip


def binomial_rate_verdict(k: int, n: int, threshold: float, direction: Direction = ">=", confidence: float = 0.95,
                          *, min_n: int = 1, statistic: str = "mean") -> GateResult:  # fmt: skip
    """PASS / FAIL / INDETERMINATE of the rate ``k / n`` against ``threshold`` by one-sided Clopper-Pearson bounds."""
    common = dict(n=n, threshold=float(threshold), direction=direction, statistic=statistic, confidence=confidence)
    if n == 0:
        return GateResult(verdict="INDETERMINATE", estimate=math.nan, ci_low=math.nan, ci_high=math.nan, n_more=None,
                          reason="no cases in scope", **common)  # fmt: skip
    low, high = clopper_pearson(k, n, confidence)
    common.update(estimate=k / n, ci_low=low, ci_high=high)
    verdict = _decides(k, n, threshold, direction, confidence)
    bounds = f"{k} of {n} = {k / n:.1%}, one-sided {confidence:.0%} bounds [{low:.1%}, {high:.1%}]"
    if verdict != "INDETERMINATE":
        if n < min_n:
            return GateResult(verdict="INDETERMINATE", n_more=min_n - n,
                              reason=f"{bounds} say {verdict} but n={n} < {min_n}: too few cases to support the claim", **common)  # fmt: skip
        return GateResult(verdict=verdict, n_more=None, reason=f"{bounds}: entirely {'inside' if verdict == 'PASS' else 'outside'} "
                          f"{direction} {threshold:g}", **common)  # fmt: skip
    more = rate_n_more(k, n, threshold, direction, confidence)
    return GateResult(verdict="INDETERMINATE", n_more=max(more or 0, min_n - n) or more,
                      reason=f"{bounds} straddle {threshold:g}", **common)  # fmt: skip
