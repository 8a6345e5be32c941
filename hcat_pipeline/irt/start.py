"""Starting point and conditioning of the IRT fit: proportions-correct start, alternating Fisher scoring sweeps,
box bounds, √(diagonal Fisher) preconditioner. Private to ``hcat_pipeline.irt``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit

from hcat_pipeline.irt.likelihood import THETA_LIMIT_TAU, Problem

if TYPE_CHECKING:
    from hcat_pipeline.irt.params import IRTBounds


def _logit(p):
    return np.log(p) - np.log1p(-p)


def initial_point(prob: Problem, y: np.ndarray, bounds: IRTBounds, c0: float, rng: np.random.Generator) -> np.ndarray:
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


def box_bounds(prob: Problem, bounds: IRTBounds) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = [], []
    for free, (l_, h_) in ((prob.free_a, bounds.a), (True, bounds.b), (prob.free_c, bounds.c)):
        if free:
            lo.append(np.full(prob.j, l_))
            hi.append(np.full(prob.j, h_))
    lo.append(np.full(prob.n_latent, -np.inf))
    hi.append(np.full(prob.n_latent, np.inf))
    return np.concatenate(lo), np.concatenate(hi)


def warm_start(prob: Problem, x0: np.ndarray, lo: np.ndarray, hi: np.ndarray, sweeps: int) -> np.ndarray:
    """A few sweeps of alternating Fisher scoring (items given θ: a 3×3 / 2×2 / 1×1 system per item, vectorised; then
    θ given the items), each step clipped into the box. Cheap (≈ 2 objective evaluations a sweep) and it takes the
    start close to the optimum, so L-BFGS-B spends its iterations on the coupled tail only."""
    if sweeps <= 0:
        return x0
    a, b, c, lat = (np.array(v, dtype=float) for v in prob.split(x0))
    dt = prob.dtype
    mask = 1.0 if prob.mask is None else prob.mask
    yf = prob.yf
    for _ in range(sweeps):
        theta = prob.theta(lat)
        for part in ("items", "theta"):
            s = expit(np.multiply.outer(theta.astype(dt), a.astype(dt)) - (a * b).astype(dt))
            p = s * (1.0 - c).astype(dt) + c.astype(dt)
            pq = np.maximum(p * (1.0 - p), 1e-9)
            u = s * (1.0 - s) * (1.0 - c).astype(dt)  # dP/dz
            r = (yf - p * mask) / pq  # ∂loglik/∂P (0 where missing)
            phi = mask * u * u / pq
            ru = r * u
            if part == "items":
                basis = np.vstack([np.ones(prob.n), theta, theta * theta]).astype(dt)
                s_ru = (basis[:2] @ ru).astype(float)  # Σ ru, Σ ru θ
                s_phi = (basis @ phi).astype(float)  # Σ φ, Σ φ θ, Σ φ θ²
                g_b = -a * s_ru[0]  # loglik gradients
                f_bb = a * a * s_phi[0]
                grads, fish = [g_b], [[f_bb]]
                if prob.free_a:
                    g_a = s_ru[1] - b * s_ru[0]
                    f_aa = s_phi[2] - 2 * b * s_phi[1] + b * b * s_phi[0]
                    f_ab = -a * (s_phi[1] - b * s_phi[0])
                    grads, fish = [g_a, g_b], [[f_aa, f_ab], [f_ab, f_bb]]
                if prob.free_c:
                    one_s = 1.0 - s
                    psi = mask * u * one_s / pq
                    s_psi = (basis[:2] @ psi).astype(float)
                    g_c = (prob.ones_n @ (r * one_s)).astype(float)
                    f_cc = (prob.ones_n @ (mask * one_s * one_s / pq)).astype(float)
                    f_bc = -a * s_psi[0]
                    row_c = ([s_psi[1] - b * s_psi[0]] if prob.free_a else []) + [f_bc]
                    fish = [fr + [rc] for fr, rc in zip(fish, row_c)] + [row_c + [f_cc]]
                    grads = grads + [g_c]
                # the weak priors: gradient and curvature added to the diagonal
                pr = prob.priors
                k0 = 1 if prob.free_a else 0
                if pr.b_sd:
                    grads[k0] = grads[k0] - b / pr.b_sd**2
                    fish[k0][k0] = fish[k0][k0] + 1.0 / pr.b_sd**2
                if pr.log_a_sd and prob.free_a:
                    grads[0] = grads[0] - np.log(a) / (pr.log_a_sd**2 * a)
                    fish[0][0] = fish[0][0] + 1.0 / (pr.log_a_sd**2 * a * a)
                if pr.c_beta and prob.free_c:
                    al, be = pr.c_beta
                    grads[-1] = grads[-1] + (al - 1.0) / c - (be - 1.0) / (1.0 - c)
                    fish[-1][-1] = fish[-1][-1] + (al - 1.0) / c**2 + (be - 1.0) / (1.0 - c) ** 2
                g = np.stack(grads, axis=-1)  # (J, k)
                f = np.stack([np.stack(row, axis=-1) for row in fish], axis=-2)  # (J, k, k)
                k = g.shape[1]
                f = f + np.eye(k) * (1e-3 * np.einsum("jii->ji", f)[:, :, None] + 1e-6)  # Levenberg damping
                step = np.clip(np.linalg.solve(f, g[..., None])[..., 0], -1.0, 1.0)
                new = [b + step[:, 1 if prob.free_a else 0]]
                if prob.free_a:
                    new = [a + step[:, 0]] + new
                if prob.free_c:
                    new = new + [c + step[:, -1]]
                xs = np.clip(np.concatenate(new + [lat]), lo, hi)
                a, b, c, lat = (np.array(v, dtype=float) for v in prob.split(xs))
            else:
                _, g_pt = prob.theta_penalty(theta)
                g_t = (ru @ a.astype(dt)).astype(float) - g_pt
                i_t = (phi @ (a * a).astype(dt)).astype(float) + 1e-6 + (g_pt != 0) / THETA_LIMIT_TAU**2
                if prob.comps:
                    design = _design(prob)
                    fisher = design.T @ (i_t[:, None] * design)
                    step = np.clip(np.linalg.lstsq(fisher, design.T @ g_t, rcond=None)[0], -1.0, 1.0)  # θ units
                    lat = lat + step * (prob.raw_theta(lat).std() if prob.free_a else 1.0)
                    moved = theta + design @ step
                else:
                    moved = theta + np.clip(g_t / i_t, -1.0, 1.0)
                # re-standardise; the items absorb the change of scale (P unchanged): b' = (b − m)/s, a' = a·s
                m, sd = moved.mean(), (moved.std() if prob.free_a else 1.0)
                if not prob.comps:
                    lat = (moved - m) / sd
                b = (b - m) / sd
                if prob.free_a:
                    a = a * sd
                xs = np.clip(np.concatenate(([a] if prob.free_a else []) + [b] + ([c] if prob.free_c else []) + [lat]), lo, hi)
                a, b, c, lat = (np.array(v, dtype=float) for v in prob.split(xs))
                theta = prob.theta(lat)
    return np.concatenate(([a] if prob.free_a else []) + [b] + ([c] if prob.free_c else []) + [lat])


def _design(prob: Problem) -> np.ndarray:
    design = np.zeros((prob.n, prob.n_latent))
    off = 0
    for _, levels, codes in prob.comps:
        design[np.arange(prob.n), off + codes] = 1.0
        off += len(levels)
    return design


def preconditioner(prob: Problem, x0: np.ndarray) -> np.ndarray:
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
