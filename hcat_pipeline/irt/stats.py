"""Fit summaries of the exam paper: Table 5 (fit quality, RMSE vs the mean-prediction baseline, mean parameters)
and Table 3 (abilities per RAG component). Every aggregate carries its n and a 95% confidence interval.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy import stats as sps

from hcat_pipeline.irt.model import IRTResult

Z95 = float(sps.norm.ppf(0.975))


def mean_ci(values, level: float = 0.95) -> dict:
    """Mean, sd, n and a t-interval for the mean (NaN interval when n < 2)."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    n = int(v.size)
    if n == 0:
        return {"mean": float("nan"), "sd": float("nan"), "n": 0, "ci_low": float("nan"), "ci_high": float("nan")}
    m = float(v.mean())
    sd = float(v.std(ddof=1)) if n > 1 else float("nan")
    if n < 2:
        return {"mean": m, "sd": sd, "n": n, "ci_low": float("nan"), "ci_high": float("nan")}
    half = float(sps.t.ppf(0.5 + level / 2, n - 1)) * sd / np.sqrt(n)
    return {"mean": m, "sd": sd, "n": n, "ci_low": m - half, "ci_high": m + half}


def item_rmse(responses, result: IRTResult) -> tuple[np.ndarray, np.ndarray]:
    """Per question: RMSE of the IRT-predicted P(correct) and of the mean-prediction baseline vs observed 0/1.

    The baseline predicts each taker's own proportion correct for every question (the exam paper's "Mean
    Prediction Baseline", Table 5). Missing responses are skipped.
    """
    y = np.asarray(responses, dtype=float)
    if y.shape != (result.n_takers, result.n_items):
        raise ValueError(f"item_rmse: responses {y.shape} do not match the fit ({result.n_takers} × {result.n_items})")
    obs = ~np.isnan(y)
    yf = np.where(obs, y, 0.0)
    n_obs = obs.sum(axis=0)
    p_irt = result.probabilities()
    p_base = np.broadcast_to((yf.sum(axis=1) / obs.sum(axis=1))[:, None], y.shape)
    rmse_irt = np.sqrt(np.where(obs, (p_irt - yf) ** 2, 0.0).sum(axis=0) / n_obs)
    rmse_base = np.sqrt(np.where(obs, (p_base - yf) ** 2, 0.0).sum(axis=0) / n_obs)
    return rmse_irt, rmse_base


def fit_summary(responses, result: IRTResult) -> dict:
    """Table 5 for one exam: accuracy, RMSE (IRT vs mean-prediction baseline, per question, with CIs and the paired
    difference), mean a / b / c / θ, and the log-likelihood."""
    y = np.asarray(responses, dtype=float)
    obs = ~np.isnan(y)
    acc = np.where(obs, y, 0.0).sum(axis=1) / obs.sum(axis=1)
    rmse_irt, rmse_base = item_rmse(y, result)
    return {
        "n_takers": result.n_takers,
        "n_items": result.n_items,
        "n_observed": result.n_observed,
        "exam_accuracy": mean_ci(acc),
        "rmse_mean_prediction_baseline": mean_ci(rmse_base),
        "rmse_irt": mean_ci(rmse_irt),
        "rmse_improvement": mean_ci(rmse_base - rmse_irt),
        "discrimination": mean_ci(result.a),
        "difficulty": mean_ci(result.b),
        "guessing": mean_ci(result.c),
        "theta": mean_ci(result.theta),
        "neg_log_likelihood": result.neg_log_likelihood,
        "mean_log_likelihood": result.mean_log_likelihood,
        "model": result.model,
        "converged": result.converged,
    }


def ability_table(result: IRTResult, taker_names: list[str] | None = None, responses=None) -> pl.DataFrame:
    """Table 3: one row per component level (hierarchical fit) or per taker (plain fit).

    Columns: component, level, theta, se, ci_low, ci_high (θ ± 1.96 se, conditional on the items), n_takers, and
    delta_vs_first (the paper's "[+ Δ]": the level's θ minus the component's first level). For a plain fit the
    taker's accuracy (and its n of answered questions) is added when ``responses`` is given.
    """
    rows = []
    if result.components:
        for name, comp in result.components.items():
            for k, lvl in enumerate(comp.levels):
                v, se = float(comp.values[k]), float(comp.se[k])
                rows.append({"component": name, "level": str(lvl), "theta": v, "se": se, "ci_low": v - Z95 * se,
                             "ci_high": v + Z95 * se, "n_takers": int(comp.n_takers[k]),
                             "delta_vs_first": v - float(comp.values[0])})
        return pl.DataFrame(rows)
    names = taker_names or [str(i) for i in range(result.n_takers)]
    if len(names) != result.n_takers:
        raise ValueError(f"ability_table: {len(names)} names for {result.n_takers} takers")
    acc = n_ans = None
    if responses is not None:
        y = np.asarray(responses, dtype=float)
        obs = ~np.isnan(y)
        n_ans = obs.sum(axis=1)
        acc = np.where(obs, y, 0.0).sum(axis=1) / n_ans
    for i, nm in enumerate(names):
        v, se = float(result.theta[i]), float(result.theta_se[i])
        row = {"component": "taker", "level": nm, "theta": v, "se": se, "ci_low": v - Z95 * se, "ci_high": v + Z95 * se,
               "n_takers": 1, "delta_vs_first": v - float(result.theta[0])}
        if acc is not None:
            row.update({"accuracy": float(acc[i]), "n_answered": int(n_ans[i])})
        rows.append(row)
    return pl.DataFrame(rows)
