"""Stage 2 split conformal: q̂ by hand, the four binary cases, q̂ = +∞, finite-sample coverage."""

import math

import numpy as np
import pytest

from hcat_pipeline.calibration import SplitConformal, conformal_rank, coverage, set_labels


def _holdout(scores, labels):
    """Binary hold-out with the given non-conformity scores: label 1 → f = 1 − s, label 0 → f = s."""
    scores, labels = np.asarray(scores), np.asarray(labels)
    return np.where(labels == 1, 1 - scores, scores), labels


def test_rank_is_ceil_n_plus_1_times_1_minus_alpha():
    assert conformal_rank(9, 0.2) == 8  # ⌈10 · 0.8⌉
    assert conformal_rank(19, 0.1) == 18
    assert conformal_rank(50, 0.1) == 46  # ⌈45.9⌉
    assert conformal_rank(9, 0.7) == 3  # 10 · 0.3 = 3.0000000000000004 in floating point: still 3
    assert conformal_rank(3, 0.1) == 4  # > n: q̂ = +∞
    with pytest.raises(ValueError):
        conformal_rank(10, 0.0)


def test_four_binary_cases_by_hand_q_below_half():
    # n = 9, α = 0.2 → q̂ = 8th smallest of the scores below = 0.40 (not 0.35 nor 0.90)
    scores = [0.35, 0.05, 0.90, 0.15, 0.25, 0.10, 0.40, 0.20, 0.30]
    f, y = _holdout(scores, [1, 0, 1, 0, 1, 0, 0, 1, 0])
    cp = SplitConformal(alpha=0.2).fit(f, y)
    assert cp.qhat == pytest.approx(0.40)
    assert not cp.trivial
    # q̂ < 0.5: {1} when f ≥ 1 − q̂ = 0.6, {0} when f ≤ q̂ = 0.4, ∅ in between
    test_f = np.array([0.80, 0.60, 0.20, 0.0, 0.50, 0.45])
    sets = cp.predict_sets(test_f)
    assert set_labels(sets) == ["{1}", "{1}", "{0}", "{0}", "∅", "∅"]
    # the paper's conditions: {0} when f < min(q̂, 1−q̂); {1} when f > max(q̂, 1−q̂); ∅ when q̂ < f < 1−q̂
    q = cp.qhat
    assert test_f[2] < min(q, 1 - q) and test_f[0] > max(q, 1 - q) and q < test_f[4] < 1 - q


def test_both_class_set_when_q_above_half():
    scores = [0.10, 0.20, 0.30, 0.40, 0.50, 0.60, 0.65, 0.70, 0.95]
    f, y = _holdout(scores, [0, 1, 0, 1, 0, 1, 0, 1, 0])
    cp = SplitConformal(alpha=0.2).fit(f, y)
    assert cp.qhat == pytest.approx(0.70)
    sets = cp.predict_sets(np.array([0.50, 0.31, 0.69, 0.90, 0.10]))
    # 1 − q̂ = 0.3 ≤ f ≤ q̂ = 0.7 → {0,1}; above 0.7 → {1}; below 0.3 → {0}; ∅ cannot occur
    assert set_labels(sets) == ["{0,1}", "{0,1}", "{0,1}", "{1}", "{0}"]
    assert sets.dtype == bool and sets.shape == (5, 2)


def test_probs_as_two_columns_equal_probs_as_p1():
    f, y = _holdout([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], [1, 0] * 4 + [1])
    a = SplitConformal(0.2).fit(f, y)
    b = SplitConformal(0.2).fit(np.column_stack([1 - f, f]), y)
    assert a.qhat == b.qhat
    new = np.linspace(0, 1, 11)
    assert np.array_equal(a.predict_sets(new), b.predict_sets(np.column_stack([1 - new, new])))


