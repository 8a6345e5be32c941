"""Seeded, disjoint, label-stratified Stage 1 / Stage 2 / evaluation splits, with a record.

The paper (§5.2) needs the Stage 2 conformal hold-out to be independent of the Stage 1 sample the
probability calibrator was fitted on; a third part, untouched by either stage, measures the result
(ECE, Brier, coverage). One item (a ``(case_id, system_id)`` response with one consensus label) is
in exactly one part.

Deterministic and order-free: within each label class, items are ordered by
``sha256(f"{seed}|{item_id}")``, then the class's count is cut in the given fractions (largest
remainder, ties to the earlier part). The same ids, labels and seed give the same assignment
whatever the input order. The record (seed, fractions, per-part per-class counts and a hash of each
part's ids) is what to store next to a calibration so it can be checked and repeated.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from hcat_pipeline.common.ids import json_hash, short_hash

__all__ = ["SPLITS", "DEFAULT_FRACTIONS", "allocate", "make_splits", "Splits"]

SPLITS = ("stage1", "stage2", "evaluation")
DEFAULT_FRACTIONS = (0.4, 0.4, 0.2)


def _check_fractions(fractions: Sequence[float]) -> tuple[float, ...]:
    f = tuple(float(x) for x in fractions)
    if len(f) != len(SPLITS) or any(x < 0 for x in f) or not math.isclose(sum(f), 1.0, abs_tol=1e-9):
        raise ValueError(f"fractions must be {len(SPLITS)} non-negative numbers summing to 1 ({SPLITS}), got {fractions}")
    return f


def allocate(count: int, fractions: Sequence[float] = DEFAULT_FRACTIONS) -> tuple[int, ...]:
    """Split ``count`` items into parts of the given fractions: floors, then the largest remainders
    (ties to the earlier part). Always sums to ``count``."""
    f = _check_fractions(fractions)
    raw = [count * x for x in f]
    base = [math.floor(r + 1e-9) for r in raw]
    rest = count - sum(base)
    order = sorted(range(len(f)), key=lambda i: (-(raw[i] - base[i]), i))
    for i in order[:rest]:
        base[i] += 1
    return tuple(base)


@dataclass(frozen=True)
class Splits:
    """``assignment``: one row per item (``item_id``, ``label``, ``split``), in input order."""

    assignment: pl.DataFrame
    record: dict = field(default_factory=dict)

    def mask(self, split: str) -> np.ndarray:
        """Boolean mask over the input rows for one part."""
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        return (self.assignment["split"] == split).to_numpy()

    def ids(self, split: str) -> list[str]:
        return self.assignment.filter(pl.col("split") == split)["item_id"].to_list()


def make_splits(ids: Sequence, labels: Sequence[int], *, fractions: Sequence[float] = DEFAULT_FRACTIONS, seed: int = 0) -> Splits:
    """Assign each item to ``stage1`` / ``stage2`` / ``evaluation``, stratified by label.

    ``ids`` must be unique (one label per item: reduce several raters to a consensus first).
    """
    f = _check_fractions(fractions)
    item_ids = [str(i) for i in ids]
    y = np.asarray(labels)
    if len(item_ids) != len(y):
        raise ValueError(f"{len(item_ids)} ids but {len(y)} labels")
    if len(set(item_ids)) != len(item_ids):
        dup = sorted(i for i, c in Counter(item_ids).items() if c > 1)[:5]
        raise ValueError(f"item ids must be unique (one consensus label per item); repeated: {dup}")
    split_of = np.empty(len(item_ids), dtype=object)
    counts: dict[str, dict[str, int]] = {s: {} for s in SPLITS}
    for cls in sorted(set(y.tolist())):
        rows = np.flatnonzero(y == cls)
        rows = sorted(rows, key=lambda r: short_hash(f"{seed}|{item_ids[r]}", n=32))
        start = 0
        for name, size in zip(SPLITS, allocate(len(rows), f)):
            for r in rows[start : start + size]:
                split_of[r] = name
            counts[name][str(cls)] = size
            start += size
    assignment = pl.DataFrame(
        {"item_id": item_ids, "label": y.tolist(), "split": split_of.tolist()},
        schema={"item_id": pl.String, "label": pl.Int64, "split": pl.String},
    )
    record = {
        "method": "stratified by label; order within class sha256(seed|item_id); largest-remainder allocation",
        "seed": int(seed),
        "fractions": dict(zip(SPLITS, f)),
        "n_items": len(item_ids),
        "counts": counts,
        "ids_hash": {s: json_hash(sorted(assignment.filter(pl.col("split") == s)["item_id"].to_list())) for s in SPLITS},
    }
    return Splits(assignment=assignment, record=record)
