"""Joint maximum-a-posteriori fit of 1PL / 2PL / 3PL and hierarchical IRT models (exam paper §3.3-3.4, App. B.1).

P_j(θ_i) = c_j + (1 − c_j) σ(a_j (θ_i − b_j)); hierarchical: θ_i = Σ_k u_k[level_k(i)] (llm + retriever + icl, or
any other components). The negative log-likelihood of eq. 2 (missing responses skipped) plus weak priors is
minimised by scipy's L-BFGS-B under box bounds, with the analytic gradient computed in one vectorised pass
over the taker × item matrix (no Python loop over items, no finite differences).

Identifiability: θ is standardised inside the model, at every step (θ = (r − mean r) / sd r over the takers,
r the free latents; 1PL: centred only, its a = 1 fixes the scale). That removes exactly the directions the
likelihood leaves free (θ → kθ + m, b → kb + m, a → a / k), so no prior has to hold them and L-BFGS-B does not
crawl along a flat ridge. In the hierarchical model a constant moved from one component to another leaves θ
unchanged; the reported component latents are centred per component (see ``ComponentLatents``).
Weak priors (``IRTPriors``) only regularise: c ~ Beta(2, 8), log a ~ N(0, 1.5²), b ~ N(0, 4²) and a soft
limit |θ| ≲ 4 (a taker at the guessing floor would otherwise run to −∞). The paper tried similar priors
(App. B.1). ``neg_log_likelihood`` is the data term alone (eq. 2, comparable across fitters); ``objective``
adds the priors.

Speed: start from proportions correct, then a few sweeps of alternating Fisher scoring (vectorised 3×3 solves
per item, then θ), then L-BFGS-B preconditioned by √(diagonal Fisher information); one objective evaluation is
~14 passes over the matrix (float32 for ≥ 1e6 cells). See benchmarks/irt_benchmark.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.optimize import minimize

from hcat_pipeline.irt.information import item_information
from hcat_pipeline.irt.likelihood import Problem, component_codes, validate_responses
from hcat_pipeline.irt.params import IRTBounds, IRTPriors, irt_probability  # noqa: F401 (re-exported)
from hcat_pipeline.irt.start import box_bounds, initial_point, preconditioner, warm_start

Model = Literal["3pl", "2pl", "1pl"]
MODELS: tuple[str, ...] = ("3pl", "2pl", "1pl")
FLOAT32_FROM_CELLS = 1_000_000  # dtype="auto": float32 from this many cells (sums still accumulate in float64)


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
    dtype: Literal["auto", "float64", "float32"] = "auto",
    warm_sweeps: int = 5,
) -> IRTResult:
    """Fit an IRT model to a takers × items 0/1 matrix (NaN = missing) by penalised joint maximum likelihood.

    ``model``: "3pl" (a, b, c free), "2pl" (c = 0), "1pl" (a = 1, c = 0). ``components`` (one label per taker for
    each component, e.g. ``{"llm": [...], "retriever": [...], "icl": [...]}``) fits the hierarchical model
    θ_i = Σ_k θ_k[label_k(i)]; each component's latents come back in ``result.components``.

    Identifiability: θ standardised (mean 0, sd 1 over takers) at every step, plus weak regularising priors
    (``IRTPriors``; module docstring). The optimiser is scipy L-BFGS-B under the box ``bounds`` on a, b, c with the
    exact gradient; it stops when the objective's relative decrease falls under ``tol`` or the projected gradient
    under ``gtol`` (``converged`` false when ``max_iter`` ran out). Parameters are preconditioned by √(diagonal
    Fisher information) so takers (summed over items) and items (summed over takers) move on comparable scales. ``seed`` drives only
    a 1e-3 jitter of the starting difficulties (ties between identical items), so results are reproducible.
    ``dtype="auto"`` computes in float32 from 1e6 cells up (half the memory traffic; sums accumulate in float64).
    ``warm_sweeps`` sweeps of alternating Fisher scoring (items | θ, then θ | items) precede L-BFGS-B.
    """
    if model not in MODELS:
        raise ValueError(f"fit_irt: model must be one of {MODELS}, got {model!r}")
    bounds = bounds or IRTBounds()
    priors = priors or IRTPriors()
    if priors.c_beta and model == "3pl" and bounds.c[0] <= 0.0:  # the Beta prior's log c needs c > 0
        bounds = IRTBounds(a=bounds.a, b=bounds.b, c=(1e-6, bounds.c[1]))
    y = validate_responses(responses)
    comps = component_codes(components, y.shape[0]) if components is not None else None
    if dtype == "auto":
        dtype = "float32" if y.size >= FLOAT32_FROM_CELLS else "float64"
    prob = Problem(y, model, comps, priors, np.dtype(dtype))
    rng = np.random.default_rng(seed)
    x0 = initial_point(prob, y, bounds, float(np.clip(c_init, *bounds.c)), rng)
    lo, hi = box_bounds(prob, bounds)
    x0 = np.clip(x0, lo, hi)

    x0 = warm_start(prob, x0, lo, hi, warm_sweeps)
    scale = preconditioner(prob, x0)

    def fun(xs):
        f, g = prob.objective(xs / scale)
        return f, g / scale

    res = minimize(
        fun, x0 * scale, jac=True, method="L-BFGS-B", bounds=list(zip(lo * scale, hi * scale)),
        options={"maxiter": max_iter, "maxfun": max_iter * 2, "ftol": tol, "gtol": gtol, "maxcor": 20},
    )
    # L-BFGS-B keeps the box in the preconditioned coordinates; dividing by the scale can move a value at its bound
    # by the last bit (c = 0.19999999999999998 under a bound of 0.2), so the parameters are clipped back exactly.
    x = np.clip(res.x / scale, lo, hi)
    a, b, c, lat = prob.split(x)
    a, b, c = np.array(a, dtype=float), np.array(b, dtype=float), np.array(c, dtype=float)
    theta = prob.theta(lat)
    nll = prob.nll_grad(a, b, c, theta)[0]
    pen = prob.penalty(a, b, c)[0] + prob.theta_penalty(theta)[0]
    theta_se, comp_out = _latent_se(prob, y, a, b, c, theta, lat)
    at_bounds = _at_bounds(prob, bounds, a, b, c)
    return IRTResult(
        model=model, a=a, b=b, c=c, theta=theta, theta_se=theta_se, neg_log_likelihood=nll, objective=nll + pen,
        n_takers=prob.n, n_items=prob.j, n_observed=prob.n_observed, converged=bool(res.success),
        n_iter=int(res.nit), n_fev=int(res.nfev), message=str(res.message), seed=seed, bounds=bounds, priors=priors,
        components=comp_out, at_bounds=at_bounds,
    )


AT_BOUND_TOL = 1e-6  # a parameter this close to its bound (or clipped onto it) counts as at the bound


def _at_bounds(prob: Problem, bounds: IRTBounds, a, b, c) -> dict[str, int]:
    """Free item parameters at (or within ``AT_BOUND_TOL`` of) a bound of their box, per parameter; a value clipped
    back onto its bound after the preconditioned fit equals the bound and so is counted."""
    out = {}
    for name, vals, (l_, h_), free in (("a", a, bounds.a, prob.free_a), ("b", b, bounds.b, True), ("c", c, bounds.c, prob.free_c)):
        if free:
            out[name] = int(((vals <= l_ + AT_BOUND_TOL) | (vals >= h_ - AT_BOUND_TOL)).sum())
    return out


def _latent_se(prob: Problem, y, a, b, c, theta, lat):
    """Standard errors of θ and of the centred component latents from the Fisher information given the items."""
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
