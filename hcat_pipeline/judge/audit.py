"""Validating an LLM judge against human labels, and its bias audits (golden-eval §5.6).

* ``judge_agreement`` — Cohen's κ of the judge vs human labels per dimension (scikit-learn
  ``cohen_kappa_score``, the estimator ``hcat_pipeline.calibration.agreement`` uses for raters):
  binary human labels are compared with the judge's binary verdict (``passed``: score ≥ the pass
  threshold, fixed in ``JudgeConfig`` before looking at data); ordinal human labels on the judge's
  1-5 scale with quadratic weights. A seeded percentile bootstrap gives the 95 % interval.
  ``validated`` is True only when n ≥ ``min_items`` and κ (or, with ``rule="ci_low"``, the lower CI
  bound) ≥ ``kappa_floor``; a judge that is not validated must never decide a gate.
* ``position_bias`` — pairwise prompts asked in both orders: the share of pairs whose verdict flips
  (the judge prefers a different response when only the order changed), the share of first-position
  wins, and pairwise accuracy where a human preference is known.
* ``length_bias`` — Spearman ρ between the judge's score and the answer length (words) within each
  human-label class (so quality is held constant), pooled by ranking within class.
* ``self_preference`` — at equal human label, the judge's mean score on answers from its own model
  family minus on answers from other families (weighted over label classes).

Every figure carries its n and a 95 % interval (bootstrap or Wilson). Pure numpy / scipy / sklearn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy import stats
from sklearn.metrics import cohen_kappa_score

__all__ = ["judge_agreement", "kappa_from_confusion", "position_bias", "length_bias", "self_preference", "wilson", "bootstrap_ci"]


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float | None, float | None]:
    """Wilson score 95 % interval of k successes out of n."""
    if n == 0:
        return None, None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return round(float(c - h), 4), round(float(c + h), 4)


def bootstrap_ci(stat, n: int, b: int = 1000, seed: int = 42) -> tuple[float | None, float | None]:
    """Percentile 95 % interval of ``stat(index_array)`` over ``b`` seeded resamples of ``range(n)``
    (resamples where the statistic is undefined — NaN — are dropped)."""
    if n < 2:
        return None, None
    rng = np.random.default_rng(seed)
    vals = np.array([stat(rng.integers(0, n, n)) for _ in range(b)], float)
    vals = vals[np.isfinite(vals)]
    if vals.size < b / 2:
        return None, None
    lo, hi = np.percentile(vals, [2.5, 97.5])
    return round(float(lo), 4), round(float(hi), 4)


def _kappa(a: np.ndarray, b: np.ndarray, labels: list[int], weights: str | None) -> float:
    if len(set(a.tolist()) | set(b.tolist())) < 2:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(cohen_kappa_score(a, b, labels=labels, weights=weights))


def kappa_from_confusion(a: np.ndarray, b: np.ndarray, k: int, weights: str | None) -> float:
    """Cohen's κ (``weights``: None | "quadratic") from the k×k confusion matrix, vectorised: the same value
    as scikit-learn's ``cohen_kappa_score`` (tested) without its per-call validation overhead, for the
    1000 bootstrap resamples."""
    cm = np.bincount(a * k + b, minlength=k * k).reshape(k, k).astype(float)
    n = cm.sum()
    expected = np.outer(cm.sum(1), cm.sum(0)) / n
    i, j = np.indices((k, k))
    w = (i != j).astype(float) if weights is None else (i - j) ** 2.0
    den = (w * expected).sum()
    return float(1 - (w * cm).sum() / den) if den > 0 else float("nan")


def judge_agreement(
    judge: Sequence[int | None],
    human: Sequence[int | None],
    scale: Literal["binary", "ordinal"] = "binary",
    kappa_floor: float = 0.4,
    min_items: int = 20,
    rule: Literal["point", "ci_low"] = "point",
    n_levels: int = 5,
    seed: int = 42,
) -> dict:
    """κ of judge vs human on the items both scored (None on either side is left out and counted).

    ``scale="binary"``: both sides 0/1 (judge: its pass verdict), Cohen's κ. ``"ordinal"``: both on
    0..n_levels−1, quadratic-weighted κ. Returns n, n_missing, kappa, ci_low, ci_high, accuracy, method,
    validated, reason (why not validated)."""
    pairs = [(j, h) for j, h in zip(judge, human, strict=True) if j is not None and h is not None]
    n_missing = len(judge) - len(pairs)
    a = np.array([int(j) for j, _ in pairs], int)
    h = np.array([int(x) for _, x in pairs], int)
    weights = None if scale == "binary" else "quadratic"
    labels = [0, 1] if scale == "binary" else list(range(n_levels))
    out = {"n": len(pairs), "n_missing": n_missing, "method": "cohen" if scale == "binary" else "cohen_quadratic",
           "kappa": None, "ci_low": None, "ci_high": None, "accuracy": None, "validated": False, "reason": None,
           "kappa_floor": kappa_floor, "rule": rule}  # fmt: skip
    if not pairs:
        out["reason"] = "no item has both a judge score and a human label"
        return out
    k = _kappa(a, h, labels, weights)
    out["accuracy"] = round(float((a == h).mean()), 4)
    if np.isfinite(k):
        out["kappa"] = round(k, 4)
        out["ci_low"], out["ci_high"] = bootstrap_ci(lambda idx: kappa_from_confusion(a[idx], h[idx], len(labels), weights),
                                                     len(pairs), seed=seed)
    value = out["kappa"] if rule == "point" else out["ci_low"]
    if out["kappa"] is None:
        out["reason"] = "every judgement falls in one category: κ undefined"
    elif len(pairs) < min_items:
        out["reason"] = f"n={len(pairs)} < min_items={min_items}"
    elif value is None or value < kappa_floor:
        out["reason"] = f"κ{'' if rule == 'point' else ' CI low'}={value} < floor {kappa_floor}"
    else:
        out["validated"] = True
    return out


def position_bias(
    pairs: Sequence[dict],
    max_flip_rate: float = 0.2,
) -> dict:
    """``pairs``: one dict per pair asked in both orders: ``verdict_ab`` (winner when X was shown as A:
    "A" | "B" | "tie" | None on error), ``verdict_ba`` (winner when X was shown as B), optional
    ``human`` ("X" | "Y": which response humans prefer).

    A pair is consistent when both orders pick the same underlying response (or both say tie); it
    flips otherwise. Returns n (pairs with both verdicts), n_errors, flip_rate (+ Wilson CI),
    first_position_rate (share of non-tie verdicts that chose whatever was shown first, + CI; 0.5 =
    no position preference), accuracy vs human (order-averaged, where known), flagged."""
    both = [p for p in pairs if p.get("verdict_ab") is not None and p.get("verdict_ba") is not None]
    under = {"A": "X", "B": "Y", "tie": "tie"}, {"A": "Y", "B": "X", "tie": "tie"}
    flips = sum(under[0][p["verdict_ab"]] != under[1][p["verdict_ba"]] for p in both)
    firsts = [v == "A" for p in both for v in (p["verdict_ab"], p["verdict_ba"]) if v != "tie"]
    correct = [under[i][v] == p["human"] for p in both if p.get("human") for i, v in enumerate((p["verdict_ab"], p["verdict_ba"]))]
    n = len(both)
    out = {
        "n": n, "n_errors": len(pairs) - n, "flips": int(flips),
        "flip_rate": round(flips / n, 4) if n else None, "flip_rate_ci": wilson(flips, n),
        "first_position_rate": round(sum(firsts) / len(firsts), 4) if firsts else None,
        "first_position_ci": wilson(sum(firsts), len(firsts)), "n_non_tie": len(firsts),
        "accuracy_vs_human": round(sum(correct) / len(correct), 4) if correct else None,
        "accuracy_ci": wilson(sum(correct), len(correct)), "n_human": len(correct) // 2,
        "max_flip_rate": max_flip_rate,
    }  # fmt: skip
    out["flagged"] = bool(n and flips / n > max_flip_rate)
    return out


def _within_class_ranks(values: np.ndarray, classes: np.ndarray) -> np.ndarray:
    r = np.empty(len(values), float)
    for c in np.unique(classes):
        m = classes == c
        r[m] = (stats.rankdata(values[m]) - 0.5) / m.sum() if m.sum() > 0 else 0.0
    return r


def _rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman ρ (Pearson correlation of average ranks, as ``scipy.stats.spearmanr``)."""
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(stats.rankdata(x), stats.rankdata(y))[0, 1])


