"""Stage 1 calibrators on simulated data: better than raw scores, proper (n, K) rows, monotone."""

import numpy as np
import pytest
from sklearn.base import clone

from hcat_pipeline.calibration import Calibrator, brier_score, expected_calibration_error


def _binary(rng, n):
    s = rng.uniform(size=n)
    p_true = 1 / (1 + np.exp(-10 * (s - 0.65)))  # the raw score is far from a probability
    return s, (rng.uniform(size=n) < p_true).astype(int)


CUTS = np.array([1.5, 3.5, 4.5, 6.5])


def _ordinal(rng, n, k=5):
    s = rng.uniform(size=n)
    latent = 8 * s + rng.logistic(size=n)
    return s, np.digitize(latent, CUTS).clip(0, k - 1)


def _ordinal_truth(s):
    cdf = 1 / (1 + np.exp(-(CUTS[None, :] - 8 * s[:, None])))  # P(Y ≤ k)
    return np.diff(np.column_stack([np.zeros(len(s)), cdf, np.ones(len(s))]), axis=1)


@pytest.mark.parametrize("method", ["platt", "isotonic", "ordinal"])
def test_binary_calibration_beats_raw_scores(method):
    rng = np.random.default_rng(1)
    s_fit, y_fit = _binary(rng, 800)
    s_test, y_test = _binary(rng, 5000)
    cal = Calibrator(method=method).fit(s_fit, y_fit)
    p = cal.predict_proba(s_test)
    assert p.shape == (5000, 2) and np.allclose(p.sum(1), 1)
    raw_ece, raw_brier = expected_calibration_error(s_test, y_test), brier_score(s_test, y_test)
    ece, brier = expected_calibration_error(p, y_test), brier_score(p, y_test)
    assert raw_ece > 0.1  # the simulation is miscalibrated to begin with
    assert ece < 0.04 and ece < raw_ece / 3, (ece, raw_ece)
    assert brier < raw_brier - 0.02, (brier, raw_brier)
    # column 1 is P(Y = 1), increasing in the score here
    grid = cal.predict_proba(np.linspace(0, 1, 21))[:, 1]
    assert np.all(np.diff(grid) >= -1e-12) and grid[-1] - grid[0] > 0.8


@pytest.mark.parametrize("method", ["ordinal", "isotonic", "platt"])
def test_ordinal_k5_rows_sum_to_one_and_beat_baselines(method):
    rng = np.random.default_rng(2)
    s_fit, y_fit = _ordinal(rng, 1000)
    s_test, y_test = _ordinal(rng, 5000)
    cal = Calibrator(method=method, n_classes=5).fit(s_fit, y_fit)
    p = cal.predict_proba(s_test)
    assert p.shape == (5000, 5) and np.allclose(p.sum(1), 1) and (p >= 0).all()
    base = np.tile(np.bincount(y_fit, minlength=5) / len(y_fit), (len(y_test), 1))  # ignores the score
    raw = np.eye(5)[np.clip(np.round(4 * s_test), 0, 4).astype(int)]  # raw score read as a level
    brier, oracle = brier_score(p, y_test), brier_score(_ordinal_truth(s_test), y_test)
    assert brier < brier_score(base, y_test) - 0.15
    assert brier < brier_score(raw, y_test) - 0.15
    assert brier < oracle + 0.015, (brier, oracle)  # close to the true conditional distribution
    assert expected_calibration_error(p, y_test) < 0.04


@pytest.mark.parametrize("method", ["ordinal", "isotonic"])
def test_ordinal_probabilities_are_monotone_in_the_score(method):
    rng = np.random.default_rng(3)
    s, y = _ordinal(rng, 1500)
    p = Calibrator(method=method).fit(s, y).predict_proba(np.linspace(-0.1, 1.1, 121))
    cumulative = np.cumsum(p[:, ::-1], axis=1)[:, ::-1]  # P(Y ≥ k)
    assert np.all(np.diff(cumulative, axis=0) >= -1e-9)  # every P(Y ≥ k) non-decreasing in the score
    expected = p @ np.arange(5)
    assert np.all(np.diff(expected) >= -1e-9) and expected[-1] - expected[0] > 3


def test_isotonic_auto_direction_follows_a_decreasing_score():
    rng = np.random.default_rng(4)
    s, y = _binary(rng, 800)
    cal = Calibrator("isotonic").fit(1 - s, y)
    assert cal.increasing_ is False
    p1 = cal.predict_proba(np.linspace(0, 1, 11))[:, 1]
    assert np.all(np.diff(p1) <= 1e-12) and p1[0] - p1[-1] > 0.8


@pytest.mark.parametrize("method", ["platt", "ordinal"])
def test_several_metric_columns_are_used(method):
    rng = np.random.default_rng(5)

    def draw(n):
        x = rng.uniform(size=(n, 2))
        p = 1 / (1 + np.exp(-(6 * x[:, 0] + 6 * x[:, 1] - 6)))
        return x, (rng.uniform(size=n) < p).astype(int)

    x_fit, y_fit = draw(1000)
    x_test, y_test = draw(5000)
    both = Calibrator(method).fit(x_fit, y_fit)
    one = Calibrator(method).fit(x_fit[:, 0], y_fit)
    p_both = both.predict_proba(x_test)
    assert p_both.shape == (5000, 2) and both.n_features_in_ == 2
    assert brier_score(p_both, y_test) < brier_score(one.predict_proba(x_test[:, 0]), y_test) - 0.03
    with pytest.raises(ValueError, match="2 score column"):
        both.predict_proba(x_test[:, 0])


def test_isotonic_refuses_several_columns():
    with pytest.raises(ValueError, match="one score column"):
        Calibrator("isotonic").fit(np.random.default_rng(0).uniform(size=(20, 2)), np.tile([0, 1], 10))


@pytest.mark.parametrize("method", ["platt", "isotonic", "ordinal"])
def test_a_class_absent_from_the_sample_gets_probability_zero(method):
    rng = np.random.default_rng(6)
    s, y = _ordinal(rng, 600)
    keep = y < 4
    cal = Calibrator(method, n_classes=5).fit(s[keep], y[keep])
    p = cal.predict_proba(np.linspace(0, 1, 11))
    assert p.shape == (11, 5) and np.allclose(p[:, 4], 0) and np.allclose(p.sum(1), 1)


def test_estimator_shape_and_refusals():
    cal = Calibrator("isotonic", C=3.0)
    assert clone(cal).get_params()["method"] == "isotonic" and clone(cal).get_params()["C"] == 3.0
    with pytest.raises(ValueError, match="both outcomes"):
        Calibrator().fit([0.1, 0.2, 0.3], [1, 1, 1])
    with pytest.raises(ValueError, match="method"):
        Calibrator("xgboost").fit([0.1, 0.9], [0, 1])
    with pytest.raises(ValueError, match="NaN"):
        Calibrator().fit([0.1, np.nan], [0, 1])
    with pytest.raises(RuntimeError):
        Calibrator().predict_proba([0.5])
    fitted = Calibrator("ordinal").fit(np.linspace(0, 1, 40), np.tile([0, 1, 1, 2], 10))
    assert fitted.describe()["library"].startswith("statsmodels") and fitted.n_classes_ == 3
