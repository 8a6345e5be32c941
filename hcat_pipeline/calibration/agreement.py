"""Inter-rater agreement per dimension, and one consensus label per item for calibration.

An item is one ``(case_id, system_id)`` response; a rater's latest judgement of it counts
(``labelled_at``; earlier re-labels stay in the store but not in these figures).

``agreement``: one row per dimension.
- two raters → Cohen's κ on the items both judged (scikit-learn ``cohen_kappa_score``), with
  quadratic weights on an ordinal scale (weighted κ: near misses count as partial agreement);
- more than two → Fleiss' κ (statsmodels ``stats.inter_rater.fleiss_kappa``, nominal). Fleiss needs
  the same number of raters per item: the items with the most common count (≥ 2) are used and
  ``n_items`` says how many;
- κ is null when no item has two raters, or when every rating falls in one category (chance
  agreement is then 1 and κ is undefined); ``note`` says which.

``consensus_labels``: one label per item and dimension (the median ``label_index`` of the raters'
latest judgements; on an even split the lower median), with ``n_raters``, the share of raters who
gave the consensus, and ``tie`` (a split vote: consider leaving those items out of calibration).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
from sklearn.metrics import cohen_kappa_score

from hcat_pipeline.schemas import LABEL_AGREEMENT as AGREEMENT_SCHEMA

__all__ = ["agreement", "consensus_labels", "latest_per_rater", "AGREEMENT_SCHEMA"]

ITEM = ["case_id", "system_id"]


def latest_per_rater(labels: pl.DataFrame) -> pl.DataFrame:
    """Each rater's latest judgement of each item and dimension."""
    return labels.sort("labelled_at").unique([*ITEM, "dimension", "rater"], keep="last", maintain_order=True)


def _kappa_row(dim: str, frame: pl.DataFrame) -> dict:
    scale = frame["scale"][0]
    ordinal = scale != "binary"
    k = int(frame["n_levels"][0])
    per_item = frame.group_by(ITEM, maintain_order=True).agg(pl.len().alias("n"))  # row order fixed: Fleiss sums floats over it
    multi = per_item.filter(pl.col("n") >= 2)
    rated = frame.join(multi.select(ITEM), on=ITEM, how="semi")
    raters = sorted(set(rated["rater"].to_list()))
    row = {
        "dimension": dim,
        "scale": scale,
        "method": None,
        "kappa": None,
        "n_items": multi.height,
        "n_raters": len(raters),
        "note": None,
    }
    if multi.height == 0:
        row["note"] = "no item judged by two raters"
        row["n_raters"] = frame["rater"].n_unique()
        return row
    if len(raters) == 2:
        wide = rated.pivot(on="rater", index=ITEM, values="label_index").drop_nulls()
        a, b = wide[raters[0]].to_numpy(), wide[raters[1]].to_numpy()
        row["method"] = "cohen_quadratic" if ordinal else "cohen"
        row["n_items"] = len(a)
        if len(set(a.tolist()) | set(b.tolist())) < 2:
            row["note"] = "every rating in one category: κ undefined"
        else:
            row["kappa"] = float(cohen_kappa_score(a, b, labels=list(range(k)), weights="quadratic" if ordinal else None))
        return row
    from statsmodels.stats.inter_rater import fleiss_kappa

    m = max(Counter(multi["n"].to_list()).most_common(), key=lambda t: (t[1], t[0]))[0]
    items = multi.filter(pl.col("n") == m).select(ITEM)
    use = rated.join(items, on=ITEM, how="semi")
    table = np.zeros((items.height, k))
    index = {key: i for i, key in enumerate(items.iter_rows())}
    for case_id, system_id, li in use.select(*ITEM, "label_index").iter_rows():
        table[index[(case_id, system_id)], li] += 1
    row.update(method="fleiss", n_items=items.height)
    if items.height < multi.height:
        row["note"] = (
            f"Fleiss on the {items.height} items with {m} raters ({multi.height - items.height} items with another count left out)"
        )
    if np.count_nonzero(table.sum(axis=0)) < 2:
        row["note"] = "every rating in one category: κ undefined"
    else:
        row["kappa"] = float(fleiss_kappa(table, method="fleiss"))
    return row


def agreement(labels: pl.DataFrame) -> pl.DataFrame:
    """Inter-rater agreement per dimension (see module docstring); columns ``AGREEMENT_SCHEMA``."""
    latest = latest_per_rater(labels)
    rows = [_kappa_row(dim, latest.filter(pl.col("dimension") == dim)) for dim in sorted(set(latest["dimension"].to_list()))]
    return pl.DataFrame(rows, schema=AGREEMENT_SCHEMA)


def consensus_labels(labels: pl.DataFrame) -> pl.DataFrame:
    """One label per item and dimension: ``case_id, system_id, dimension, scale, n_levels,
    label_index, n_raters, tie, support`` (share of raters who gave the consensus label)."""
    keys = [*ITEM, "dimension"]
    latest = latest_per_rater(labels)
    values = pl.col("_v")
    consensus = (
        latest.group_by(keys, maintain_order=True)
        .agg(pl.col("scale").first(), pl.col("n_levels").first(), pl.col("label_index").sort().alias("_v"))
        .with_columns(
            values.list.get((values.list.len() - 1) // 2).alias("label_index"),
            values.list.len().cast(pl.Int64).alias("n_raters"),
            (values.list.get((values.list.len() - 1) // 2) != values.list.get(values.list.len() // 2)).alias("tie"),
        )
        .drop("_v")
    )
    support = (
        latest.join(consensus.select(*keys, pl.col("label_index").alias("_c")), on=keys)
        .group_by(keys)
        .agg((pl.col("label_index") == pl.col("_c")).mean().alias("support"))
    )
    return consensus.join(support, on=keys).sort(keys)
