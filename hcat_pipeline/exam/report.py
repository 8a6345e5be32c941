"""Exam report pieces (exam-generation paper §5-6, Tables 3-4, Figures 3-5): pure tables and PNG plots.

* ``accuracy_table`` — per taker: accuracy with n and a Wilson 95 % interval, unparseable / failed counts,
  beside the exam's baselines (fixed position, longest answer, chance).
* ``component_table`` — per component value (llm / retriever / icl): mean accuracy with n and interval.
* ``plot_accuracy`` — matplotlib (Agg) PNG bytes; ``common.images.png_markdown`` embeds them (information curves per
  category and pruning step: ``hcat_pipeline.irt.plots``).

No dagster import.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from hcat_pipeline.common.stats import wilson_interval


def _with_ci(frame: pl.DataFrame) -> pl.DataFrame:
    lo, hi = zip(*(wilson_interval(k, n) for k, n in zip(frame["correct"], frame["n"], strict=True)), strict=True) if frame.height else ((), ())
    return frame.with_columns(pl.Series("ci_low", list(lo), pl.Float64), pl.Series("ci_high", list(hi), pl.Float64))


def accuracy_table(responses: pl.DataFrame, baselines: Mapping) -> pl.DataFrame:
    """Per taker: n answered (errors excluded), correct, accuracy, Wilson CI, unparseable, failed, and the baselines."""
    t = responses.group_by("system_id", maintain_order=True).agg(
        pl.col("llm").first(), pl.col("retriever").first(), pl.col("icl_examples").first(), pl.col("mode").first(),
        pl.col("correct").is_not_null().sum().alias("n"), pl.col("correct").sum().cast(pl.Int64).alias("correct"),
        pl.col("unparseable").sum().cast(pl.Int64).alias("unparseable"), pl.col("error").is_not_null().sum().alias("failed"),
    )  # fmt: skip
    t = _with_ci(t.with_columns(pl.col("correct").fill_null(0)))
    t = t.with_columns((pl.col("correct") / pl.col("n")).alias("accuracy"))
    return t.with_columns(
        pl.lit(float(baselines["fixed_position"]["accuracy"])).alias("fixed_position_baseline"),
        pl.lit(float(baselines["longest_answer"]["accuracy"])).alias("longest_answer_baseline"),
        pl.lit(float(baselines["chance"])).alias("chance"),
    ).sort("accuracy", descending=True)


def component_table(responses: pl.DataFrame) -> pl.DataFrame:
    """Per component value (llm, retriever, icl): answers, correct, accuracy with its Wilson interval (pooled answers)."""
    parts = []
    answered = responses.filter(pl.col("correct").is_not_null()).with_columns(
        ("icl@" + pl.col("icl_examples").cast(pl.String)).alias("icl")  # the labels of exam.taking.response_matrix
    )
    for comp in ("llm", "retriever", "icl"):
        g = answered.group_by(comp).agg(
            pl.len().alias("n"), pl.col("correct").sum().cast(pl.Int64).alias("correct"), pl.col("system_id").n_unique().alias("takers")
        )
        parts.append(g.select(pl.lit(comp).alias("component"), pl.col(comp).cast(pl.String).alias("value"), "takers", "n", "correct"))
    out = pl.concat(parts) if parts else pl.DataFrame()
    return _with_ci(out).with_columns((pl.col("correct") / pl.col("n")).alias("accuracy")).sort("component", "value")




def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    _figure().close(fig)
    return buf.getvalue()


def plot_accuracy(table: pl.DataFrame, baselines: Mapping, title: str) -> bytes:
    """Horizontal bars of each taker's accuracy with its 95 % interval, baselines as vertical lines."""
    plt = _figure()
    t = table.sort("accuracy")
    fig, ax = plt.subplots(figsize=(7, 0.35 * max(4, t.height) + 1))
    y = np.arange(t.height)
    acc = t["accuracy"].fill_null(0).to_numpy()
    err = np.vstack([acc - t["ci_low"].fill_null(0).to_numpy(), t["ci_high"].fill_null(0).to_numpy() - acc])
    ax.barh(y, acc, xerr=err, color="#4c72b0", capsize=2)
    ax.set_yticks(y, t["system_id"].to_list(), fontsize=8)
    for name, value, style in (("fixed position", baselines["fixed_position"]["accuracy"], "--"),
                               ("longest answer", baselines["longest_answer"]["accuracy"], ":"), ("chance", baselines["chance"], "-.")):  # fmt: skip
        ax.axvline(value, color="#c44e52", linestyle=style, label=f"{name} {value:.2f}")
    ax.set_xlim(0, 1)
    ax.set_xlabel("accuracy (95 % Wilson interval)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return _png(fig)


def category_counts(labels: Sequence[Sequence[str] | str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for lab in labels:
        for x in [lab] if isinstance(lab, str) else list(lab):
            out[str(x)] = out.get(str(x), 0) + 1
    return dict(sorted(out.items()))