def test_too_few_holdout_labels_give_infinite_qhat_and_full_sets():
    f, y = _holdout([0.1, 0.2, 0.3], [1, 0, 1])
    cp = SplitConformal(alpha=0.1).fit(f, y)  # ⌈4 · 0.9⌉ = 4 > 3
    assert math.isinf(cp.qhat) and cp.trivial
    assert cp.predict_sets(np.array([0.0, 0.5, 1.0])).all()
    assert cp.summary()["qhat"] is None and cp.summary()["rank"] == 4
    # 9 labels are enough at α = 0.1: ⌈10 · 0.9⌉ = 9 ≤ 9 (the largest score)
    f9, y9 = _holdout(np.linspace(0.05, 0.45, 9), [1] * 9)
    cp9 = SplitConformal(alpha=0.1).fit(f9, y9)
    assert cp9.qhat == pytest.approx(0.45)


def test_ordinal_sets_include_label_k_iff_prob_at_least_1_minus_qhat():
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])
    y = np.array([0, 1, 2, 1, 2])  # scores 0.3, 0.4, 0.4, 0.6, 0.4
    cp = SplitConformal(alpha=0.4).fit(probs, y)  # ⌈6 · 0.6⌉ = 4th smallest = 0.4
    assert cp.qhat == pytest.approx(0.4)
    sets = cp.predict_sets(np.array([[0.6, 0.3, 0.1], [0.3, 0.35, 0.35]]))
    assert sets.tolist() == [[True, False, False], [False, False, False]]


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        SplitConformal(alpha=1.5)
    with pytest.raises(ValueError):
        SplitConformal(0.1).fit(np.array([[0.5, 0.5]]), np.array([2]))
    with pytest.raises(RuntimeError):
        SplitConformal(0.1).predict_sets(np.array([0.5]))
    cp = SplitConformal(0.1).fit(np.full((20, 3), 1 / 3), np.zeros(20, int))
    with pytest.raises(ValueError):
        cp.predict_sets(np.full((2, 2), 0.5))


def _binary_draw(rng, n):
    x = rng.uniform(size=n)
    y = (rng.uniform(size=n) < x).astype(int)  # P(Y = 1 | x) = x
    f = np.clip(x**0.6, 0, 1)  # a miscalibrated Stage 1: the guarantee must not depend on it
    return f, y


@pytest.mark.parametrize("n,exact", [(19, 18 / 20), (50, 46 / 51)])
def test_finite_sample_coverage_binary(n, exact):
    alpha, reps, n_test = 0.1, 200, 1000
    rng = np.random.default_rng(12345 + n)
    cov = []
    for _ in range(reps):
        f_cal, y_cal = _binary_draw(rng, n)
        f_test, y_test = _binary_draw(rng, n_test)
        cov.append(coverage(SplitConformal(alpha).fit(f_cal, y_cal).predict_sets(f_test), y_test))
    mean = float(np.mean(cov))
    assert 1 - alpha - 0.01 <= mean <= 1 - alpha + 1 / (n + 1) + 0.01, mean
    # with continuous scores E[coverage] is exactly rank/(n+1): an off-by-one rank moves it by 1/(n+1)
    assert abs(mean - exact) < 0.01, mean


def test_finite_sample_coverage_ordinal_k5():
    alpha, n, reps, n_test, k = 0.2, 30, 200, 1000, 5
    rng = np.random.default_rng(7)

    def draw(m):
        x = rng.uniform(size=m)
        y = np.clip(np.floor(5 * x + rng.normal(0, 0.8, m)), 0, k - 1).astype(int)
        logits = -((np.arange(k)[None, :] - 5 * x[:, None] + 0.5) ** 2)  # a rough Stage 1 model
        p = np.exp(logits)
        return p / p.sum(1, keepdims=True), y

    cov = []
    for _ in range(reps):
        p_cal, y_cal = draw(n)
        p_test, y_test = draw(n_test)
        cov.append(coverage(SplitConformal(alpha).fit(p_cal, y_cal).predict_sets(p_test), y_test))
    mean = float(np.mean(cov))
    assert 1 - alpha - 0.01 <= mean <= 1 - alpha + 1 / (n + 1) + 0.01, mean
    assert abs(mean - 25 / 31) < 0.01, mean  # ⌈31 · 0.8⌉ = 25
