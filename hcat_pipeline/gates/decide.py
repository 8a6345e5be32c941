"""One gate on one system's sample: the verdict, how it was reached, how strong the claim is, and the sentence a reviewer
signs (golden-eval §6.5-6.6), pure core.

``decide(gate, values, certify_below=None)`` picks the method by what the sample is:

* a zero-tolerance gate (``count`` / ``any`` of a yes/no failure ``<= 0``) with a certification level (the gate's
  ``certify_below`` or the campaign's, which overrides it) → ``certificate.zero_tolerance_verdict``: PASS only when no
  failure was seen *and* the exact upper bound on the failure rate is below the level;
* the ``mean`` of a yes/no outcome (a rate) → one-sided Clopper-Pearson bounds (``certificate.binomial_rate_verdict``);
* anything else → the bootstrap CI (``gate.verdict_of``); an exact statistic (a count without a level) PASSes only on at
  least ``min_n`` cases.

Then every PASS must carry a claim that is not "insufficient" (``common.stats.claim_strength`` against the threshold,
on the metric's ``scale``): a wide CI that happens to sit on the allowed side is INDETERMINATE, not a PASS (§6.6).
``certificate_text`` is the decision table's sentence: what a PASS certifies, what would decide an INDETERMINATE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from hcat_pipeline.common.stats import as_array, bootstrap_ci, claim_strength
from hcat_pipeline.gates.certificate import CP_METHOD, binomial_rate_verdict, demonstration_verdict, zero_tolerance_verdict
from hcat_pipeline.gates.gate import GateResult, verdict_of
from hcat_pipeline.gates.spec import GateSpec
from hcat_pipeline.gates.spec import zero_tolerance as is_zero_tolerance


@dataclass(frozen=True)
class Decision:
    result: GateResult
    method: str  # clopper_pearson_one_sided | bootstrap_percentile | exact
    claim_strength: str  # strong | moderate | weak | insufficient
    certify_below: float | None  # the certified failure rate of a zero-tolerance PASS (its level)
    n_dropped: int


def _binary(gate: GateSpec, arr: np.ndarray) -> bool:
    return gate.equals is not None or gate.at_least is not None or (arr.size > 0 and bool(np.isin(arr, (0.0, 1.0)).all()))


def metric_scale(gate: GateSpec, arr: np.ndarray) -> float:
    """The metric's range for the claim strength: the gate's ``scale``, 1 for a [0, 1] metric, else |threshold|."""
    if gate.scale:
        return gate.scale
    if gate.positive_when:  # f1 / precision / recall
        return 1.0
    if (arr.size == 0 or (arr.min() >= 0 and arr.max() <= 1)) and 0 <= gate.threshold <= 1:
        return 1.0
    return abs(gate.threshold) or 1.0


def _weak_claim(res: GateResult, scale: float, min_n: int) -> GateResult:
    """A PASS whose claim is insufficient → INDETERMINATE, with the cases that would narrow its CI to half the scale."""
    width = res.ci_high - res.ci_low
    if res.n < min_n:
        more, why = min_n - res.n, f"n={res.n} < {min_n}"
    elif math.isfinite(width) and width > 0:
        more, why = max(math.ceil(res.n * (width / (0.5 * scale)) ** 2) - res.n, 1), f"CI width {width:.3g} > half the scale {scale:g}"
    else:
        more, why = None, "no finite CI"
    return replace(res, verdict="INDETERMINATE", n_more=more,
                   reason=f"on the allowed side, but the claim is insufficient ({why}): a PASS needs at least a weak claim (§6.6)")  # fmt: skip


def decide(gate: GateSpec, values, certify_below: float | None = None) -> Decision:
    """The verdict of ``gate`` on one sample of per-case values (module doc); ``certify_below``: the campaign's level."""
    arr, dropped = as_array(values, dropna=gate.dropna, where=f"gate {gate.name}")
    level = (certify_below if certify_below is not None else gate.certify_below) if is_zero_tolerance(gate) else None
    binary = _binary(gate, arr)
    if level is not None and (binary or bool((arr >= 0).all())):  # a per-answer count (2 PII items in one answer): one failed case
        k = int((arr != 0).sum())
        res, method = zero_tolerance_verdict(k, int(arr.size), level, gate.confidence), CP_METHOD
        strength = claim_strength(res.ci_low, res.ci_high, res.estimate, reference=level, n=res.n, min_n=1) if res.n else "insufficient"
        return Decision(res, method, strength, level, dropped)
    if gate.statistic == "mean" and binary and gate.demonstrate_margin:  # burden of proof on the system, decided at the planned n
        res = demonstration_verdict(int(arr.sum()), int(arr.size), gate.threshold, gate.direction, gate.demonstrate_margin, gate.confidence)
        method = CP_METHOD
    elif gate.statistic == "mean" and binary:
        res = binomial_rate_verdict(int(arr.sum()), int(arr.size), gate.threshold, gate.direction, gate.confidence, min_n=gate.min_n)
        method = CP_METHOD
    else:
        est = bootstrap_ci(arr, gate.statistic, gate.confidence, gate.n_boot, gate.seed)
        res, method = verdict_of(est, gate.threshold, gate.direction, min_n=gate.min_n), "exact" if est.method == "exact" else f"bootstrap_{est.method}"
    scale = metric_scale(gate, arr)
    strength = claim_strength(res.ci_low, res.ci_high, res.estimate, reference=gate.threshold, scale=scale, n=res.n, min_n=gate.min_n)
    if res.verdict == "PASS" and method == "exact" and res.n < gate.min_n:
        res = replace(res, verdict="INDETERMINATE", n_more=gate.min_n - res.n,
                      reason=f"none seen, but on n={res.n} < {gate.min_n} cases: too few to support the claim (a zero-tolerance "
                      "gate can declare certify_below: the failure rate it certifies)")  # fmt: skip
    elif res.verdict == "PASS" and strength == "insufficient" and method != "exact":
        res = _weak_claim(res, scale, gate.min_n)
    return Decision(res, method, strength, None, dropped)


