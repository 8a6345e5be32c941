"""The order a reviewer meets unreviewed cases in, learnt from their decisions on this corpus (issue 59).

A generic case validator does not reach a reviewer's standard across corpora (issue 47: AUROC 0.35-0.74 on three held
out); the reviewer's own accepts and rejects on *this* corpus are the best signal there is. ``SoundnessModel`` is a
logistic regression whose prior is the generic validator: before any decision P(sound) is the validator's score; each
decision moves the weights from that prior (a Gaussian prior on the weights, mean 1 on the validator's logit and 0 on
everything else; MAP fit, the scikit-learn shape ``fit`` / ``predict_proba``). Its features are the validator's logit
and the MiniLM embeddings of the question, the reference and the source passage, reduced to a few directions of this
corpus's cases (PCA over every case, labels unseen) — continuous active learning as in technology-assisted review.

``next_case`` picks the next unreviewed case: most informative first (P(sound) nearest 0.5) while the model has seen
fewer than ``warmup`` decisions or the target is not in sight, then most likely sound first. Pure numpy / scipy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import minimize

Policy = Literal["learnt", "validator", "random"]
WARMUP = 6  # decisions before the order turns greedy (most likely sound first)
N_COMPONENTS = 8  # embedding directions the model may move (PCA of this corpus's cases)
PRIOR_SD = 1.0  # how far one decision's evidence may move a weight from the validator prior


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


def corpus_directions(vectors: np.ndarray, k: int = N_COMPONENTS) -> np.ndarray:
    """Every case's embedding projected on the corpus's first ``k`` principal directions, scaled to unit variance (no
    label is read: the directions are the corpus's, fitted on all its cases)."""
    v = np.asarray(vectors, dtype=float)
    if v.ndim != 2 or len(v) < 2:
        return np.zeros((len(v), 0))
    centred = v - v.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    k = int(min(k, len(s) - 1, vt.shape[0]))
    proj = centred @ vt[:k].T
    return proj / np.maximum(proj.std(axis=0), 1e-9)


def features(validator_score: Sequence[float], vectors: np.ndarray) -> np.ndarray:
    """[validator logit, the corpus directions of the case's embeddings] per case."""
    return np.column_stack([_logit(np.asarray(validator_score, dtype=float)), corpus_directions(vectors)])


@dataclass
class SoundnessModel:
    """P(sound) of a case given this corpus's decisions so far (module doc). ``X``'s first column is the validator's
    logit (the prior's mean weight 1 sits there), the rest the corpus directions."""

    prior_sd: float = PRIOR_SD
    coef_: np.ndarray | None = None
    n_decisions_: int = 0

    def _prior_mean(self, d: int) -> np.ndarray:
        mu = np.zeros(d + 1)  # [intercept, validator logit, directions…]
        mu[1] = 1.0
        return mu

    def fit(self, X: np.ndarray, y: Sequence[int]) -> SoundnessModel:
        X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
        mu = self._prior_mean(X.shape[1])
        self.n_decisions_ = len(y)
        if len(y) == 0:
            self.coef_ = mu
            return self
        A = np.column_stack([np.ones(len(X)), X])

        def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
            z = A @ w
            nll = np.sum(np.logaddexp(0, z) - y * z)
            grad = A.T @ (1 / (1 + np.exp(-z)) - y)
            d = w - mu
            return nll + 0.5 * d @ d / self.prior_sd**2, grad + d / self.prior_sd**2

        self.coef_ = minimize(loss, mu, jac=True, method="L-BFGS-B").x
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """[P(unsound), P(sound)] per row (scikit-learn's two columns)."""
        X = np.asarray(X, dtype=float)
        w = self.coef_ if self.coef_ is not None else self._prior_mean(X.shape[1])
        p = 1 / (1 + np.exp(-(np.column_stack([np.ones(len(X)), X]) @ w)))
        return np.column_stack([1 - p, p])


def in_sight(accepted: int, target: int, p_undecided: np.ndarray) -> bool:
    """The target is in sight when the cases still wanted are fewer than the sound ones the model expects among the
    undecided (a greedy order can now reach it)."""
    return target - accepted <= float(np.sum(p_undecided))


def next_case(p: np.ndarray, undecided: np.ndarray, n_decisions: int, accepted: int, target: int, warmup: int = WARMUP) -> int:
    """Index of the next case to review among ``undecided`` (a boolean mask): most informative first during the warmup
    or while the target is out of sight, then most likely sound first (ties: the lower index)."""
    idx = np.flatnonzero(undecided)
    if idx.size == 0:
        raise ValueError("next_case: every case is decided")
    if n_decisions < warmup or not in_sight(accepted, target, p[idx]):
        return int(idx[np.argmin(np.abs(p[idx] - 0.5))])
    return int(idx[np.argmax(p[idx])])


def simulate(X: np.ndarray, validator_score: np.ndarray, labels: np.ndarray, target: int, policy: Policy,
             seed: int = 0, checkpoints: Sequence[int] = (10, 20, 40)) -> dict:  # fmt: skip
    """A reviewer who decides the cases in the ``policy``'s order: {decisions: how many until ``target`` sound ones were
    accepted (None: never), auroc_at: {k: (auroc, n_undecided)}, scores_at: {k: (P(sound), labels) of the undecided}}
    — for the learnt policy, the model's AUROC on the cases not yet decided after k decisions, and what it was read from
    (a caller's bootstrap interval); the reviewer goes on past the target so every checkpoint is read."""
    n, labels = len(labels), np.asarray(labels, dtype=int)
    undecided = np.ones(n, dtype=bool)
    model, accepted, decisions, reached, auroc_at, scores_at = SoundnessModel(), 0, 0, None, {}, {}
    static = np.argsort(-np.asarray(validator_score), kind="stable") if policy == "validator" else np.random.default_rng(seed).permutation(n)
    last = max(checkpoints, default=0) if policy == "learnt" else 0
    while undecided.any() and (reached is None or decisions < last):
        if policy == "learnt":
            p = model.fit(X[~undecided], labels[~undecided]).predict_proba(X)[:, 1]
            if decisions in checkpoints:
                auroc_at[decisions] = (auroc(p[undecided], labels[undecided]), int(undecided.sum()))
                scores_at[decisions] = (p[undecided], labels[undecided])
            i = next_case(p, undecided, decisions, accepted, target)
        else:
            i = int(next(j for j in static if undecided[j]))
        undecided[i] = False
        decisions += 1
        accepted += int(labels[i])
        if reached is None and accepted >= target:
            reached = decisions
    return {"decisions": reached, "auroc_at": auroc_at, "scores_at": scores_at}


def auroc(score: np.ndarray, y: np.ndarray) -> float | None:
    """Mann-Whitney AUROC (ties half); None without both classes."""
    score, y = np.asarray(score, dtype=float), np.asarray(y, dtype=bool)
    pos, neg = score[y], score[~y]
    if pos.size == 0 or neg.size == 0:
        return None
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (pos.size * neg.size))


