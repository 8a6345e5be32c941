"""Joint maximum-a-posteriori fit of 1PL / 2PL / 3PL and hierarchical IRT models (exam paper §3.3-3.4, App. B.1).

P_j(θ_i) = c_j + (1 − c_j) σ(a_j (θ_i − b_j)); hierarchical: θ_i = Σ_k u_k[level_k(i)] (llm + retriever + icl, or
any other components). The negative log-likelihood of eq. 2 (missing responses skipped) plus weak priors is
minimised by scipy's L-BFGS-B under box bounds, with the analytic gradient computed in one vectorised pass
over the taker × item matrix (no Python loop over items, no finite differences).

Identifiability: weak priors, not post-hoc standardisation. θ (or every component latent) ~ N(0, θ_sd²),
log a ~ N(0, log_a_sd²), b ~ N(0, b_sd²): they pin the location and scale that the likelihood leaves free
(θ → kθ + m, b → kb + m, a → a / k) and the split of a taker's ability between components (a constant moved
from one component to another), and keep takers / items with all-correct or all-wrong responses finite.
``neg_log_likelihood`` is the data term alone (eq. 2, comparable across fitters); ``objective`` adds the
priors. The paper tried the same priors (App. B.1) and found them of marginal impact on its data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

Model = Literal["3pl", "2pl", "1pl"]
MODELS: tuple[str, ...] = ("3pl", "2pl", "1pl")


@dataclass(frozen=True)
class IRTBounds:
    """Box bounds of L-BFGS-B on the item parameters (θ needs none: it is standardised, so |θ| ≤ √(n − 1)).

    The paper's code used a ∈ [0.5, 1.5], b ∈ [0.01, 1], c ∈ [0.2, 0.4], θ ∈ [−3, 3].
    """

    a: tuple[float, float] = (0.05, 6.0)
    b: tuple[float, float] = (-6.0, 6.0)
    c: tuple[float, float] = (0.0, 0.5)


@dataclass(frozen=True)
class IRTPriors:
    """Weak priors on the item parameters (None switches one off): b ~ N(0, b_sd²), log a ~ N(0, log_a_sd²).

    Not needed for identifiability (θ is standardised); they keep items that every taker (or no taker) got right
    from running to the bounds with few takers.
    """

    b_sd: float | None = 4.0
    log_a_sd: float | None = 1.5
    c_beta: tuple[float, float] | None = (2.0, 8.0)


@dataclass
class ComponentLatents:
    """One component of the hierarchical model (e.g. ``llm``): a latent ability per level, with its standard error.

    A component's latents are only identified up to a constant shared with the other components, so each is
    centred: the takers' mean of ``values[level(i)]`` is 0, and θ_i = Σ_components values[level(i)] exactly.
    Differences between levels of one component are what the data determine. ``se`` is conditional on the fitted item parameters (inverse Fisher information of the latents plus the prior
    precision), so it ignores item-parameter uncertainty: a lower bound on the real uncertainty.
    """

    name: str
    levels: list
    values: np.ndarray
    se: np.ndarray
    n_takers: np.ndarray

    def as_dict(self) -> dict:
        return {lvl: float(v) for lvl, v in zip(self.levels, self.values)}


@dataclass
class IRTResult:
    model: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    theta: np.ndarray
    theta_se: np.ndarray
    neg_log_likelihood: float
    objective: float
    n_takers: int
    n_items: int
    n_observed: int
    converged: bool
    n_iter: int
    n_fev: int
    message: str
    seed: int
    bounds: IRTBounds
    priors: IRTPriors
    components: dict[str, ComponentLatents] = field(default_factory=dict)
    at_bounds: dict[str, int] = field(default_factory=dict)

    def probabilities(self, theta: np.ndarray | None = None) -> np.ndarray:
        """P(correct) for every taker (or every θ given) × item."""
        th = self.theta if theta is None else np.asarray(theta, dtype=float)
        return irt_probability(th, self.a, self.b, self.c)

    @property
    def mean_log_likelihood(self) -> float:
        """Mean log-likelihood per observed response (comparable across matrix sizes)."""
        return -self.neg_log_likelihood / max(self.n_observed, 1)


def irt_probability(theta, a, b, c) -> np.ndarray:
    """3PL probability of a correct answer, shape (len(theta), len(a)); 2PL when c = 0, 1PL when also a = 1."""
    theta, a, b, c = (np.asarray(v, dtype=float) for v in (theta, a, b, c))
    return c + (1.0 - c) * expit(a * (theta[:, None] - b))


def _validate(responses) -> np.ndarray:
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


def _component_codes(components: dict, n: int) -> list[tuple[str, list, np.ndarray]]:
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


class _Problem:
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
        return nll + pen, np.concatenate(parts)


def _logit(p):
    return np.log(p) - np.log1p(-p)


def _initial(prob: _Problem, y: np.ndarray, bounds: IRTBounds, c0: float, rng: np.random.Generator) -> np.ndarray:
    """Start from proportions correct: θ = standardised logit of each taker's score, b from each item's score."""
    observed = ~np.isnan(y)
    yf = np.where(observed, y, 0.0)
    p_taker = (yf.sum(axis=1) + 0.5) / (prob.n_obs_taker + 1.0)
    th = _logit(p_taker) + rng.normal(0.0, 1e-3, prob.n)  # jitter: takers with equal scores still have a spread
    th = (th - th.mean()) / th.std()
    # point-biserial correlation of each item with the taker score → a (normal-ogive approximation, ×1.7)
    if prob.free_a:
        ym = np.where(observed, yf - (yf.sum(0) / prob.n_obs_item), 0.0)
        r = (th @ ym) / np.sqrt(np.maximum((ym * ym).sum(0) * prob.n, 1e-12))
        r = np.clip(r, 0.05, 0.9)
        a = np.clip(1.7 * r / np.sqrt(1.0 - r * r), *bounds.a)
    else:
        a = np.ones(prob.j)
    c = np.full(prob.j, c0) if prob.free_c else np.zeros(prob.j)
    p_item = (yf.sum(axis=0) + 0.5) / (prob.n_obs_item + 1.0)
    p_adj = np.clip((p_item - c) / (1.0 - c), 0.02, 0.98)
    b = -_logit(p_adj) * np.sqrt(1.0 + np.pi * a * a / 8.0) / a
    b = np.clip(b, *bounds.b)
    if prob.comps:
        # least squares split of θ over the components (min-norm), then clipped into the bounds
        design = np.zeros((prob.n, prob.n_latent))
        off = 0
        for _, levels, codes in prob.comps:
            design[np.arange(prob.n), off + codes] = 1.0
            off += len(levels)
        lat = np.linalg.lstsq(design, th, rcond=None)[0]
    else:
        lat = th
    parts = ([a] if prob.free_a else []) + [b] + ([c] if prob.free_c else []) + [lat]
    return np.concatenate(parts)


def _box(prob: _Problem, bounds: IRTBounds) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = [], []
    for free, (l_, h_) in ((prob.free_a, bounds.a), (True, bounds.b), (prob.free_c, bounds.c)):
        if free:
            lo.append(np.full(prob.j, l_))
            hi.append(np.full(prob.j, h_))
    lo.append(np.full(prob.n_latent, -np.inf))
    hi.append(np.full(prob.n_latent, np.inf))
    return np.concatenate(lo), np.concatenate(hi)


def fit_irt(
    responses,
    model: Model = "3pl",
    components: dict[str, list] | None = None,
    seed: int = 0,
    *,
    bounds: IRTBounds | None = None,
    priors: IRTPriors | None = None,
    max_iter: int = 3000,
    tol: float = 1e-10,
    gtol: float = 1e-5,
    c_init: float = 0.1,
    dtype: Literal["float64", "float32"] = "float64",
) -> IRTResult:
    """Fit an IRT model to a takers × items 0/1 matrix (NaN = missing) by penalised joint maximum likelihood.

    ``model``: "3pl" (a, b, c free), "2pl" (c = 0), "1pl" (a = 1, c = 0). ``components`` (one label per taker for
    each component, e.g. ``{"llm": [...], "retriever": [...], "icl": [...]}``) fits the hierarchical model
    θ_i = Σ_k θ_k[label_k(i)]; each component's latents come back in ``result.components``.

    Identifiability: weak priors (θ or each component latent ~ N(0, 1), b ~ N(0, 3²), log a ~ N(0, 1)), see
    ``IRTPriors``; no standardisation afterwards. The optimiser is scipy L-BFGS-B under ``bounds`` with the exact
    gradient; it stops when the objective's relative decrease falls under ``tol`` or the projected gradient under
    ``gtol`` (``converged`` false when ``max_iter`` ran out). Parameters are preconditioned by √(observations)
    so takers (summed over items) and items (summed over takers) move on comparable scales. ``seed`` drives only
    a 1e-3 jitter of the starting difficulties (ties between identical items), so results are reproducible.
    ``dtype="float32"`` halves memory traffic for very large matrices (sums still accumulate in float64).
    """
    if model not in MODELS:
        raise ValueError(f"fit_irt: model must be one of {MODELS}, got {model!r}")
    bounds = bounds or IRTBounds()
    priors = priors or IRTPriors()
    if priors.c_beta and model == "3pl" and bounds.c[0] <= 0.0:  # the Beta prior's log c needs c > 0
        bounds = IRTBounds(a=bounds.a, b=bounds.b, c=(1e-6, bounds.c[1]))
    y = _validate(responses)
    comps = _component_codes(components, y.shape[0]) if components is not None else None
    prob = _Problem(y, model, comps, priors, np.dtype(dtype))
    rng = np.random.default_rng(seed)
    x0 = _initial(prob, y, bounds, float(np.clip(c_init, *bounds.c)), rng)
    lo, hi = _box(prob, bounds)
    x0 = np.clip(x0, lo, hi)

    scale = _preconditioner(prob, x0)

    def fun(xs):
        f, g = prob.objective(xs / scale)
        return f, g / scale

    res = minimize(
        fun, x0 * scale, jac=True, method="L-BFGS-B", bounds=list(zip(lo * scale, hi * scale)),
        options={"maxiter": max_iter, "maxfun": max_iter * 2, "ftol": tol, "gtol": gtol, "maxcor": 20},
    )
    x = res.x / scale
    a, b, c, lat = prob.split(x)
    a, b, c = np.array(a, dtype=float), np.array(b, dtype=float), np.array(c, dtype=float)
    theta = prob.theta(lat)
    nll = prob.nll_grad(a, b, c, theta)[0]
    pen = prob.penalty(a, b, c)[0]
    theta_se, comp_out = _latent_se(prob, y, a, b, c, theta, lat)
    tol_b = 1e-6
    at_bounds = {}
    for name, vals, (l_, h_), free in (("a", a, bounds.a, prob.free_a), ("b", b, bounds.b, True), ("c", c, bounds.c, prob.free_c)):
        if free:
            at_bounds[name] = int(((vals <= l_ + tol_b) | (vals >= h_ - tol_b)).sum())
    return IRTResult(
        model=model, a=a, b=b, c=c, theta=theta, theta_se=theta_se, neg_log_likelihood=nll, objective=nll + pen,
        n_takers=prob.n, n_items=prob.j, n_observed=prob.n_observed, converged=bool(res.success),
        n_iter=int(res.nit), n_fev=int(res.nfev), message=str(res.message), seed=seed, bounds=bounds, priors=priors,
        components=comp_out, at_bounds=at_bounds,
    )


def _preconditioner(prob: _Problem, x0: np.ndarray) -> np.ndarray:
    """√(diagonal of the expected Fisher information) at the start: L-BFGS-B then sees every parameter on a unit scale."""
    a, b, c, lat = prob.split(x0)
    theta = prob.theta(lat)
    s_ = expit(a * (theta[:, None] - b))
    p = c + (1.0 - c) * s_
    pq = np.clip(p * (1.0 - p), 1e-12, None)
    mask = 1.0 if prob.mask is None else prob.mask
    phi = mask * ((1.0 - c) * s_ * (1.0 - s_)) ** 2 / pq
    parts = []
    if prob.free_a:
        d = theta[:, None] - b
        parts.append((phi * d * d).sum(axis=0))
    parts.append(a * a * phi.sum(axis=0))
    if prob.free_c:
        parts.append((mask * (1.0 - s_) ** 2 / pq).sum(axis=0))
    info_t = phi @ (a * a)
    parts.append(prob.latent_grad(info_t))
    return np.sqrt(np.maximum(np.concatenate(parts), 1e-2))


def _latent_se(prob: _Problem, y, a, b, c, theta, lat):
    """Standard errors of θ and of the centred component latents from the Fisher information given the items."""
    from hcat_pipeline.irt.information import item_information

    info = item_information(theta, a, b, c)  # (n, J)
    info = np.where(np.isnan(y), 0.0, info).sum(axis=1)
    if not prob.comps:
        return 1.0 / np.sqrt(np.maximum(info, 1e-12)), {}
    r = prob.raw_theta(lat)
    sd = r.std() if prob.free_a else 1.0
    design = np.zeros((prob.n, prob.n_latent))
    centre = np.zeros((prob.n_latent, prob.n_latent))
    off = 0
    for _, levels, codes in prob.comps:
        k = len(levels)
        design[np.arange(prob.n), off + codes] = 1.0
        w = np.bincount(codes, minlength=k) / prob.n
        centre[off:off + k, off:off + k] = np.eye(k) - np.outer(np.ones(k), w)
        off += k
    # latents in θ units: ℓ = t / sd, θ = Dℓ − const; Fisher in ℓ is DᵀWD, singular along constants moved between
    # components; the centred latents Cℓ do not depend on those, so cov(Cℓ) = C F⁺ Cᵀ.
    fisher = design.T @ (info[:, None] * design)
    cov = centre @ np.linalg.pinv(fisher) @ centre.T
    values = centre @ (lat / sd)
    theta_se = 1.0 / np.sqrt(np.maximum(info, 1e-12))
    out, off = {}, 0
    for name, levels, codes in prob.comps:
        k = len(levels)
        out[name] = ComponentLatents(name=name, levels=list(levels), values=values[off:off + k],
                                     se=np.sqrt(np.clip(np.diag(cov)[off:off + k], 0.0, None)),
                                     n_takers=np.bincount(codes, minlength=k))
        off += k
    return theta_se, out
