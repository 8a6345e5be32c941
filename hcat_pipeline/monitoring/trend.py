"""Tests over a daily series: Mann-Kendall's trend test, Sen's slope, and where a drift starts (a hinge fit).

A drift is a monotone change, so it is tested by rank (Mann-Kendall: one bad day does not make a trend) and sized by
Sen's slope (the median of pairwise slopes); its start is the day after the hinge of the best flat-then-linear fit
(weighted least squares over the candidate hinges) — the change point.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def mann_kendall(x: np.ndarray) -> tuple[float, float]:
    """(S, one-sided p for an increasing trend), ties corrected, continuity corrected; p = 1 under 3 points."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < 3:
        return 0.0, 1.0
    s = float(sum(np.sign(x[j] - x[i]) for i in range(n - 1) for j in range(i + 1, n)))
    _, counts = np.unique(x, return_counts=True)
    var = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in counts)) / 18.0
    if var <= 0:
        return s, 1.0
    z = (s - 1) / math.sqrt(var) if s > 0 else (s + 1) / math.sqrt(var) if s < 0 else 0.0
    return s, float(stats.norm.sf(z))


def sen_slope(t: np.ndarray, x: np.ndarray) -> float:
    return float(stats.theilslopes(x, t)[0]) if len(x) >= 2 else 0.0


def hinge_start(t: np.ndarray, x: np.ndarray, w: np.ndarray | None = None) -> int:
    """The index of the first point after the hinge of the best flat-then-rising fit (the drift's first day)."""
    t, x = np.asarray(t, dtype=float), np.asarray(x, dtype=float)
    w = np.ones_like(x) if w is None else np.asarray(w, dtype=float)
    best, start = math.inf, 0
    for h in range(len(t) - 1):
        design = np.column_stack([np.ones_like(t), np.maximum(t - t[h], 0.0)])
        sw = np.sqrt(w)
        coef, *_ = np.linalg.lstsq(design * sw[:, None], x * sw, rcond=None)
        if coef[1] <= 0:
            continue
        sse = float(np.sum(w * (x - design @ coef) ** 2))
        if sse < best - 1e-12:
            best, start = sse, h + 1
    return start
