"""Evaluation helpers of the NLI groundedness head: AUROC (scikit-learn), length-matched AUROC,
the answer-level aggregate of §3.2 and per-kind statistics of labelled pairs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def auroc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve (``sklearn.metrics.roc_auc_score``); NaN with a single class."""
    from sklearn.metrics import roc_auc_score

    y = np.asarray(labels, dtype=int)
    if len(set(y.tolist())) < 2:
        return float("nan")
    return float(roc_auc_score(y, np.asarray(scores, dtype=np.float64)))


def paired_auroc_difference_ci(labels: Sequence[int], before: Sequence[float], after: Sequence[float],
                               resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile interval of AUROC(after) − AUROC(before) over rows resampled together (the
    same rows for both scores); resamples with a single class are skipped. The no-regression rule's
    interval (CONTRIBUTING)."""
    y, b, a = (np.asarray(v) for v in (labels, before, after))
    rng, diffs = np.random.default_rng(seed), []
    for _ in range(resamples):
        i = rng.integers(0, len(y), len(y))
        if len(set(y[i].tolist())) == 2:
            diffs.append(auroc(y[i], a[i]) - auroc(y[i], b[i]))
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return float(lo), float(hi)


def length_matched_auroc(labels: Sequence[int], scores: Sequence[float], lengths: Sequence[int], max_ratio: float = 1.25) -> dict:
    """AUROC over (positive, negative) pairs of similar length only.

    A positive and a negative form a comparable pair when the longer of the two is at most
    ``max_ratio`` times the shorter (in words). The result is the fraction of comparable pairs the
    score orders correctly (ties count ½): the Mann-Whitney AUROC restricted to length-matched pairs,
    so a score that only tracks length gets about 0.5.
    """
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=np.float64)
    n = np.asarray(lengths, dtype=np.float64).clip(min=1)
    pos, neg = np.where(y == 1)[0], np.where(y == 0)[0]
    if len(pos) == 0 or len(neg) == 0:
        return {"auroc": float("nan"), "pairs": 0}
    lp, ln = n[pos][:, None], n[neg][None, :]
    ok = np.maximum(lp, ln) <= max_ratio * np.minimum(lp, ln)
    diff = s[pos][:, None] - s[neg][None, :]
    wins = (diff > 0) + 0.5 * (diff == 0)
    total = int(ok.sum())
    if total == 0:
        return {"auroc": float("nan"), "pairs": 0}
    return {"auroc": float((wins * ok).sum() / total), "pairs": total}


def answer_aggregate(sigmas: Sequence[float]) -> float:
    """The answer-level groundedness: the mean of σ(D_i) over its k sentences (paper §3.2, 1/k Σ)."""
    return float(np.mean(sigmas)) if len(sigmas) else math.nan


def kind_stats(pairs: Sequence, sigma: np.ndarray) -> list[dict]:
    """Per kind of labelled pair (``.kind``, ``.label``): count, label, mean σ(D), accuracy of σ(D) > ½."""
    rows = []
    for kind in sorted({p.kind for p in pairs}):
        idx = [i for i, p in enumerate(pairs) if p.kind == kind]
        lab = pairs[idx[0]].label
        s = np.asarray(sigma)[idx]
        rows.append({"kind": kind, "label": lab, "pairs": len(idx), "mean_sigma": float(s.mean()),
                     "accuracy": float(((s > 0.5).astype(int) == lab).mean())})
    return rows
