import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from hcat_pipeline.metrics.completeness import completeness, distance_matrix, mean_pairwise_distance, wasserstein_distance


def _unit(rng, n, d=16):
    v = rng.normal(size=(n, d))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
@pytest.mark.parametrize("n", [2, 5, 9])
def test_exact_wasserstein_equals_assignment_on_equal_uniform_sets(metric, n):
    # with n points on each side and weights 1/n, the optimal plan is a permutation (Birkhoff), so
    # W = (1/n) * min-cost assignment: an independent computation (Hungarian algorithm)
    rng = np.random.default_rng(n)
    c, a = _unit(rng, n), _unit(rng, n)
    cost = distance_matrix(c @ a.T, metric)
    rows, cols = linear_sum_assignment(cost)
    expected = cost[rows, cols].sum() / n
    assert wasserstein_distance(cost) == pytest.approx(expected, abs=1e-9)
    # the paper's mean-pairwise approximation uses the uniform product plan: never below the optimum
    assert mean_pairwise_distance(cost) >= wasserstein_distance(cost) - 1e-12


def test_distance_definitions():
    sim = np.array([[1.0, 0.0, -1.0]])
    assert distance_matrix(sim, "cosine").tolist() == [[0.0, 1.0, 2.0]]
    assert distance_matrix(sim, "euclidean") == pytest.approx(np.array([[0.0, np.sqrt(2), 2.0]]))
    with pytest.raises(ValueError):
        distance_matrix(sim, "manhattan")


def test_unequal_sizes_single_answer_sentence_is_mean_distance():
    # k = 1: the only transport plan sends every context sentence (1/n each) to the one answer sentence
    cost = np.array([[0.2], [0.4], [0.9]])
    assert wasserstein_distance(cost) == pytest.approx(0.5)
    # n = 4 context, k = 2 answer: half the mass to each answer sentence; optimum pairs the cheap ones
    cost = np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    assert wasserstein_distance(cost) == pytest.approx(0.0)
    assert mean_pairwise_distance(cost) == pytest.approx(0.5)


def test_completeness_coverage_and_uncovered_sentences():
    e = np.eye(4, dtype=np.float32)
    context = e[[0, 1, 2]]  # three context sentences, orthogonal
    answer = e[[0, 1]]  # the answer covers the first two only
    c = completeness(context, answer, coverage_threshold=0.5)
    assert c.smax.tolist() == [1.0, 1.0, 0.0]
    assert c.score == pytest.approx(2 / 3)
    assert c.uncovered == [2]
    # W: 1/3 of mass (sentence 2) must travel distance 1 (cosine), the rest ties at 0 except the
    # answer side needs 1/2 each: plan c0→a0 1/3, c1→a1 1/3, c2→{a0,a1} 1/6 each at cost 1 → 1/3
    assert c.wasserstein == pytest.approx(1 / 3)
    assert c.wasserstein_approx == pytest.approx((0 + 1 + 1 + 0 + 1 + 1) / 6)
    weighted = completeness(context, answer, "weighted", weights=np.array([1.0, 1.0, 2.0]))
    assert weighted.score == pytest.approx(0.5)
    assert completeness(context, answer[:0]).score is None
