"""Pure NLI groundedness core (HCAT §3.2.2): z, D = z/‖w‖, σ(D), the head, features, pairs, the recipe."""

import math

import numpy as np
import pytest

from hcat_pipeline.metrics.groundedness_nli import groundedness_nli_batch
from hcat_pipeline.metrics.nli import api as nli

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
    # explain: contributions w_i x_i / ‖w‖ sum to D - b/‖w‖, most negative first
    ex = head.explain(x[:1], top=2)[0]
    contrib = x[0] * head.w / 5.0
    assert [v for _, v in ex] == sorted(v for v in contrib if v < 0)
    assert sum(contrib) == pytest.approx(out["D"][0] - head.b / 5.0)


def test_standardisation_is_part_of_x_and_width_is_checked():
    head = nli.NLIHead(["a", "b"], np.array([1.0, 2.0]), 0.0, np.array([1.0, 1.0]), np.array([2.0, 4.0]))
    out = head.decision(np.array([[3.0, 5.0]]))
    assert out["z"][0] == pytest.approx(1.0 * 1.0 + 2.0 * 1.0)
    with pytest.raises(ValueError):
        head.decision(np.zeros((1, 3)))


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
        if p.kind == "copy" and not any(p.hypothesis.startswith(f.split("{")[0]) for f in nli.FRAMES):
            assert p.hypothesis in p.premise
    with pytest.raises(ValueError):
        nli.perturbation_pairs(DOCS[:1], n_pairs=10)


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

    def decision(self, premises, hypotheses, task="all"):
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


class _TaskRecorder(_FakeScorer):
    def __init__(self):
        self.calls = []

    def decision(self, premises, hypotheses, task="all"):
        self.calls.append((task, list(hypotheses)))
        return super().decision(premises, hypotheses, task)


def test_groundedness_per_task_sends_each_tasks_pairs_to_its_head_in_one_call():
    rows = [(["Paris is nice."], ["Paris is big."]), (["Rome is old."], ["Rome was founded."]), (["Paris!", "Lyon."], ["Paris."])]
    rec = _TaskRecorder()
    out = groundedness_nli_batch(rows, rec, ["qa", "summary", "qa"])
    assert rec.calls == [("qa", ["Paris is nice.", "Paris!", "Lyon."]), ("summary", ["Rome is old."])]
    assert out == groundedness_nli_batch(rows, _FakeScorer(), "qa")  # the fake head is the same for every task
    rec = _TaskRecorder()
    groundedness_nli_batch(rows, rec)  # default: RAG answers
    assert [t for t, _ in rec.calls] == ["qa"]
    with pytest.raises(ValueError, match="2 tasks for 3 rows"):
        groundedness_nli_batch(rows, rec, ["qa", "qa"])


def test_each_task_has_its_packaged_head_trained_by_the_one_recipe_on_its_own_sets():
    from hcat_pipeline.metrics.nli.head import NLIHead
    from hcat_pipeline.metrics.nli.train import TASK_SETS, TrainConfig
    from hcat_pipeline.resources.nli import NLIModel, packaged_head

    assert TrainConfig(task="qa").sets() == () and TrainConfig(task="dialogue").sets() == ("faithdial",)
    assert TrainConfig(task="summary").sets() == ("summedits", "fib") and TrainConfig().sets() == ("faithdial", "summedits", "fib")
    heads = {t: NLIHead.load(packaged_head(t)) for t in ("all", *TASK_SETS)}
    for task, head in heads.items():
        sources = set(head.info["pairs_by_source"])
        assert sources == {"corpus", *TrainConfig(task=task).sets()}, (task, sources)
    assert len({tuple(h.w) for h in heads.values()}) == 4  # four different heads
    model = NLIModel()
    assert model.head("qa").info == heads["qa"].info and model.head().info == heads["all"].info


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
        prem_stems = {nli.stem(t) for t in nli.content_tokens(prem)}
        # the faithful span's words all come from the premise; the hallucinated one adds something
        assert {nli.stem(t) for t in nli.content_tokens(pos.hypothesis)} - {"answer", "believe"} <= prem_stems
        assert ({nli.stem(t) for t in nli.content_tokens(neg.hypothesis)} - prem_stems) or (
            set(nli.numbers(neg.hypothesis)) - set(nli.numbers(prem)))
    with pytest.raises(ValueError):
        nli.qa_pairs(DOCS[:1], n_pairs=10)


