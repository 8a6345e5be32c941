import polars as pl
import pytest

from hcat_pipeline.corpus.sampling import allocate, coverage_table, resolve_weights, stratified_sample

SIZES = {0: 500, 1: 300, 2: 150, 3: 40, 4: 8, 5: 2}


def _strata(sizes=SIZES):
    rows = [(f"s{s}-c{i:04d}", s, f"topic {s}") for s, n in sizes.items() for i in range(n)]
    return pl.DataFrame(rows, schema={"chunk_id": pl.String, "stratum": pl.Int32, "stratum_label": pl.String}, orient="row")


def test_proportional_sums_to_n_and_tracks_shares():
    a = allocate(SIZES, 100, "proportional", min_per_stratum=0)
    assert a.total == sum(a.counts.values()) == 100 and a.grown_by == 0
    total = sum(SIZES.values())
    for s, n in SIZES.items():
        assert abs(a.counts[s] - 100 * n / total) < 1  # largest remainder: within one of the exact quota
    assert a.counts == {0: 50, 1: 30, 2: 15, 3: 4, 4: 1, 5: 0}


def test_min_per_stratum_keeps_niche_topics_and_still_sums_to_n():
    a = allocate(SIZES, 24, "proportional", min_per_stratum=3)
    assert a.total == 24
    assert a.counts[4] == 3 and a.counts[5] == 2  # the minimum, or all a tiny stratum has
    assert all(a.counts[s] >= min(3, n) for s, n in SIZES.items())
    assert a.counts[0] > a.counts[1] > a.counts[2] >= a.counts[3]


def test_sample_grows_when_minimums_exceed_n_and_caps_at_the_corpus():
    a = allocate(SIZES, 5, "proportional", min_per_stratum=2)
    assert a.total == 12 and a.grown_by == 7 and a.counts == {s: 2 for s in SIZES}
    c = allocate(SIZES, 5, "proportional", min_per_stratum=3)
    assert c.total == 17 and c.counts[5] == 2  # a 2-chunk stratum gives all it has
    b = allocate({0: 3, 1: 2}, 50, "equal")
    assert b.counts == {0: 3, 1: 2} and b.capped_by == 45


def test_equal_allocation_redistributes_what_small_strata_cannot_take():
    a = allocate(SIZES, 60, "equal")
    assert a.total == 60
    assert a.counts[5] == 2 and a.counts[4] == 8  # capped at their sizes
    assert sorted(a.counts[s] for s in (0, 1, 2, 3)) == [12, 12, 13, 13]
    assert allocate({0: 100, 1: 100, 2: 100}, 9, "equal").counts == {0: 3, 1: 3, 2: 3}


def test_weighted_allocation_honours_weights_by_label_and_id():
    sizes = {0: 100, 1: 100, 2: 100}
    w = resolve_weights({"Topic 1": 3, "2": 0}, {0: "topic 0", 1: "topic 1", 2: "topic 2"})
    assert w == {0: 1.0, 1: 3.0, 2: 0.0}
    a = allocate(sizes, 21, "weighted", w, min_per_stratum=1)
    assert a.counts == {0: 5, 1: 15, 2: 1}  # weight 0 keeps only the minimum; 1:3 split of the rest
    assert allocate(sizes, 20, "weighted", {0: 1, 1: 1, 2: 1}, 0).counts == allocate(sizes, 20, "proportional", None, 0).counts
    with pytest.raises(ValueError, match="unknown strata"):
        resolve_weights({"topic 9": 2}, {0: "topic 0"})
    with pytest.raises(ValueError, match=">= 0"):
        resolve_weights({"0": -1}, {0: "topic 0"})
    with pytest.raises(ValueError, match="allocation"):
        allocate(sizes, 5, "neyman")


def test_stratified_sample_is_seeded_order_independent_and_interleaved():
    strata = _strata()
    s1, alloc = stratified_sample(strata, 24, "proportional", min_per_stratum=1, seed=3)
    s2, _ = stratified_sample(strata.sample(fraction=1.0, shuffle=True, seed=99), 24, "proportional", min_per_stratum=1, seed=3)
    assert s1.equals(s2)
    s3, _ = stratified_sample(strata, 24, "proportional", min_per_stratum=1, seed=4)
    assert set(s3["chunk_id"]) != set(s1["chunk_id"])
    assert s1.height == 24 and s1["chunk_id"].n_unique() == 24
    assert s1["sample_rank"].dtype == pl.Int32 and s1["sample_rank"].to_list() == list(range(24))
    assert dict(s1.group_by("stratum").len().iter_rows()) == {s: c for s, c in alloc.counts.items() if c}
    assert set(s1["stratum"]) == set(SIZES)  # every stratum, even the 2-chunk one
    # round-robin ranking: the first 6 ranks cover all 6 strata, the next ones the strata with more draws
    assert s1.head(6)["stratum"].to_list() == [0, 1, 2, 3, 4, 5]
    assert s1.head(8)["stratum"].to_list()[6:] == [0, 1]
    # every sampled chunk really belongs to its stratum
    assert (s1["chunk_id"].str.split("-").list.first() == ("s" + s1["stratum"].cast(pl.String))).all()


def test_weights_need_weighted_allocation():
    with pytest.raises(ValueError, match="weighted"):
        stratified_sample(_strata(), 10, "proportional", weights={"topic 1": 2})


def test_coverage_table_compares_corpus_and_sample_shares():
    strata = _strata()
    sample, _ = stratified_sample(strata, 40, "equal", seed=0)
    cov = coverage_table(strata, sample)
    assert cov["stratum"].to_list() == sorted(SIZES)
    assert cov["corpus_chunks"].to_list() == [SIZES[s] for s in sorted(SIZES)]
    assert cov["sampled_chunks"].sum() == 40
    assert abs(cov["corpus_share"].sum() - 1) < 1e-9 and abs(cov["sample_share"].sum() - 1) < 1e-9
    # equal allocation over-represents the niche topic relative to its corpus share
    row = cov.filter(pl.col("stratum") == 4)
    assert row["sample_share"].item() > row["corpus_share"].item() and row["sample_to_corpus"].item() > 1


def test_reserve_chunks_are_unsampled_seeded_and_order_free():
    from hcat_pipeline.corpus.sampling import reserve_chunks

    strata = _strata()
    sample, _ = stratified_sample(strata, 24, min_per_stratum=1, seed=0)
    res = reserve_chunks(strata, sample, per_stratum=2, seed=0)
    assert not set(res["chunk_id"]) & set(sample["chunk_id"])
    per = dict(res.group_by("stratum").len().iter_rows())
    assert per == {s: min(2, n - int((sample["stratum"] == s).sum())) for s, n in SIZES.items() if n - int((sample["stratum"] == s).sum()) > 0}
    assert res.filter(pl.col("stratum") == 0)["reserve_rank"].to_list() == [0, 1]
    shuffled = reserve_chunks(strata.sample(fraction=1.0, shuffle=True, seed=3), sample, per_stratum=2, seed=0)
    assert shuffled.sort("chunk_id").equals(res.sort("chunk_id"))
    assert reserve_chunks(strata, sample, per_stratum=2, seed=1)["chunk_id"].to_list() != res["chunk_id"].to_list()
