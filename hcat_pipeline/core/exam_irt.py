"""IRT analysis of an exam's response matrix (exam paper §3.4, §6, App. B), over ``hcat_pipeline.irt``.

``analyse_exam`` fits the (hierarchical) IRT model with ``hcat_pipeline.irt.fit_irt``, gives the item
and taker tables, the exam information curve (``exam_information``, exact 3PL) and the iterative
improvement of App. B.3: drop the least-discriminating ``prune_quantile`` of the questions (by a),
refit, keep going while the exam information (``information_summary``: mean over θ weighted by
N(0, 1)) per question improves, at most ``max_rounds`` rounds. Model fit: RMSE of the predicted
probabilities vs the observed 0/1 answers, beside the mean-prediction baseline (Table 5).

Only the orchestration lives here; the model, its likelihood and the information functions are the
IRT core's. No dagster import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from hcat_pipeline.irt import DEFAULT_GRID, exam_information, fit_irt, information_summary


@dataclass
class ExamIRT:
    items: pl.DataFrame  # question_id, a, b, c, kept, dropped_in_round
    takers: pl.DataFrame  # system_id, theta, theta_se, accuracy, n
    components: pl.DataFrame  # component, value, theta, se, takers
    rounds: list[dict] = field(default_factory=list)  # per round: questions, information, rmse, …
    curves: dict[str, np.ndarray] = field(default_factory=dict)  # "round k" -> exam information over grid
    grid: np.ndarray = field(default_factory=lambda: DEFAULT_GRID)
    fit: object = None  # the final IRTResult


def rmse(y: np.ndarray, p: np.ndarray) -> float:
    mask = ~np.isnan(y)
    return float(np.sqrt(np.mean((y[mask] - p[mask]) ** 2))) if mask.any() else float("nan")


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
    """Fit, then prune while the per-question exam information improves. ``y``: takers × questions (0/1, NaN missing)."""
    if y.shape != (len(takers), len(questions)):
        raise ValueError(f"analyse_exam: matrix {y.shape} does not match {len(takers)} takers × {len(questions)} questions")
    if y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError(f"analyse_exam: IRT needs at least 2 takers and 2 questions, got {y.shape}")
    keep = np.arange(len(questions))
    dropped_in = np.zeros(len(questions), dtype=int)  # 0 = kept
    rounds, curves = [], {}
    best = None
    for rnd in range(max(1, max_rounds) + 1):
        res = fit_irt(y[:, keep], model=model, components=components, seed=seed)
        curve = exam_information(DEFAULT_GRID, res.a, res.b, res.c)
        per_q = information_summary(DEFAULT_GRID, curve) / len(keep)
        p = res.probabilities()
        sub = y[:, keep]
        mean_pred = np.where(np.isnan(sub), np.nan, np.nanmean(sub))
        rounds.append({
            "round": rnd, "questions": int(len(keep)), "information": information_summary(DEFAULT_GRID, curve),
            "information_per_question": per_q, "neg_log_likelihood": float(res.neg_log_likelihood),
            "rmse_irt": rmse(sub, p), "rmse_mean_baseline": rmse(sub, mean_pred), "converged": bool(res.converged),
        })  # fmt: skip
        curves[f"round {rnd} ({len(keep)} q)"] = curve
        if best is not None and per_q <= best[0]:
            rounds[-1]["accepted"] = False
            break
        rounds[-1]["accepted"] = True
        best = (per_q, keep.copy(), res)
        n_drop = int(np.floor(prune_quantile * len(keep)))
        if rnd == max_rounds or n_drop < 1 or len(keep) - n_drop < min_questions:
            break
        order = np.argsort(res.a, kind="stable")[:n_drop]
        dropped_in[keep[order]] = rnd + 1
        keep = np.delete(keep, order)
    _, keep, res = best
    kept = np.zeros(len(questions), dtype=bool)
    kept[keep] = True
    dropped_in[kept] = 0  # a question dropped in a rejected round is kept after all
    a, b, c = (np.full(len(questions), np.nan) for _ in range(3))
    a[keep], b[keep], c[keep] = res.a, res.b, res.c
    items = pl.DataFrame({"question_id": list(questions), "a": a, "b": b, "c": c, "kept": kept,
                          "dropped_in_round": dropped_in.astype(np.int32)})  # fmt: skip
    acc = np.nanmean(y, axis=1)
    takers_t = pl.DataFrame({"system_id": list(takers), "theta": res.theta, "theta_se": res.theta_se, "accuracy": acc,
                             "n": (~np.isnan(y)).sum(axis=1).astype(np.int64)})  # fmt: skip
    comp_rows = []
    for name, lat in (res.components or {}).items():
        for lvl, v, se, n in zip(lat.levels, lat.values, lat.se, lat.n_takers, strict=True):
            comp_rows.append({"component": name, "value": str(lvl), "theta": float(v), "se": float(se), "takers": int(n)})
    comps = pl.DataFrame(comp_rows, schema={"component": pl.String, "value": pl.String, "theta": pl.Float64, "se": pl.Float64,
                                            "takers": pl.Int64})  # fmt: skip
    return ExamIRT(items, takers_t, comps, rounds, curves, DEFAULT_GRID, res)
