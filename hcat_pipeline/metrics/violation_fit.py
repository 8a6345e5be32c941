"""The match weights and threshold fitted to human match labels — the violation-match deck's stated next step ("those
parameters need to be calibrated to reflect our human judgements") — with the held-out figure beside the defaults.

A label says whether a person reads a predicted violation as the same as a ground-truth one:
``match_labels.jsonl`` beside the violation files, one line per judged pair:
  {"text_id": "t1", "pred": {"start": 0, "end": 9, "rule": "…", …}, "gt": {…}, "match": true}
``fit_match_weights(labels, embed)``: the five components of each pair (``match_violations``: text overlap, rule,
category, explanation, correction similarity; a field both lack scores as the mean of the others, as ha_match does),
texts split in two by a seeded hash of ``text_id`` (fit / held out); a logistic regression on the fit half
(scipy L-BFGS-B with weights ≥ 0: each component can only add evidence) gives weights normalised to sum 1 and the
threshold where P(match) = ½; on the held-out half the agreement with the labels (accuracy, F1) of the fitted score
and of the deck's fixed ha weights at 0.5. No human match labels ship with the project: the fit runs when a team adds
its own. No Dagster import.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from hcat_pipeline.metrics.matching import Embed, MatchConfig, match_violations

COMPONENTS = ("text_overlap", "rule_similarity", "category_match", "explanation_similarity", "correction_similarity")
MIN_LABELS = 20  # fewer labelled pairs on either half: no fit (said, not guessed)


def read_match_labels(path: Path) -> tuple[list[dict], list[str]]:
    """(labels, problems): a line without pred / gt spans and rule or without a boolean ``match`` is a problem, skipped."""
    labels, problems = [], []
    for no, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            ok = isinstance(rec.get("match"), bool) and all(isinstance(rec.get(s), dict) and {"start", "end", "rule"} <= set(rec[s]) for s in ("pred", "gt"))
        except (ValueError, AttributeError):
            ok = False
        if not ok:
            problems.append(f"{Path(path).name}:{no}: needs pred and gt (start, end, rule) and a boolean match")
            continue
        labels.append(rec)
    return labels, problems


def components(labels: list[dict], embed: Embed, config: MatchConfig | None = None) -> np.ndarray:
    """(n, 5) components of each labelled pair; a component both sides lack takes the mean of the pair's others."""
    pred = [{**r["pred"], "text_id": f"pair{i}"} for i, r in enumerate(labels)]
    gt = [{**r["gt"], "text_id": f"pair{i}"} for i, r in enumerate(labels)]
    res = match_violations(pred, gt, embed, config)
    out = np.zeros((len(labels), len(COMPONENTS)))
    for c in res.pairs:
        vals = [c[k] for k in COMPONENTS]
        present = [v for v in vals if v is not None]
        fill = float(np.mean(present)) if present else 0.0
        out[c["pred"]] = [fill if v is None else v for v in vals]
    return out


def _held_out(text_id: str, seed: int) -> bool:
    return int(hashlib.sha256(f"{seed}|{text_id}".encode()).hexdigest(), 16) % 2 == 1


def _agreement(pred: np.ndarray, y: np.ndarray) -> dict:
    tp, fp, fn = int((pred & y).sum()), int((pred & ~y).sum()), int((~pred & y).sum())
    return {"accuracy": float((pred == y).mean()), "f1": 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else None, "n": int(y.size)}


def fit_match_weights(labels: list[dict], embed: Embed, seed: int = 0, config: MatchConfig | None = None) -> dict:
    """{weights, threshold, held_out: {fitted, defaults}, n_fit, n_held_out} or {why} when too few labels (see module)."""
    cfg = config or MatchConfig()
    x, y = components(labels, embed, cfg), np.array([bool(r["match"]) for r in labels])
    held = np.array([_held_out(str(r.get("text_id", i)), seed) for i, r in enumerate(labels)])
    if min((~held).sum(), held.sum()) < MIN_LABELS or len(set(y[~held])) < 2:
        return {"why": f"{(~held).sum()} fit / {held.sum()} held-out labelled pairs (both classes, at least {MIN_LABELS} each half needed)"}
    coef, intercept = _nonnegative_logistic(x[~held], y[~held])
    total = float(coef.sum()) or 1.0
    weights, threshold = coef / total, float(-intercept / total)
    fitted = (x[held] @ weights) > threshold
    w0 = np.array([cfg.ha_overlap_weight, cfg.ha_rule_weight, cfg.ha_category_weight, cfg.ha_explanation_weight, cfg.ha_correction_weight])
    defaults = (x[held] @ w0 / w0.sum()) > cfg.match_threshold
    return {"weights": dict(zip(COMPONENTS, (round(float(w), 4) for w in weights), strict=True)), "threshold": round(threshold, 4),
            "held_out": {"fitted": _agreement(fitted, y[held]), "defaults": _agreement(defaults, y[held])},
            "n_fit": int((~held).sum()), "n_held_out": int(held.sum())}  # fmt: skip


def _nonnegative_logistic(x: np.ndarray, y: np.ndarray, ridge: float = 1e-4) -> tuple[np.ndarray, float]:
    """Logistic regression with weights ≥ 0 (scipy L-BFGS-B on the mean log-loss + a small ridge): (coefficients, intercept)."""
    t = y.astype(float)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ theta[:-1] + theta[-1]
        p = expit(z)
        eps = 1e-12
        value = -np.mean(t * np.log(p + eps) + (1 - t) * np.log(1 - p + eps)) + ridge * float(theta[:-1] @ theta[:-1])
        g = (p - t) / len(t)
        return value, np.concatenate([x.T @ g + 2 * ridge * theta[:-1], [g.sum()]])

    bounds = [(0.0, None)] * x.shape[1] + [(None, None)]
    res = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    return res.x[:-1], float(res.x[-1])
