"""NLIModel with the packaged head and the real packaged MiniLM / spaCy / contradiction models; nli_head asset."""

import dataclasses
import json

import dagster as dg
import numpy as np
import polars as pl
import pytest

from hcat_pipeline.metrics.groundedness_nli import groundedness_nli_batch
from hcat_pipeline.metrics.nli.train import TrainConfig
from hcat_pipeline.resources.nli import PACKAGED_HEAD, NLIModel
from hcat_pipeline_tests.stubs import stub_asset

CONTEXT = [
    "The Eiffel Tower was completed in 1889 in Paris.",
    "It is 330 metres tall and was designed by the company of Gustave Eiffel.",
    "The Statue of Liberty was dedicated in 1886 in New York.",
]
FAITHFUL_VS_SWAPPED = [
    ("The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1925."),
    ("The tower is 330 metres tall.", "The tower is 410 metres tall."),
    ("The Eiffel Tower is in Paris.", "The Eiffel Tower is in Madrid."),
    ("It was designed by the company of Gustave Eiffel.", "It was not designed by the company of Gustave Eiffel."),
    # hallucinations that re-use the context's own words
    ("The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1886."),
    ("The Eiffel Tower was completed in Paris.", "The Eiffel Tower was completed in New York."),
]


@pytest.fixture(scope="module")
def nli_model(tmp_path_factory):
    return NLIModel(embedding_cache_dir=str(tmp_path_factory.mktemp("nli_emb")))


def test_packaged_head_is_shipped_and_matches_the_scorer(nli_model):
    d = json.loads(PACKAGED_HEAD.read_text())
    assert d["format"] == "hcat-nli-head/1" and len(d["w"]) == len(d["feature_names"])
    head = nli_model.head()
    assert head.w_norm > 0 and head.info["n_train"] >= 1000
    assert TrainConfig(**head.info["config"]) == TrainConfig()  # built with the recipe's defaults (a field added since: its default)
    cfg = TrainConfig()
    _, names = nli_model.pair_features([CONTEXT], ["The tower is tall."], use_parse=cfg.use_parse,
                                       use_contradiction=cfg.use_contradiction, probe=head.probe)
    assert names == head.feature_names and names[-1] == "pair_probe" and head.probe.C == cfg.probe_C


def test_pair_probe_reads_the_real_contradiction_model(nli_model):
    """The exposed hidden states come from the same pass as the probability; the probe separates the
    supported from the swapped sentence on its own."""
    hyps = [h for pair in FAITHFUL_VS_SWAPPED for h in pair]
    prem = [" ".join(CONTEXT)] * len(hyps)
    p_only = nli_model.contradiction(prem, hyps)
    p, reps = nli_model.contradiction(prem, hyps, represent=True)
    np.testing.assert_allclose(p, p_only, atol=1e-9)
    assert reps.shape == (len(hyps), 4 * 384) and np.isfinite(reps).all() and np.abs(reps).sum(axis=1).min() > 0
    logit = nli_model.head().probe.logit(reps).reshape(-1, 2)
    assert np.all(logit[:, 0] > logit[:, 1]), logit


def test_faithful_sentence_scores_above_swapped_one(nli_model):
    hyps = [h for pair in FAITHFUL_VS_SWAPPED for h in pair]
    out = nli_model.decision([CONTEXT] * len(hyps), hyps)
    sig = out["sigma"].reshape(-1, 2)
    assert np.all(sig[:, 0] > sig[:, 1]), sig
    assert np.all(out["D"].reshape(-1, 2)[:, 0] > 0)  # faithful ones on the entailment side
    head = nli_model.head()
    np.testing.assert_allclose(out["D"], out["z"] / np.linalg.norm(head.w), rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["sigma"], 1 / (1 + np.exp(-out["D"])), atol=1e-12)
    assert all(a and a[0] in (0, 1, 2) for a in out["aligned"])


def test_groundedness_nli_batch_with_real_model_explains(nli_model):
    rows = [
        (["The Eiffel Tower was completed in 1889.", "It is 330 metres tall."], CONTEXT),
        (["The Eiffel Tower was completed in 1889.", "It was painted gold by Napoleon in 1925."], CONTEXT),
        ([], CONTEXT),
    ]
    res = groundedness_nli_batch(rows, nli_model)
    assert [len(r["nli_sigma"]) for r in res] == [2, 2, 0]
    assert res[0]["groundedness_nli"] > res[1]["groundedness_nli"]
    assert res[1]["nli_least_grounded"] == 1
    assert res[0]["nli_support"] == [0, 1]  # which context sentence supports which answer sentence
    assert res[1]["nli_reasons"][1]  # the invented sentence has features that pulled it down
    assert all(0.0 < s < 1.0 for r in res for s in r["nli_sigma"])


