"""Pure NLI groundedness core (HCAT §3.2.2): z, D = z/‖w‖, σ(D), the head, perturbation pairs."""

import math

import numpy as np
import pytest

from hcat_pipeline.core.metrics import nli
from hcat_pipeline.core.metrics.groundedness_nli import groundedness_nli_batch

DOCS = [
    [
        "The Eiffel Tower was completed in 1889 in Paris.",
        "It was designed by the engineering company of Gustave Eiffel, and it is 330 metres tall.",
        "The tower is the most visited paid monument in the world.",
        "It was the tallest structure in the world until the Chrysler Building was finished in 1930.",
    ],
    [
        "Python is a programming language created by Guido van Rossum.",
        "The first version was released in 1991, and it emphasises code readability.",
        "Python supports several programming paradigms, including functional programming.",
        "Its standard library is large and is often described as batteries included.",
    ],
    [
        "The Amazon River flows through Brazil, Peru and Colombia.",
        "It carries more water than any other river, and it has over 1100 tributaries.",
        "The river basin covers about 7 million square kilometres.",
        "Most of the basin is covered by the Amazon rainforest.",
    ],
]


def _head(w, b=0.3):
    w = np.asarray(w, dtype=float)
    return nli.NLIHead([f"f{i}" for i in range(len(w))], w, b, np.zeros(len(w)), np.ones(len(w)))


def test_distance_is_logit_over_weight_norm_and_sigma_is_monotone():
    head = _head([3.0, -4.0])
    x = np.random.default_rng(0).normal(size=(50, 2))
    out = head.decision(x)
    z = x @ head.w + head.b
    np.testing.assert_allclose(out["z"], z, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["D"], z / 5.0, rtol=0, atol=1e-12)  # ‖(3, -4)‖ = 5
    np.testing.assert_allclose(out["sigma"], 1 / (1 + np.exp(-z / 5.0)), atol=1e-12)
    order = np.argsort(out["z"])
    assert np.all(np.diff(out["sigma"][order]) >= 0)
    assert np.all((out["D"] > 0) == (out["z"] > 0))  # D > 0 exactly on the entailment side
    assert nli.sigmoid(np.array([-800.0, 0.0, 800.0])).tolist() == [0.0, 0.5, 1.0]


def test_standardisation_is_part_of_x_and_width_is_checked():
    head = nli.NLIHead(["a", "b"], np.array([1.0, 2.0]), 0.0, np.array([1.0, 1.0]), np.array([2.0, 4.0]))
    out = head.decision(np.array([[3.0, 5.0]]))
    assert out["z"][0] == pytest.approx(1.0 * 1.0 + 2.0 * 1.0)
    with pytest.raises(ValueError):
        head.decision(np.zeros((1, 3)))


def test_fit_head_learns_direction_respects_monotone_signs_and_roundtrips(tmp_path):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 400)
    sim = y * 0.5 + rng.normal(0, 0.3, 400)
    nov = (1 - y) * 0.5 + rng.normal(0, 0.3, 400)
    noise = rng.normal(size=400)
    raw = np.column_stack([sim, nov, noise])
    names = ["max_sim", "content_novelty", "premise_coverage"]
    head = nli.fit_head(raw, y, names, C=1.0)
    assert head.w[0] > 0 and head.w[1] < 0 and head.w[2] >= 0
    assert head.info["train_auroc"] > 0.8
    # a sign the data contradicts is clamped at 0 by the monotone bound
    flipped = nli.fit_head(np.column_stack([-sim, nov]), y, ["max_sim", "content_novelty"])
    assert flipped.w[0] == 0.0
    path = head.save(tmp_path / "h.json")
    again = nli.NLIHead.load(path)
    np.testing.assert_array_equal(again.decision(raw)["D"], head.decision(raw)["D"])
    with pytest.raises(ValueError):
        nli.fit_head(raw, np.ones(400), names)


