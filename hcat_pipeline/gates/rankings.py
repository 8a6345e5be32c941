"""Pairwise rankings of systems from per-case outcomes (golden-eval §3.6), pure core.

``pairwise_matches(frame, metric)``: for every case and every unordered pair of systems that both have
a score on it, one match — 1 (first wins), 0.5 (tie: |difference| ≤ ``tie_margin``) or 0.
``rank_systems(frame, metric)`` → one row per method × system (``RANKINGS``):

* ``elo`` — K = 24, initial 1500, as §3.6 names it: every *ordered* pair of systems on a common case contributes one
  update (A vs B and B vs A); order-independent: the mean over ``n_perm`` seeded permutations of the update order
  (vectorised over permutations in numpy; each bootstrap sample averages ``n_perm_boot`` orders);
* ``bradley_terry`` — maximum-likelihood log-strengths from the pairwise win matrix (ties count half
  a win each way), ``choix.ilsr_pairwise_dense`` (iterative Luce spectral ranking, converges to the
  MLE) with a small ridge ``bt_alpha`` so a system that wins everything stays finite; centred (sum 0);
* ``trueskill`` — Bayesian Gaussian skill, mu = 25, sigma = 25/3, beta = 25/6, tau = 25/300, the standard 1v1
  update equations (Herbrich, Minka & Graepel 2006: the truncated-Gaussian v / w functions, a draw margin from
  ``ts_draw_probability`` for ties), vectorised over bootstrap samples in numpy (``scipy.special`` for the Gaussian
  tails; the ``trueskill`` package has had no release since 2018). Rating = mu, with mu ± 3σ too; TrueSkill depends on the match
  order (one order to another moves every mu together by ~±1 here): the point is the mean over ``n_perm`` seeded
  orders, each bootstrap sample one order (its CI then also holds the order noise: conservative).

Every rating has a bootstrap CI (cases resampled with replacement, B = 1000 and seed 42 as golden-eval §6.6 says,
the whole ranking refitted per sample) and the rank distribution: the share of bootstrap samples in which the
system holds each rank (1 = best). ``pairwise_table`` gives wins / ties / losses per pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import choix
import numpy as np
import polars as pl
from scipy.special import log_ndtr, ndtr, ndtri

from hcat_pipeline.schemas import SYSTEM_RANKINGS as RANKINGS

METHODS = ("elo", "bradley_terry", "trueskill")


@dataclass(frozen=True)
class RankingConfig:
    """Every default of the rankers (one place)."""

    tie_margin: float = 0.0  # |score difference| ≤ margin ⇒ tie
    elo_k: float = 24.0
    elo_initial: float = 1500.0
    n_perm: int = 20  # Elo: permutations of the match order averaged (point estimate)
    n_perm_boot: int = 2  # … per bootstrap sample (its CI then also holds a little order noise: conservative)
    bt_alpha: float = 0.01  # Bradley-Terry ridge (keeps a clean sweep finite)
    ts_mu: float = 25.0
    ts_sigma: float = 25.0 / 3
    ts_beta: float = 25.0 / 6
    ts_tau: float = 25.0 / 300
    ts_draw_probability: float = 0.10  # TrueSkill's draw margin ε = Φ⁻¹((p + 1) / 2) · √2 · β (the reference default)
    n_boot: int = 1000  # bootstrap samples of cases, every method (golden-eval §6.6: B = 1000)
    confidence: float = 0.95
    seed: int = 42


@dataclass(frozen=True)
class Matches:
    """Pairwise matches: ``case`` index, system indices ``a`` < ``b``, ``s`` = score of a (1 / 0.5 / 0)."""

    systems: list[str]
    cases: list[str]
    case: np.ndarray
    a: np.ndarray
    b: np.ndarray
    s: np.ndarray

    def take_cases(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The matches of the cases ``idx`` (with repeats, as a bootstrap sample draws them)."""
        order = np.argsort(self.case, kind="stable")
        starts = np.searchsorted(self.case[order], np.arange(len(self.cases) + 1))
        pick = np.concatenate([order[starts[c]:starts[c + 1]] for c in idx]) if len(idx) else np.zeros(0, int)
        return self.a[pick], self.b[pick], self.s[pick]


