import polars as pl
import pytest

from hcat_pipeline.metrics.refusal import is_refusal
from hcat_pipeline.responses.retrieval import (
    BM25,
    DISTRACTOR_PREFIX,
    ClosedBook,
    Dense,
    Hybrid,
    Oracle,
    Passage,
    build_retriever,
    inject_distractor,
    reciprocal_rank_fusion,
)
from hcat_pipeline.responses.retrieval_metrics import (
    per_case_retrieval,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    retrieval_metrics_table,
)

IDS = ["c_loop", "c_tuple", "c_exc", "c_dict", "c_file"]
TEXTS = [
    "The while statement repeats the execution of a suite as long as an expression is true.",
    "Tuples are immutable sequences; once created, their items cannot be changed.",
    "The raise statement signals an exception; try and except clauses handle it.",
    "A dictionary maps hashable keys to arbitrary values and supports fast lookup by key.",
    "The open() built-in returns a file object used to read from or write to a file on disk.",
]


@pytest.fixture(scope="module")
def corpus(embedding_model):
    return embedding_model.embed(TEXTS), embedding_model.embed


def test_bm25_finds_the_keyword_chunk():
    r = BM25(IDS, TEXTS)
    got = r.retrieve("what does the raise statement do", k=2)
    assert got[0].chunk_id == "c_exc" and got[0].rank == 1
    assert r.retrieve("zzzz qqqq", k=3) == []  # no term overlap: nothing, rather than noise


def test_dense_finds_the_paraphrase_that_bm25_misses(corpus):
    matrix, embed = corpus
    q = "how can I keep running code again and again until a condition stops holding"
    dense = Dense(IDS, TEXTS, matrix, embed)
    assert dense.retrieve(q, k=1)[0].chunk_id == "c_loop"
    top_bm25 = [p.chunk_id for p in BM25(IDS, TEXTS).retrieve(q, k=1)]
    assert top_bm25 != ["c_loop"]


def test_hybrid_fuses_dense_and_sparse(corpus):
    matrix, embed = corpus
    dense, sparse = Dense(IDS, TEXTS, matrix, embed), BM25(IDS, TEXTS)
    hybrid = Hybrid(dense, sparse, depth=5)
    q = "repeat code while a condition holds; also the raise statement"
    d = [c for c, _ in dense.rankings([q], 5)[0]]
    s = [c for c, _ in sparse.ranking(q, 5)]
    expected = [c for c, _ in reciprocal_rank_fusion([d, s])][:3]
    got = hybrid.retrieve(q, k=3)
    assert [p.chunk_id for p in got] == expected and [p.rank for p in got] == [1, 2, 3]
    assert {"c_loop", "c_exc"} <= {p.chunk_id for p in got}


def test_rrf_hand_worked():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], rrf_k=60)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)
    assert [c for c, _ in fused] == ["a", "c", "b"]


def test_oracle_returns_sources_and_closed_book_none():
    o = Oracle(IDS, TEXTS)
    got = o.retrieve("anything", k=1, source_chunk_ids=["c_dict", "c_file", "unknown"])
    assert [p.chunk_id for p in got] == ["c_dict", "c_file"]  # every source, even beyond k; unknown skipped
    assert got[0].text == TEXTS[3]
    assert ClosedBook().retrieve("anything", k=3, source_chunk_ids=["c_dict"]) == []


def test_build_retriever_shares_indexes_and_rejects_unknown(corpus):
    matrix, embed = corpus
    cache = {}
    h = build_retriever("hybrid", IDS, TEXTS, matrix, embed, cache)
    assert cache["dense"] is h.dense and cache["bm25"] is h.sparse
    with pytest.raises(ValueError, match="unknown retriever"):
        build_retriever("colbert", IDS, TEXTS)
    with pytest.raises(ValueError, match="needs chunk embeddings"):
        build_retriever("dense", IDS, TEXTS, cache={})


def test_distractor_injected_at_a_seeded_position():
    ps = [Passage(c, t, i + 1) for i, (c, t) in enumerate(zip(IDS[:3], TEXTS[:3]))]
    a = inject_distractor(ps, "Tuples can be modified in place.", seed=0, case_id="k1")
    b = inject_distractor(ps, "Tuples can be modified in place.", seed=0, case_id="k1")
    assert a == b and len(a) == 4 and [p.rank for p in a] == [1, 2, 3, 4]
    assert sum(p.chunk_id.startswith(DISTRACTOR_PREFIX) for p in a) == 1
    slots = {[p.chunk_id.startswith(DISTRACTOR_PREFIX) for p in inject_distractor(ps, "x", s, "k1")].index(True) for s in range(30)}
    assert len(slots) > 1  # the position depends on the seed
    assert inject_distractor(ps, None, 0, "k1") == ps


