"""Paired significance tests between two systems (golden-eval §4.3), proven with systems built to differ and not."""

import numpy as np
import polars as pl

from hcat_pipeline.gates.paired import paired_comparison, paired_comparisons


def test_mcnemar_finds_a_better_pass_rate_and_not_a_tie():
    rng = np.random.default_rng(0)
    b = (rng.random(120) < 0.6).astype(float)
    a = b.copy()
    a[np.flatnonzero(b == 0)[:25]] = 1.0  # a fixes 25 of b's failures …
    a[np.flatnonzero(b == 1)[:3]] = 0.0  # … and breaks 3 of its passes
    got = paired_comparison(a, b)
    assert got["test"] == "mcnemar_exact" and (got["a_only"], got["b_only"]) == (25, 3)
    assert got["p_value"] < 1e-4 and got["verdict"] == "a better" and got["effect_size"] > 5
    assert abs(got["difference"] - 22 / 120) < 1e-12 and got["ci_low"] > 0
    same = paired_comparison(b, b)
    assert same["p_value"] == 1.0 and same["verdict"] == "no difference shown" and (same["a_only"], same["b_only"]) == (0, 0)
    swapped = paired_comparison(b, a)  # the same test read from the other side
    assert swapped["p_value"] == got["p_value"] and swapped["verdict"] == "b better"


def test_paired_bootstrap_on_scores_and_the_null_holds_its_level():
    rng = np.random.default_rng(1)
    base = rng.random(80)
    better = paired_comparison(base + 0.05 + rng.normal(0, 0.05, 80), base)
    assert better["test"].startswith("paired_bootstrap") and better["verdict"] == "a better" and better["effect_size"] > 0.5
    # no difference by construction: across 200 seeds, p < 0.05 about 5 % of the time (never 25 %)
    false = sum(paired_comparison(base + rng.normal(0, 0.05, 80), base + rng.normal(0, 0.05, 80), seed=s)["p_value"] < 0.05
                for s in range(200))
    assert false <= 20, false
    assert paired_comparison(np.array([1.0]), np.array([0.0]))["verdict"].startswith("not tested")


def test_every_pair_on_the_shared_cases_only():
    rows = [(f"c{i}", s, v) for i in range(40) for s, v in (("good", 1.0), ("bad", float(i % 4 == 0)), ("half", float(i % 2)))]
    rows.append(("extra", "good", 0.0))  # answered by one system only: left out of its pairs
    scores = pl.DataFrame(rows, schema=["case_id", "system_id", "value"], orient="row").with_columns(metric=pl.lit("behaviour_pass"))
    table = paired_comparisons(scores, "behaviour_pass")
    assert table.height == 3 and set(table["n"]) == {40}
    by = {(r["system_a"], r["system_b"]): r for r in table.iter_rows(named=True)}
    assert by[("bad", "good")]["verdict"] == "b better" and by[("good", "half")]["verdict"] == "a better"
    assert (by[("bad", "half")]["a_only"], by[("bad", "half")]["b_only"]) == (10, 20)  # bad passes i % 4 == 0, half the odd i