def test_perturbations_are_labelled_and_deterministic():
    a = nli.perturbation_pairs(DOCS, n_pairs=300, seed=3)
    b = nli.perturbation_pairs(DOCS, n_pairs=300, seed=3)
    c = nli.perturbation_pairs(DOCS, n_pairs=300, seed=4)
    assert [p.as_dict() for p in a] == [p.as_dict() for p in b]
    assert [p.hypothesis for p in a] != [p.hypothesis for p in c]
    assert len(a) == 300
    labels = {p.label for p in a}
    assert labels == {0, 1}
    for p in a:
        assert p.kind in (nli.POSITIVE_KINDS if p.label else nli.NEGATIVE_KINDS)
        assert p.premise and p.hypothesis
    kinds = {p.kind for p in a}
    assert {"number_swap", "negation", "copy", "other_doc"} <= kinds
    for p in a:
        if p.kind == "number_swap":
            assert set(nli.numbers(p.hypothesis)) - set(nli.numbers(" ".join(p.premise)))
        if p.kind == "copy" and not any(p.hypothesis.startswith(f.split("{")[0]) for f in nli._FRAMES):
            assert p.hypothesis in p.premise
    with pytest.raises(ValueError):
        nli.perturbation_pairs(DOCS[:1], n_pairs=10)


def test_pair_features_are_length_free_fractions():
    prem = ["The Eiffel Tower was completed in 1889 in Paris."]
    hyps = ["The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1899 in Rome."]
    rng = np.random.default_rng(0)
    u = rng.normal(size=(1, 8))
    u /= np.linalg.norm(u)
    f = nli.pair_features([u, u], np.vstack([u, u]), [prem, prem], hyps)
    names = nli.feature_names()
    assert f.shape == (2, len(names))
    col = dict(zip(names, f.T))
    assert col["content_novelty"][0] == 0.0 and col["content_novelty"][1] > 0
    assert col["number_novelty"][0] == 0.0 and col["has_unsupported_number"][1] == 1.0
    assert col["name_novelty"][1] > 0
    assert np.all((f[:, 3:] >= 0) & (f[:, 3:] <= 1))
    # repeating the hypothesis (twice as long) leaves the novelty fractions unchanged
    long = nli.lexical_features(prem, hyps[1] + " " + hyps[1], prem[0])
    assert long[0] == pytest.approx(col["content_novelty"][1])


def test_length_matched_auroc_ignores_length_only_scores():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    # supported answers are mostly short, hallucinated ones mostly long
    short = np.where(y == 1, rng.random(600) < 0.8, rng.random(600) < 0.2)
    lengths = np.where(short, 10, 30)
    length_score = -lengths + rng.normal(0, 1e-6, 600)
    assert nli.auroc(y, length_score) > 0.75
    lm = nli.length_matched_auroc(y, length_score, lengths)
    assert lm["pairs"] > 0 and abs(lm["auroc"] - 0.5) < 0.06
    good = y + rng.normal(0, 0.1, 600)
    assert nli.length_matched_auroc(y, good, lengths)["auroc"] > 0.95


class _FakeScorer:
    """z = number of premise sentences containing the hypothesis' first word, minus ½."""

    w = np.array([2.0, 0.0])

    def decision(self, premises, hypotheses):
        z = np.array([sum(h.split()[0] in s for s in p) - 0.5 for p, h in zip(premises, hypotheses)], dtype=float)
        D = z / np.linalg.norm(self.w)
        return {"z": z, "D": D, "sigma": nli.sigmoid(D)}


def test_groundedness_nli_batch_shape_and_aggregate():
    rows = [
        (["Paris is nice.", "Rome is old."], ["Paris is the capital.", "It has a tower."]),
        ([], ["anything"]),
        (["Paris!"], []),
    ]
    out = groundedness_nli_batch(rows, _FakeScorer())
    assert len(out) == 3
    r0 = out[0]
    assert len(r0["nli_sigma"]) == len(r0["nli_distance"]) == 2
    assert r0["nli_distance"] == pytest.approx([0.25, -0.25])
    assert r0["nli_sigma"][0] > 0.5 > r0["nli_sigma"][1]
    assert r0["groundedness_nli"] == pytest.approx(np.mean(r0["nli_sigma"]))
    assert r0["nli_least_grounded"] == 1 and r0["nli_min_sigma"] == pytest.approx(r0["nli_sigma"][1])
    assert math.isnan(out[1]["groundedness_nli"]) and out[1]["nli_sigma"] == [] and out[1]["nli_least_grounded"] == -1
    assert out[2]["nli_sigma"][0] < 0.5  # no context: nothing supports the sentence