def learnt_order(case_ids: Sequence[str], validator_score: Sequence[float | None], vectors: np.ndarray,
                 labels: dict[str, int], target: int) -> tuple[list[str], dict]:  # fmt: skip
    """The curate page's order: the undecided cases by the learnt model (informative first during the warmup or while
    ``target`` accepted cases are out of sight, then likeliest sound first), then the decided ones. ``labels``: case
    id → 1 (accepted or edited) / 0 (rejected). Returns (order, {learnt_from, accepted, rejected, mode, p})."""
    ids = list(case_ids)
    score = np.array([0.5 if s is None or s != s else s for s in validator_score], dtype=float)
    X = features(score, vectors)
    known = np.array([c in labels for c in ids], dtype=bool)
    y = np.array([labels[c] for c in ids if c in labels], dtype=int)
    p = SoundnessModel().fit(X[known], y).predict_proba(X)[:, 1]
    accepted = int(y.sum())
    greedy = len(y) >= WARMUP and in_sight(accepted, target, p[~known])
    key = (lambda i: (-p[i], ids[i])) if greedy else (lambda i: (abs(p[i] - 0.5), ids[i]))
    undecided = sorted(np.flatnonzero(~known), key=key)
    order = [ids[i] for i in undecided] + [ids[i] for i in np.flatnonzero(known)]
    return order, {"learnt_from": len(y), "accepted": accepted, "rejected": len(y) - accepted,
                   "mode": "most likely sound first" if greedy else "most informative first", "p": dict(zip(ids, p.tolist(), strict=True))}


# ------------------------------------------------------------------ what a signable set still lacks (issue 59 item 2)
def needs_of(target_size: int, happy_path_share: float, floors: dict[str, int]) -> dict[str, int]:
    """What a signable set holds at least: the happy-path cases of its target (golden-eval §2.2-2.3) and the cases each
    certified gate needs by rule (``gates.spec.rule_floors``: "rule" or "rule@answer")."""
    return {"happy_path": int(np.ceil(target_size * happy_path_share)), **{k: int(v) for k, v in floors.items()}}


def _kinds(case: dict) -> set[str]:
    from hcat_pipeline.golden.case_rules import rule_for
    from hcat_pipeline.golden.yes_no import answer_key

    rule = rule_for(case)
    out = {rule} | ({"happy_path"} if case.get("category") == "happy_path" else set())
    if case.get("query_type") == "yes_no" and (key := answer_key(case.get("reference_answer"))):
        out.add(f"{rule}@{key}")
    return out


def still_missing(accepted: Sequence[dict], needs: dict[str, int]) -> dict:
    """{rows: [{kind, have, need, missing}], enough, by_type}: the accepted (or edited) cases against ``needs``, and
    the happy-path cases accepted per query type."""
    have: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for c in accepted:
        for k in _kinds(c):
            have[k] = have.get(k, 0) + 1
        if c.get("category") == "happy_path":
            by_type[str(c.get("query_type"))] = by_type.get(str(c.get("query_type")), 0) + 1
    rows = [{"kind": k, "have": have.get(k, 0), "need": n, "missing": max(0, n - have.get(k, 0))} for k, n in needs.items()]
    return {"rows": rows, "enough": all(r["missing"] == 0 for r in rows), "by_type": dict(sorted(by_type.items()))}
