"""Stage 1 of the double calibration (HCAT paper §5.1): machine scores → P(human label).

``Calibrator(method=...)`` has scikit-learn's estimator shape (``fit`` / ``predict_proba`` /
``get_params``); labels are integers ``0..K−1`` (binary K = 2, or an ordinal scale), scores one metric
``(n,)`` or several metric columns ``(n, d)``. ``predict_proba`` returns ``(n, K)``, rows summing to 1;
for binary, column 1 is P(Y = 1). A class that never occurs in the fitting labels gets probability 0.

Methods and the library each one uses:

- ``"platt"``: logistic regression on the standardised scores (scikit-learn ``LogisticRegression``,
  L2 with ``C`` on standardised inputs, so the default barely shrinks real slopes but keeps a
  perfectly separated sample finite). K > 2: multinomial logistic ("probabilities assigned to each
  category").
- ``"isotonic"``: scikit-learn ``IsotonicRegression`` (one score column only). K > 2 fits one
  monotone curve per cumulative event Y ≥ k (same direction for all k), makes the curves nested
  (P(Y ≥ 1) ≥ P(Y ≥ 2) ≥ …) and takes differences, so ordinal class probabilities come out ≥ 0 and
  sum to 1. Direction: ``increasing="auto"`` takes the sign of Spearman's ρ between score and label.
- ``"ordinal"``: proportional-odds (cumulative logit) ordinal regression, statsmodels
  ``OrderedModel(distr="logit")`` on standardised scores. Chosen over ``mord`` (last release 2023,
  unmaintained) because statsmodels is kept and also provides Fleiss' κ (see ``agreement``).
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
from scipy.stats import spearmanr
from sklearn.base import BaseEstimator
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

__all__ = ["Calibrator", "METHODS"]

METHODS = ("platt", "isotonic", "ordinal")
LIBRARIES = {
    "platt": "scikit-learn LogisticRegression",
    "isotonic": "scikit-learn IsotonicRegression",
    "ordinal": "statsmodels OrderedModel (logit)",
}


def _as_2d(scores, name: str = "scores") -> np.ndarray:
    x = np.asarray(scores, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n,) or (n, d), got {np.shape(scores)}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or infinite values (drop unscored rows before calibrating)")
    return x


class Calibrator(BaseEstimator):
    """Map machine scores to calibrated probabilities of the human label.

    Parameters
    ----------
    method: ``"platt"`` | ``"isotonic"`` | ``"ordinal"``.
    n_classes: K; default ``max(label) + 1``. Give it when the top level may be missing from a sample.
    C: inverse L2 strength for ``"platt"`` (standardised scores).
    increasing: ``"auto"`` | True | False, direction for ``"isotonic"``.
    """

    def __init__(
        self,
        method: Literal["platt", "isotonic", "ordinal"] = "platt",
        n_classes: int | None = None,
        C: float = 100.0,
        increasing: bool | Literal["auto"] = "auto",
    ):
        self.method = method
        self.n_classes = n_classes
        self.C = C
        self.increasing = increasing

    # ------------------------------------------------------------------ fit
    def fit(self, scores, labels) -> Calibrator:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        x = _as_2d(scores)
        y = np.asarray(labels)
        if y.ndim != 1 or len(y) != len(x):
            raise ValueError(f"labels must have shape ({len(x)},), got {y.shape}")
        if len(y) == 0:
            raise ValueError("no labelled rows to calibrate on")
        if not np.issubdtype(y.dtype, np.integer):
            if not np.all(np.equal(np.mod(y, 1), 0)):
                raise ValueError("labels must be integers 0..K-1")
            y = y.astype(int)
        k = int(self.n_classes) if self.n_classes is not None else int(y.max()) + 1
        if k < 2:
            raise ValueError(f"need K ≥ 2 classes, got {k}")
        if y.min() < 0 or y.max() >= k:
            raise ValueError(f"labels must lie in 0..{k - 1}, got {y.min()}..{y.max()}")
        observed = np.unique(y)
        if len(observed) < 2:
            raise ValueError(f"all {len(y)} labels are {observed[0]}: a calibration needs both outcomes")
        self.n_classes_ = k
        self.classes_ = np.arange(k)
        self.n_features_in_ = x.shape[1]
        self.observed_classes_ = observed
        self.library_ = LIBRARIES[self.method]
        getattr(self, f"_fit_{self.method}")(x, y)
        return self

    def _fit_platt(self, x, y) -> None:
        self.model_ = make_pipeline(StandardScaler(), LogisticRegression(C=self.C, max_iter=1000))
        self.model_.fit(x, y)

    def _fit_isotonic(self, x, y) -> None:
        if x.shape[1] != 1:
            raise ValueError(f"isotonic calibration takes one score column, got {x.shape[1]}; use 'platt' or 'ordinal'")
        s = x[:, 0]
        if self.increasing == "auto":
            rho = spearmanr(s, y).statistic if np.ptp(s) > 0 else 0.0
            increasing = not (np.isfinite(rho) and rho < 0)
        else:
            increasing = bool(self.increasing)
        self.increasing_ = increasing
        self.curves_ = [
            IsotonicRegression(increasing=increasing, y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(s, (y >= j).astype(float))
            for j in range(1, self.n_classes_)
        ]

    def _fit_ordinal(self, x, y) -> None:
        from statsmodels.miscmodels.ordinal_model import OrderedModel

        sd = x.std(axis=0)
        if np.any(sd == 0):
            raise ValueError(f"score column(s) {np.flatnonzero(sd == 0).tolist()} are constant: nothing to regress on")
        self.mean_, self.scale_ = x.mean(axis=0), sd
        codes = np.searchsorted(self.observed_classes_, y)  # observed levels → 0..m-1, order kept
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # statsmodels' Hessian/convergence chatter on separated samples
            model = OrderedModel(codes, (x - self.mean_) / self.scale_, distr="logit")
            self.result_ = model.fit(method="bfgs", maxiter=2000, disp=False)

    # ------------------------------------------------------------- predict
    def predict_proba(self, scores) -> np.ndarray:
        if not hasattr(self, "n_classes_"):
            raise RuntimeError("Calibrator is not fitted: call .fit(scores, labels)")
        x = _as_2d(scores)
        if x.shape[1] != self.n_features_in_:
            raise ValueError(f"fitted on {self.n_features_in_} score column(s), got {x.shape[1]}")
        out = np.zeros((len(x), self.n_classes_))
        if self.method == "platt":
            lr = self.model_[-1]
            out[:, lr.classes_] = self.model_.predict_proba(x)
        elif self.method == "isotonic":
            cum = np.ones((len(x), self.n_classes_ + 1))
            cum[:, -1] = 0.0
            for j, curve in enumerate(self.curves_, start=1):
                cum[:, j] = curve.predict(x[:, 0])
            cum = np.minimum.accumulate(cum, axis=1)  # nested: P(Y ≥ j) non-increasing in j
            out = cum[:, :-1] - cum[:, 1:]
        else:
            probs = np.asarray(self.result_.model.predict(self.result_.params, exog=(x - self.mean_) / self.scale_))
            out[:, self.observed_classes_] = probs
        out = np.clip(out, 0.0, 1.0)
        return out / out.sum(axis=1, keepdims=True)

    def predict(self, scores) -> np.ndarray:
        """Most probable label (argmax of ``predict_proba``)."""
        return self.predict_proba(scores).argmax(axis=1)

    def describe(self) -> dict:
        """What to record next to the calibrated probabilities."""
        return {
            "method": self.method,
            "library": LIBRARIES.get(self.method, ""),
            "n_classes": getattr(self, "n_classes_", self.n_classes),
            "n_features": getattr(self, "n_features_in_", None),
            "params": self.get_params(),
        }