def test_derivational_neighbours_enable_synonym_swaps():
    words = ["insertion", "inserting", "larger", "smaller", "tower"]
    rng = np.random.default_rng(0)
    base = rng.normal(size=(3, 16))
    vecs = np.vstack([base[0], base[0] + 0.1, base[1], base[1] + 0.05, base[2]])
    nb = nli.nearest_neighbours(words, vecs)
    assert nb == {"insertion": ["inserting"], "inserting": ["insertion"]}  # no antonym swaps
    docs = [d + ["The insertion of a tower is slow, and it takes 3 days."] for d in DOCS]
    pairs = nli.perturbation_pairs(docs, n_pairs=200, seed=0, neighbours={"insertion": ["inserting"]})
    syn = [p for p in pairs if p.kind == "synonym_swap"]
    assert syn and all(p.label == 1 and "nserting" in p.hypothesis for p in syn)
    assert not [p for p in nli.perturbation_pairs(docs, n_pairs=200, seed=0) if p.kind == "synonym_swap"]


def test_token_alignment_is_length_free_and_feature_is_optional():
    rng = np.random.default_rng(0)
    P = rng.normal(size=(6, 8))
    H = P[[1, 3]] * 2.0  # the hypothesis tokens occur in the premise (scale does not matter)
    assert nli.token_alignment([P[:3], P[3:]], H) == pytest.approx(1.0)
    assert nli.token_alignment([P], np.vstack([H, H, H])) == pytest.approx(nli.token_alignment([P], H))
    far = -P[[0]]
    assert nli.token_alignment([P[[0]]], far) == pytest.approx(-1.0)
    assert nli.token_alignment([], H) == 0.0 and nli.token_alignment([P], np.zeros((0, 8))) == 0.0
    prem = ["The Eiffel Tower was completed in 1889 in Paris."]
    u = rng.normal(size=(1, 8))
    u /= np.linalg.norm(u)
    without = nli.pair_features([u], u, [prem], ["Paris."])
    with_ta = nli.pair_features([u], u, [prem], ["Paris."], token_align=np.array([0.7]))
    assert nli.feature_names(token_align=True) == nli.feature_names() + [nli.TOKEN_ALIGN_FEATURE]
    assert with_ta.shape[1] == without.shape[1] + 1 and with_ta[0, -1] == 0.7
    np.testing.assert_array_equal(with_ta[:, :-1], without)
    assert nli.MONOTONE[nli.TOKEN_ALIGN_FEATURE] == 1


def test_qa_pairs_are_length_matched_twins_and_deterministic():
    a = nli.qa_pairs(DOCS, n_pairs=200, seed=0)
    assert [p.as_dict() for p in a] == [p.as_dict() for p in nli.qa_pairs(DOCS, n_pairs=200, seed=0)]
    assert [p.hypothesis for p in a] != [p.hypothesis for p in nli.qa_pairs(DOCS, n_pairs=200, seed=1)]
    assert len(a) == 200 and {p.kind for p in a} >= {"qa_span", "qa_other_span", "qa_entity_swap", "qa_word_swap"}
    for pos, neg in zip(a[::2], a[1::2]):
        assert (pos.label, neg.label) == (1, 0) and pos.kind == "qa_span" and neg.kind in nli.QA_NEGATIVE_KINDS
        assert pos.premise == neg.premise
        assert len(pos.hypothesis.split()) == len(neg.hypothesis.split())  # twins: same word count
        prem = " ".join(pos.premise)
        prem_stems = {nli._stem(t) for t in nli.content_tokens(prem)}
        # the faithful span's words all come from the premise; the hallucinated one adds something
        assert {nli._stem(t) for t in nli.content_tokens(pos.hypothesis)} - {"answer", "believe"} <= prem_stems
        assert ({nli._stem(t) for t in nli.content_tokens(neg.hypothesis)} - prem_stems) or (
            set(nli.numbers(neg.hypothesis)) - set(nli.numbers(prem)))
    with pytest.raises(ValueError):
        nli.qa_pairs(DOCS[:1], n_pairs=10)


def test_qa_pairs_paraphrase_positives_use_neighbours():
    docs = [d + ["The insertion of a tower is slow, and it takes 3 days."] for d in DOCS]
    pairs = nli.qa_pairs(docs, n_pairs=400, seed=0, neighbours={"insertion": ["inserting"]}, paraphrase_rate=1.0)
    para = [p for p in pairs if p.kind == "qa_paraphrase"]
    assert para and all(p.label == 1 and "nserting" in p.hypothesis for p in para)
    assert not [p for p in nli.qa_pairs(docs, n_pairs=400, seed=0) if p.kind == "qa_paraphrase"]
