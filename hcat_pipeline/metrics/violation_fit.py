"""The match weights and threshold fitted to human match labels — the violation-match deck's stated next step ("those
parameters need to be calibrated to reflect our human judgements") — with the held-out figure beside the defaults.

A label says whether a person reads a predicted violation as the same as a ground-truth one:
``match_labels.jsonl`` beside the violation files, one line per judged pair:
  {"text_id": "t1", "pred": {"start": 0, "end": 9, "rule": "…", …}, "gt": {…}, "match": true}
``fit_match_weights(labels, embed)``: the five components of each pair (``match_violations``: text overlap, rule,
category, explanation, correction similarity; a field both lack scores as the mean of the others, as ha_match does),
texts split in two by a seeded hash of ``text_id`` (fit / held out); a logistic regression on the fit half
(scipy L-BFGS-B with weights ≥ 0: each component can only add evidence) gives weights normalised to sum 1 and the
threshold where P(match) = ½ — for ha_match (five components) and std_match (overlap, rule) — and the overlap /
rule-similarity gates are the pair that maximises F1 on the fit half; on the held-out half the agreement with the
labels (accuracy, F1) of each fitted rule and of the deck's defaults. A fitted rule is *applied* (``overrides``:
``violation_campaign`` scores with them and says so on every figure, ``weights_note``) only when it agrees with the
held-out labels at least as well as the defaults. No human match labels ship with the project: the fit runs when a
team adds its own. No Dagster import.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from hcat_pipeline.metrics.matching import Embed, MatchConfig, match_violations

COMPONENTS = ("text_overlap", "rule_similarity", "category_match", "explanation_similarity", "correction_similarity")
HA_FIELDS = ("ha_overlap_weight", "ha_rule_weight", "ha_category_weight", "ha_explanation_weight", "ha_correction_weight")  # MatchConfig's, in that order
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


def held_out_half(text_id: str, seed: int) -> bool:
    """Whether a text's labelled pairs are held out (a seeded hash of its id: about half the texts)."""
    return int(hashlib.sha256(f"{seed}|{text_id}".encode()).hexdigest(), 16) % 2 == 1


def _agreement(pred: np.ndarray, y: np.ndarray) -> dict:
    tp, fp, fn = int((pred & y).sum()), int((pred & ~y).sum()), int((~pred & y).sum())
    return {"accuracy": float((pred == y).mean()), "f1": 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else None, "n": int(y.size)}


def fit_match_weights(labels: list[dict], embed: Embed, seed: int = 0, config: MatchConfig | None = None) -> dict:
    """{weights, threshold, std, gates, held_out, applied, overrides, n_fit, n_held_out} or {why} when too few labels.

    ``weights`` / ``threshold``: ha_match's five weights and its threshold; ``std``: std_match's two (overlap, rule) and
    its threshold, fitted the same way; ``gates``: the overlap and rule-similarity thresholds every match must pass, the
    pair that maximises F1 on the fit half. ``held_out``: the whole decision rule (gates and score) of each variant,
    fitted against the deck's defaults, on the held-out half. ``applied``: per variant, whether the fitted rule agrees
    with the labels held out at least as well as the defaults (F1, then accuracy) — only then are its values in
    ``overrides`` (``MatchConfig`` fields) and used for the figures. The candidate is the whole fitted set (one
    threshold and one pair of gates serve both variants, as in ``MatchConfig``: ha_match's threshold), checked on the
    held-out half exactly as it would be applied: ``held_out`` per variant (fitted set vs the deck's defaults);
    ``applied`` only when both variants agree with the labels at least as well as the defaults (F1, then accuracy)."""
    cfg = config or MatchConfig()
    x, y = components(labels, embed, cfg), np.array([bool(r["match"]) for r in labels])
    held = np.array([held_out_half(str(r.get("text_id", i)), seed) for i, r in enumerate(labels)])
    if min((~held).sum(), held.sum()) < MIN_LABELS or len(set(y[~held])) < 2:
        return {"why": f"{(~held).sum()} fit / {held.sum()} held-out labelled pairs (both classes, at least {MIN_LABELS} each half needed)"}
    ha_w, ha_t = _fit_score(x[~held], y[~held])
    std_w, std_t = _fit_score(x[~held][:, :2], y[~held])
    gates = _fit_gates(x[~held], y[~held], std_w, std_t)
    # MatchConfig has one threshold and one pair of gates for both variants: the candidate is the whole fitted set (ha's
    # threshold), and it is checked exactly as it would be applied
    candidate = dataclasses.replace(cfg, **dict(zip(HA_FIELDS, map(float, ha_w), strict=True)), overlap_weight=float(std_w[0]),
                                    rule_weight=float(std_w[1]), match_threshold=float(ha_t), overlap_threshold=gates[0],
                                    rule_similarity_threshold=gates[1])  # fmt: skip
    held_out = {k: {"fitted": _agreement(_decide(x[held], candidate, k), y[held]), "defaults": _agreement(_decide(x[held], cfg, k), y[held])}
                for k in ("ha", "std")}  # fmt: skip
    applied = all(_key(v["fitted"]) >= _key(v["defaults"]) for v in held_out.values())
    overrides = {f: getattr(candidate, f) for f in (*HA_FIELDS, "overlap_weight", "rule_weight", "match_threshold", "overlap_threshold",
                                                    "rule_similarity_threshold")} if applied else {}  # fmt: skip
    return {"weights": dict(zip(COMPONENTS, (round(float(w), 4) for w in ha_w), strict=True)), "threshold": round(float(ha_t), 4),
            "std": {"weights": {"text_overlap": round(float(std_w[0]), 4), "rule_similarity": round(float(std_w[1]), 4)},
                    "threshold": round(float(std_t), 4)},
            "gates": {"overlap_threshold": gates[0], "rule_similarity_threshold": gates[1]},
            "held_out": held_out, "applied": applied, "overrides": overrides,
            "n_fit": int((~held).sum()), "n_held_out": int(held.sum())}  # fmt: skip


