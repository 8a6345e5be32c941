"""PNG plots of the IRT analysis (exam paper Figures 3-5, 8): matplotlib with the Agg backend, bytes out."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from hcat_pipeline.irt.improve import PruningHistory  # noqa: E402
from hcat_pipeline.irt.information import DEFAULT_GRID, item_information  # noqa: E402
from hcat_pipeline.irt.model import IRTResult  # noqa: E402


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def plot_category_information(grid, curves: dict[str, dict], title: str = "Mean item information per category") -> bytes:
    """Figures 3-4: one mean-item-information curve per category (``category_information`` output), n in the legend."""
    grid = np.asarray(grid, dtype=float)
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, entry in curves.items():
        style = {"color": "black", "linestyle": "--", "linewidth": 2} if label == "All" else {}
        ax.plot(grid, entry["mean"], label=f"{label} [n={entry['n']}]", **style)
    ax.set(title=title, xlabel="θ (ability)", ylabel="Fisher information per question")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def plot_pruning_history(history: PruningHistory, title: str = "Iterative exam improvement") -> bytes:
    """Figure 5: the mean item information curve of every step (accepted solid, rejected dotted)."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for s in history.steps:
        ax.plot(history.grid, s.mean_item_information, linestyle="-" if s.accepted else ":",
                label=f"step {s.step}: {len(s.items)} questions, score {s.score:.3g}{'' if s.accepted else ' (rejected)'}")
    ax.set(title=title, xlabel="θ (ability)", ylabel="mean Fisher information per question")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def plot_item_curves(result: IRTResult, grid=None, title: str = "Item characteristic and information curves") -> bytes:
    """Figure 8 style: every item's P(correct | θ) and information, with the takers' θ marked on the axis."""
    grid = DEFAULT_GRID if grid is None else np.asarray(grid, dtype=float)
    p = result.c + (1.0 - result.c) / (1.0 + np.exp(-result.a * (grid[:, None] - result.b)))
    info = item_information(grid, result.a, result.b, result.c)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    ax1.plot(grid, p, linewidth=0.6, alpha=0.6)
    ax2.plot(grid, info, linewidth=0.6, alpha=0.6)
    for ax in (ax1, ax2):
        ax.plot(result.theta, np.zeros_like(result.theta), "kx", markersize=5, label="takers' θ")
        ax.grid(True, alpha=0.3)
        ax.set_xlabel("θ (ability)")
    ax1.set(title="P(correct)", ylabel="probability")
    ax2.set(title="item information", ylabel="Fisher information")
    fig.suptitle(f"{title} ({result.model}, {result.n_items} questions, {result.n_takers} takers)")
    return _png(fig)
