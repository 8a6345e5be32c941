"""Report metrics for calibrated probabilities and conformal sets, against hand computations."""

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss

from hcat_pipeline.calibration import (
    brier_score,
    coverage,
    expected_calibration_error,
    mean_set_size,
    reliability_curve,
    set_size_distribution,
)


def test_ece_binary_by_hand():
    p = np.array([0.05, 0.05, 0.15, 0.95, 0.95, 0.95, 0.95])
    y = np.array([0, 0, 1, 1, 1, 1, 0])
    # bins: [0,.1): conf .05 acc 0 (2 rows); [.1,.2): conf .15 acc 1 (1); [.9,1]: conf .95 acc .75 (4)
    want = 2 / 7 * 0.05 + 1 / 7 * 0.85 + 4 / 7 * 0.20
    assert expected_calibration_error(p, y, n_bins=10) == pytest.approx(want)
    assert expected_calibration_error(np.column_stack([1 - p, p]), y) == pytest.approx(want)
    assert expected_calibration_error(np.array([1.0, 0.0]), np.array([1, 0])) == 0.0
    # a value on an edge goes to the lower bin, as in reliability_curve: 0.1 shares [0, .1] with 0.0
    assert expected_calibration_error(np.array([0.0, 0.1]), np.array([0, 0])) == pytest.approx(0.05)


def test_ece_top_label_for_k3():
    p = np.array([[0.8, 0.1, 0.1], [0.8, 0.1, 0.1], [0.2, 0.3, 0.5]])
    y = np.array([0, 1, 2])
    # bin [.8,.9): conf .8, acc .5 (2 rows); bin [.5,.6): conf .5, acc 1 (1 row)
    assert expected_calibration_error(p, y) == pytest.approx(2 / 3 * 0.3 + 1 / 3 * 0.5)


def test_brier_multiclass_and_binary_relation():
    p = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    y = np.array([0, 1])
    assert brier_score(p, y) == pytest.approx(((0.09 + 0.04 + 0.01) + (0.01 + 0.81 + 0.64)) / 2)
    rng = np.random.default_rng(0)
    q, z = rng.uniform(size=50), rng.integers(0, 2, 50)
    assert brier_score(q, z) == pytest.approx(2 * brier_score_loss(z, q))


def test_reliability_curve_counts():
    p = np.array([0.05, 0.1, 0.12, 0.55, 0.95, 1.0])
    y = np.array([0, 0, 1, 1, 1, 1])
    r = reliability_curve(p, y, n_bins=10)
    # 0.1 sits on an edge: scikit-learn puts it in the lower bin, and so do the counts
    assert r["count"] == [2, 1, 1, 2] and sum(r["count"]) == 6
    assert r["prob_true"] == pytest.approx([0.0, 1.0, 1.0, 1.0])
    assert r["prob_pred"] == pytest.approx([0.075, 0.12, 0.55, 0.975])
    with pytest.raises(ValueError):
        reliability_curve(np.full((2, 3), 1 / 3), [0, 1])


def test_set_metrics():
    sets = np.array([[True, False], [True, True], [False, False], [False, True]])
    y = np.array([0, 1, 0, 0])
    assert coverage(sets, y) == pytest.approx(0.5)
    assert mean_set_size(sets) == pytest.approx(1.0)
    assert set_size_distribution(sets) == {0: 1, 1: 2, 2: 1}


def test_calibration_package_imports_no_dagster():
    import subprocess
    import sys

    code = "import sys, hcat_pipeline.calibration; assert 'dagster' not in sys.modules, 'dagster imported'"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).returncode == 0
