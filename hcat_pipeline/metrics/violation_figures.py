"""The violation-match deck's headline figures per checker version, with their uncertainty over samples.

The deck names two major metrics: the **match score** — "how good violations detected by our checkers are compared to
ground-truth violations, considering highlighted text, violated rule, category, explanation and suggested correction"
— and the **F1 score**. The deck gives the match score no formula beyond the weighted match score of a pair; here it
is the mean weighted match score of the checker's matches:

* ``match_score`` = Σ std weighted score of the std matches / TP (text overlap and rule, 0.5 / 0.5);
* ``ha_match_score`` = Σ ha weighted score of the ha matches / ha_TP (+ category, explanation, correction);

beside precision = TP / predicted, recall = TP / ground truth, F1 = 2TP / (predicted + ground truth) of each variant.

Uncertainty: a sample is a checked text (the deck's split: 7 samples, 13 violations). Each figure is a ratio of sums
over texts, and its CI is the percentile bootstrap over texts (``n_boot`` resamples of the texts with replacement,
seeded): a checker run on a handful of texts gets an interval as wide as it should be. A replicate whose denominator
is 0 (no match drawn for the match score) is left out; fewer than 2 texts, or no replicate defined: no CI.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

FIGURES = ("precision", "recall", "f1", "match_score")
# per text: predicted, ground truth, std TP, Σ std score of its matches, ha TP, Σ ha score of its matches
_PRED, _GT, _TP, _SCORE, _HA_TP, _HA_SCORE = range(6)


@dataclass(frozen=True)
class FigureOptions:
    n_boot: int = 1000
    seed: int = 42
    confidence: float = 0.95

    def __post_init__(self):
        if self.n_boot < 1:
            raise ValueError(f"n_boot must be ≥ 1, got {self.n_boot}")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")


def text_counts(texts: Iterable[str], predicted: list[dict], ground_truth: list[dict], matches: list[dict],
                ha_matches: list[dict]) -> np.ndarray:
    """texts × 6 counts (see ``_PRED`` …) in the order of ``texts``; violations carry ``text_id``, matches their scores."""
    order = {t: i for i, t in enumerate(dict.fromkeys(texts))}
    out = np.zeros((len(order), 6), dtype=np.float64)
    for v in predicted:
        out[order[v["text_id"]], _PRED] += 1
    for v in ground_truth:
        out[order[v["text_id"]], _GT] += 1
    for m in matches:
        out[order[m["text_id"]], [_TP, _SCORE]] += (1.0, m["match_score"])
    for m in ha_matches:
        out[order[m["text_id"]], [_HA_TP, _HA_SCORE]] += (1.0, m["ha_match_score"])
    return out


def _ratios(sums: np.ndarray, ha: bool) -> dict[str, np.ndarray]:
    """The four figures from column sums (last axis = the 6 counts); NaN where undefined."""
    tp, score = (sums[..., _HA_TP], sums[..., _HA_SCORE]) if ha else (sums[..., _TP], sums[..., _SCORE])
    pred, gt = sums[..., _PRED], sums[..., _GT]
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"precision": np.where(pred > 0, tp / pred, np.nan), "recall": np.where(gt > 0, tp / gt, np.nan),
                "f1": np.where(pred + gt > 0, 2 * tp / (pred + gt), np.nan), "match_score": np.where(tp > 0, score / tp, np.nan)}  # fmt: skip


def _value(x) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


def figures_with_ci(counts: np.ndarray, options: FigureOptions | None = None) -> dict:
    """Both variants' figures with their CIs: ``precision``, ``precision_ci_low`` … ``ha_match_score_ci_high`` and
    ``samples`` (texts). Deterministic for a seed."""
    opts = options or FigureOptions()
    n = counts.shape[0]
    out: dict = {"samples": n}
    boot = None
    if n >= 2:
        idx = np.random.default_rng(opts.seed).integers(0, n, size=(opts.n_boot, n))
        boot = counts[idx].sum(axis=1)  # n_boot × 6
    tail = 100 * (1 - opts.confidence) / 2
    for ha in (False, True):
        prefix = "ha_" if ha else ""
        point = _ratios(counts.sum(axis=0), ha)
        reps = _ratios(boot, ha) if boot is not None else None
        for fig in FIGURES:
            out[f"{prefix}{fig}"] = _value(point[fig])
            r = reps[fig][~np.isnan(reps[fig])] if reps is not None else np.array([])
            low, high = (np.percentile(r, [tail, 100 - tail]) if r.size else (np.nan, np.nan))
            out[f"{prefix}{fig}_ci_low"], out[f"{prefix}{fig}_ci_high"] = _value(low), _value(high)
    return out