def pairwise_matches(frame: pl.DataFrame, metric: str, *, tie_margin: float = 0.0, higher_is_better: bool = True) -> Matches:
    """Matches from a case × system table with a ``metric`` column (null scores sit the case out)."""
    for col in ("case_id", "system_id", metric):
        if col not in frame.columns:
            raise ValueError(f"pairwise_matches: column {col!r} missing (columns: {', '.join(frame.columns)})")
    data = frame.select("case_id", "system_id", pl.col(metric).cast(pl.Float64).alias("_v")).drop_nulls("_v")
    dup = data.group_by("case_id", "system_id").len().filter(pl.col("len") > 1)
    if dup.height:
        raise ValueError(f"pairwise_matches: {dup.height} case × system pairs appear more than once (e.g. {dup.row(0)})")
    systems = sorted(data["system_id"].unique().to_list())
    cases = sorted(data["case_id"].unique().to_list())
    wide = data.pivot(on="system_id", index="case_id", values="_v").sort("case_id")
    mat = wide.select(systems).to_numpy().astype(float)
    if not higher_is_better:
        mat = -mat
    rows = []
    for i in range(len(systems)):
        for j in range(i + 1, len(systems)):
            ok = ~np.isnan(mat[:, i]) & ~np.isnan(mat[:, j])
            d = mat[ok, i] - mat[ok, j]
            s = np.where(np.abs(d) <= tie_margin, 0.5, (d > 0).astype(float))
            rows.append((np.flatnonzero(ok), np.full(ok.sum(), i), np.full(ok.sum(), j), s))
    if not rows:
        empty = np.zeros(0, int)
        return Matches(systems, cases, empty, empty, empty, empty.astype(float))
    c, a, b, s = (np.concatenate(x) for x in zip(*rows))
    return Matches(systems, cases, c.astype(int), a.astype(int), b.astype(int), s.astype(float))


# ------------------------------------------------------------------------------------------- fitters
def elo_batch(a_list: list[np.ndarray], b_list: list[np.ndarray], s_list: list[np.ndarray], k_sys: int, cfg: RankingConfig,
              rng: np.random.Generator, perms: int) -> np.ndarray:  # fmt: skip
    """Elo ratings (len(a_list), k_sys): each match list averaged over ``perms`` seeded orders, vectorised."""
    n_lists = len(a_list)
    m = max((len(x) for x in a_list), default=0)
    batch = n_lists * perms
    A, B, S, W = (np.zeros((batch, m), int), np.zeros((batch, m), int), np.zeros((batch, m)), np.zeros((batch, m)))
    for li, (a, b, s) in enumerate(zip(a_list, b_list, s_list)):
        for p in range(perms):
            row, order = li * perms + p, rng.permutation(len(a))
            A[row, : len(a)], B[row, : len(a)], S[row, : len(a)], W[row, : len(a)] = a[order], b[order], s[order], 1.0
    R = np.full((batch, k_sys), cfg.elo_initial)
    idx = np.arange(batch)
    for t in range(m):
        ra, rb = R[idx, A[:, t]], R[idx, B[:, t]]
        delta = cfg.elo_k * W[:, t] * (S[:, t] - 1.0 / (1.0 + 10.0 ** ((rb - ra) / 400.0)))
        R[idx, A[:, t]] += delta  # one (row, system) pair per row: plain fancy indexing is safe
        R[idx, B[:, t]] -= delta
    return R.reshape(n_lists, perms, k_sys).mean(axis=1)


def bradley_terry(a: np.ndarray, b: np.ndarray, s: np.ndarray, k_sys: int, cfg: RankingConfig) -> np.ndarray:
    """Centred log-strengths (choix ILSR on the dense win matrix; a tie is half a win each way)."""
    wins = np.zeros((k_sys, k_sys))
    np.add.at(wins, (a, b), s)
    np.add.at(wins, (b, a), 1.0 - s)
    if k_sys < 2 or wins.sum() == 0:
        return np.zeros(k_sys)
    params = choix.ilsr_pairwise_dense(wins, alpha=cfg.bt_alpha)
    return params - params.mean()