def test_contradiction_dynamic_length_matches_fixed_padding(nli_model):
    from hcat_pipeline.resources.nli_backends import Contradiction

    prem = " ".join(CONTEXT[:2])
    hyps = ["The Eiffel Tower was completed in 1889.", "The Eiffel Tower was not completed in 1889.",
            "The Eiffel Tower was completed in 1955."]
    p = nli_model.contradiction([prem] * 3, hyps)
    assert p.shape == (3,) and p[1] > p[0] and p[2] > p[0]
    model = Contradiction()
    assert model.dynamic
    enc = model.tokenizer.encode_batch([(prem, h) for h in hyps])
    ids = np.zeros((3, 160), dtype=np.int64)
    mask = np.zeros((3, 160), dtype=np.int64)
    for i, e in enumerate(enc):
        ids[i, : len(e.ids)], mask[i, : len(e.ids)] = e.ids, 1
    logits = model.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    fixed = 1 / (1 + np.exp(-(logits[:, 1] - logits[:, 0])))
    np.testing.assert_allclose(p, fixed, atol=0.02)
    with pytest.raises(ValueError):
        nli_model.contradiction([prem], [])


def test_a_sentence_scores_the_same_alone_and_among_others(nli_model):
    # int8 activations are quantised per tensor: in a shared batch a pair's outputs would depend on its
    # neighbours; one pair per run keeps every score a function of its own inputs only
    from hcat_pipeline.resources.nli_backends import Contradiction

    prem, hyp = " ".join(CONTEXT[:2]), "The Eiffel Tower was completed in 1925."
    others = ([CONTEXT[2], " ".join(CONTEXT) * 2], ["The statue is in Boston.", "The tower was designed in 1700 by a committee of painters."])
    model = Contradiction()
    alone, rep_alone = model([prem], [hyp], represent=True)
    mixed, rep_mixed = model([prem, *others[0]], [hyp, *others[1]], represent=True)
    assert alone[0] == mixed[0] and np.array_equal(rep_alone[0], rep_mixed[0])
    one = nli_model.decision([CONTEXT], [hyp])
    many = nli_model.decision([[CONTEXT[2]], CONTEXT, CONTEXT], ["The statue is in Boston.", hyp, "It is 500 metres tall."])
    assert one["sigma"][0] == pytest.approx(many["sigma"][1], abs=1e-12)  # float64 rounding of different matrix shapes only


def test_spacy_parse_roles_and_negation(nli_model):
    active, passive, neg = nli_model.parse(["Gustave Eiffel designed the tower.", "The tower was designed by Gustave Eiffel.",
                                            "Gustave Eiffel did not design the tower."])
    assert active.subjects == passive.subjects and "eiffel" in active.subjects
    assert active.objects == passive.objects == {"tower"}
    assert neg.negations == 1 and active.negations == 0


def test_missing_weights_and_feature_mismatch_are_clear(tmp_path, nli_model):
    with pytest.raises(FileNotFoundError):
        NLIModel(weights_path=str(tmp_path / "none.json")).head()
    bad = json.loads(PACKAGED_HEAD.read_text())
    bad["feature_names"][0] = "centroid_sim"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="expects features"):
        NLIModel(weights_path=str(tmp_path / "bad.json"), embedding_cache_dir=nli_model.embedding_cache_dir).decision(
            [CONTEXT], ["The tower is tall."])


def test_models_whose_features_weigh_zero_are_not_run(tmp_path, nli_model, monkeypatch):
    from hcat_pipeline.metrics.nli.parse import PARSE_FEATURES

    d = json.loads(PACKAGED_HEAD.read_text())
    if PARSE_FEATURES[0] not in d["feature_names"]:  # a head with the parse features, weighing 0
        k = d["feature_names"].index("contradiction")
        for key, fill in (("feature_names", PARSE_FEATURES), ("w", [0.0] * 4), ("mean", [0.0] * 4), ("scale", [1.0] * 4)):
            d[key][k:k] = fill
    names = d["feature_names"]
    for f in PARSE_FEATURES + ["contradiction", "pair_probe"]:
        d["w"][names.index(f)] = 0.0
    (tmp_path / "zero.json").write_text(json.dumps(d))
    hyps = ["The Eiffel Tower was completed in 1889.", "The Eiffel Tower is not in Paris."]
    m = NLIModel(weights_path=str(tmp_path / "zero.json"), embedding_cache_dir=nli_model.embedding_cache_dir)
    full, got = m.pair_features([CONTEXT] * 2, hyps, probe=m.head().probe)  # every feature, both models run
    assert got == names and m._parse_cache
    m._parse_cache.clear()

    def no_call(*a, **k):
        raise AssertionError("a model with zero-weight features was run")

    monkeypatch.setattr(NLIModel, "contradiction", no_call)
    out = m.decision([CONTEXT] * 2, hyps)
    assert not m._parse_cache  # spaCy not run either
    np.testing.assert_allclose(out["z"], m.head().decision(full)["z"], rtol=0, atol=1e-12)  # same scores
    d["w"][names.index("role_swap")] = -0.1  # a parse feature that weighs: spaCy runs again
    (tmp_path / "parse.json").write_text(json.dumps(d))
    m2 = NLIModel(weights_path=str(tmp_path / "parse.json"), embedding_cache_dir=nli_model.embedding_cache_dir)
    m2.decision([CONTEXT] * 2, hyps)
    assert m2._parse_cache


