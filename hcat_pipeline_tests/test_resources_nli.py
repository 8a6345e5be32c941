"""NLIModel with the packaged head and the real packaged MiniLM / contradiction models; nli_head asset."""

import json

import dagster as dg
import numpy as np
import polars as pl
import pytest

from hcat_pipeline.core.metrics.groundedness_nli import groundedness_nli_batch
from hcat_pipeline.resources.nli import PACKAGED_HEAD, NLIModel

CONTEXT = [
    "The Eiffel Tower was completed in 1889 in Paris.",
    "It is 330 metres tall and was designed by the company of Gustave Eiffel.",
]
FAITHFUL_VS_SWAPPED = [
    ("The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1925."),
    ("The tower is 330 metres tall.", "The tower is 410 metres tall."),
    ("The Eiffel Tower is in Paris.", "The Eiffel Tower is in Madrid."),
    ("It was designed by the company of Gustave Eiffel.", "It was not designed by the company of Gustave Eiffel."),
]


@pytest.fixture(scope="module")
def nli_model(tmp_path_factory):
    return NLIModel(embedding_cache_dir=str(tmp_path_factory.mktemp("nli_emb")))


def test_packaged_head_is_shipped_and_loads():
    d = json.loads(PACKAGED_HEAD.read_text())
    assert d["format"] == "hcat-nli-head/1" and len(d["w"]) == len(d["feature_names"])
    head = NLIModel().head()
    assert head.w_norm > 0 and head.info["n_train"] >= 1000


def test_faithful_sentence_scores_above_swapped_one(nli_model):
    hyps = [h for pair in FAITHFUL_VS_SWAPPED for h in pair]
    out = nli_model.decision([CONTEXT] * len(hyps), hyps)
    sig = out["sigma"].reshape(-1, 2)
    assert np.all(sig[:, 0] > sig[:, 1]), sig
    assert np.all(out["D"].reshape(-1, 2)[:, 0] > 0)  # faithful ones on the entailment side
    head = nli_model.head()
    np.testing.assert_allclose(out["D"], out["z"] / np.linalg.norm(head.w), rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["sigma"], 1 / (1 + np.exp(-out["D"])), atol=1e-12)


def test_groundedness_nli_batch_with_real_model(nli_model):
    rows = [
        (["The Eiffel Tower was completed in 1889.", "It is 330 metres tall."], CONTEXT),
        (["The Eiffel Tower was completed in 1889.", "It was painted gold by Napoleon in 1925."], CONTEXT),
        ([], CONTEXT),
    ]
    res = groundedness_nli_batch(rows, nli_model)
    assert [len(r["nli_sigma"]) for r in res] == [2, 2, 0]
    assert all(len(r["nli_distance"]) == len(r["nli_sigma"]) for r in res)
    assert res[0]["groundedness_nli"] > res[1]["groundedness_nli"]
    assert res[1]["nli_least_grounded"] == 1
    assert all(0.0 < s < 1.0 for r in res for s in r["nli_sigma"])


def test_contradiction_flags_negation_and_number_swap(nli_model):
    prem = " ".join(CONTEXT)
    p = nli_model.contradiction(
        [prem] * 3, ["The Eiffel Tower was completed in 1889.", "The Eiffel Tower was not completed in 1889.", "The Eiffel Tower was completed in 1955."]
    )
    assert p.shape == (3,) and p[1] > p[0] and p[2] > p[0]
    with pytest.raises(ValueError):
        nli_model.contradiction([prem], [])


def test_head_mismatch_and_missing_weights_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError):
        NLIModel(weights_path=str(tmp_path / "none.json")).head()
    with pytest.raises(ValueError, match="use_llm"):
        NLIModel(use_llm=True).head()


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

    @dg.asset(name="chunks")
    def chunks_src() -> pl.DataFrame:
        return chunks

    res = dg.materialize(
        [chunks_src, nli_head],
        resources={"nli_model": nli_model, "io_manager": dg.mem_io_manager},
        run_config={"ops": {"nli_head": {"config": {"n_pairs": 200, "out_path": str(out_path)}}}},
    )
    assert res.success
    frame = res.output_for_node("nli_head")
    assert set(frame["label"].to_list()) == {0, 1} and frame["pairs"].sum() == 200
    assert out_path.exists()
    retrained = NLIModel(weights_path=str(out_path), embedding_cache_dir=nli_model.embedding_cache_dir)
    d = retrained.decision([CONTEXT], ["The Eiffel Tower was completed in 1889."])
    assert d["z"].shape == (1,)


def test_token_align_feature_with_real_minilm(nli_model):
    hyps = ["Completed in 1889 in Paris.", "Painted gold by Napoleon.", "Designed by the company."]
    ta = nli_model.token_align([CONTEXT] * 3, hyps)
    assert ta.shape == (3,) and np.all((ta > 0) & (ta <= 1.0 + 1e-6))
    assert ta[0] > ta[1] and ta[2] > ta[1]  # copied spans align token by token, the invented one does not
    raw, names = nli_model.pair_features([CONTEXT] * 3, hyps, use_token_align=True)
    assert names[-1] == "token_align" and np.allclose(raw[:, -1], ta)
    # the packaged head uses it, so decision() builds it
    assert "token_align" in nli_model.head().feature_names
    d = nli_model.decision([CONTEXT] * 3, hyps)
    assert d["sigma"][0] > d["sigma"][1]
