"""What a golden set and a campaign run cover, and how sure their headline means are.

* ``golden_coverage`` — per topic stratum: share of the corpus (chunks), share of the golden set's
  happy-path cases, and, given a campaign run's responses, the share of the cases each system
  answered (golden-eval §2.3 coverage; HCAT §2 stratification).
* ``mean_ci`` — a mean with its n and Student-t 95 % interval (scipy), the form every headline
  figure is reported in.

No dagster import.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from scipy import stats


def mean_ci(values: Sequence[float] | np.ndarray | pl.Series, confidence: float = 0.95,
            bounds: tuple[float, float] | None = None) -> dict:
    """{n, mean, ci_low, ci_high, half_width} over the finite values (t interval; n < 2 ⇒ no interval). ``bounds``: the
    range the metric lives in (e.g. (0, 1)); the interval is cut to it — a t interval on few values of a bounded score
    otherwise reads [-0.10, 1.03], which no mean can be."""
    v = np.asarray([x for x in (values.to_list() if isinstance(values, pl.Series) else values) if x is not None], float)
    v = v[np.isfinite(v)]
    n = int(v.size)
    if n == 0:
        return {"n": 0, "mean": None, "ci_low": None, "ci_high": None, "half_width": None}
    m = float(v.mean())
    if n < 2:
        return {"n": 1, "mean": round(m, 4), "ci_low": None, "ci_high": None, "half_width": None}
    hw = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * v.std(ddof=1) / np.sqrt(n))
    lo, hi = m - hw, m + hw
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return {"n": n, "mean": round(m, 4), "ci_low": round(lo, 4), "ci_high": round(hi, 4), "half_width": round(hw, 4)}


def golden_coverage(strata: pl.DataFrame, golden: pl.DataFrame, responses: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per stratum (``strata``: chunk_id, stratum, stratum_label of the corpus): corpus_chunks,
    corpus_share, golden_cases (happy-path cases drawn from it), golden_share, and with ``responses``
    one ``answered_share:<system>`` column per system (share of the happy-path cases it answered)."""
    corpus = strata.group_by("stratum", "stratum_label").agg(pl.len().alias("corpus_chunks"))
    happy = golden.filter(pl.col("category") == "happy_path")
    cases = happy.group_by("stratum").agg(pl.len().alias("golden_cases"))
    out = (
        corpus.join(cases, on="stratum", how="left")
        .with_columns(pl.col("golden_cases").fill_null(0))
        .with_columns(
            (pl.col("corpus_chunks") / pl.col("corpus_chunks").sum()).round(4).alias("corpus_share"),
            (pl.col("golden_cases") / max(happy.height, 1)).round(4).alias("golden_share"),
        )
    )
    if responses is not None and responses.height:
        answered = responses.join(happy.select("case_id", "stratum"), on="case_id", how="inner")
        for sid in sorted(answered["system_id"].unique().to_list()):
            mine = answered.filter((pl.col("system_id") == sid) & pl.col("error").is_null())
            per = mine.group_by("stratum").agg(pl.len().alias("_n"))
            out = out.join(per, on="stratum", how="left").with_columns(
                (pl.col("_n").fill_null(0) / max(mine.height, 1)).round(4).alias(f"answered_share:{sid}")
            ).drop("_n")
    return out.sort("stratum")
