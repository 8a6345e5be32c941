import numpy as np
import pytest

from hcat_pipeline.core.metrics.aggregation import aggregate, resolve
from hcat_pipeline.core.metrics.groundedness import groundedness_similarity
from hcat_pipeline.core.metrics.relevancy import answer_relevancy, context_relevancy


def _v(*rows):
    a = np.array(rows, dtype=np.float32)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_aggregations_as_in_the_paper():
    s = [0.9, 0.5, 0.7]
    assert aggregate(s, "mean") == pytest.approx(0.7)
    assert aggregate(s, "weighted", [2, 1, 1]) == pytest.approx((2 * 0.9 + 0.5 + 0.7) / 4)  # normalised weights
    assert aggregate(s, "minimax") == pytest.approx(0.5)
    assert aggregate([], "mean") is None
    with pytest.raises(ValueError):
        aggregate(s, "weighted", [1, -1, 1])
    with pytest.raises(ValueError):
        aggregate(s, "median")


def test_minimax_only_where_the_paper_defines_it():
    assert resolve("context_relevancy", "minimax") == "minimax"
    assert resolve("answer_relevancy", "minimax") == "minimax"
    assert resolve("completeness_similarity", "minimax") == "mean"  # §3.3.1: mean or weighted only
    assert resolve("completeness_similarity", "weighted") == "weighted"
    assert resolve("groundedness_similarity", "weighted") == "mean"  # §3.2.1: simple mean
    assert resolve("context_relevancy", {"context_relevancy": "weighted"}) == "weighted"


def test_context_relevancy_max_similarity_per_query_sentence():
    q = _v([1, 0, 0], [0, 1, 0])
    c = _v([1, 0, 0], [0, 1, 1])
    score, smax = context_relevancy(q, c)
    assert smax == pytest.approx([1.0, 1 / np.sqrt(2)])
    assert score == pytest.approx((1 + 1 / np.sqrt(2)) / 2)
    assert context_relevancy(q, c, "minimax")[0] == pytest.approx(1 / np.sqrt(2))
    assert context_relevancy(q, c[:0])[0] is None


def test_answer_relevancy_and_least_grounded_sentence():
    q = _v([1, 0, 0])
    a = _v([1, 0.1, 0], [0, 0, 1])
    score, smax = answer_relevancy(a, q)
    assert smax[1] == pytest.approx(0.0, abs=1e-6)
    g = groundedness_similarity(a, _v([1, 0, 0], [0, 1, 0]))
    assert g.least_grounded_index == 1  # the sentence orthogonal to every context sentence
    assert g.score == pytest.approx(float(np.mean(g.smax)))
