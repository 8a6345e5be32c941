"""Pairwise rankings of systems from per-case outcomes (golden-eval §3.6), pure core.

``pairwise_matches(frame, metric)``: for every case and every unordered pair of systems that both have
a score on it, one match — 1 (first wins), 0.5 (tie: |difference| ≤ ``tie_margin``) or 0.
``rank_systems(frame, metric)`` → one row per method × system (``RANKINGS``):

* ``elo`` — K = 24, initial 1500, one update per match; order-independent: the mean over
  ``n_perm`` seeded permutations of the match order (vectorised over permutations in numpy; each
  bootstrap sample averages ``n_perm_boot`` orders);
* ``bradley_terry`` — maximum-likelihood log-strengths from the pairwise win matrix (ties count half
  a win each way), ``choix.ilsr_pairwise_dense`` (iterative Luce spectral ranking, converges to the
  MLE) with a small ridge ``bt_alpha`` so a system that wins everything stays finite; centred (sum 0);
* ``trueskill`` — Bayesian Gaussian skill, mu = 25, sigma = 25/3, beta = 25/6, tau = 25/300, draws
  for ties, via ``openskill``'s ``ThurstoneMostellerFull`` (Weng & Lin's closed-form TrueSkill-style
  update; the ``trueskill`` package has had no release since 2018). Rating = mu, with mu ± 3σ too.

Every rating has a bootstrap CI (cases resampled with replacement, B and seed configurable, the whole
ranking refitted per sample) and the rank distribution: the share of bootstrap samples in which the
system holds each rank (1 = best). ``pairwise_table`` gives wins / ties / losses per pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import choix
import numpy as np
import polars as pl

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
    n_boot: int = 1000  # bootstrap samples of cases (Elo, Bradley-Terry)
    ts_n_boot: int = 100  # TrueSkill is a sequential pure-Python update (~50 µs per match): fewer samples
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


def trueskill(a: np.ndarray, b: np.ndarray, s: np.ndarray, k_sys: int, cfg: RankingConfig, order: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(mu, sigma) per system after the matches in ``order`` (openskill ThurstoneMostellerFull; ties are draws)."""
    from openskill.models import ThurstoneMostellerFull

    model = ThurstoneMostellerFull(mu=cfg.ts_mu, sigma=cfg.ts_sigma, beta=cfg.ts_beta, tau=cfg.ts_tau)
    players = [model.rating() for _ in range(k_sys)]
    for t in order if order is not None else range(len(a)):
        i, j, r = a[t], b[t], s[t]
        ranks = [0, 0] if r == 0.5 else ([0, 1] if r == 1.0 else [1, 0])
        [[players[i]], [players[j]]] = model.rate([[players[i]], [players[j]]], ranks=ranks)
    return np.array([p.mu for p in players]), np.array([p.sigma for p in players])


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
        n_boot = cfg.ts_n_boot if method == "trueskill" else cfg.n_boot
        samples = [rng.integers(0, n_cases, n_cases) for _ in range(n_boot)]
        boot_matches = [m.take_cases(idx) for idx in samples]
        sigma = np.full(k, np.nan)
        if method == "elo":
            point = elo_batch([m.a], [m.b], [m.s], k, cfg, rng, cfg.n_perm)[0]
            boot = elo_batch(*(list(x) for x in zip(*boot_matches)), k, cfg, rng, cfg.n_perm_boot) if n_boot else np.zeros((0, k))
        elif method == "bradley_terry":
            point = bradley_terry(m.a, m.b, m.s, k, cfg)
            boot = np.array([bradley_terry(a, b, s, k, cfg) for a, b, s in boot_matches]).reshape(-1, k)
        else:
            point, sigma = trueskill(m.a, m.b, m.s, k, cfg, order=rng.permutation(len(m.s)))
            boot = np.array([trueskill(a, b, s, k, cfg, order=rng.permutation(len(s)))[0] for a, b, s in boot_matches]).reshape(-1, k)
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
