"""The labelling design: which answers people are asked to label, with probabilities the estimator knows, pure core.

Active statistical inference (Zrnic & Candès, ICML 2024) asks for labels where the machine is unsure and stays valid
because every answer's chance of being asked is known and the estimate weights each label by its inverse. This module
is the design half; ``calibration.active`` is the estimator.

The design, ``DESIGN`` (``sequential_poisson_v1``), per calibrated dimension of one night:

1. **Inclusion probabilities.** Every answer in scope gets ``π_i > 0``: its uncertainty ``√(p(1 − p))`` (``p`` the
   calibrated P(human pass); an uncalibrated answer counts as ``p = 0.5``), times ``boost`` where the judge flags it or
   its conformal set is unsure (∅ / {0,1}), scaled so that ``Σ π = budget``, then mixed with the uniform design
   (``uniform_share`` of it: the robust form of Li, Zrnic & Candès 2025, never more than 1 / ``uniform_share`` times the
   uniform design's variance) and capped at ``cap`` < 1 (a flag raises π, never makes a pick certain).
2. **A seeded order.** The answers are put in a seeded random order (``design_order``, a uniform in (0, 1) hashed from
   the seed and the answer's key, so any answer's place can be recomputed from the seed alone). The order is what makes the design *sequential*: a reviewer who has worked through the queue up to a
   point has, in effect, looked at every answer before that point in the order, each asked with its own π.
3. **A seeded coin.** Answer ``i`` is queued when its seeded uniform ``u_i < π_i`` (Poisson sampling), so the queue is a
   deterministic function of the seed, and each queued row carries its π, order key, seed and design name.

A label counts towards a rate only when it answers a queued row of the design, and only within the unbroken prefix of
the queue (``calibration.active.processed_prefix``): a label that skips ahead of an unanswered queued item waits for it.
Labels from outside the design (browsing the failures, confirming a flag, a CSV row with no queue position) still train
the calibrator; they never enter a rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from hcat_pipeline.common.stats import seeded_uniforms

DESIGN = "sequential_poisson_v1"
#: labels from outside any design: they train calibrators and never enter a rate
OUTSIDE = "outside_design"
#: a calibrated probability is read as no surer than this (a calibrator on few labels says 0 or 1 where it is not sure)
P_FLOOR = 0.05  # set after the first ppi_coverage run (isotonic design 0.938 without it: weights of 13 on p = 0 or 1)


@dataclass(frozen=True)
class DesignConfig:
    """The labelling design's settings (one source of truth; the review-queue asset's config derives from it)."""

    budget: float = 40.0  # expected labels per calibrated dimension and night, if the reviewer works the whole queue
    uniform_share: float = 0.5  # share of the uniform design mixed in (robust active inference)
    boost: float = 2.0  # uncertainty multiplier for an answer the judge flags or whose conformal set is unsure
    cap: float = 0.95  # no answer is certain to be asked
    seed: int = 0


def design_uniforms(keys: list[str], seed: int, salt: str) -> np.ndarray:
    """A seeded uniform in (0, 1) per key (``common.stats.seeded_uniforms``: blake2b of seed, salt and key): the same key
    and seed give the same draw on every machine, whatever the order of ``keys``."""
    return seeded_uniforms(keys, seed, salt)


def inclusion_probabilities(p, unsure, budget: float, *, uniform_share: float = 0.5, boost: float = 2.0,
                            cap: float = 0.95) -> np.ndarray:  # fmt: skip
    """``π`` per answer (module doc, step 1): ``p`` the calibrated P(human pass) (NaN / None = uncalibrated, read as
    0.5), ``unsure`` a boolean per answer (judge flag or unsure conformal set). Σ π = min(budget, cap · n)."""
    prob = np.array([np.nan if v is None else v for v in np.asarray(p, dtype=object)], dtype=float)
    n = prob.size
    if n == 0:
        return prob
    if budget <= 0:
        raise ValueError(f"inclusion_probabilities: budget must be > 0, got {budget}")
    if not 0 < uniform_share <= 1:
        raise ValueError(f"inclusion_probabilities: uniform_share must be in (0, 1], got {uniform_share}")
    prob = np.where(np.isfinite(prob), np.clip(prob, P_FLOOR, 1 - P_FLOOR), 0.5)
    weight = np.sqrt(prob * (1 - prob)) * np.where(np.asarray(unsure, dtype=bool), boost, 1.0)
    weight = np.maximum(weight, 1e-3)  # a certain machine still leaves its answer a chance in the active half
    target = min(float(budget), cap * n)
    mixed = uniform_share * target / n + (1 - uniform_share) * target * weight / weight.sum()
    return _cap(mixed, target, cap)


def _cap(pi: np.ndarray, target: float, cap: float) -> np.ndarray:
    """Cap π at ``cap`` and hand what the capped answers lose to the others, in proportion (a few rounds settle it)."""
    pi = pi.copy()
    for _ in range(50):
        over = pi > cap
        if not over.any():
            break
        pi[over] = cap
        free = ~over & (pi < cap)
        short = target - pi.sum()
        if short <= 1e-12 or not free.any():
            break
        pi[free] *= 1 + short / pi[free].sum()
    return np.clip(pi, 1e-6, cap)


def draw(keys: list[str], pi: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(design_order, queued)`` per key: the seeded order key in (0, 1) (answers are worked through in increasing
    order; recomputable for any key from the seed alone) and the seeded Poisson coin ``u < π``."""
    queued = design_uniforms(keys, seed, "coin") < np.asarray(pi, dtype=float)
    return design_uniforms(keys, seed, "order"), queued


DESIGNS_SUBDIR = "_designs"
#: the columns of a frozen design: one row per answer × dimension of the night's population
DESIGN_COLUMNS = ("case_id", "system_id", "dimension", "inclusion_probability", "design_order", "queued", "design", "design_seed",
                  "drawn_at")


def design_file(labels_dir: str | Path, version: str, night: str) -> Path:
    """Where a night's design is frozen at its first draw (``<labels_dir>/_designs/<version>/<night>.parquet``): a re-run
    of the night after labelling reads it back, so the probabilities the labels were drawn with never change."""
    return Path(labels_dir) / DESIGNS_SUBDIR / version / f"{night}.parquet"


def drawn_seconds(drawn_at: str | None) -> float:
    """A design's ``drawn_at`` (ISO 8601) as seconds since 1970 UTC; −inf when unknown (a design frozen before the field
    existed: every label counts)."""
    if not drawn_at:
        return float("-inf")
    when = datetime.fromisoformat(drawn_at)
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def night_start(night: str) -> str | None:
    """``2026-11-28`` → ``2026-11-28T00:00:00+00:00`` (the design's ``drawn_at``: labels from that day on are of the
    night's answers, a CSV dated that day included); None when the night is not a date."""
    try:
        return datetime.fromisoformat(night[:10]).replace(tzinfo=UTC).isoformat()
    except ValueError:
        return None
