import numpy as np
import polars as pl
import pytest
from sklearn.datasets import make_blobs

from hcat_pipeline.corpus.strata import (
    NOISE_STRATUM,
    StrataParams,
    build_strata,
    ctfidf_terms,
    handle_noise,
    plot_strata,
    reduce_dimensions,
    renumber_by_size,
    select_k_by_silhouette,
)
from hcat_pipeline.schemas import TOPIC_STRATA, conform

WORDS = {
    0: "loan interest rate mortgage repayment",
    1: "card fraud chargeback dispute merchant",
    2: "deposit savings account balance withdrawal",
    3: "python loop iterator generator yield",
    4: "pension retirement annuity contribution vesting",
}
SHARED = "the customer bank policy process request"


def _corpus(n_per=(120, 80, 60, 40, 20), dim=48, seed=3):
    """Blobs in a 48-d space with texts whose distinctive words depend on the blob."""
    x, y = make_blobs(n_samples=list(n_per), n_features=dim, cluster_std=1.0, center_box=(-10, 10), random_state=seed)
    rng = np.random.default_rng(seed)
    texts = []
    for lab in y:
        own = WORDS[int(lab)].split()
        texts.append(" ".join(list(rng.choice(own, 4)) + SHARED.split() + list(rng.choice(SHARED.split(), 3))))
    ids = [f"c{i:04d}" for i in range(len(y))]
    return ids, texts, x.astype(np.float32), y


def test_silhouette_finds_the_number_of_blobs():
    x, _ = make_blobs(n_samples=600, centers=5, n_features=10, cluster_std=0.8, random_state=7)
    k, scores, labels = select_k_by_silhouette(x, 2, 9, seed=0, sample_size=300)
    assert k == 5
    assert set(scores) == set(range(2, 10)) and max(scores, key=scores.get) == 5
    assert len(set(labels.tolist())) == 5


def test_build_strata_pca_kmeans_recovers_topics_with_labels_and_sizes():
    ids, texts, x, y = _corpus()
    res = build_strata(ids, texts, x, StrataParams(reduction="pca", n_components=5, k_min=2, k_max=8))
    frame = conform(res.frame, TOPIC_STRATA)
    assert frame["chunk_id"].to_list() == ids
    assert res.chosen_k == 5 and res.strata.height == 5
    # strata are numbered by decreasing size and each one is exactly one generating blob
    assert res.strata["size"].to_list() == [120, 80, 60, 40, 20]
    pairs = set(zip(frame["stratum"].to_list(), y.tolist()))
    assert len(pairs) == 5
    # the c-TF-IDF label of every stratum is made of that blob's own words, never the shared ones
    blob_of = dict(pairs)
    for s, label in zip(res.strata["stratum"], res.strata["stratum_label"]):
        terms = label.split(", ")
        assert len(terms) == 4
        assert set(terms) <= set(WORDS[blob_of[s]].split())
    assert abs(res.strata["share"].sum() - 1) < 1e-9
    assert res.silhouette is not None and res.silhouette > 0.5


def test_fixed_k_and_determinism():
    ids, texts, x, _ = _corpus()
    p = StrataParams(reduction="pca", n_components=4, n_clusters=3, seed=11)
    a = build_strata(ids, texts, x, p)
    b = build_strata(ids, texts, x, p)
    assert a.frame.equals(b.frame) and a.strata.equals(b.strata)
    assert a.chosen_k == 3 and a.frame["stratum"].n_unique() == 3


def test_umap_path_is_seeded():
    ids, texts, x, y = _corpus(n_per=(60, 50, 40), dim=32)
    p = StrataParams(reduction="umap", n_components=3, umap_n_neighbors=10, k_min=2, k_max=5, umap_n_epochs=100, seed=5)
    a = build_strata(ids, texts, x, p)
    b = build_strata(ids, texts, x, p)
    assert a.frame.equals(b.frame)
    assert a.chosen_k == 3
    assert len(set(zip(a.frame["stratum"].to_list(), y.tolist()))) == 3
    assert np.isfinite(a.frame["x"].to_numpy()).all()


def _blobs_with_outliers():
    x, y = make_blobs(n_samples=[80, 60, 40], n_features=2, cluster_std=0.4, centers=[(0, 0), (6, 0), (0, 6)], random_state=2)
    outliers = np.array([[10.0, -5.0], [9.0, 9.0], [-4.0, -4.0], [6.0, 4.0]])
    return np.vstack([x, outliers]).astype(np.float32), y