def test_qa_pairs_paraphrase_positives_use_neighbours():
    docs = [d + ["The insertion of a tower is slow, and it takes 3 days."] for d in DOCS]
    pairs = nli.qa_pairs(docs, n_pairs=400, seed=0, neighbours={"insertion": ["inserting"]}, paraphrase_rate=1.0)
    para = [p for p in pairs if p.kind == "qa_paraphrase"]
    assert para and all(p.label == 1 and "nserting" in p.hypothesis for p in para)
    assert not [p for p in nli.qa_pairs(docs, n_pairs=400, seed=0) if p.kind == "qa_paraphrase"]


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
    # a sign the data contradicts is fixed at 0 by the active set; the rest is refitted
    flipped = nli.fit_head(np.column_stack([-sim, nov]), y, ["max_sim", "content_novelty"])
    assert flipped.w[0] == 0.0 and flipped.w[1] < 0
    unconstrained = nli.fit_head(np.column_stack([-sim, nov]), y, ["max_sim", "content_novelty"], monotone=False)
    assert unconstrained.w[0] < 0
    path = head.save(tmp_path / "h.json")
    again = nli.NLIHead.load(path)
    np.testing.assert_array_equal(again.decision(raw)["D"], head.decision(raw)["D"])
    assert again.to_json() == path.read_text()  # rounding is idempotent: save → load → save is byte-stable
    with pytest.raises(ValueError):
        nli.fit_head(raw, np.ones(400), names)


def _fake_embed(texts):
    """Deterministic bag-of-stems vectors (normalised), standing in for MiniLM."""
    import hashlib

    out = np.zeros((len(texts), 64))
    for i, t in enumerate(texts):
        for w in nli.content_tokens(t) or ["empty"]:
            out[i, int(hashlib.md5(nli.stem(w).encode()).hexdigest(), 16) % 64] += 1.0
        out[i] += 0.01
    return out / np.linalg.norm(out, axis=1, keepdims=True)


CONTEXT = [
    "The Eiffel Tower was completed in 1889 in Paris.",
    "It is 330 metres tall and was designed by Gustave Eiffel.",
    "Ticket prices rose in 2019, and the tower may be repainted in 2030.",
    "Lyon is a city in France.",
    "The Louvre is a museum.",
]


