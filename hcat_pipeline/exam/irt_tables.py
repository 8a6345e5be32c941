"""IRT analysis of an exam's response matrix (exam paper §3.4, §6, App. B), as tables for the assets.

Everything numerical is the IRT core's (``hcat_pipeline.irt``): the (hierarchical) fit, the iterative
improvement of App. B.3 (``iterative_improvement``: drop the least-discriminating quantile, refit, while
the mean item information improves), Table 5 (``fit_summary``: RMSE vs the mean-prediction baseline,
mean parameters, each with n and CI) and Table 3 (``ability_table``). This module only turns the result
into frames keyed by question and taker ids. No dagster import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from hcat_pipeline.irt import PruningHistory, ability_table, fit_summary, iterative_improvement


@dataclass
class ExamIRT:
    items: pl.DataFrame  # question_id, a, b, c (of the final fit; null for dropped questions), kept, dropped_after_step
    takers: pl.DataFrame  # system_id, theta, theta_se, accuracy, n
    components: pl.DataFrame  # ability_table: component, level, theta, se, ci_low, ci_high, n_takers, delta_vs_first
    history: PruningHistory
    summary: dict  # fit_summary of the final exam

    @property
    def rounds(self) -> list[dict]:
        return self.history.table()


def analyse_exam(
    y: np.ndarray,
    takers: Sequence[str],
    questions: Sequence[str],
    components: dict[str, list] | None,
    model: str = "3pl",
    prune_quantile: float = 0.1,
    max_rounds: int = 5,
    seed: int = 0,
    min_questions: int = 10,
) -> ExamIRT:
    """Fit and improve the exam. ``y``: takers × questions (0/1, NaN = missing); ``max_rounds``: fits at most."""
    if y.shape != (len(takers), len(questions)):
        raise ValueError(f"analyse_exam: matrix {y.shape} does not match {len(takers)} takers × {len(questions)} questions")
    if y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError(f"analyse_exam: IRT needs at least 2 takers and 2 questions, got {y.shape}")
    history = iterative_improvement(y, model=model, components=components, seed=seed, drop_quantile=prune_quantile,
                                    max_steps=max(1, max_rounds), min_items=min(min_questions, y.shape[1]))  # fmt: skip
    best = history.best
    res = best.result
    n = len(questions)
    a, b, c = (np.full(n, np.nan) for _ in range(3))
    a[best.items], b[best.items], c[best.items] = res.a, res.b, res.c
    kept = np.zeros(n, dtype=bool)
    kept[best.items] = True
    dropped_after = np.full(n, -1, dtype=np.int32)  # -1 = kept
    for s in history.steps:
        if s.accepted:
            dropped_after[s.dropped_next] = s.step
            if s.dropped_next is not None and len(s.dropped_next):  # a dropped question keeps the parameters it was dropped with
                pos = np.array([np.flatnonzero(s.items == q)[0] for q in s.dropped_next])
                a[s.dropped_next], b[s.dropped_next], c[s.dropped_next] = s.result.a[pos], s.result.b[pos], s.result.c[pos]
    dropped_after[kept] = -1
    items = pl.DataFrame({"question_id": list(questions), "a": a, "b": b, "c": c, "kept": kept, "dropped_after_step": dropped_after})
    answered = ~np.isnan(y)
    acc = np.where(answered, y, 0.0).sum(axis=1) / np.maximum(1, answered.sum(axis=1))
    takers_t = pl.DataFrame({"system_id": list(takers), "theta": res.theta, "theta_se": res.theta_se, "accuracy": acc,
                             "n": answered.sum(axis=1).astype(np.int64)})  # fmt: skip
    comps = ability_table(res) if res.components else pl.DataFrame(
        schema={"component": pl.String, "level": pl.String, "theta": pl.Float64, "se": pl.Float64, "ci_low": pl.Float64,
                "ci_high": pl.Float64, "n_takers": pl.Int64, "delta_vs_first": pl.Float64})  # fmt: skip
    return ExamIRT(items, takers_t, comps, history, fit_summary(y[:, best.items], res))


def erased_differences(y: np.ndarray, kept: np.ndarray, takers: Sequence[str], min_differing: int = 3) -> list[dict]:
    """Pairs of takers whose answers differ on at least ``min_differing`` questions of the whole exam but on none of the
    questions the pruning kept: the pruned exam's θ cannot tell them apart although their answers did. Pruning drops the
    least-discriminating questions by the fit's a; with few takers those estimates are coarse, and the questions that
    separate two similar takers can be exactly the ones dropped (seen on the default corpus: bm25 50 / 55 right, dense
    42 / 55, the same θ after pruning). Each pair: ``a``, ``b``, ``differing``, ``a_only`` (a right, b wrong), ``b_only``."""
    y = np.asarray(y, dtype=float)
    kept = np.asarray(kept, dtype=bool)
    out = []
    for i in range(len(takers)):
        for j in range(i + 1, len(takers)):
            both = ~np.isnan(y[i]) & ~np.isnan(y[j])
            diff = both & (y[i] != y[j])
            if diff.sum() >= min_differing and not (diff & kept).any():
                out.append({"a": takers[i], "b": takers[j], "differing": int(diff.sum()),
                            "a_only": int((diff & (y[i] == 1)).sum()), "b_only": int((diff & (y[j] == 1)).sum())})  # fmt: skip
    return out
