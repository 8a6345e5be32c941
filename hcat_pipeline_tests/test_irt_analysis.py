"""Hierarchical IRT, information functions, iterative improvement, Table 3/5 summaries, Bloom / question words, plots."""

import itertools

import numpy as np
import pytest

from hcat_pipeline.irt import (
    ability_table,
    bloom_categories,
    category_information,
    exam_information,
    fit_irt,
    fit_summary,
    irt_probability,
    item_information,
    iterative_improvement,
    question_word,
)


def test_hierarchical_recovers_component_abilities():
    true = {"llm": {"small": -1.0, "mid": 0.0, "large": 1.2}, "retriever": {"closed": -0.8, "bm25": 0.0, "dense": 0.5, "oracle": 1.0},
            "icl": {0: 0.0, 1: 0.4, 2: 0.8}}
    takers = list(itertools.product(*[list(v) for v in true.values()]))
    comps = {name: [t[k] for t in takers] for k, name in enumerate(true)}
    theta = np.array([sum(true[name][lvl] for name, lvl in zip(true, t)) for t in takers])
    r = np.random.default_rng(11)
    j = 300
    a, b, c = r.lognormal(0, 0.3, j), r.normal(0, 1.0, j), r.uniform(0, 0.25, j)
    y = (r.random((len(takers), j)) < irt_probability(theta, a, b, c)).astype(float)
    res = fit_irt(y, components=comps, seed=0)
    assert set(res.components) == {"llm", "retriever", "icl"}
    sd = theta.std()
    for name, comp in res.components.items():
        truth = np.array([true[name][lvl] for lvl in comp.levels])
        # levels within a component are identified up to a constant: compare centred values, in θ's sd units
        w = comp.n_takers / comp.n_takers.sum()
        truth_c = (truth - w @ truth) / sd
        assert np.corrcoef(truth_c, comp.values)[0, 1] > 0.95, name
        assert np.max(np.abs(truth_c - comp.values)) < 0.25, name
        assert np.all(comp.se > 0) and np.all(comp.se < 0.3)
        assert comp.n_takers.sum() == len(takers)
    # θ_i is exactly the sum of its components' centred latents
    recon = sum(res.components[name].values[[res.components[name].levels.index(lvl) for lvl in comps[name]]] for name in comps)
    np.testing.assert_allclose(recon, res.theta, atol=1e-9)
    table = ability_table(res)
    assert table.height == 3 + 4 + 3
    assert (table["ci_low"] < table["theta"]).all() and (table["theta"] < table["ci_high"]).all()
    large = table.filter((table["component"] == "llm") & (table["level"] == "large"))
    small_first = res.components["llm"].values[0]
    assert large["delta_vs_first"][0] == pytest.approx(large["theta"][0] - small_first)


def test_item_information_is_exact_3pl():
    a, b, c = np.array([1.3, 0.7]), np.array([0.2, -1.0]), np.array([0.25, 0.0])
    grid = np.linspace(-3, 3, 61)
    info = item_information(grid, a, b, c)
    # Fisher information of a Bernoulli item: P'(θ)² / (P (1 − P)), P' by central differences
    h = 1e-5
    dp = (irt_probability(grid + h, a, b, c) - irt_probability(grid - h, a, b, c)) / (2 * h)
    p = irt_probability(grid, a, b, c)
    np.testing.assert_allclose(info, dp**2 / (p * (1 - p)), rtol=1e-6)
    # c = 0 reduces to a² P (1 − P), peaking at θ = b; guessing lowers information and moves the peak above b
    np.testing.assert_allclose(info[:, 1], a[1] ** 2 * p[:, 1] * (1 - p[:, 1]), rtol=1e-12)
    assert abs(grid[np.argmax(info[:, 1])] - b[1]) < 0.05
    assert grid[np.argmax(info[:, 0])] > b[0]
    assert np.all(info[:, 0] < a[0] ** 2 * p[:, 0] * (1 - p[:, 0]))
    np.testing.assert_allclose(exam_information(grid, a, b, c), info.sum(axis=1))
    np.testing.assert_allclose(exam_information(grid, a, b, c, items=[1]), info[:, 1])


def test_category_information_means_and_counts():
    a, b, c = np.array([1.0, 2.0, 0.5]), np.zeros(3), np.zeros(3)
    grid = np.array([0.0])
    out = category_information(grid, a, b, c, [["Remembering", "Applying"], "Applying", ["Uncategorized"]])
    assert out["All"]["n"] == 3 and out["Applying"]["n"] == 2 and out["Remembering"]["n"] == 1
    assert out["Applying"]["mean"][0] == pytest.approx((0.25 + 1.0) / 2)  # a² · ½ · ½
    with pytest.raises(ValueError, match="2 category entries for 3 items"):
        category_information(grid, a, b, c, ["x", "y"])