@pytest.mark.parametrize("clustering", ["dbscan", "hdbscan"])
def test_noise_own_stratum_and_nearest(clustering):
    x, y = _blobs_with_outliers()
    words = {0: "alpha beta", 1: "gamma delta", 2: "epsilon zeta"}
    texts = [words[int(lab)] for lab in y] + ["stray word"] * 4
    ids = [f"c{i}" for i in range(len(x))]
    common = dict(reduction="pca", n_components=2, clustering=clustering, dbscan_eps=0.8, dbscan_min_samples=5,
                  hdbscan_min_cluster_size=15, plot_projection="pca")
    own = build_strata(ids, texts, x, StrataParams(noise="own_stratum", **common))
    assert own.n_noise >= 4
    strata = own.frame["stratum"].to_numpy()
    assert (strata[-4:] == NOISE_STRATUM).all()
    assert sorted(set(strata.tolist())) == [NOISE_STRATUM, 0, 1, 2]
    noise_label = own.strata.filter(pl.col("stratum") == NOISE_STRATUM)["stratum_label"].item()
    assert noise_label.startswith("noise: ")

    near = build_strata(ids, texts, x, StrataParams(noise="nearest", **common))
    s = near.frame["stratum"].to_numpy()
    assert NOISE_STRATUM not in s and sorted(set(s.tolist())) == [0, 1, 2]
    # (6, 4) is closest to the (6, 0) blob, (-4, -4) to the (0, 0) blob
    first = {lab: int(np.flatnonzero(y == lab)[0]) for lab in (0, 1, 2)}
    assert s[-1] == s[first[1]] and s[-2] == s[first[0]]
    # and the clusters themselves are the blobs
    assert len(set(zip(s[: len(y)].tolist(), y.tolist()))) == 3
    assert near.frame.height == own.frame.height


def test_handle_noise_rules():
    x = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0], [4.0, 4.0], [0.5, 0.5]])
    labels = np.array([0, 0, 1, 1, -1, -1])
    assert handle_noise(x, labels, "own_stratum").tolist() == labels.tolist()
    assert handle_noise(x, labels, "nearest").tolist() == [0, 0, 1, 1, 1, 0]
    with pytest.raises(ValueError, match="every point is noise"):
        handle_noise(x, np.full(6, -1), "nearest")
    with pytest.raises(ValueError, match="noise mode"):
        handle_noise(x, labels, "drop")


def test_renumber_by_size_keeps_noise():
    assert renumber_by_size(np.array([7, 3, 3, -1, 3, 7, 9])).tolist() == [1, 0, 0, -1, 0, 1, 2]


def test_ctfidf_prefers_distinctive_over_frequent_terms():
    texts = [
        "the account interest loan loan",  # class 0
        "the account interest loan mortgage",
        "the account card card fraud",  # class 1
        "the account card chargeback",
    ]
    terms = ctfidf_terms(texts, [0, 0, 1, 1], top_n=2)
    # "account" is in every class and "the" is a stop word: neither labels a class; "interest" (a
    # scikit-learn stop word) is kept as the domain word it is
    assert terms[0] == ["loan", "interest"]
    assert terms[1] == ["card", "chargeback"]


def test_invalid_parameters_are_rejected():
    ids, texts, x, _ = _corpus(n_per=(10, 10))
    with pytest.raises(ValueError, match="reduction"):
        build_strata(ids, texts, x, StrataParams(reduction="tsne"))
    with pytest.raises(ValueError, match="clustering"):
        build_strata(ids, texts, x, StrataParams(clustering="spectral"))
    with pytest.raises(ValueError, match="one embedding per chunk"):
        build_strata(ids[:-1], texts, x, StrataParams(reduction="pca"))


def test_pca_reduction_is_sign_stable_and_plot_is_written(tmp_path):
    ids, texts, x, _ = _corpus(n_per=(30, 30, 30))
    a = reduce_dimensions(x, "pca", 3, seed=0)
    b = reduce_dimensions(x[::-1].copy(), "pca", 3, seed=0)[::-1]
    assert np.allclose(a, b, atol=1e-4)
    res = build_strata(ids, texts, x, StrataParams(reduction="pca", n_components=3, k_min=2, k_max=4))
    png = plot_strata(res.frame, tmp_path / "sub" / "topic_strata.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_labels_stay_unique_when_terms_repeat():
    x, _ = make_blobs(n_samples=90, centers=3, n_features=8, random_state=1)
    res = build_strata([f"c{i}" for i in range(90)], ["alpha words"] * 90, x, StrataParams(reduction="pca", n_clusters=3))
    assert res.strata["stratum_label"].to_list() == ["alpha, words", "alpha, words [1]", "alpha, words [2]"]


def test_a_corpus_of_two_or_three_chunks_still_gets_strata_and_a_2d_layout():
    import numpy as np

    from hcat_pipeline.corpus.strata import StrataParams, build_strata

    rng = np.random.default_rng(0)
    for n in (2, 3):
        emb = rng.normal(size=(n, 16)).astype(np.float32)
        frame = build_strata([f"c{i}" for i in range(n)], [f"text about topic {i}" for i in range(n)], emb, StrataParams()).frame
        assert frame.height == n and frame["x"].is_not_null().all() and frame["y"].is_not_null().all()
