"""Fisher information of 3PL items (exam paper eq. 3) and of an exam (eq. 4), exact for 3PL.

I_j(θ) = a_j² · (P_j − c_j)² / (1 − c_j)² · (1 − P_j) / P_j, which reduces to a² P (1 − P) when c = 0.
(The paper's plotting code used a² P (1 − P) for 3PL too; that overstates the information of items with guessing.)
"""

from __future__ import annotations

import numpy as np

from hcat_pipeline.irt.params import irt_probability

DEFAULT_GRID = np.linspace(-4.0, 4.0, 161)


def item_information(theta, a, b, c) -> np.ndarray:
    """Exact 3PL item information, shape (len(theta), len(a))."""
    a = np.asarray(a, dtype=float)
    c = np.asarray(c, dtype=float)
    p = irt_probability(theta, a, b, c)
    return a**2 * (p - c) ** 2 / (1.0 - c) ** 2 * (1.0 - p) / p


def exam_information(theta, a, b, c, items=None) -> np.ndarray:
    """Exam information I(θ) = Σ_{j ∈ items} I_j(θ) (all items when ``items`` is None), shape (len(theta),)."""
    a, b, c = (np.asarray(v, dtype=float) for v in (a, b, c))
    if items is not None:
        items = np.asarray(items)
        a, b, c = a[items], b[items], c[items]
    return item_information(theta, a, b, c).sum(axis=1)


def information_summary(grid, curve, weights=None) -> float:
    """One number for an information curve: its mean over ``grid`` weighted by ``weights`` (default N(0, 1) density)."""
    grid = np.asarray(grid, dtype=float)
    w = np.exp(-0.5 * grid**2) if weights is None else np.asarray(weights, dtype=float)
    return float(np.sum(w * np.asarray(curve)) / np.sum(w))


def category_information(grid, a, b, c, categories) -> dict[str, dict]:
    """Mean item information curve per category (exam paper Figures 3-4).

    ``categories``: one entry per item, a label or a list of labels (multi-label: an item counts in each).
    Returns {label: {"n": items in the category, "mean": mean item information over ``grid``, "total": sum}},
    plus an "All" entry; labels in first-seen order.
    """
    a, b, c = (np.asarray(v, dtype=float) for v in (a, b, c))
    if len(categories) != len(a):
        raise ValueError(f"category_information: {len(categories)} category entries for {len(a)} items")
    info = item_information(grid, a, b, c)  # (grid, J)
    out: dict[str, dict] = {"All": {"n": len(a), "mean": info.mean(axis=1), "total": info.sum(axis=1)}}
    members: dict[str, list[int]] = {}
    for j, cats in enumerate(categories):
        for lab in [cats] if isinstance(cats, str) else list(cats):
            members.setdefault(str(lab), []).append(j)
    for lab, idx in members.items():
        sub = info[:, idx]
        out[lab] = {"n": len(idx), "mean": sub.mean(axis=1), "total": sub.sum(axis=1)}
    return out
