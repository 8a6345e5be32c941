"""PNG figures of a fitted calibration (matplotlib, Agg backend; bytes out, nothing written here).

* ``reliability_png`` — reliability diagram on the held-out evaluation split: mean predicted
  P(Y = 1) per bin vs the observed share of label 1, raw score (read as a probability) and calibrated,
  with the diagonal; ECE / Brier in the legend.
* ``figure4_png`` — the HCAT paper's Figure 4: the Stage 1 curve P(Y = 1 | score) over the score
  range, the held-out items at y = 0 / 1 coloured by human label, the lines q̂ and 1 − q̂, and the
  score regions where the conformal set is {0}, {1}, {0,1} or ∅ shaded.
"""

from __future__ import annotations

import io

import numpy as np

from hcat_pipeline.calibration.fitting import CalibrationResult

__all__ = ["figure4_png", "reliability_png"]

_SET_COLOURS = {"{0}": "#f4c7c3", "{1}": "#c8e6c9", "{0,1}": "#e0e0e0", "∅": "#fff3b0"}


def _fig():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _png(fig, plt) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def reliability_png(res: CalibrationResult) -> bytes:
    plt = _fig()
    ev = res.evaluation
    fig, ax = plt.subplots(figsize=(4.8, 4.2))
    ax.plot([0, 1], [0, 1], ls="--", c="grey", lw=1, label="perfectly calibrated")
    for key, colour, name in (("reliability_before", "#d62728", "raw score"), ("reliability_after", "#1f77b4", "calibrated")):
        curve = ev.get(key)
        if not curve:
            continue
        suffix = "before" if key.endswith("before") else "after"
        ax.plot(curve["prob_pred"], curve["prob_true"], marker="o", c=colour,
                label=f"{name} (ECE {ev.get('ece_' + suffix)}, Brier {ev.get('brier_' + suffix)})")  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted P(human label = 1)")
    ax.set_ylabel("observed share of label 1")
    ax.set_title(f"{res.dimension} · {res.label_source} · {res.metric}\nheld-out n = {ev.get('n', 0)}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    return _png(fig, plt)


def figure4_png(res: CalibrationResult, grid_points: int = 400) -> bytes:
    plt = _fig()
    s, y = res.eval_scores, res.eval_labels
    lo, hi = (float(np.min(s)), float(np.max(s))) if s is not None and len(s) else (0.0, 1.0)
    pad = 0.05 * (hi - lo or 1.0)
    grid = np.linspace(lo - pad, hi + pad, grid_points)
    probs, sets, _ = res.predict(grid)
    from hcat_pipeline.calibration.conformal import set_labels

    names = set_labels(sets)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    start = 0
    for i in range(1, len(grid) + 1):  # shade runs of the same set
        if i == len(grid) or names[i] != names[start]:
            ax.axvspan(grid[start], grid[i - 1], color=_SET_COLOURS.get(names[start], "#eeeeee"), alpha=0.8, lw=0)
            start = i
    ax.plot(grid, probs[:, 1], c="black", lw=2, label="calibrated P(Y = 1 | score)")
    q = res.conformal.qhat
    if np.isfinite(q):
        ax.axhline(q, c="#555555", ls=":", lw=1, label=f"q̂ = {q:.3f}")
        ax.axhline(1 - q, c="#555555", ls="--", lw=1, label=f"1 − q̂ = {1 - q:.3f}")
    if s is not None and len(s):
        rng = np.random.default_rng(0)
        jitter = rng.uniform(-0.02, 0.02, len(s))
        for c, colour in ((0, "#d62728"), (1, "#2ca02c")):
            m = y == c
            ax.scatter(s[m], c + jitter[m], s=10, c=colour, alpha=0.6, label=f"human label {c} (n={int(m.sum())})")
    from matplotlib.patches import Patch

    handles, _ = ax.get_legend_handles_labels()
    handles += [Patch(color=col, label=f"set {lab}") for lab, col in _SET_COLOURS.items() if lab in set(names)]
    ax.legend(handles=handles, fontsize=7, loc="center right")
    ax.set_ylim(-0.06, 1.06)
    ax.set_xlabel(f"raw score ({res.metric})")
    ax.set_ylabel("probability / class")
    ax.set_title(f"Figure 4: {res.dimension} · {res.label_source} · {res.method} + split conformal (α = {res.alpha})", fontsize=9)
    return _png(fig, plt)


def stated_reliability_png(summary) -> bytes:
    """Reliability diagram of the confidence systems state (``calibration.stated.stated_confidence_summary``): per system,
    the mean stated confidence against the share right in each bin, point size ∝ answers in the bin."""
    import json

    plt = _fig()
    fig, ax = plt.subplots(figsize=(4.8, 4.2))
    ax.plot([0, 1], [0, 1], ls="--", c="grey", lw=1, label="perfectly calibrated")
    for r in summary.iter_rows(named=True):
        curve = json.loads(r["reliability"])
        ax.plot(curve["prob_pred"], curve["prob_true"], marker="o", lw=1,
                label=f"{r['system_id']} (ECE {r['ece']:.2f}, Brier {r['brier']:.2f}, n={r['n']})")  # fmt: skip
        ax.scatter(curve["prob_pred"], curve["prob_true"], s=[8 + 4 * c for c in curve["count"]], alpha=0.4)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("stated confidence")
    ax.set_ylabel("share of answers judged correct")
    ax.set_title("Stated confidence vs correctness (golden-eval §3.2.3)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    return _png(fig, plt)