def test_iterative_improvement_drops_weak_items_while_information_grows():
    r = np.random.default_rng(21)
    n, j = 120, 100
    theta = r.normal(size=n)
    a = np.where(np.arange(j) < 25, 0.15, r.lognormal(0.3, 0.2, j))  # 25 nearly useless questions
    b, c = r.normal(size=j), r.uniform(0, 0.2, j)
    y = (r.random((n, j)) < irt_probability(theta, a, b, c)).astype(float)
    hist = iterative_improvement(y, drop_quantile=0.1, max_steps=8, seed=0)
    accepted = [s for s in hist.steps if s.accepted]
    scores = [s.score for s in accepted]
    assert len(accepted) >= 2
    assert all(s2 > s1 for s1, s2 in zip(scores, scores[1:]))  # monotone in information
    if not hist.steps[-1].accepted:
        assert hist.steps[-1].score <= accepted[-1].score * (1 + 1e-3)
    for s in hist.steps[:-1]:
        nxt = hist.steps[s.step + 1]
        assert len(s.dropped_next) == max(1, int(0.1 * len(s.items)))
        assert set(nxt.items) == set(s.items) - set(s.dropped_next)
        # the dropped questions are the least discriminating of that fit
        a_fit = dict(zip(s.items, s.result.a))
        assert max(a_fit[k] for k in s.dropped_next) <= min(a_fit[k] for k in nxt.items)
    # the planted weak questions go first: of the first 25 dropped, at least 20 are planted ones
    order = [int(k) for s in hist.steps for k in s.dropped_next]
    assert len(order) >= 25 and len(set(order[:25]) & set(range(25))) >= 20
    rows = hist.table()
    assert [row["n_items"] for row in rows] == [len(s.items) for s in hist.steps]
    assert hist.stop_reason


def test_fit_summary_irt_beats_mean_prediction_baseline():
    r = np.random.default_rng(4)
    theta, a, b, c = r.normal(size=80), r.lognormal(0.2, 0.3, 60), r.normal(size=60), r.uniform(0, 0.2, 60)
    y = (r.random((80, 60)) < irt_probability(theta, a, b, c)).astype(float)
    y[0, 0] = np.nan
    res = fit_irt(y)
    s = fit_summary(y, res)
    assert s["rmse_irt"]["n"] == 60 and s["exam_accuracy"]["n"] == 80
    assert s["rmse_irt"]["mean"] < s["rmse_mean_prediction_baseline"]["mean"]
    assert s["rmse_improvement"]["ci_low"] > 0
    assert s["theta"]["mean"] == pytest.approx(0.0, abs=1e-9)
    table = ability_table(res, responses=y)
    assert table.height == 80 and table["n_answered"][0] == 59
    assert table["accuracy"][1] == pytest.approx(np.nanmean(y[1]))


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # App. C, Table 6 examples
        ("You are an AWS engineer responsible for scaling a Redis (cluster mode disabled) cluster. You want to reduce costs "
         "but ensure minimal downtime for your application. Which of the following scaling actions should you choose, and why?",
         {"Evaluating"}),
        ("Which of the following statements best describes the nature of these two terms?", {"Understanding"}),
        ("What is the reason for AMD being named in the settlement agreement with Philips Semiconductors Corporation?",
         {"Remembering"}),
        ("How would you troubleshoot and resolve the failing deployment?", {"Analyzing"}),
        ("Identify the service used to configure the queue.", {"Remembering", "Applying"}),
        ("Design a pipeline that analyses and validates the logs.", {"Creating", "Analyzing", "Evaluating"}),
        ("What is the state of the test suite?", {"Uncategorized"}),  # nouns after a determiner do not count
    ],
)
def test_bloom_categories(question, expected):
    assert set(bloom_categories(question)) == expected


def test_bloom_with_a_verb_lemmatiser_and_question_words():
    assert bloom_categories("Pick one.", verbs=lambda q: ["compare", "rank"]) == ["Analyzing", "Evaluating"]
    assert question_word("Which of the following is true?") == "which"
    assert question_word("In 2015, what did the firm report, and why?") == "what"
    assert question_word("Whose approval is needed?") == "who"
    assert question_word("Does the library support streaming?") == "yes/no"
    assert question_word("Somewhat unrelated statement.") == "other"  # no substring matches
    with pytest.raises(TypeError):
        bloom_categories(None)


def test_plots_return_png():
    from hcat_pipeline.irt.plots import plot_category_information, plot_item_curves, plot_pruning_history

    r = np.random.default_rng(0)
    y = (r.random((30, 25)) < 0.6).astype(float)
    res = fit_irt(y, model="2pl")
    grid = np.linspace(-3, 3, 31)
    curves = category_information(grid, res.a, res.b, res.c, [question_word("What?")] * 25)
    hist = iterative_improvement(y, model="2pl", max_steps=2, min_items=5)
    for png in (plot_category_information(grid, curves), plot_item_curves(res, grid), plot_pruning_history(hist)):
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_pruning_that_drops_every_question_two_takers_differ_on_is_named():
    from hcat_pipeline.exam.irt_tables import erased_differences

    # A and B differ on questions 0-3 (A right on 3, B on 1); C differs from A on question 5 only (too few to matter)
    y = np.array([[1, 1, 1, 0, 1, 1, 0, 1], [0, 0, 0, 1, 1, 1, 0, 1], [1, 1, 1, 0, 1, 0, 0, 1]], dtype=float)
    dropped_0_3 = np.array([False] * 4 + [True] * 4)
    # B and C differ on 0-3 and on the kept question 5: the pruned exam still separates them
    assert erased_differences(y, dropped_0_3, ["A", "B", "C"]) == [{"a": "A", "b": "B", "differing": 4, "a_only": 3, "b_only": 1}]
    assert erased_differences(y, np.ones(8, dtype=bool), ["A", "B", "C"]) == []  # nothing dropped: nothing erased
    y[1, 0] = np.nan  # a missing answer is no difference
    assert erased_differences(y, dropped_0_3, ["A", "B", "C"])[0]["differing"] == 3
