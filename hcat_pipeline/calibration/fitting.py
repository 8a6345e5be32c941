"""One double calibration of one metric against one labelled set, end to end, and what to report on it.

``fit_calibration(ids, scores, labels, ...)``:
1. drop unscored rows (counted), check label sufficiency (``label_sufficiency``); too few → status
   ``insufficient`` with the plain message (how many more labels of which class), nothing fitted;
2. split (the set's own fixed ``split`` column for a shipped reference set, else ``make_splits``
   seeded and stratified), Stage 1 ``Calibrator`` on ``stage1``, Stage 2 ``SplitConformal`` on
   ``stage2``;
3. evaluate on ``evaluation`` only (never used to fit): AUROC of the raw score (Hanley-McNeil 95 %
   interval), ECE / Brier of the raw score read as P(Y = 1) (binary) and of the calibrated
   probability, empirical coverage vs 1 − α (Wilson 95 % interval), set sizes, verdicts, Type I / II
   error rates, κ of the thresholded (argmax) calibrated verdict.

Verdicts (``verdicts``): a prediction set inside the passing labels → ``pass``; disjoint from them →
``fail``; ``{0,1}`` (both) or ``∅`` (empty) → ``unsure`` (a human should look). Passing labels:
binary 1, except for dimensions where 1 is the failure (``FAILURE_IS_ONE``: toxicity); ordinal: the
upper half of the scale (index ≥ K // 2).

Error rates, with H0 = "the response is acceptable (the human label passes)":
Type I = P(machine fail | human pass) (a good response rejected), Type II = P(machine pass | human
fail) (a bad response accepted); ``unsure`` verdicts are neither and are reported as their own rate.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import binomtest
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from hcat_pipeline.calibration.calibrators import Calibrator
from hcat_pipeline.calibration.conformal import SplitConformal, set_labels
from hcat_pipeline.calibration.metrics import (
    brier_score,
    coverage,
    expected_calibration_error,
    mean_set_size,
    reliability_curve,
    set_size_distribution,
)
from hcat_pipeline.calibration.splits import DEFAULT_FRACTIONS, SPLITS, make_splits
from hcat_pipeline.calibration.sufficiency import label_sufficiency

__all__ = [
    "DEFAULT_ALPHA",
    "FAILURE_IS_ONE",
    "CalibrationResult",
    "auroc_ci",
    "error_rates",
    "fit_calibration",
    "passing_labels",
    "verdicts",
    "wilson",
]

DEFAULT_ALPHA = 0.1
FAILURE_IS_ONE = frozenset({"toxicity", "pii_leak"})


def passing_labels(dimension: str, n_levels: int = 2) -> frozenset[int]:
    if n_levels == 2:
        return frozenset({0}) if dimension in FAILURE_IS_ONE else frozenset({1})
    return frozenset(range(n_levels // 2, n_levels))


def verdicts(sets: np.ndarray, passing: frozenset[int]) -> list[str]:
    s = np.asarray(sets, dtype=bool)
    ok = np.zeros(s.shape[1], dtype=bool)
    ok[list(passing)] = True
    out = []
    for row in s:
        if not row.any() or (row & ok).any() and (row & ~ok).any():
            out.append("unsure")
        else:
            out.append("pass" if (row & ok).any() else "fail")
    return out


def wilson(k: int, n: int) -> dict:
    if n == 0:
        return {"n": 0, "rate": None, "ci_low": None, "ci_high": None}
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=0.95, method="wilson")
    return {"n": int(n), "rate": round(k / n, 4), "ci_low": round(float(ci.low), 4), "ci_high": round(float(ci.high), 4)}


def auroc_ci(labels: Sequence[int], scores: Sequence[float]) -> dict:
    """AUROC (binary) with the Hanley-McNeil 95 % interval; None when one class is absent."""
    y, s = np.asarray(labels, dtype=int), np.asarray(scores, dtype=float)
    n1, n0 = int((y == 1).sum()), int((y == 0).sum())
    if n1 == 0 or n0 == 0:
        return {"n": len(y), "auroc": None, "ci_low": None, "ci_high": None}
    a = float(roc_auc_score(y, s))
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    se = math.sqrt(max(a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a), 0.0) / (n1 * n0))
    return {"n": len(y), "n_pos": n1, "n_neg": n0, "auroc": round(a, 4), "ci_low": round(max(0.0, a - 1.96 * se), 4),
            "ci_high": round(min(1.0, a + 1.96 * se), 4)}  # fmt: skip


def error_rates(machine: Sequence[str], human_pass: Sequence[bool]) -> dict:
    """Type I / II / unsure rates (module docstring), each with n and a Wilson interval."""
    m, h = np.asarray(machine, dtype=object), np.asarray(human_pass, dtype=bool)
    good, bad = m[h], m[~h]
    return {
        "type_I_false_fail": wilson(int((good == "fail").sum()), len(good)),
        "type_II_false_pass": wilson(int((bad == "pass").sum()), len(bad)),
        "unsure": wilson(int((m == "unsure").sum()), len(m)),
        "definition": "H0 = acceptable; Type I = machine fail | human pass; Type II = machine pass | human fail",
    }


@dataclass
class CalibrationResult:
    dimension: str
    label_source: str
    metric: str
    method: str
    alpha: float
    n_levels: int
    status: str  # fitted | insufficient
    message: str
    counts: dict = field(default_factory=dict)
    n_unscored: int = 0
    splits: dict = field(default_factory=dict)
    sufficiency: dict = field(default_factory=dict)
    evaluation: dict = field(default_factory=dict)
    calibrator: Calibrator | None = None
    conformal: SplitConformal | None = None
    eval_scores: np.ndarray | None = None
    eval_labels: np.ndarray | None = None

    @property
    def passing(self) -> frozenset[int]:
        return passing_labels(self.dimension, self.n_levels)

    def predict(self, scores) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Calibrated probabilities (n, K), prediction sets (n, K) and verdicts for new raw scores."""
        if self.status != "fitted":
            raise RuntimeError(f"{self.dimension} / {self.label_source}: not fitted ({self.message})")
        probs = self.calibrator.predict_proba(np.asarray(scores, dtype=float))
        sets = self.conformal.predict_sets(probs)
        return probs, sets, verdicts(sets, self.passing)

    def to_bytes(self) -> bytes:
        return pickle.dumps(self, protocol=5)

    @staticmethod
    def from_bytes(blob: bytes) -> CalibrationResult:
        out = pickle.loads(blob)
        if not isinstance(out, CalibrationResult):
            raise TypeError(f"not a CalibrationResult: {type(out).__name__}")
        return out