def test_featurize_aligns_sentences_and_catches_words_reused_from_elsewhere():
    hyps = [
        "The Eiffel Tower was completed in 1889.",  # faithful
        "The Eiffel Tower was completed in 2019.",  # number from another sentence of the context
        "The Eiffel Tower was completed in 1889 in Lyon.",  # name from another sentence
        "Ticket prices fell in 2019.",  # antonym
        "The tower will be repainted in 2030.",  # hedge dropped
        "I loved my visit to the tower!",  # a claim about the speaker
        "The tower is 330 metres tall because ticket prices rose in 2019.",  # unsupported causal link
        "Is the Eiffel Tower tall?",
    ]
    raw, names, aligned = nli.featurize([CONTEXT] * len(hyps), hyps, _fake_embed, k_candidates=3)
    assert names == nli.feature_names(use_parse=False, use_contradiction=False) and raw.shape == (len(hyps), len(names))
    f = {n: raw[:, j] for j, n in enumerate(names)}
    assert aligned[0][0] == 0 and aligned[3][0] == 2 and all(len(a) == 2 for a in aligned)
    assert f["aligned_content_novelty"][0] == 0 and f["number_novelty"][0] == 0 and f["aligned_number_novelty"][0] == 0
    # the swapped number / name are not new to the context, only to the aligned sentences
    assert aligned[1][0] == 0 and aligned[2][0] == 0
    assert f["number_novelty"][1] == 0 and f["aligned_number_novelty"][1] > 0
    assert f["name_novelty"][2] == 0 and f["aligned_name_novelty"][2] > 0
    assert f["antonym_flip"][3] == 1 and f["antonym_flip"][0] == 0
    assert f["hedge_mismatch"][4] == 1 and f["hedge_mismatch"][0] == 0
    assert f["first_person"][5] == 1 and f["first_person"][0] == 0
    assert f["connective_novelty"][6] == 1 and f["connective_novelty"][0] == 0
    assert f["question"][7] == 1 and f["question"][0] == 0
    assert np.all((raw >= -1) & (raw <= 1))
    # length-free: repeating the sentence leaves the fractions unchanged
    twice = nli.featurize([CONTEXT], [hyps[1][:-1] + ", " + hyps[1]], _fake_embed, k_candidates=3)[0]
    for n in ("content_novelty", "number_novelty", "aligned_number_novelty", "name_novelty"):
        assert twice[0, names.index(n)] == pytest.approx(f[n][1])


def test_featurize_calls_each_model_once_per_batch_on_unique_texts():
    calls = {"embed": [], "parse": [], "contra": []}

    def embed(texts):
        calls["embed"].append(list(texts))
        return _fake_embed(texts)

    def parse(texts):
        calls["parse"].append(list(texts))
        return [nli.Parse(frozenset(nli.content_tokens(t)), frozenset(), frozenset(), frozenset(), int("not" in t), frozenset())
                for t in texts]

    def contra(p, h):
        calls["contra"].append(list(zip(p, h)))
        return np.array([0.9 if "not" in x else 0.1 for x in h])

    hyps = ["The Eiffel Tower was completed in 1889.", "The tower was not designed by Gustave Eiffel.",
            "The Eiffel Tower was completed in 1889."]
    raw, names, aligned = nli.featurize([CONTEXT] * 3, hyps, embed, parse=parse, contradiction=contra, k_candidates=2)
    assert names[-1] == "contradiction" and names[-5:-1] == nli.PARSE_FEATURES
    assert len(calls["embed"]) == len(calls["parse"]) == len(calls["contra"]) == 1
    for c in ("embed", "parse"):
        assert len(calls[c][0]) == len(set(calls[c][0]))
    assert len(calls["contra"][0]) == 2  # the repeated (aligned premise, sentence) pair is scored once
    assert raw[1, names.index("contradiction")] == 0.9 and raw[1, names.index("parse_negation_mismatch")] == 1.0
    np.testing.assert_array_equal(raw[0], raw[2])


def test_contradiction_skips_quotations_and_reads_k_premise_aligned_sentences():
    seen = []

    def contra(p, h):
        seen.extend(zip(p, h))
        return np.full(len(h), 0.8)

    hyps = ["the eiffel tower  was completed in 1889 in Paris.",  # a context sentence (case / spaces aside)
            "The Eiffel Tower was completed in 1889 in Madrid."]
    for k in (1, 2):
        seen.clear()
        raw, names, aligned = nli.featurize([CONTEXT] * 2, hyps, _fake_embed, contradiction=contra, k_candidates=3, k_premise=k)
        c = raw[:, names.index("contradiction")]
        assert c[0] == 0.0 and c[1] == 0.8  # the quotation contradicts nothing and is never sent to the model
        assert [h for _, h in seen] == [hyps[1]]
        assert seen[0][0] == " ".join(CONTEXT[j] for j in sorted(aligned[1][:k]))
        assert len(aligned[1]) == 2  # the other features still see k_aligned sentences


