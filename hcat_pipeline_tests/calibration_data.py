"""A night whose answers strict human raters judge (shared by the calibrated-gate tests): raters who call an answer
grounded only above a raw NLI score of 0.8, a 'middling' and a 'solid' system, the calibrated scores, the night's
labelling design and the labels the raters gave."""

import numpy as np
import polars as pl

from hcat_pipeline.calibration.campaign import design_queue
from hcat_pipeline.calibration.design import DESIGN_COLUMNS, DesignConfig
from hcat_pipeline.calibration.fitting import fit_calibration
from hcat_pipeline.schemas import LABEL_ROWS


def strict_humans(label_source: str = "campaign", n: int = 400, seed: int = 0):
    """Raters who call an answer grounded only when its raw NLI score is above 0.8 (the gates file says 0.5)."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0, 1, n)
    y = (s > 0.8).astype(int)
    flip = rng.random(n) < 0.05  # a little rater noise
    y[flip] = 1 - y[flip]
    return fit_calibration([f"i{i}" for i in range(n)], s, y, dimension="groundedness", label_source=label_source,
                           metric="groundedness_nli", method="isotonic", seed=0)  # fmt: skip


def two_systems_night(seed: int = 1):
    """Two systems: 'middling' answers score 0.6-0.78 (above 0.5, below what humans call grounded), 'solid' 0.85-0.99."""
    rng = np.random.default_rng(seed)
    rows = [{"case_id": f"c{i}", "system_id": sid, "groundedness_nli": float(rng.uniform(lo, hi))}
            for sid, (lo, hi) in (("middling", (0.6, 0.78)), ("solid", (0.85, 0.99))) for i in range(40)]  # fmt: skip
    return pl.DataFrame(rows)


def calibrated_scores_of(res, metrics: pl.DataFrame) -> pl.DataFrame:
    probs = res.predict(metrics["groundedness_nli"].to_numpy())[0][:, 1]
    return metrics.select("case_id", "system_id", pl.lit("groundedness").alias("dimension"), pl.Series("calibrated_probability", probs),
                          pl.col("groundedness_nli").alias("raw_score"), pl.lit("{0,1}").alias("prediction_set"))  # fmt: skip


def night_design(calibrated: pl.DataFrame, budget: float = 24) -> pl.DataFrame:
    """The night's labelling design (calibration.design), as the review queue draws and freezes it."""
    return design_queue(calibrated, DesignConfig(budget=budget, seed=0)).select(DESIGN_COLUMNS)


def rater_labels(metrics: pl.DataFrame, every: int = 4, design: pl.DataFrame | None = None) -> pl.DataFrame:
    """Human labels (the strict raters again) of the answers ``design`` queued — the reviewer worked the whole queue — or,
    without a design, of every ``every``-th answer (labels from outside any design)."""
    take = (set(design.filter(pl.col("queued")).select("case_id", "system_id").iter_rows()) if design is not None
            else {(r["case_id"], r["system_id"]) for i, r in enumerate(metrics.to_dicts()) if i % every == 0})  # fmt: skip
    rows = [{"case_id": r["case_id"], "system_id": r["system_id"], "dimension": "groundedness", "label": int(r["groundedness_nli"] > 0.8),
             "scale": "binary", "label_index": int(r["groundedness_nli"] > 0.8), "n_levels": 2, "rater": "alice",
             "labelled_at": None, "comment": None, "source_file": "review-page_alice.jsonl", "source_line": i, "row_hash": f"h{i}"}
            for i, r in enumerate(metrics.to_dicts()) if (r["case_id"], r["system_id"]) in take]  # fmt: skip
    return pl.DataFrame(rows, schema=LABEL_ROWS)