def test_asset_and_cli_take_their_defaults_from_the_recipe():
    import argparse

    from hcat_pipeline.assets.nli import NLIHeadConfig
    from hcat_pipeline.commands.nli import add_arguments

    assert NLIHeadConfig().model_dump(exclude={"out_path"}) == dataclasses.asdict(TrainConfig())
    p = argparse.ArgumentParser()
    add_arguments(p)
    ns = vars(p.parse_args([]))
    assert {f.name: ns[f.name] for f in dataclasses.fields(TrainConfig)} == dataclasses.asdict(TrainConfig())
    assert vars(p.parse_args(["--use-parse", "false", "--C", "0.5"]))["use_parse"] is False


def test_nli_head_asset_retrains_on_chunks(tmp_path, nli_model):
    from hcat_pipeline.assets.nli import nli_head

    texts = [
        "The Eiffel Tower was completed in 1889 in Paris. It is 330 metres tall, and it was designed by Gustave Eiffel. "
        "It was the tallest structure until 1930. Millions of people visit it every year.",
        "Python was created by Guido van Rossum, and it was first released in 1991. It emphasises readability. "
        "Its standard library is large. Python supports functional programming.",
        "The Amazon River flows through Brazil, Peru and Colombia. It has over 1100 tributaries, and it carries much water. "
        "The basin covers 7 million square kilometres. Most of it is rainforest.",
    ]
    chunks = pl.DataFrame({"doc_id": [f"d{i}" for i in range(3)], "chunk_index": [0, 0, 0], "text": texts})
    out_path = tmp_path / "wh" / "nli_head.json"

    chunks_src = stub_asset("chunks", chunks)

    cfg = {"n_pairs": 200, "qa_pairs": 0, "public_sets": "", "C": 1.0, "use_contradiction": False, "out_path": str(out_path)}
    res = dg.materialize(
        [chunks_src, nli_head],
        resources={"nli_model": nli_model, "io_manager": dg.mem_io_manager},
        run_config={"ops": {"nli_head": {"config": cfg}}},
    )
    assert res.success
    frame = res.output_for_node("nli_head")
    assert set(frame["label"].to_list()) == {0, 1} and frame["pairs"].sum() == 200
    retrained = NLIModel(weights_path=str(out_path), embedding_cache_dir=nli_model.embedding_cache_dir)
    assert "contradiction" not in retrained.head().feature_names and retrained.head().info["C"] == 1.0
    d = retrained.decision([CONTEXT], ["The Eiffel Tower was completed in 1889."])
    assert d["z"].shape == (1,)


def test_llm_second_opinion_is_bounded_and_cached(nli_model):
    m = NLIModel(embedding_cache_dir=nli_model.embedding_cache_dir, llm_second_opinion=True, llm_margin=100.0,
                 llm_max_sentences=1)
    hyps = ["The Eiffel Tower was completed in 1889.", "The Eiffel Tower is in Madrid."]
    base = nli_model.decision([CONTEXT] * 2, hyps)
    out = m.decision([CONTEXT] * 2, hyps)
    assert out["llm_checked"].sum() == 1  # at most llm_max_sentences per call
    i = int(np.argmax(out["llm_checked"]))
    assert out["sigma"][i] != base["sigma"][i] and out["sigma"][1 - i] == base["sigma"][1 - i]
    np.testing.assert_array_equal(out["D"], base["D"])  # D stays the head's distance
    again = m.decision([CONTEXT] * 2, hyps)
    np.testing.assert_array_equal(again["sigma"], out["sigma"])  # cached: same answer


def test_pair_representation_pools_the_hypothesis_tokens_apart():
    from hcat_pipeline.resources.nli_backends import pair_representation

    last = np.array([[[1.0, 0.0], [3.0, 2.0], [5.0, -2.0], [9.0, 9.0]]])  # 4 tokens, the last one padding
    mask, hyp = np.array([[1, 1, 1, 0]]), np.array([[False, True, True, True]])
    r = pair_representation(np.array([[7.0, 7.0]]), last, mask, hyp)
    np.testing.assert_allclose(r[0], [7, 7, 3, 0, 4, 0, 5, 2])  # pooler, mean, hypothesis mean, hypothesis max
    r0 = pair_representation(np.zeros((1, 2)), last, mask, np.zeros((1, 4), dtype=bool))
    assert np.isfinite(r0).all() and not r0[0, 4:].any()  # no hypothesis token left: zeros, not -inf