def test_retrieval_metrics_hand_worked():
    assert recall_at_k(["a", "x", "b"], ["a", "b"], 2) == 0.5
    assert recall_at_k(["a", "x", "b"], ["a", "b"], 3) == 1.0
    assert precision_at_k(["a", "x", "b"], ["a", "b"], 2) == 0.5
    assert precision_at_k(["x", "y", "a"], ["a"], 3) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x", "y", "a"], ["a"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x"], ["a"]) == 0.0
    # an injected distractor is not retrieval output
    assert reciprocal_rank([DISTRACTOR_PREFIX + "1", "a"], ["a"]) == 1.0
    assert recall_at_k(["a"], [], 3) is None


def test_retrieval_metrics_table_per_system():
    golden = pl.DataFrame({
        "case_id": ["q1", "q2", "oos1", "oos2"],
        "source_chunk_ids": [["a"], ["b", "c"], [], []],
        "expected_behavior": ["answer", "answer", "abstain", "abstain"],
        "category": ["happy_path", "happy_path", "out_of_scope", "out_of_scope"],
    })
    responses = pl.DataFrame({
        "case_id": ["q1", "q2", "oos1", "oos2"] * 2,
        "system_id": ["bm25"] * 4 + ["closed_book"] * 4,
        "context_chunk_ids": [["a", "x", "y"], ["x", "c", "y"], ["x"], ["y"], [], [], [], []],
        "answer": ["A loop.", "I don't know based on the provided context.", "I don't know.", "It is 42.",
                   "A loop.", "B.", "I cannot answer that.", None],
        "error": [None, None, None, None, None, None, None, "provider: boom"],
    })
    per_case = per_case_retrieval(responses, golden, {"bm25": 3, "closed_book": 3})
    t = retrieval_metrics_table(per_case, ["closed_book"]).to_dicts()
    bm25, cb = t[0], t[1]
    assert bm25["system_id"] == "bm25" and bm25["k"] == 3 and bm25["n_retrieval_cases"] == 2
    assert bm25["recall_at_k"] == pytest.approx((1.0 + 0.5) / 2)
    assert bm25["precision_at_k"] == pytest.approx((1 / 3 + 1 / 3) / 2)
    assert bm25["mrr"] == pytest.approx((1.0 + 0.5) / 2)
    assert bm25["abstention_rate"] == 0.5 and bm25["false_refusal_rate"] == 0.5
    assert cb["recall_at_k"] is None and cb["mrr"] is None
    assert cb["n_failed"] == 1 and cb["n_out_of_scope"] == 1 and cb["abstention_rate"] == 1.0
    assert cb["false_refusal_rate"] == 0.0


@pytest.mark.parametrize("answer,expected", [
    ("I don't know based on the provided context.", True),
    ("I do not know.", True),
    ("The context does not contain information about the stock market.", True),
    ("I'm sorry, but I cannot help with that.", True),
    ("There is no information about this in the passages.", True),
    ("Tuples are immutable: you cannot change their items.", False),
    ("A while loop does not stop until its condition is false.", False),
    ("", False),
    (None, False),
])
def test_is_refusal(answer, expected):
    assert is_refusal(answer) is expected


def test_dense_use_is_a_second_dense_index_and_a_mismatched_encoder_is_refused():
    import numpy as np

    from hcat_pipeline.responses.retrieval import RETRIEVERS, build_retriever

    ids, texts = ["a", "b", "c"], ["alpha", "beta", "gamma"]
    one_hot = np.eye(3, dtype=np.float32)
    use_embed = lambda qs: np.array([one_hot[["alpha", "beta", "gamma"].index(q)] for q in qs])  # noqa: E731
    cache: dict = {}
    r = build_retriever("dense_use", ids, texts, np.zeros((3, 2)), lambda q: np.zeros((len(q), 2)), cache, (one_hot, use_embed))
    assert "dense_use" in RETRIEVERS and r.name == "dense_use"
    assert [p.chunk_id for p in r.retrieve("beta", 1)] == ["b"]
    assert cache["dense_use"] is r and "dense" not in cache  # its own index, not MiniLM's
    with pytest.raises(ValueError, match="needs the multilingual encoder"):
        build_retriever("dense_use", ids, texts, one_hot, use_embed)
    wrong = build_retriever("dense_use", ids, texts, second_dense=(one_hot, lambda q: np.ones((len(q), 384))))
    with pytest.raises(ValueError, match="384 dimensions, the chunk index 3"):
        wrong.retrieve("beta", 1)