def test_pair_probe_reads_the_same_pass_as_the_contradiction_feature_and_quotations_get_quoted():
    from hcat_pipeline.metrics.nli.probe import CLIP, QUOTED, PairProbe, fit_probe

    seen = []

    def contra(p, h, represent=False):
        seen.append((list(h), represent))
        probs = np.array([0.9 if "Madrid" in x else 0.1 for x in h])
        reps = np.array([[1.0 if "Madrid" in x else -1.0, len(x) / 50.0] for x in h])
        return (probs, reps) if represent else probs

    hyps = ["the eiffel tower  was completed in 1889 in Paris.", "The Eiffel Tower was completed in 1889 in Madrid.",
            "It is 330 metres tall."]
    probe = PairProbe(np.zeros(2), np.ones(2), np.array([-3.0, 0.0]), 0.5)
    raw, names, _ = nli.featurize([CONTEXT] * 3, hyps, _fake_embed, contradiction=contra, k_candidates=3, probe=probe)
    assert names[-2:] == ["contradiction", "pair_probe"] and names == nli.feature_names(False, True, True)
    assert seen == [(hyps[1:], True)]  # one pass of the model gives both; the quotation is not sent
    np.testing.assert_allclose(raw[:, -1], [QUOTED, -2.5, 3.5])
    np.testing.assert_allclose(raw[:, -2], [0.0, 0.9, 0.1])
    raw2, names2, _, reps, quoted = nli.featurize([CONTEXT] * 3, hyps, _fake_embed, contradiction=contra, k_candidates=3,
                                                  represent=True)
    assert names2 == names[:-1] and quoted.tolist() == [True, False, False] and reps.shape == (3, 2) and not reps[0].any()
    assert abs(probe.logit(np.array([[100.0, 0.0]]))[0]) == CLIP  # clipped
    fitted = fit_probe(reps[1:], np.array([0, 1]), sample_weight=np.ones(2))
    assert fitted.logit(reps[1:2])[0] < fitted.logit(reps[2:3])[0]
    with pytest.raises(ValueError, match="give contradiction"):
        nli.featurize([CONTEXT], hyps[:1], _fake_embed, probe=probe)
    with pytest.raises(ValueError, match="width"):
        PairProbe(np.zeros(3), np.ones(3), np.ones(3), 0.0).logit(reps)


def test_featurize_embeds_only_where_the_best_candidate_changes_a_needed_feature():
    hyps = ["The tower was completed in 2019.",  # the number is in one candidate only: the best one matters
            "Ticket prices for the tower fell.",  # same needed features whichever candidate is best
            "The Louvre is a museum in Lyon."]
    needed = {"content_novelty", "aligned_number_novelty", "negation_mismatch", "contradiction"}
    seen = []

    def embed(texts):
        seen.extend(texts)
        return _fake_embed(texts)

    full, names, al_full = nli.featurize([CONTEXT] * 3, hyps, _fake_embed, k_candidates=2)
    part, names2, al = nli.featurize([CONTEXT] * 3, hyps, embed, k_candidates=2, needed=needed)
    assert names2 == names
    cols = [names.index(n) for n in needed if n in names]
    np.testing.assert_array_equal(part[:, cols], full[:, cols])  # the needed features are the same
    assert hyps[0] in seen and hyps[1] not in seen and len(seen) < len(set(hyps) | set(CONTEXT))
    assert al[0] == al_full[0] and sorted(al[1]) == sorted(al_full[1])
    assert part[1, names.index("max_sim")] == 0.0  # not needed, not computed
    # a needed similarity feature: everything is embedded again
    seen.clear()
    nli.featurize([CONTEXT] * 3, hyps, embed, k_candidates=2, needed=needed | {"max_sim"})
    assert set(hyps) <= set(seen)