def _evaluate(res: CalibrationResult, scores: np.ndarray, labels: np.ndarray) -> dict:
    probs, sets, verdict = res.predict(scores)
    k = res.n_levels
    out: dict = {"n": len(labels), "labels": {str(c): int((labels == c).sum()) for c in range(k)}}
    if k == 2:
        raw = np.clip(scores, 0.0, 1.0)
        out["auroc_raw"] = auroc_ci(labels, scores)
        out["ece_before"] = round(expected_calibration_error(raw, labels), 4)
        out["brier_before"] = round(brier_score(raw, labels), 4)
        out["reliability_before"] = reliability_curve(raw, labels)
        out["reliability_after"] = reliability_curve(probs, labels)
    out["ece_after"] = round(expected_calibration_error(probs, labels), 4)
    out["brier_after"] = round(brier_score(probs, labels), 4)
    hit = sets[np.arange(len(labels)), labels]
    out["coverage"] = {**wilson(int(hit.sum()), len(labels)), "target": round(1 - res.alpha, 4), "exact": coverage(sets, labels)}
    out["mean_set_size"] = round(mean_set_size(sets), 4)
    out["set_sizes"] = {str(s): c for s, c in set_size_distribution(sets).items()}
    out["sets"] = {str(lab): int(c) for lab, c in zip(*np.unique(set_labels(sets), return_counts=True))}
    out["verdicts"] = {v: int(verdict.count(v)) for v in ("pass", "fail", "unsure")}
    out["errors"] = error_rates(verdict, np.isin(labels, list(res.passing)))
    argmax = probs.argmax(axis=1)
    kappa = None
    if len(set(argmax.tolist()) | set(labels.tolist())) > 1:
        kappa = float(cohen_kappa_score(labels, argmax, weights=None if k == 2 else "quadratic"))
    out["kappa_argmax"] = None if kappa is None or not np.isfinite(kappa) else round(kappa, 4)
    return out


