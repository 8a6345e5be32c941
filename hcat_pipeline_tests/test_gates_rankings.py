"""Rankings (Elo / Bradley-Terry / TrueSkill) agree with per-case wins and carry CIs and rank distributions."""

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.gates.rankings import RankingConfig, pairwise_matches, pairwise_table, rank_systems

FAST = RankingConfig(n_boot=200)


def _frame(n_cases=40, seed=0, gaps=(("A", 0.3), ("B", 0.15), ("C", 0.0))):
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(n_cases):
        base = rng.uniform(0, 1)
        rows += [{"case_id": f"c{c}", "system_id": s, "score": base + q + rng.normal(0, 0.1)} for s, q in gaps]
    return pl.DataFrame(rows)


def test_rankings_agree_with_per_case_wins():
    frame = _frame()
    out = rank_systems(frame, "score", config=FAST)
    m = pairwise_matches(frame, "score")
    wins = {s: 0.0 for s in m.systems}
    for a, b, s in zip(m.a, m.b, m.s):
        wins[m.systems[a]] += s
        wins[m.systems[b]] += 1 - s
    by_wins = sorted(wins, key=wins.get, reverse=True)
    assert by_wins == ["A", "B", "C"]
    for method in ("elo", "bradley_terry", "trueskill"):
        part = out.filter(pl.col("method") == method).sort("rank")
        assert part["system_id"].to_list() == by_wins, method
        assert (part["ci_low"] <= part["rating"]).all() and (part["rating"] <= part["ci_high"]).all(), method
        dist = np.array(part["rank_distribution"].to_list())
        assert np.allclose(dist.sum(axis=1), 1.0) and np.allclose(dist.sum(axis=0), 1.0)
        assert part["p_best"][0] > 0.8
    bt = out.filter(pl.col("method") == "bradley_terry")
    assert abs(bt["rating"].sum()) < 1e-9  # sum-to-zero anchoring


def test_close_systems_share_the_rank_distribution():
    frame = _frame(n_cases=30, gaps=(("A", 0.0), ("B", 0.0), ("C", -0.5)))
    out = rank_systems(frame, "score", methods=("bradley_terry",), config=FAST).sort("system_id")
    p_best = dict(zip(out["system_id"], out["p_best"]))
    assert 0.15 < p_best["A"] < 0.85 and 0.15 < p_best["B"] < 0.85 and p_best["C"] == 0.0


def test_ties_missing_scores_and_determinism():
    frame = pl.DataFrame({"case_id": ["c1", "c1", "c2", "c2", "c3", "c3", "c3"], "system_id": ["A", "B", "A", "B", "A", "B", "C"],
                          "score": [1.0, 1.0, 0.9, 0.5, None, 0.2, 0.1]})  # fmt: skip
    table = pairwise_table(pairwise_matches(frame, "score")).sort("system_a", "system_b")
    ab = table.row(0, named=True)
    assert (ab["n"], ab["a_wins"], ab["ties"], ab["b_wins"], ab["a_win_rate"]) == (2, 1, 1, 0, 0.75)
    assert table.filter((pl.col("system_a") == "B") & (pl.col("system_b") == "C"))["a_wins"].to_list() == [1]
    assert pairwise_table(pairwise_matches(frame, "score", tie_margin=0.5))["ties"][0] == 2
    once = rank_systems(_frame(), "score", config=FAST)
    assert once.equals(rank_systems(_frame(), "score", config=FAST))
    lower = rank_systems(_frame(), "score", methods=("elo",), config=FAST, higher_is_better=False).sort("rank")
    assert lower["system_id"].to_list() == ["C", "B", "A"]


def test_bad_input_is_an_error():
    with pytest.raises(ValueError, match="column 'score' missing"):
        rank_systems(pl.DataFrame({"case_id": ["c"], "system_id": ["A"]}), "score")
    with pytest.raises(ValueError, match="at least 2 systems"):
        rank_systems(pl.DataFrame({"case_id": ["c"], "system_id": ["A"], "score": [1.0]}), "score")
    with pytest.raises(ValueError, match="more than once"):
        rank_systems(pl.DataFrame({"case_id": ["c", "c"], "system_id": ["A", "A"], "score": [1.0, 0.0]}), "score")


def test_ratings_equal_up_to_float_noise_share_a_rank():
    from hcat_pipeline.gates.rankings import rank_positions

    # a symmetric win matrix gives tied systems ratings that differ only in their last bits (solver summation order)
    ratings = np.array([[0.3, 0.3 + 1e-15, -0.6], [0.3, 0.3 - 1e-15, -0.6], [0.5, 0.1, -0.6]])
    assert rank_positions(ratings).tolist() == [[1, 1, 3], [1, 1, 3], [1, 2, 3]]


def test_trueskill_is_the_standard_1v1_update_and_elo_counts_ordered_pairs():
    """golden-eval §3.6 as named: TrueSkill's standard 1v1 update (from the defaults one win gives 29.396 / 7.171 and a
    draw 25.000 / 6.458, the reference implementation's documented values); Elo: one update per ordered pair."""
    import polars as pl

    from hcat_pipeline.gates.rankings import rank_systems, trueskill_batch

    rng = np.random.default_rng(0)
    one = (np.array([0]), np.array([1]))
    mu, sigma = trueskill_batch([one[0]], [one[1]], [np.array([1.0])], 2, RankingConfig(), rng)
    assert np.allclose(mu[0], [29.396, 20.604], atol=1e-3) and np.allclose(sigma[0], [7.171, 7.171], atol=1e-3)
    mu, sigma = trueskill_batch([one[0]], [one[1]], [np.array([0.5])], 2, RankingConfig(), rng)
    assert np.allclose(mu[0], [25.0, 25.0]) and np.allclose(sigma[0], [6.458, 6.458], atol=1e-3)
    # one case, a beats b: two ordered updates of K 24 from 1500 — a: +12 then +12·(1 − 1/(1+10^(−12/400)·…)) ≈ 1523.6
    frame = pl.DataFrame({"case_id": ["c1", "c1"], "system_id": ["a", "b"], "score": [1.0, 0.0]})
    elo = rank_systems(frame, "score", methods=("elo",), config=RankingConfig(n_boot=10, n_perm=1)).sort("system_id")
    assert elo["rating"][0] > 1512.0 + 11.0 and abs(elo["rating"][0] + elo["rating"][1] - 3000.0) < 1e-9
    assert set(rank_systems(frame, "score", methods=("trueskill",), config=RankingConfig(n_boot=1000))["n_boot"]) == {1000}
