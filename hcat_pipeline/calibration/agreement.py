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
- Krippendorff's α (``krippendorff`` package; nominal on a binary scale, ordinal otherwise) on every item
  with two or more ratings, whatever the number of raters per item (missing ratings allowed).
- Both with a 95 % percentile bootstrap CI over items (``N_BOOT`` resamples, seeded: the same labels
  give the same interval); a resample where the figure is undefined is left out.

``disagreements``: the items whose raters' latest labels differ, with who said what.

``consensus_labels``: one label per item and dimension (the median ``label_index`` of the raters'
latest judgements; on an even split the lower median), with ``n_raters``, the share of raters who
gave the consensus, and ``tie`` (a split vote: consider leaving those items out of calibration).
"""

from __future__ import annotations

import warnings
from collections import Counter

import krippendorff
import numpy as np
import polars as pl
from sklearn.metrics import cohen_kappa_score

from hcat_pipeline.schemas import LABEL_AGREEMENT as AGREEMENT_SCHEMA

__all__ = ["agreement", "consensus_labels", "disagreements", "latest_per_rater", "AGREEMENT_SCHEMA"]

ITEM = ["case_id", "system_id"]
N_BOOT = 1000
CI_LEVEL = 0.95


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
            weights = "quadratic" if ordinal else None
            row["kappa"] = float(cohen_kappa_score(a, b, labels=list(range(k)), weights=weights))
            row.update(_bootstrap_ci(len(a), lambda i: cohen_kappa_score(a[i], b[i], labels=list(range(k)), weights=weights), "kappa"))
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
        row.update(_bootstrap_ci(items.height, lambda i: fleiss_kappa(table[i], method="fleiss"), "kappa"))
    return row


def _bootstrap_ci(n: int, stat, name: str) -> dict:
    """Percentile bootstrap CI of ``stat(indices)`` over ``n`` items; resamples where it is undefined are skipped."""
    rng = np.random.default_rng(0)
    values = []
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a resample with one category: κ undefined (sklearn warns), skipped below
        for _ in range(N_BOOT):
            try:
                v = float(stat(rng.integers(0, n, n)))
            except (ValueError, ZeroDivisionError):
                continue
            if np.isfinite(v):
                values.append(v)
    if len(values) < N_BOOT // 2:  # mostly undefined (e.g. nearly every rating in one category): no interval
        return {f"{name}_ci_low": None, f"{name}_ci_high": None}
    tail = (1 - CI_LEVEL) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return {f"{name}_ci_low": float(lo), f"{name}_ci_high": float(hi)}


def _alpha_row(frame: pl.DataFrame) -> dict:
    """Krippendorff's α with its bootstrap CI on the items with ≥ 2 ratings (raters × items, missing = NaN)."""
    out = {"alpha": None, "alpha_ci_low": None, "alpha_ci_high": None}
    multi = frame.group_by(ITEM).agg(pl.len().alias("n")).filter(pl.col("n") >= 2)
    rated = frame.join(multi.select(ITEM), on=ITEM, how="semi").sort([*ITEM, "rater"])
    if multi.height == 0 or rated["label_index"].n_unique() < 2:
        return out
    wide = rated.pivot(on="rater", index=ITEM, values="label_index", sort_columns=True)
    data = wide.drop(ITEM).to_numpy().astype(float).T  # raters × items
    level = "nominal" if frame["scale"][0] == "binary" else "ordinal"
    domain = np.arange(int(frame["n_levels"][0]), dtype=float)
    def alpha(i: np.ndarray) -> float:
        return krippendorff.alpha(reliability_data=data[:, i], level_of_measurement=level, value_domain=domain)

    out["alpha"] = float(alpha(np.arange(data.shape[1])))
    out.update(_bootstrap_ci(data.shape[1], alpha, "alpha"))
    return out


def agreement(labels: pl.DataFrame) -> pl.DataFrame:
    """Inter-rater agreement per dimension (see module docstring); columns ``AGREEMENT_SCHEMA``."""
    latest = latest_per_rater(labels)
    rows = []
    for dim in sorted(set(latest["dimension"].to_list())):
        frame = latest.filter(pl.col("dimension") == dim)
        rows.append({**_kappa_row(dim, frame), **_alpha_row(frame)})
    return pl.DataFrame(rows, schema=AGREEMENT_SCHEMA)


def disagreements(labels: pl.DataFrame) -> pl.DataFrame:
    """Items and dimensions whose raters' latest labels differ: ``case_id, system_id, dimension, n_raters, labels``
    (``"alice=1, bob=0"``, rater order), ``spread`` (highest − lowest label)."""
    latest = latest_per_rater(labels)
    keys = [*ITEM, "dimension"]
    return (
        latest.sort("rater")
        .group_by(keys, maintain_order=True)
        .agg(pl.len().alias("n_raters"), pl.col("rater"), pl.col("label"), (pl.col("label").max() - pl.col("label").min()).alias("spread"))
        .filter((pl.col("n_raters") >= 2) & (pl.col("spread") > 0))
        .with_columns(
            pl.struct("rater", "label")
            .map_elements(lambda s: ", ".join(f"{r}={v}" for r, v in zip(s["rater"], s["label"], strict=True)), return_dtype=pl.String)
            .alias("labels")
        )
        .drop("rater", "label")
        .sort(keys)
    )


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
