import numpy as np
import pytest

from hcat_pipeline.metrics.aggregation import aggregate
from hcat_pipeline.metrics.groundedness import groundedness_similarity
from hcat_pipeline.metrics.options import ScoreOptions
from hcat_pipeline.metrics.relevancy import answer_relevancy, context_relevancy


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
    # declared by each metric's registration; a method the metric does not define falls back to mean
    minimax, weighted = ScoreOptions(aggregation="minimax"), ScoreOptions(aggregation="weighted")
    assert minimax.method("context_relevancy") == "minimax"
    assert minimax.method("answer_relevancy") == "minimax"
    assert minimax.method("completeness_similarity") == "mean"  # §3.3.1: mean or weighted only
    assert weighted.method("completeness_similarity") == "weighted"
    assert weighted.method("groundedness_similarity") == "mean"  # §3.2.1: simple mean
    per_metric = ScoreOptions.from_kwargs(aggregation={"context_relevancy": "weighted"})
    assert per_metric.method("context_relevancy") == "weighted" and per_metric.method("answer_relevancy") == "mean"
    with pytest.raises(ValueError, match="does not aggregate"):
        minimax.method("pii_leak")  # a count, not a mean over sentences
    with pytest.raises(ValueError, match="median"):
        ScoreOptions(aggregation="median")


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
