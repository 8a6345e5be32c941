"""The IRT objective: data, parameter layout, vectorised negative log-likelihood + analytic gradient, priors.

Private to ``hcat_pipeline.irt`` (``fit_irt`` in ``model.py`` is the public entry point).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit

THETA_LIMIT_TAU = 0.25  # width of the soft limit on |θ| (IRTPriors.theta_limit)

if TYPE_CHECKING:
    from hcat_pipeline.irt.params import IRTPriors


def validate_responses(responses) -> np.ndarray:
    y = np.array(responses, dtype=float, copy=True)
    if y.ndim != 2:
        raise ValueError(f"fit_irt: responses must be a 2-D takers × items matrix, got shape {y.shape}")
    n, j = y.shape
    if n < 2 or j < 1:
        raise ValueError(f"fit_irt: need at least 2 takers and 1 item, got {n} × {j}")
    bad = ~(np.isnan(y) | (y == 0.0) | (y == 1.0))
    if bad.any():
        rows, cols = np.nonzero(bad)
        where = ", ".join(f"[{r}, {c}]={float(y[r, c])!r}" for r, c in zip(rows[:5], cols[:5]))
        raise ValueError(f"fit_irt: responses must be 0, 1 or NaN (missing); {bad.sum()} bad cell(s), e.g. {where}")
    observed = ~np.isnan(y)
    empty_rows = np.nonzero(~observed.any(axis=1))[0]
    empty_cols = np.nonzero(~observed.any(axis=0))[0]
    if empty_rows.size or empty_cols.size:
        raise ValueError(
            "fit_irt: every taker and every item needs at least one observed response; "
            f"takers with none: {empty_rows[:10].tolist()}, items with none: {empty_cols[:10].tolist()} (drop them first)"
        )
    return y


def component_codes(components: dict, n: int) -> list[tuple[str, list, np.ndarray]]:
    out = []
    for name, labels in components.items():
        labels = list(labels)
        if len(labels) != n:
            raise ValueError(f"fit_irt: component {name!r} has {len(labels)} labels for {n} takers (one label per taker)")
        missing = [i for i, v in enumerate(labels) if v is None or (isinstance(v, float) and np.isnan(v))]
        if missing:
            raise ValueError(f"fit_irt: component {name!r} has no label for takers {missing[:10]}")
        levels = sorted(set(labels), key=lambda v: (type(v).__name__, v))
        index = {v: k for k, v in enumerate(levels)}
        out.append((name, levels, np.array([index[v] for v in labels], dtype=np.intp)))
    if not out:
        raise ValueError("fit_irt: components given but empty; pass None for the plain model")
    return out


class Problem:
    """Data, parameter layout and the vectorised objective + gradient (buffers reused across evaluations)."""

    def __init__(self, y: np.ndarray, model: str, comps, priors: IRTPriors, dtype):
        self.n, self.j = y.shape
        self.model = model
        observed = ~np.isnan(y)
        self.has_missing = not observed.all()
        yf = np.where(observed, y, 0.0)
        self.dtype = dtype
        self.yf = yf.astype(dtype)
        self.mask = observed.astype(dtype) if self.has_missing else None
        # Q = P if y = 1, 1 − P if y = 0, 1 if missing  ⇒  Q = sign · P + offset
        self.sign = np.where(observed, 2.0 * yf - 1.0, 0.0).astype(dtype)
        self.offset = np.where(observed, 1.0 - yf, 1.0).astype(dtype)
        self.n_obs_taker = observed.sum(axis=1).astype(float)
        self.n_obs_item = observed.sum(axis=0).astype(float)
        self.n_observed = int(observed.sum())
        self.comps = comps
        self.n_latent = sum(len(levels) for _, levels, _ in comps) if comps else self.n
        self.free_a = model in ("3pl", "2pl")
        self.free_c = model == "3pl"
        self.priors = priors
        shape = (self.n, self.j)
        self._buf = [np.empty(shape, dtype=dtype) for _ in range(3)]
        self.ones_n = np.ones(self.n, dtype=dtype)
        self.tiny = dtype.type(np.finfo(dtype).tiny)

    # layout: [a (J) if free][b (J)][c (J) if free][latents]
    def split(self, x: np.ndarray):
        j, k = self.j, 0
        a = x[k:k + j] if self.free_a else np.ones(j)
        k += j if self.free_a else 0
        b = x[k:k + j]
        k += j
        c = x[k:k + j] if self.free_c else np.zeros(j)
        k += j if self.free_c else 0
        return a, b, c, x[k:]

    def latent_grad(self, g_theta: np.ndarray) -> np.ndarray:
        if not self.comps:
            return g_theta
        parts = [np.bincount(codes, weights=g_theta, minlength=len(levels)) for _, levels, codes in self.comps]
        return np.concatenate(parts)

    def latent_counts(self) -> np.ndarray:
        """Observations behind each latent (for the preconditioning scale)."""
        if not self.comps:
            return self.n_obs_taker
        return np.concatenate([np.bincount(codes, weights=self.n_obs_taker, minlength=len(levels)) for _, levels, codes in self.comps])

    def nll_grad(self, a, b, c, theta):
        """Data NLL (eq. 2) and its gradient w.r.t. a, b, c, θ."""
        dt = self.dtype
        z, p, q = self._buf
        np.subtract.outer(theta.astype(dt), b.astype(dt), out=z)
        z *= a.astype(dt)
        s = expit(z, out=z)  # S = σ(a(θ − b)), in place
        np.multiply(s, (1.0 - c).astype(dt), out=p)
        p += c.astype(dt)
        np.multiply(p, self.sign, out=q)
        q += self.offset
        np.maximum(q, self.tiny, out=q)  # 1 − P rounds to 0 once a(θ − b) ≳ 37 (float64) / 17 (float32)
        np.log(q, out=q)
        nll = -float(q.sum(dtype=np.float64))
        # ∂NLL/∂P = (P − y) / (P (1 − P)); with 1 − P = (1 − c)(1 − S) and ∂P/∂z = (1 − c) S (1 − S):
        # ∂NLL/∂z = (1 − y/P) S,  ∂NLL/∂c = (1 − y/P) / (1 − c)   (times the observed mask)
        np.divide(self.yf, p, out=p)
        if self.mask is None:
            np.subtract(1.0, p, out=p)
        else:
            np.subtract(self.mask, p, out=p)
        w = p
        g = np.multiply(w, s, out=q)
        two = np.vstack([theta, np.ones(self.n)]).astype(dt)
        tg, colsum = (two @ g).astype(np.float64)
        g_theta = (g @ a.astype(dt)).astype(np.float64)
        g_a = tg - b * colsum
        g_b = -a * colsum
        g_c = (self.ones_n @ w).astype(np.float64) / (1.0 - c) if self.free_c else None
        return nll, g_a, g_b, g_c, g_theta

    def raw_theta(self, latents: np.ndarray) -> np.ndarray:
        if not self.comps:
            return latents
        th = np.zeros(self.n)
        off = 0
        for _, levels, codes in self.comps:
            th += latents[off + codes]
            off += len(levels)
        return th

    def theta(self, latents: np.ndarray) -> np.ndarray:
        """θ = standardise(raw θ): mean 0, sd 1 over takers (1PL: centred only, its a = 1 fixes the scale)."""
        r = self.raw_theta(latents)
        return (r - r.mean()) / (r.std() if self.free_a else 1.0)

    def penalty(self, a, b, c):
        pr, val = self.priors, 0.0
        g_a = np.zeros_like(a)
        g_b = np.zeros_like(b)
        g_c = np.zeros_like(c)
        if pr.c_beta and self.free_c:
            al, be = pr.c_beta
            val -= float((al - 1.0) * np.log(c).sum() + (be - 1.0) * np.log1p(-c).sum())
            g_c = -(al - 1.0) / c + (be - 1.0) / (1.0 - c)
        if pr.b_sd:
            val += 0.5 * float(b @ b) / pr.b_sd**2
            g_b = b / pr.b_sd**2
        if pr.log_a_sd and self.free_a:
            la = np.log(a)
            val += 0.5 * float(la @ la) / pr.log_a_sd**2
            g_a = la / (a * pr.log_a_sd**2)
        return val, g_a, g_b, g_c

    def objective(self, x: np.ndarray):
        a, b, c, lat = self.split(x)
        r = self.raw_theta(lat)
        sd = r.std() if self.free_a else 1.0
        theta = (r - r.mean()) / sd
        nll, g_a, g_b, g_c, g_theta = self.nll_grad(a, b, c, theta)
        pen_t, g_pt = self.theta_penalty(theta)
        g_theta = g_theta + g_pt
        # chain rule through the standardisation: ∂θ/∂r = (I − 11ᵀ/n − θθᵀ/n) / sd   (1PL: I − 11ᵀ/n)
        g_r = g_theta - g_theta.mean()
        if self.free_a:
            g_r = (g_r - theta * (g_theta @ theta) / self.n) / sd
        pen, pa, pb, pc = self.penalty(a, b, c)
        parts = []
        if self.free_a:
            parts.append(g_a + pa)
        parts.append(g_b + pb)
        if self.free_c:
            parts.append(g_c + pc)
        parts.append(self.latent_grad(g_r))
        return nll + pen + pen_t, np.concatenate(parts)

    def theta_penalty(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Soft limit on the standardised θ: (|θ| − L)² / (2 τ²) beyond |θ| > L, τ = THETA_LIMIT_TAU, else 0."""
        lim = self.priors.theta_limit
        if not lim:
            return 0.0, np.zeros_like(theta)
        over = np.sign(theta) * np.maximum(np.abs(theta) - lim, 0.0)
        return float(0.5 * (over @ over)) / THETA_LIMIT_TAU**2, over / THETA_LIMIT_TAU**2