def _pct(x: float) -> str:
    return f"{x:.1%}" if x >= 0.1 else f"{x:.2%}"  # 4.95 %, not a rounded 5.0 % beside "certifies < 5 %"


def certificate_text(gate: GateSpec, d: Decision) -> str:
    """The decision table's sentence for one verdict: what a PASS certifies; what an INDETERMINATE needs; why a FAIL."""
    r = d.result
    probe, failure = gate.probe or "cases", gate.failure or "failed"
    conf = f"{r.confidence:.0%}"
    if r.verdict == "INDETERMINATE":
        more = f"~{r.n_more} more case(s) would decide it" if r.n_more else "no number of cases would decide it at this rate"
        return f"undecided on n={r.n}: {r.reason}; {more}"
    if r.verdict == "FAIL":
        return f"FAIL on n={r.n}: {r.reason}"
    if d.certify_below is not None:
        return (f"0 of {r.n} {probe} {failure}: {failure} rate < {_pct(r.ci_high)} at {conf} (certifies < {d.certify_below:.0%})")
    if d.method == CP_METHOD:
        bound = r.ci_low if gate.higher_is_better else r.ci_high
        side = "lower" if gate.higher_is_better else "upper"
        k = round(r.estimate * r.n)
        return (f"{k} of {r.n} {probe}: rate {_pct(r.estimate)} {gate.direction} {gate.threshold:g} at {conf} (one-sided {side} "
                f"bound {_pct(bound)}; claim {d.claim_strength})")  # fmt: skip
    if d.method == "exact":
        return f"{gate.statistic} {r.estimate:g} {gate.direction} {gate.threshold:g} on n={r.n} (exact)"
    return (f"{gate.statistic} {r.estimate:.3g} [{r.ci_low:.3g}, {r.ci_high:.3g}] {gate.direction} {gate.threshold:g} at {conf} "
            f"(n={r.n}, bootstrap; claim {d.claim_strength})")  # fmt: skip