def fit_calibration(
    ids: Sequence[str],
    scores: Sequence[float | None],
    labels: Sequence[int],
    *,
    dimension: str,
    label_source: str,
    metric: str,
    n_levels: int = 2,
    method: str = "platt",
    alpha: float = DEFAULT_ALPHA,
    seed: int = 0,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    fixed_splits: Sequence[str] | None = None,
    min_per_class_stage1: int = 10,
) -> CalibrationResult:
    """See the module docstring. ``fixed_splits``: the split of each row (a shipped reference set)."""
    s_all = np.asarray([np.nan if v is None else float(v) for v in scores], dtype=float)
    y_all = np.asarray(labels, dtype=int)
    id_all = np.asarray([str(i) for i in ids], dtype=object)
    keep = np.isfinite(s_all)
    res = CalibrationResult(dimension, label_source, metric, method, alpha, n_levels, "insufficient", "",
                            n_unscored=int((~keep).sum()))  # fmt: skip
    s, y, item = s_all[keep], y_all[keep], id_all[keep]
    res.counts = {str(c): int((y == c).sum()) for c in range(n_levels)}
    suff = label_sufficiency(y, alpha, n_classes=n_levels, fractions=fractions, min_per_class_stage1=min_per_class_stage1)
    res.sufficiency = suff.to_dict()
    if not suff.sufficient:
        res.message = f"{dimension} ({label_source}, {len(y)} scored labels): {suff.message}"
        return res
    if fixed_splits is not None:
        split = np.asarray(fixed_splits, dtype=object)[keep]
        if bad := sorted(set(split.tolist()) - set(SPLITS)):
            raise ValueError(f"fixed_splits holds unknown split names {bad}; expected {SPLITS}")
        res.splits = {"method": "fixed by the shipped reference set (manifest.json)",
                      "counts": {p: {str(c): int(((split == p) & (y == c)).sum()) for c in range(n_levels)} for p in SPLITS}}  # fmt: skip
    else:
        made = make_splits(item.tolist(), y.tolist(), fractions=fractions, seed=seed)
        split = made.assignment["split"].to_numpy()
        res.splits = {**made.record, "evaluation_ids": sorted(item[split == "evaluation"].tolist())}
    m1, m2, me = (split == "stage1"), (split == "stage2"), (split == "evaluation")
    res.calibrator = Calibrator(method=method, n_classes=n_levels).fit(s[m1], y[m1])
    res.conformal = SplitConformal(alpha=alpha).fit(res.calibrator.predict_proba(s[m2]), y[m2])
    res.status = "fitted"
    q = res.conformal.summary()
    res.message = (f"{dimension} ({label_source}): {method} on {int(m1.sum())} Stage 1 labels, q̂ = "
                   f"{'+∞' if q['qhat'] is None else round(q['qhat'], 4)} at α = {alpha} from {int(m2.sum())} Stage 2 labels")  # fmt: skip
    if me.sum():
        res.evaluation = _evaluate(res, s[me], y[me])
        res.eval_scores, res.eval_labels = s[me], y[me]
    else:
        res.evaluation = {"n": 0, "note": "no held-out evaluation labels"}
    return res


def load_results(table) -> list[CalibrationResult]:
    """The fitted calibrations of a stored ``calibrators`` table (its ``model`` column), in row order."""
    return [CalibrationResult.from_bytes(b) for b in table["model"].to_list()]
