"""Are there enough human labels to calibrate a dimension? Say so plainly instead of fitting noise.

Two requirements, checked on the split that ``make_splits`` would make (same fractions, same
largest-remainder allocation per class):

- **Stage 1** (probability calibration): every label class 0..K−1 has at least
  ``min_per_class_stage1`` items in the Stage 1 part (default 10, the usual events-per-parameter
  rule of thumb); a class the calibrator never sees gets probability 0 and the mapping is noise.
- **Stage 2** (split conformal): ``q̂`` is the ``⌈(n+1)(1−α)⌉``-th smallest of n hold-out scores, which
  exists only when ``n ≥ 1/α − 1`` (α = 0.1 → 9, α = 0.05 → 19, α = 0.2 → 4). Below that ``q̂ = +∞``
  and every set holds every label (``SplitConformal.trivial``). With ``class_conditional=True``
  (Mondrian / per-class coverage) each class needs that many hold-out items of its own.

The verdict gives the extra labels needed per class (``more_per_class``), exact for the split
``make_splits`` would make: first what each class lacks on its own, then, if the Stage 2 hold-out is
still short of ``1/α − 1``, labels added one at a time to the rarest class until it is not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from hcat_pipeline.calibration.conformal import conformal_rank
from hcat_pipeline.calibration.splits import DEFAULT_FRACTIONS, SPLITS, allocate

__all__ = ["LabelSufficiency", "label_sufficiency", "min_holdout_size"]


def min_holdout_size(alpha: float) -> int:
    """Smallest hold-out size n with a finite ``q̂`` at ``alpha``: ``⌈(n+1)(1−α)⌉ ≤ n`` ⇔ n ≥ 1/α − 1."""
    n = max(0, math.floor(1.0 / alpha - 1.0) - 1)
    while conformal_rank(n, alpha) > n:
        n += 1
    return n


@dataclass
class LabelSufficiency:
    sufficient: bool
    alpha: float
    n_classes: int
    counts: dict[int, int]
    split_counts: dict[str, dict[int, int]]
    holdout_size: int
    holdout_needed: int
    more_per_class: dict[int, int] = field(default_factory=dict)
    more_holdout: int = 0

    @property
    def more_total(self) -> int:
        return sum(self.more_per_class.values())

    reasons: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        if self.sufficient:
            return (
                f"enough labels at α={self.alpha}: {sum(self.counts.values())} labels, "
                f"Stage 2 hold-out {self.holdout_size} ≥ {self.holdout_needed}"
            )
        return "not enough labels to calibrate: " + "; ".join(self.reasons)

    def to_dict(self) -> dict:
        return {**asdict(self), "more_total": self.more_total, "message": self.message}


def _more_for(count: int, part: int, minimum: int, fractions) -> int:
    """Extra items of one class until its allocation in ``part`` reaches ``minimum`` (fraction > 0)."""
    extra = 0
    while allocate(count + extra, fractions)[part] < minimum:
        extra += 1
    return extra


def label_sufficiency(
    labels: Sequence[int],
    alpha: float = 0.1,
    *,
    n_classes: int | None = None,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    min_per_class_stage1: int = 10,
    class_conditional: bool = False,
) -> LabelSufficiency:
    """Verdict on one dimension's labels (one consensus label per item, integers 0..K−1)."""
    y = np.asarray(labels, dtype=int)
    k = int(n_classes) if n_classes is not None else (int(y.max()) + 1 if len(y) else 2)
    k = max(k, 2)
    fr = tuple(float(x) for x in fractions)
    counts = {c: int(np.sum(y == c)) for c in range(k)}
    per_class_split = {c: allocate(counts[c], fr) for c in range(k)}
    split_counts = {s: {c: per_class_split[c][i] for c in range(k)} for i, s in enumerate(SPLITS)}
    s1, s2 = SPLITS.index("stage1"), SPLITS.index("stage2")
    if fr[s1] <= 0 or fr[s2] <= 0:
        raise ValueError(f"fractions give Stage 1 or Stage 2 no items: {dict(zip(SPLITS, fr))}")
    need = min_holdout_size(alpha)
    holdout = sum(split_counts["stage2"].values())
    reasons: list[str] = []
    more: dict[int, int] = {}

    for c in range(k):
        extra = _more_for(counts[c], s1, min_per_class_stage1, fr)
        if class_conditional:
            extra = max(extra, _more_for(counts[c], s2, need, fr))
        if extra:
            more[c] = extra
            have1 = split_counts["stage1"][c]
            what = f"≥{min_per_class_stage1} in Stage 1 (has {have1})"
            if class_conditional:
                what += f" and ≥{need} in the Stage 2 hold-out (has {split_counts['stage2'][c]})"
            reasons.append(f"class {c}: {counts[c]} labels, needs {extra} more ({what})")

    more_holdout = max(0, need - holdout)
    if more_holdout and not class_conditional:
        added = dict.fromkeys(range(k), 0)
        total = {c: counts[c] + more.get(c, 0) for c in range(k)}

        def stage2_size() -> int:
            return sum(allocate(total[c] + added[c], fr)[s2] for c in range(k))

        while stage2_size() < need:
            rarest = min(range(k), key=lambda c: (total[c] + added[c], c))
            added[rarest] += 1
        for c, a in added.items():
            if a:
                more[c] = more.get(c, 0) + a
        spread = ", ".join(f"{a} of class {c}" for c, a in added.items() if a)
        if spread:  # else the labels each class lacks already fill the hold-out
            reasons.append(
                f"Stage 2 hold-out has {holdout} labels, a finite q̂ at α={alpha} needs n ≥ 1/α − 1, i.e. {need}: "
                f"add {spread} (q̂ = +∞ until then: every label in every set)"
            )
    return LabelSufficiency(
        sufficient=not reasons,
        alpha=alpha,
        n_classes=k,
        counts=counts,
        split_counts=split_counts,
        holdout_size=holdout,
        holdout_needed=need,
        more_per_class=more,
        more_holdout=more_holdout,
        reasons=reasons,
    )