def _v_w(t: np.ndarray, e: np.ndarray, draw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TrueSkill's truncated-Gaussian corrections (v, w) for a win (t = (μ_winner − μ_loser) / c) or a draw, e = ε / c."""
    x = t - e
    v_win = np.exp(-0.5 * x * x - 0.5 * np.log(2 * np.pi) - log_ndtr(x))  # φ(x) / Φ(x), stable in the tail
    w_win = v_win * (v_win + x)
    at = np.abs(t)
    a, b = e - at, -e - at
    denom = np.maximum(ndtr(a) - ndtr(b), 1e-300)
    pdf_a, pdf_b = np.exp(-0.5 * a * a) / np.sqrt(2 * np.pi), np.exp(-0.5 * b * b) / np.sqrt(2 * np.pi)
    v_abs = (pdf_b - pdf_a) / denom
    v_draw = np.where(t < 0, -v_abs, v_abs)
    w_draw = v_abs**2 + (a * pdf_a - b * pdf_b) / denom
    return np.where(draw, v_draw, v_win), np.where(draw, w_draw, w_win)


def trueskill_batch(a_list: list[np.ndarray], b_list: list[np.ndarray], s_list: list[np.ndarray], k_sys: int, cfg: RankingConfig,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(mu, sigma), each (len(a_list), k_sys): the standard TrueSkill 1v1 update over each match list in a seeded order,
    all lists at once (one numpy step per match position); a tie is a draw."""
    n_lists, m = len(a_list), max((len(x) for x in a_list), default=0)
    A, B, S, W = np.zeros((n_lists, m), int), np.zeros((n_lists, m), int), np.zeros((n_lists, m)), np.zeros((n_lists, m), bool)
    for li, (a, b, s) in enumerate(zip(a_list, b_list, s_list, strict=True)):
        order = rng.permutation(len(a))
        A[li, : len(a)], B[li, : len(a)], S[li, : len(a)], W[li, : len(a)] = a[order], b[order], s[order], True
    mu, var = np.full((n_lists, k_sys), cfg.ts_mu), np.full((n_lists, k_sys), cfg.ts_sigma**2)
    eps = ndtri((cfg.ts_draw_probability + 1) / 2) * np.sqrt(2) * cfg.ts_beta
    idx = np.arange(n_lists)
    for t in range(m):
        live = W[:, t]
        win_i = np.where(S[:, t] >= 0.5, A[:, t], B[:, t])  # the winner (a draw: a, either way gives the same update)
        lose_i = np.where(S[:, t] >= 0.5, B[:, t], A[:, t])
        vw, vl = var[idx, win_i] + cfg.ts_tau**2, var[idx, lose_i] + cfg.ts_tau**2
        c = np.sqrt(2 * cfg.ts_beta**2 + vw + vl)
        v, w = _v_w((mu[idx, win_i] - mu[idx, lose_i]) / c, eps / c, S[:, t] == 0.5)
        mu[idx, win_i] += np.where(live, vw / c * v, 0.0)
        mu[idx, lose_i] -= np.where(live, vl / c * v, 0.0)
        var[idx, win_i] = np.where(live, vw * (1 - vw / c**2 * w), var[idx, win_i])
        var[idx, lose_i] = np.where(live, vl * (1 - vl / c**2 * w), var[idx, lose_i])
    return mu, np.sqrt(var)


# ------------------------------------------------------------------------------------------- rankings
RANK_DECIMALS = 9  # ratings closer than 1e-9 share a rank (float noise, not a difference)


def rank_positions(ratings: np.ndarray) -> np.ndarray:
    """Rank (1 = best) of each column per row; ties share the better rank.

    Ratings are compared at ``RANK_DECIMALS`` decimals: two systems tied in theory (a symmetric win matrix) get
    ratings that differ in their last bits by the solver's summation order, which must not decide a rank."""
    r = np.round(ratings, RANK_DECIMALS)
    return (r[:, None, :] > r[:, :, None]).sum(axis=2) + 1


def pairwise_table(m: Matches) -> pl.DataFrame:
    """Per pair of systems: n cases, wins of each, ties, and the win rate of the first (ties half)."""
    rows = []
    for i in range(len(m.systems)):
        for j in range(i + 1, len(m.systems)):
            sel = (m.a == i) & (m.b == j)
            s = m.s[sel]
            rows.append({"system_a": m.systems[i], "system_b": m.systems[j], "n": int(sel.sum()), "a_wins": int((s == 1).sum()),
                         "ties": int((s == 0.5).sum()), "b_wins": int((s == 0).sum()),
                         "a_win_rate": float(s.mean()) if s.size else None})  # fmt: skip
    return pl.DataFrame(rows, schema={"system_a": pl.String, "system_b": pl.String, "n": pl.Int64, "a_wins": pl.Int64,
                                      "ties": pl.Int64, "b_wins": pl.Int64, "a_win_rate": pl.Float64})  # fmt: skip


def rank_systems(frame: pl.DataFrame, metric: str, methods: tuple[str, ...] = METHODS, config: RankingConfig | None = None,
                 *, higher_is_better: bool = True) -> pl.DataFrame:  # fmt: skip
    """``RANKINGS`` rows: rating, bootstrap CI, rank and rank distribution per method × system."""
    cfg = config or RankingConfig()
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"rank_systems: unknown methods {sorted(unknown)}; choose from {METHODS}")
    m = pairwise_matches(frame, metric, tie_margin=cfg.tie_margin, higher_is_better=higher_is_better)
    k, n_cases = len(m.systems), len(m.cases)
    if k < 2 or len(m.s) == 0:
        raise ValueError(f"rank_systems: need at least 2 systems with scores on shared cases (systems {m.systems}, {len(m.s)} matches)")
    rng = np.random.default_rng(cfg.seed)
    wins = np.zeros(k)
    ties = np.zeros(k, int)
    np.add.at(wins, m.a, (m.s == 1).astype(float))
    np.add.at(wins, m.b, (m.s == 0).astype(float))
    np.add.at(ties, m.a, (m.s == 0.5).astype(int))
    np.add.at(ties, m.b, (m.s == 0.5).astype(int))
    games = np.bincount(m.a, minlength=k) + np.bincount(m.b, minlength=k)
    alpha = 1.0 - cfg.confidence
    rows = []
    for method in methods:
        n_boot = cfg.n_boot
        samples = [rng.integers(0, n_cases, n_cases) for _ in range(n_boot)]
        boot_matches = [m.take_cases(idx) for idx in samples]
        sigma = np.full(k, np.nan)
        if method == "elo":  # every ordered pair: the match and its mirror
            ordered = [(np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([s, 1.0 - s])) for a, b, s in [(m.a, m.b, m.s), *boot_matches]]
            point = elo_batch(*(list(x) for x in zip(*ordered[:1])), k, cfg, rng, cfg.n_perm)[0]
            boot = elo_batch(*(list(x) for x in zip(*ordered[1:])), k, cfg, rng, cfg.n_perm_boot) if n_boot else np.zeros((0, k))
        elif method == "bradley_terry":
            point = bradley_terry(m.a, m.b, m.s, k, cfg)
            boot = np.array([bradley_terry(a, b, s, k, cfg) for a, b, s in boot_matches]).reshape(-1, k)
        else:
            mus, sigmas = trueskill_batch([m.a] * cfg.n_perm, [m.b] * cfg.n_perm, [m.s] * cfg.n_perm, k, cfg, rng)
            point, sigma = mus.mean(axis=0), sigmas.mean(axis=0)  # the mean over n_perm orders (TrueSkill depends on the order)
            boot = trueskill_batch(*(list(x) for x in zip(*boot_matches)), k, cfg, rng)[0] if n_boot else np.zeros((0, k))
        rank = rank_positions(point[None, :])[0]
        dist = np.stack([(rank_positions(boot) == r).mean(axis=0) for r in range(1, k + 1)], axis=1) if len(boot) else np.full((k, k), np.nan)
        lo, hi = (np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=0) if len(boot) else (np.full(k, np.nan),) * 2)
        for i, sys in enumerate(m.systems):
            rows.append({"method": method, "system_id": sys, "rating": float(point[i]), "ci_low": float(lo[i]), "ci_high": float(hi[i]),
                         "rank": int(rank[i]), "rank_distribution": [float(x) for x in dist[i]], "p_best": float(dist[i][0]),
                         "sigma": float(sigma[i]), "n_cases": n_cases, "n_matches": int(games[i]), "wins": float(wins[i]),
                         "ties": int(ties[i]), "losses": float(games[i] - wins[i] - ties[i]), "n_boot": n_boot, "metric": metric})  # fmt: skip
    return pl.DataFrame(rows, schema=RANKINGS)


def bt_win_probability(strength_a: float, strength_b: float) -> float:
    """P(a beats b) under Bradley-Terry log-strengths."""
    return float(1.0 / (1.0 + np.exp(strength_b - strength_a)))
