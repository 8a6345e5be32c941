"""The day's stratified sample (golden-eval §7.2: "sample production traffic, score it").

Two phases, both seeded by (seed, day), so the same logs give the same sample:

1. **Screen**: every negative-feedback row (up to half the screen) and a uniform draw of the others,
   ``screen_size`` in all; these rows' questions are embedded and each gets its topic stratum (the stratum most of its
   ``k`` nearest corpus chunks belong to) and its distance from the corpus (``max_similarity``: far from every stratum
   = an input the golden set has nothing like).
2. **Score sample**: ``sample_size`` rows of the screen, spread over (feedback × stratum) cells — negative feedback
   first (up to ``negative_share``), the rest proportional to the strata with at least ``min_per_stratum`` each (the
   corpus stage's ``allocate``: bounds, then largest remainder).

Every row carries ``weight`` = 1 / (its inclusion probability), so a weighted rate estimates the whole day's rate
(Horvitz-Thompson); ``screen_weight`` does the same for the screen.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from hcat_pipeline.corpus.sampling import allocate

NEGATIVE, OTHER = "negative", "other"


@dataclass(frozen=True)
class SampleConfig:
    sample_size: int = field(default=200, metadata={"ge": 1, "description": "rows a day scored with the metrics"})
    screen_size: int = field(default=5000, metadata={"ge": 1, "description": "rows a day whose questions are embedded for their stratum"})
    negative_share: float = field(default=0.25, metadata={"ge": 0.0, "le": 1.0, "description": "share of the sample kept for negative feedback"})
    min_per_stratum: int = field(default=5, metadata={"ge": 0, "description": "sampled rows every stratum gets at least (when it has them)"})
    neighbours: int = field(default=5, metadata={"ge": 1, "description": "nearest chunks that vote a question's stratum"})
    far_below: float = field(default=0.35, metadata={"ge": 0.0, "le": 1.0, "description": "a question whose nearest chunk is less "
                                                      "similar than this (cosine) is far from every stratum"})
    unlike_golden_below: float = field(default=0.4, metadata={"ge": 0.0, "le": 1.0, "description": "a question whose most similar "
                                                              "golden-set question is less similar than this (cosine) is unlike the golden set"})
    low_rating_at: float = field(default=2.0, metadata={"description": "a rating at or below this is negative feedback"})
    seed: int = 0


def day_seed(seed: int, day: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}|{day}".encode()).digest()[:8], "little")


def feedback_class(rows: pl.DataFrame, low_rating_at: float) -> pl.Series:
    """negative when the user said so (thumbs down, a low rating, a correction) or acted so (retried, abandoned)."""
    neg = (
        (pl.col("thumbs") == -1).fill_null(False) | (pl.col("rating") <= low_rating_at).fill_null(False)
        | pl.col("correction").is_not_null() | pl.col("retried").fill_null(False) | pl.col("abandoned").fill_null(False)
    )  # fmt: skip
    return rows.select(pl.when(neg).then(pl.lit(NEGATIVE)).otherwise(pl.lit(OTHER)).alias("feedback")).to_series()


def screen(rows: pl.DataFrame, config: SampleConfig, day: str) -> pl.DataFrame:
    """Phase 1: the screened rows with ``feedback`` and ``screen_weight`` (1 / inclusion probability)."""
    rng = np.random.default_rng(day_seed(config.seed, day))
    rows = rows.with_columns(feedback_class(rows, config.low_rating_at)).with_row_index("row")
    parts = []
    budget = config.screen_size
    for cls, cap in ((NEGATIVE, config.screen_size // 2), (OTHER, None)):
        group = rows.filter(pl.col("feedback") == cls)
        take = min(group.height, cap if cap is not None else budget)
        budget -= take
        picked = np.sort(rng.choice(group.height, size=take, replace=False)) if take < group.height else np.arange(group.height)
        if take:
            parts.append(group[picked.tolist()].with_columns(pl.lit(group.height / take).alias("screen_weight")))
    return pl.concat(parts).sort("row") if parts else rows.with_columns(pl.lit(1.0).alias("screen_weight")).head(0)


def nearest_strata(question_vectors: np.ndarray, chunk_vectors: np.ndarray, chunk_strata: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(stratum, max_similarity) per question: the stratum with the most similarity among its k nearest chunks
    (vectors L2-normalised), and the cosine of the nearest chunk."""
    if not len(question_vectors):
        return np.zeros(0, dtype=np.int32), np.zeros(0)
    sims = question_vectors @ chunk_vectors.T
    k = min(k, sims.shape[1])
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    out = np.empty(len(sims), dtype=np.int32)
    for i, idx in enumerate(top):
        votes: dict[int, float] = {}
        for j in idx:
            votes[int(chunk_strata[j])] = votes.get(int(chunk_strata[j]), 0.0) + float(sims[i, j])
        out[i] = max(sorted(votes), key=votes.get)
    return out, sims.max(axis=1)


def score_sample(screened: pl.DataFrame, config: SampleConfig, day: str) -> pl.DataFrame:
    """Phase 2: ``sample_size`` screened rows (needs ``stratum``) with ``weight`` = screen_weight × cell size / drawn."""
    rng = np.random.default_rng(day_seed(config.seed, day) + 1)
    n = min(config.sample_size, screened.height)
    negatives = screened.filter(pl.col("feedback") == NEGATIVE)
    n_neg = min(negatives.height, round(n * config.negative_share))
    parts = []
    for cls, budget in ((NEGATIVE, n_neg), (OTHER, n - n_neg)):
        group = screened.filter(pl.col("feedback") == cls)
        sizes = dict(group.group_by("stratum").len().sort("stratum").iter_rows())
        floor = config.min_per_stratum if cls == OTHER else 0
        counts = allocate(sizes, min(budget, group.height), "proportional", min_per_stratum=floor).counts if sizes else {}
        for stratum, k in counts.items():
            cell = group.filter(pl.col("stratum") == stratum)
            if not k:
                continue
            picked = np.sort(rng.choice(cell.height, size=k, replace=False))
            parts.append(cell[picked.tolist()].with_columns((pl.col("screen_weight") * cell.height / k).alias("weight")))
    if not parts:
        return screened.with_columns(pl.lit(1.0).alias("weight")).head(0)
    return pl.concat(parts).sort("row")