def length_bias(
    scores: Sequence[float | None],
    lengths: Sequence[int],
    human: Sequence[int | None],
    max_abs_rho: float = 0.3,
    seed: int = 42,
) -> dict:
    """Spearman ρ(score, length) within each human-label class, and pooled over classes (ranks taken
    within class, so a length difference between good and bad answers is not counted as bias).
    flagged when the pooled 95 % CI excludes 0 and |ρ| > ``max_abs_rho``."""
    keep = [(float(s), int(n), int(h)) for s, n, h in zip(scores, lengths, human, strict=True) if s is not None and h is not None]
    out: dict = {"n": len(keep), "by_label": {}, "rho": None, "ci_low": None, "ci_high": None, "flagged": False, "max_abs_rho": max_abs_rho}
    if len(keep) < 3:
        out["reason"] = f"n={len(keep)}: too few scored and labelled items"
        return out
    s, n, h = (np.array(v) for v in zip(*keep, strict=True))
    for c in sorted(set(h.tolist())):
        m = h == c
        rho = _rho(s[m], n[m])
        out["by_label"][str(c)] = {"n": int(m.sum()), "rho": None if not np.isfinite(rho) else round(rho, 4)}
    rs, rn = _within_class_ranks(s, h), _within_class_ranks(n.astype(float), h)
    rho = _rho(rs, rn)
    if np.isfinite(rho):
        out["rho"] = round(rho, 4)
        out["ci_low"], out["ci_high"] = bootstrap_ci(
            lambda idx: _rho(_within_class_ranks(s[idx], h[idx]), _within_class_ranks(n[idx].astype(float), h[idx])), len(s), seed=seed
        )
        lo, hi = out["ci_low"], out["ci_high"]
        out["flagged"] = bool(lo is not None and (lo > 0 or hi < 0) and abs(rho) > max_abs_rho)
    else:
        out["reason"] = "scores or lengths constant: ρ undefined"
    return out


