"""One release gate on one sample: PASS | FAIL | INDETERMINATE (golden-eval §6.4-6.6), pure core.

``evaluate_gate(values, threshold, direction=">=")`` bootstraps the statistic's CI
(``uncertainty.bootstrap_ci``) and compares the whole interval with the threshold:

* PASS — the whole CI is on the allowed side (``>=``: ci_low ≥ threshold);
* FAIL — the whole CI is on the forbidden side (``>=``: ci_high < threshold);
* INDETERMINATE — the CI straddles the threshold, *or* there are too few cases to support any claim
  (n < ``min_n`` for a resampled statistic, or no finite CI): a "pass" without support does not
  satisfy a gate (§6.6).

Exact statistics (``count``, ``any``, ``max``, ``min``, ``sum``) are the observed value of the sample
and never INDETERMINATE: zero-tolerance gates (``count <= 0``) fail on the first leak.

``n_more`` is about how many more cases would likely resolve an INDETERMINATE verdict at the
observed variance: the CI half-width shrinks like 1/√n, so the bound facing the threshold crosses it
at n' = n · (half-width on that side / |estimate − threshold|)²; to clear it with probability
``power`` (0.8) rather than touch it, n' is multiplied by ((z_{1−α/2} + z_power) / z_{1−α/2})² (≈ 2 at
95 % / 80 %); ``n_more = ⌈n'⌉ − n`` (at least what ``min_n`` asks). ``None`` when no number of cases would do (estimate exactly at the threshold, or
fewer than 2 cases to measure variance).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

from hcat_pipeline.common.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    MIN_N_FOR_CLAIM,
    Estimate,
    Method,
    bootstrap_ci,
)

Direction = Literal[">=", ">", "<=", "<"]
Verdict = Literal["PASS", "FAIL", "INDETERMINATE", "NOT_APPLICABLE"]
DEFAULT_POWER = 0.8  # n_more: probability that that many more cases resolve the verdict (true value = estimate)
# best → worst; NOT_APPLICABLE: the gate cannot apply to this system by construction (never blocks, said with its reason)
VERDICTS: tuple[Verdict, ...] = ("NOT_APPLICABLE", "PASS", "INDETERMINATE", "FAIL")
#: rank of each verdict for sorting worst first (FAIL 0 … NOT_APPLICABLE 3): the one order the report and checks use
WORST_FIRST: dict[str, int] = {v: len(VERDICTS) - 1 - i for i, v in enumerate(VERDICTS)}


@dataclass(frozen=True)
class GateResult:
    verdict: Verdict
    estimate: float
    ci_low: float
    ci_high: float
    n: int
    n_more: int | None
    threshold: float
    direction: str
    statistic: str
    confidence: float
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        more = f", ~{self.n_more} more cases" if self.n_more else ""
        return (f"{self.verdict}: {self.statistic} {self.estimate:.4g} [{self.ci_low:.4g}, {self.ci_high:.4g}] "
                f"{self.direction} {self.threshold:g} (n={self.n}{more})")  # fmt: skip


def allowed(x: float, direction: str, threshold: float) -> bool:
    """Whether ``x`` is on the allowed side of ``threshold`` (``x <direction> threshold``)."""
    return {">=": x >= threshold, ">": x > threshold, "<=": x <= threshold, "<": x < threshold}[direction]


def worst(verdicts: Sequence[str]) -> Verdict:
    """The worst of several verdicts (FAIL > INDETERMINATE > PASS); PASS for none."""
    return max(verdicts, key=VERDICTS.index, default="PASS")  # type: ignore[return-value]


def verdict_of(est: Estimate, threshold: float, direction: Direction = ">=", *, min_n: int = MIN_N_FOR_CLAIM,
               power: float = DEFAULT_POWER) -> GateResult:
    """The gate verdict of an already computed ``Estimate`` (see module doc)."""
    if direction not in (">=", ">", "<=", "<"):
        raise ValueError(f"direction must be one of >=, >, <=, <; got {direction!r}")
    common = dict(estimate=est.estimate, ci_low=est.ci_low, ci_high=est.ci_high, n=est.n, threshold=float(threshold),
                  direction=direction, statistic=est.statistic, confidence=est.confidence)  # fmt: skip
    exact = est.method == "exact"
    if est.n == 0:
        return GateResult(verdict="INDETERMINATE", n_more=None, reason="no cases in scope", **common)
    if not (math.isfinite(est.ci_low) and math.isfinite(est.ci_high)):
        return GateResult(verdict="INDETERMINATE", n_more=max(min_n - est.n, 1) if not exact else None,
                          reason=f"no confidence interval ({est.note or 'not finite'})", **common)  # fmt: skip
    low_ok, high_ok = allowed(est.ci_low, direction, threshold), allowed(est.ci_high, direction, threshold)
    if low_ok and high_ok:
        verdict: Verdict = "PASS"
    elif not low_ok and not high_ok:
        verdict = "FAIL"
    else:
        verdict = "INDETERMINATE"
    short = 0 if exact else max(min_n - est.n, 0)
    if verdict != "INDETERMINATE":
        if short:
            return GateResult(verdict="INDETERMINATE", n_more=short,
                              reason=f"CI says {verdict} but n={est.n} < {min_n}: too few cases to support the claim", **common)  # fmt: skip
        side = "entirely" if est.ci_low != est.ci_high else "exactly"
        return GateResult(verdict=verdict, n_more=None, reason=f"CI {side} {'inside' if verdict == 'PASS' else 'outside'} the allowed region",
                          **common)  # fmt: skip
    distance = abs(est.estimate - threshold)
    # the bound facing the threshold: the one on the other side of it from the estimate
    facing = est.ci_low if est.estimate >= threshold else est.ci_high
    half = abs(est.estimate - facing)
    if distance == 0 or est.n < 2 or half == 0:
        n_more = None
    else:
        # the CI bound reaches the threshold at n·(half/distance)²; ×((z_α/2 + z_power)/z_α/2)² so that the
        # bound clears it with probability ``power`` if the true value is the estimate
        z_a, z_b = NormalDist().inv_cdf(0.5 + est.confidence / 2), NormalDist().inv_cdf(power)
        n_more = max(int(math.ceil(est.n * (half / distance) ** 2 * ((z_a + z_b) / z_a) ** 2)) - est.n, 1, short)
    return GateResult(verdict="INDETERMINATE", n_more=n_more, reason="CI straddles the threshold", **common)


def evaluate_gate(
    values: Sequence[float] | np.ndarray,
    threshold: float,
    direction: Direction = ">=",
    statistic: str | Callable = "mean",
    confidence: float = DEFAULT_CONFIDENCE,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    method: Method = "percentile",
    *,
    min_n: int = MIN_N_FOR_CLAIM,
    power: float = DEFAULT_POWER,
    dropna: bool = False,
) -> GateResult:
    """PASS / FAIL / INDETERMINATE for ``statistic(values) <direction> threshold`` with its CI and n_more."""
    est = bootstrap_ci(values, statistic, confidence, n_boot, seed, method, dropna=dropna)
    return verdict_of(est, threshold, direction, min_n=min_n, power=power)