def weights_note(fit: dict) -> str:
    """What made the figures: the fitted set (with the held-out evidence) or the deck's defaults (and why)."""
    if "why" in fit:
        return f"the deck's default weights ({fit['why']})"
    said = "; ".join(f"{name} held-out F1 {_f(fit['held_out'][k]['fitted']['f1'])} vs the defaults' {_f(fit['held_out'][k]['defaults']['f1'])}"
                     for k, name in (("ha", "ha_match"), ("std", "std_match")))  # fmt: skip
    n = fit["held_out"]["ha"]["fitted"]["n"]
    head = f"fitted to {fit['n_fit']} human match labels" if fit["applied"] else "the deck's default weights (the fitted set did not hold out)"
    return f"{head} ({said}, n = {n})"


def _decide(x: np.ndarray, cfg: MatchConfig, variant: str) -> np.ndarray:
    """The match decision of ``variant`` (ha / std) under ``cfg`` on components ``x``: gates and weighted score."""
    if variant == "ha":
        w = np.array([getattr(cfg, f) for f in HA_FIELDS])
        score = x @ w / (w.sum() or 1.0)
    else:
        score = x[:, :2] @ np.array([cfg.overlap_weight, cfg.rule_weight])
    return (score > cfg.match_threshold) & _gated(x, (cfg.overlap_threshold, cfg.rule_similarity_threshold))


def _f(v) -> str:
    return "–" if v is None else f"{v:.2f}"


def _key(a: dict) -> tuple[float, float]:
    return (a["f1"] if a["f1"] is not None else -1.0, a["accuracy"])


def _fit_score(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Non-negative weights normalised to sum 1 and the threshold where P(match) = ½."""
    coef, intercept = _nonnegative_logistic(x, y)
    total = float(coef.sum()) or 1.0
    return coef / total, -intercept / total


def _gated(x: np.ndarray, gates: tuple[float, float]) -> np.ndarray:
    return (x[:, 0] > gates[0]) & (x[:, 1] > gates[1])


def _fit_gates(x: np.ndarray, y: np.ndarray, w: np.ndarray, t: float) -> tuple[float, float]:
    """(overlap, rule) gates maximising F1 of gates ∧ std score on the fit half, over 0 and the deciles of each component
    (ties: the lowest gates — a gate only removes matches)."""
    score = x[:, :2] @ w > t
    cands = [sorted({0.0, *np.round(np.quantile(x[:, k], np.linspace(0.1, 0.9, 9)), 4).tolist()}) for k in (0, 1)]
    best = max((_key(_agreement(score & _gated(x, (a, b)), y)), -a, -b) for a in cands[0] for b in cands[1])
    return float(-best[1]), float(-best[2])


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