def self_preference(
    scores: Sequence[float | None],
    human: Sequence[int | None],
    system_family: Sequence[str | None],
    judge_family: str | None,
    max_gap: float = 0.5,
    seed: int = 42,
) -> dict:
    """Mean judge score on own-family answers minus on other-family answers, within each human-label
    class, averaged with weights = the class's share of items; bootstrap 95 % CI. Answers of unknown
    family (human-written, http systems) count as other. Not measurable (gap None, reason) without
    both own- and other-family answers in some class. flagged when the CI excludes 0 and |gap| > max_gap."""
    keep = [(float(s), int(h), f == judge_family and judge_family is not None)
            for s, h, f in zip(scores, human, system_family, strict=True) if s is not None and h is not None]  # fmt: skip
    fams = sorted({str(f) for f in system_family if f})
    out: dict = {"judge_family": judge_family, "system_families": fams, "n": len(keep), "n_own": sum(k[2] for k in keep),
                 "gap": None, "ci_low": None, "ci_high": None, "flagged": False, "max_gap": max_gap, "reason": None}  # fmt: skip
    if not keep:
        out["reason"] = "no scored and labelled items"
        return out
    s, h, own = (np.array(v) for v in zip(*keep, strict=True))

    def gap(idx: np.ndarray) -> float:
        total, weight = 0.0, 0
        for c in np.unique(h[idx]):
            m = h[idx] == c
            o, x = own[idx][m], s[idx][m]
            if o.any() and (~o).any():
                total += m.sum() * (x[o].mean() - x[~o].mean())
                weight += m.sum()
        return total / weight if weight else float("nan")

    g = gap(np.arange(len(s)))
    if not np.isfinite(g):
        out["reason"] = (f"not measurable: no answers of the judge's family ({judge_family}) next to other families "
                         f"at equal human label (families present: {fams or 'none known'})")  # fmt: skip
        return out
    out["gap"] = round(g, 4)
    out["ci_low"], out["ci_high"] = bootstrap_ci(gap, len(s), seed=seed)
    lo, hi = out["ci_low"], out["ci_high"]
    out["flagged"] = bool(lo is not None and (lo > 0 or hi < 0) and abs(g) > max_gap)
    return out
