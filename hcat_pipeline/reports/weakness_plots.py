"""Plots of the weakness analysis (HCAT §6.2, Figures 5-7): heatmaps of bivariate cells and violin
plots of per-case scores by topic and by system. matplotlib (Agg), PNG bytes out; no dagster import.

Heatmap cells show the mean and n; a small cell (n < min_cell_n) is hatched and its text greyed, an
empty cell is blank with "–". Colours run from weak (red) to strong (green) in the metric's good
direction. Violins need two values; a group with fewer is drawn as its points only. Points are
jittered with a seeded generator, so the same data gives the same PNG bytes.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from hcat_pipeline.reports.weakness import DIMENSIONS, direction  # noqa: E402

MAX_LABEL = 28


def _short(label: str | None, n: int = MAX_LABEL) -> str:
    s = "" if label is None else str(label)
    return s if len(s) <= n else s[: n - 1] + "…"


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def heatmap_png(cells: pl.DataFrame, metric: str, dims: str, source: str | None = None, title: str | None = None) -> bytes:
    """Heatmap of the bivariate cells of ``metric`` for ``dims`` (e.g. "system × topic")."""
    sel = cells.filter((pl.col("metric") == metric) & (pl.col("dims") == dims) & (pl.col("analysis") == "bivariate"))
    if source is not None:
        sel = sel.filter(pl.col("source") == source)
    if sel.height == 0:
        raise ValueError(f"heatmap: no bivariate cells for metric {metric!r} and dims {dims!r}")
    rows, cols = sorted(sel["row"].unique().to_list()), sorted(sel["col"].unique().to_list())
    grid = np.full((len(rows), len(cols)), np.nan)
    info = {}
    for r in sel.iter_rows(named=True):
        i, j = rows.index(r["row"]), cols.index(r["col"])
        grid[i, j] = np.nan if r["mean"] is None else r["mean"]
        info[i, j] = r
    cmap = plt.get_cmap("RdYlGn_r" if direction(metric) == "lower" else "RdYlGn").with_extremes(bad="#eeeeee")
    finite = grid[np.isfinite(grid)]
    vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if 0.0 <= vmin and vmax <= 1.0:
        vmin, vmax = 0.0, 1.0
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(cols) + 2.5), max(2.5, 0.42 * len(rows) + 1.6)))
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    for (i, j), r in info.items():
        if r["mean"] is None:
            ax.text(j, i, "–", ha="center", va="center", fontsize=7, color="#777777")
            continue
        if r["small"]:
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#888888", linewidth=0))
        ax.text(j, i, f"{r['mean']:.2f}\nn={r['n']}", ha="center", va="center", fontsize=7, color="#555555" if r["small"] else "black")
    ax.set_xticks(range(len(cols)), [_short(c, 18) for c in cols], rotation=40, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)), [_short(r) for r in rows], fontsize=7)
    row_dim, col_dim = dims.split(" × ")
    ax.set_xlabel(col_dim)
    ax.set_ylabel(row_dim)
    ax.set_title(title or f"{metric}: {dims} (mean; hatched = small cell)", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    return _png(fig)


def violin_png(scores: pl.DataFrame, metric: str, by: str, source: str | None = None, seed: int = 0, title: str | None = None) -> bytes:
    """Violin plot of per-case values of ``metric`` grouped by dimension ``by`` ("topic", "system" …),
    each case a jittered point (low points are where the weaknesses are)."""
    if by not in DIMENSIONS:
        raise ValueError(f"violin: unknown dimension {by!r}; one of {list(DIMENSIONS)}")
    sel = scores.filter((pl.col("metric") == metric) & pl.col("value").is_not_null())
    if source is not None:
        sel = sel.filter(pl.col("source") == source)
    if sel.height == 0:
        raise ValueError(f"violin: no values of metric {metric!r}")
    col = DIMENSIONS[by]
    levels = sorted(sel[col].unique().to_list())
    data = [sel.filter(pl.col(col) == lv)["value"].to_numpy() for lv in levels]
    rng = np.random.default_rng(seed)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.55 * len(levels) + 2.0), 3.4))
    pos = [k for k, d in enumerate(data) if d.size >= 2 and np.ptp(d) > 0]
    if pos:
        parts = ax.violinplot([data[k] for k in pos], positions=pos, widths=0.8, showmeans=True, showextrema=False)
        for body in parts["bodies"]:
            body.set_alpha(0.35)
    for k, d in enumerate(data):
        ax.scatter(k + rng.uniform(-0.12, 0.12, d.size), d, s=9, color="#1f4e79", alpha=0.75, zorder=3)
    ax.set_xticks(range(len(levels)), [f"{_short(lv, 22)} (n={d.size})" for lv, d in zip(levels, data)], rotation=40, ha="right", fontsize=7)
    ax.set_ylabel(metric, fontsize=8)
    ax.set_title(title or f"{metric} per case by {by}", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)
