"""The linear entailment head of HCAT §3.2.2: z = wᵀx + b, D = z/‖w‖, σ(D).

``x`` is the standardised pair-feature vector; ``NLIHead.decision`` gives z, D and σ(D) per row
(``scipy.special.expit``); ``NLIHead.explain`` the per-feature contributions wᵢxᵢ / ‖w‖ to D, so a
low σ(D) can be traced to the checks that pulled it down. ``fit_head`` fits it with scikit-learn's
``LogisticRegression`` under sign constraints (``MONOTONE``). The head is stored as readable JSON
with numbers rounded to 9 significant digits, so that the same training gives the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from scipy.special import expit

from hcat_pipeline.metrics.nli.probe import PROBE_FEATURE, PairProbe

GroundingTask = Literal["qa", "dialogue", "summary"]  # RAG answers, dialogue responses, summary sentences
DEFAULT_TASK: GroundingTask = "qa"  # what a RAG evaluation scores

FORMAT = "hcat-nli-head/1"  # an optional "probe" (nli.probe.PairProbe) when the pair_probe feature is used

# +1: more of the feature may never lower the entailment logit; -1: may never raise it
MONOTONE: dict[str, int] = {
    "max_sim": 1, "top2_sim": 1, "centroid_sim": 1, "premise_coverage": 1, "aligned_coverage": 1,
    "token_align": 1, "llm_log_odds": 1,
    "content_novelty": -1, "bigram_novelty": -1, "number_novelty": -1, "has_unsupported_number": -1,
    "name_novelty": -1, "negation_mismatch": -1, "contradiction": -1,
    "aligned_content_novelty": -1, "aligned_number_novelty": -1, "aligned_name_novelty": -1, "pair_content_novelty": -1,
    "pair_probe": 1,
    "antonym_flip": -1, "hedge_mismatch": -1, "connective_novelty": -1, "first_person": -1,
    "subject_mismatch": -1, "role_swap": -1, "relation_novelty": -1, "parse_negation_mismatch": -1,
}  # fmt: skip


def sigmoid(x) -> np.ndarray:
    return expit(np.asarray(x, dtype=np.float64))


def _r(v: float) -> float:
    return float(f"{float(v):.9g}")


@dataclass
class NLIHead:
    """A logistic-regression entailment head over standardised pair features."""

    feature_names: list[str]
    w: np.ndarray  # weight vector over the standardised features x
    b: float
    mean: np.ndarray
    scale: np.ndarray
    info: dict = field(default_factory=dict)
    probe: PairProbe | None = None  # the pair_probe feature's probe (nli_probe)

    @property
    def w_norm(self) -> float:
        return float(np.linalg.norm(self.w))

    def standardise(self, raw: np.ndarray) -> np.ndarray:
        raw = np.asarray(raw, dtype=np.float64)
        if raw.ndim != 2 or raw.shape[1] != len(self.feature_names):
            raise ValueError(f"expected features of width {len(self.feature_names)}, got shape {raw.shape}")
        return (raw - self.mean) / self.scale

    def decision(self, raw: np.ndarray) -> dict[str, np.ndarray]:
        """z = wᵀx + b, the distance D = z/‖w‖ to the boundary, and σ(D), per row of raw features."""
        x = self.standardise(raw)
        z = x @ self.w + self.b
        D = z / self.w_norm
        return {"z": z, "D": D, "sigma": sigmoid(D)}

    def explain(self, raw: np.ndarray, top: int = 3) -> list[list[tuple[str, float]]]:
        """Per row, the ``top`` features that lower D most: (name, wᵢ(xᵢ) / ‖w‖), most negative first."""
        contrib = self.standardise(raw) * self.w / self.w_norm
        out = []
        for row in contrib:
            order = np.argsort(row, kind="stable")[:top]
            out.append([(self.feature_names[j], float(row[j])) for j in order if row[j] < 0])
        return out

    # -- persistence (JSON: readable, diffable, small, byte-stable) --
    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "feature_names": list(self.feature_names),
            "w": [_r(v) for v in self.w],
            "b": _r(self.b),
            "mean": [_r(v) for v in self.mean],
            "scale": [_r(v) for v in self.scale],
            "info": self.info,
        } | ({"probe": self.probe.to_dict()} if self.probe is not None else {})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_dict(cls, d: dict) -> NLIHead:
        if d.get("format") != FORMAT:
            raise ValueError(f"not an NLI head file (format={d.get('format')!r})")
        if PROBE_FEATURE in d["feature_names"] and "probe" not in d:
            raise ValueError(f"NLI head uses the {PROBE_FEATURE} feature but stores no probe")
        return cls(
            feature_names=list(d["feature_names"]),
            w=np.asarray(d["w"], dtype=np.float64),
            b=float(d["b"]),
            mean=np.asarray(d["mean"], dtype=np.float64),
            scale=np.asarray(d["scale"], dtype=np.float64),
            info=dict(d.get("info", {})),
            probe=PairProbe.from_dict(d["probe"]) if "probe" in d else None,
        )

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(self.to_json())
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> NLIHead:
        return cls.from_dict(json.loads(Path(path).read_text()))


def _fit_lr(x: np.ndarray, y: np.ndarray, C: float, sample_weight: np.ndarray | None) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=C, solver="lbfgs", max_iter=10_000, tol=1e-10)
    lr.fit(x, y, sample_weight=sample_weight)
    return lr.coef_[0].astype(np.float64), float(lr.intercept_[0])


def fit_head(
    raw: np.ndarray,
    labels: np.ndarray,
    names: Sequence[str],
    C: float = 1.0,
    seed: int = 0,
    info: dict | None = None,
    monotone: bool | dict[str, int] = True,
    sample_weight: np.ndarray | None = None,
) -> NLIHead:
    """Fit the entailment head (label 1 = entailed / grounded) by L2-regularised logistic regression.

    ``monotone`` constrains the sign of chosen weights (True: ``MONOTONE``): more similarity to the
    premise may never lower the entailment logit, more novelty, a mismatch or a contradiction may
    never raise it. Enforced by an active set: the feature whose weight has the wrong sign by the
    largest margin is fixed at 0 and the rest refitted, until every sign agrees. (Collinear features
    fitted on one distribution otherwise take opposite signs that cancel there and misbehave
    elsewhere.) ``seed`` is recorded only: the solver (lbfgs) is deterministic.
    """
    raw = np.asarray(raw, dtype=np.float64)
    y = np.asarray(labels, dtype=int)
    if raw.shape[0] != y.shape[0] or raw.shape[1] != len(names):
        raise ValueError("features, labels and names do not match")
    if len(set(y.tolist())) < 2:
        raise ValueError("training pairs need both labels")
    mean = raw.mean(axis=0)
    scale = raw.std(axis=0)
    scale[scale < 1e-9] = 1.0
    x = (raw - mean) / scale
    signs = MONOTONE if monotone is True else (monotone or {})
    active = [j for j in range(len(names)) if np.ptp(raw[:, j]) > 0]
    w = np.zeros(len(names))
    b = 0.0
    while active:
        wa, b = _fit_lr(x[:, active], y, C, sample_weight)
        bad = [(-signs.get(names[j], 0) * wa[k], k) for k, j in enumerate(active) if signs.get(names[j], 0) * wa[k] < 0]
        if not bad:
            w[active] = wa
            break
        active.pop(max(bad)[1])
    if not np.any(w):
        raise ValueError("the fitted head has a zero weight vector (features carry no signal)")
    # parameters rounded as they are stored, so the head in memory and the head on disk are the same
    rnd = np.vectorize(_r, otypes=[np.float64])
    head = NLIHead(list(names), rnd(w), _r(b), rnd(mean), rnd(scale), dict(info or {}))
    x = head.standardise(raw)
    w, b = head.w, head.b
    from sklearn.metrics import roc_auc_score

    head.info.update({"n_train": int(len(y)), "positive_rate": _r(y.mean()),
                      "train_auroc": _r(roc_auc_score(y, x @ w + b, sample_weight=sample_weight)), "C": C, "seed": seed})
    return head