def test_parse_summary_normalises_voice_and_finds_role_swaps():
    from types import SimpleNamespace as T

    def doc(spec):
        toks = []
        for text, lemma, pos, dep, head in spec:
            toks.append(T(text=text, lemma_=lemma, pos_=pos, dep_=dep, head=None, _h=head))
        for t in toks:
            t.head = toks[t._h]
        return toks

    active = nli.summarise(doc([("Eiffel", "Eiffel", "PROPN", "nsubj", 1), ("designed", "design", "VERB", "ROOT", 1),
                                ("tower", "tower", "NOUN", "dobj", 1)]))
    passive = nli.summarise(doc([("tower", "tower", "NOUN", "nsubjpass", 2), ("was", "be", "AUX", "auxpass", 2),
                                 ("designed", "design", "VERB", "ROOT", 2), ("by", "by", "ADP", "agent", 2),
                                 ("Eiffel", "Eiffel", "PROPN", "pobj", 3)]))
    swapped = nli.summarise(doc([("tower", "tower", "NOUN", "nsubj", 1), ("designed", "design", "VERB", "ROOT", 1),
                                 ("Eiffel", "Eiffel", "PROPN", "dobj", 1), ("not", "not", "PART", "neg", 1)]))
    assert active.subjects == passive.subjects == {"eiffel"} and active.objects == passive.objects == {"tower"}
    from hcat_pipeline.metrics.nli.parse import parse_features

    assert parse_features(passive, active, active) == [0.0, 0.0, 0.0, 0.0]
    subj, role, rel, neg = parse_features(swapped, active, active)
    assert role == 1.0 and neg == 1.0 and subj == 0.0 and rel == 0.0


def test_new_perturbations_reuse_context_words():
    from hcat_pipeline.metrics.nli.lexical import hedge_count

    docs = [d + [f"Sales rose by {12 + i} percent in March, and analysts may raise their forecast for Paris."]
            for i, d in enumerate(DOCS)]
    pairs = nli.perturbation_pairs(docs, n_pairs=600, seed=0)
    kinds = {p.kind for p in pairs}
    assert {"context_number_swap", "context_entity_swap", "role_swap", "antonym_flip", "causal_link", "temporal_link",
            "hedge_removal"} <= kinds
    for p in pairs:
        prem = " ".join(p.premise)
        if p.kind == "antonym_flip":
            assert any(w in nli.ANTONYMS for w in nli.tokens(p.hypothesis))
        if p.kind == "hedge_removal":
            assert hedge_count(p.hypothesis) < hedge_count(prem)
        if p.kind in ("causal_link", "temporal_link"):
            assert set(nli.tokens(p.hypothesis)) & {"because", "led", "so", "result", "after", "before", "then", "until"}
        if p.kind in ("context_number_swap", "context_entity_swap"):  # the new value comes from the same document
            doc = " ".join(next(d for d in docs if p.premise[0] in d))
            if p.kind == "context_number_swap":
                assert set(nli.numbers(p.hypothesis)) <= set(nli.numbers(doc))
            else:
                assert set(nli.capitalised(p.hypothesis)) <= set(nli.tokens(doc))


_OVERLAP_SCRIPT = """
import inspect, json, subprocess, threading, concurrent.futures
from hcat_pipeline.corpus.chunking import split_sentences
from hcat_pipeline.metrics.nli.features import _context, overlap_scores
out = []
for mod in (subprocess, threading, concurrent.futures, json):
    sents = [s for s in split_sentences(" ".join((inspect.getdoc(mod) or "").split())) if len(s.split()) > 3]
    ctx = _context(sents)
    out += [overlap_scores(ctx, s) for s in sents]
print(json.dumps(out))
"""


def test_alignment_scores_do_not_depend_on_the_hash_seed():
    # same inputs => same scores in every process: set order (PYTHONHASHSEED) must not reach a float sum
    import os
    import subprocess
    import sys

    runs = [subprocess.run([sys.executable, "-c", _OVERLAP_SCRIPT], capture_output=True, text=True, check=True,
                           env=os.environ | {"PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")]  # fmt: skip
    assert len(runs[0]) > 1000 and runs[0] == runs[1] == runs[2]
