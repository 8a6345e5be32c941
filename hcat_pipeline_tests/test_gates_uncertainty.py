"""Bootstrap CIs, paired differences and claim strength (golden-eval §6.6)."""

import math
import subprocess
import sys

import numpy as np
import pytest

from hcat_pipeline.gates import bootstrap_ci, claim_strength, estimate_strength, paired_bootstrap_ci


def test_ci_covers_true_mean_and_shrinks_with_n():
    rng = np.random.default_rng(1)
    small = bootstrap_ci(rng.normal(0.6, 0.2, 30))
    large = bootstrap_ci(rng.normal(0.6, 0.2, 3000))
    assert small.ci_low < small.estimate < small.ci_high
    assert large.ci_low < 0.6 < large.ci_high
    assert (large.ci_high - large.ci_low) < (small.ci_high - small.ci_low) / 5
    assert small.n == 30 and large.n == 3000


def test_ci_coverage_close_to_nominal():
    """Over 200 seeded samples the 90 % percentile CI holds the true mean roughly 90 % of the time."""
    rng = np.random.default_rng(7)
    hits = 0
    for i in range(200):
        est = bootstrap_ci(rng.exponential(1.0, 60), confidence=0.90, n_boot=400, seed=i)
        hits += est.ci_low <= 1.0 <= est.ci_high
    assert 0.80 <= hits / 200 <= 0.97


def test_seeded_and_bca():
    x = np.random.default_rng(3).beta(2, 5, 80)
    assert bootstrap_ci(x, seed=5) == bootstrap_ci(x, seed=5)
    assert bootstrap_ci(x, seed=5) != bootstrap_ci(x, seed=6)
    bca = bootstrap_ci(x, method="bca")
    assert bca.method == "bca" and bca.ci_low < bca.estimate < bca.ci_high


def test_edge_cases_explicit():
    empty = bootstrap_ci([])
    assert empty.n == 0 and math.isnan(empty.estimate) and empty.note == "empty"
    one = bootstrap_ci([0.4])
    assert one.estimate == 0.4 and math.isnan(one.ci_low) and one.note == "n<2"
    const = bootstrap_ci([1.0] * 20)
    assert (const.ci_low, const.ci_high) == (1.0, 1.0) and const.note == "constant"
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci([0.1, float("nan")])
    dropped = bootstrap_ci([0.1, float("nan"), 0.3], dropna=True)
    assert dropped.n == 2 and dropped.n_dropped == 1
    with pytest.raises(ValueError, match="unknown statistic"):
        bootstrap_ci([1, 2], statistic="mode")


def test_exact_statistics_do_not_resample():
    """One PII leak among 500 cases is a count of 1, not an interval that contains 0."""
    leaks = np.zeros(500, dtype=bool)
    leaks[17] = True
    est = bootstrap_ci(leaks, "count")
    assert (est.estimate, est.ci_low, est.ci_high, est.method) == (1.0, 1.0, 1.0, "exact")


def test_paired_bootstrap_detects_small_consistent_difference():
    rng = np.random.default_rng(2)
    base = rng.uniform(0, 1, 100)
    a, b = base + 0.03 + rng.normal(0, 0.01, 100), base
    paired = paired_bootstrap_ci(a, b)
    assert paired.ci_low > 0
    # unpaired, the same difference is lost in the between-case spread
    ua, ub = bootstrap_ci(a), bootstrap_ci(b)
    assert ua.ci_low < ub.ci_high
    with pytest.raises(ValueError, match="pair them"):
        paired_bootstrap_ci([1, 2, 3], [1, 2])


def test_claim_strength_levels():
    assert claim_strength(0.70, 0.74, 0.72, reference=0.5) == "strong"
    assert claim_strength(0.60, 0.80, 0.70, reference=0.5) == "moderate"
    assert claim_strength(-0.05, 0.15, 0.05) == "weak"  # CI contains 0: no direction
    assert claim_strength(0.1, 0.9, 0.5) == "insufficient"  # too wide
    assert claim_strength(0.70, 0.74, 0.72, reference=0.5, n=5) == "insufficient"
    assert claim_strength(float("nan"), float("nan"), 0.3) == "insufficient"
    rng = np.random.default_rng(0)
    assert estimate_strength(bootstrap_ci(rng.normal(0.7, 0.1, 400)), reference=0.5) == "strong"
    assert estimate_strength(bootstrap_ci(rng.normal(0.7, 0.1, 4)), reference=0.5) == "insufficient"


def test_core_imports_no_dagster():
    code = "import sys, hcat_pipeline.gates; assert 'dagster' not in sys.modules, 'dagster imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
