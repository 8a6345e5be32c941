import json

import polars as pl
import pytest

from hcat_pipeline.metrics import score

CONTEXT = [
    "The Eiffel Tower is in Paris. It was completed in 1889. It is 330 metres tall.",
    "Paris is the capital of France. The city lies on the Seine.",
]
QUERY = "Where is the Eiffel Tower and when was it completed?"
GROUNDED = "The Eiffel Tower is in Paris. It was completed in 1889."
HALLUCINATED = "The Eiffel Tower is in Paris. Aliens from Mars assembled it out of chocolate in 1750."
EMB = ["context_relevancy", "groundedness_similarity", "completeness_similarity", "completeness_wasserstein", "answer_relevancy", "semantic_similarity"]


@pytest.fixture(scope="module")
def frame():
    return pl.DataFrame(
        {
            "case_id": ["grounded", "hallucinated", "failed", "off_topic"],
            "query": [QUERY] * 4,
            "contexts": [CONTEXT] * 4,
            "answer": [GROUNDED, HALLUCINATED, None, "Bananas are rich in potassium."],
            "reference": ["The Eiffel Tower stands in Paris and was completed in 1889."] * 4,
            "error": [None, None, "timeout: no reply after 3 attempts", None],
        }
    )


def test_score_grounded_above_hallucinated_with_explanations(frame, embedding_model):
    calls = []

    def embed(texts):
        calls.append(len(texts))
        return embedding_model.embed(texts)

    out, info = score(frame, EMB, embed=embed, return_info=True)
    assert len(calls) == 1  # every unique sentence of the whole frame in ONE call
    scored = out.filter(pl.col("score_skipped_reason").is_null())
    sentences = {s for c in ("query_sentences", "context_sentences", "answer_sentences") for row in scored[c] for s in row}
    sentences.add("The Eiffel Tower stands in Paris and was completed in 1889.")  # the one reference sentence
    assert calls[0] == len(sentences) == info["timings"]["unique_sentences"]  # each unique sentence once
    r = {row["case_id"]: row for row in out.to_dicts()}
    g, h, off = r["grounded"], r["hallucinated"], r["off_topic"]
    assert g["groundedness_similarity"] > h["groundedness_similarity"] + 0.2
    assert h["least_grounded_sentence"].startswith("Aliens from Mars")  # the unsupported sentence
    assert h["least_grounded_smax"] == pytest.approx(min(h["groundedness_smax"]))
    assert len(h["groundedness_smax"]) == len(h["answer_sentences"]) == 2
    assert g["completeness_wasserstein"] < h["completeness_wasserstein"]  # lower = more complete
    assert g["completeness_wasserstein"] <= g["completeness_wasserstein_approx"] + 1e-9
    assert g["completeness_similarity"] > h["completeness_similarity"]
    assert len(g["completeness_smax"]) == len(g["context_sentences"]) == 5
    assert "It is 330 metres tall." in g["uncovered_context_sentences"]
    assert "It was completed in 1889." not in g["uncovered_context_sentences"]
    assert g["answer_relevancy"] > off["answer_relevancy"] + 0.2
    assert g["semantic_similarity"] > h["semantic_similarity"] > off["semantic_similarity"]
    # the failed response is kept, with null metrics and the reason
    f = r["failed"]
    assert f["score_skipped_reason"].startswith("response failed: timeout")
    assert all(f[m] is None for m in EMB)
    assert out.height == 4 and info["rows_skipped"] == 1 and info["rows_scored"] == 3
    assert json.loads(out["score_info"][0])["metrics_computed"] == EMB


def test_aggregation_is_an_option_and_recorded(frame, embedding_model):
    out, info = score(frame, ["context_relevancy", "completeness_similarity", "answer_relevancy"], embedding_model=embedding_model,
                      aggregation="minimax", return_info=True)
    assert info["aggregation"] == {"context_relevancy": "minimax", "completeness_similarity": "mean", "answer_relevancy": "minimax"}
    h = out.filter(pl.col("case_id") == "hallucinated").row(0, named=True)
    assert h["answer_relevancy"] == pytest.approx(min(h["answer_relevancy_smax"]))


def test_missing_or_failing_metric_is_recorded_and_others_still_computed(frame, embedding_model):
    class BrokenNLI:
        def __getattr__(self, name):
            raise RuntimeError("NLI model unavailable")

    out, info = score(frame, ["groundedness_similarity", "groundedness_nli"], embedding_model=embedding_model, nli=BrokenNLI(), return_info=True)
    assert "groundedness_nli" in info["metrics_unavailable"]
    assert info["metrics_computed"] == ["groundedness_similarity"]
    assert out["groundedness_nli"].null_count() == out.height
    assert out["groundedness_similarity"].null_count() == 1  # only the failed response


def test_unknown_metric_and_missing_columns_raise(frame, embedding_model):
    with pytest.raises(ValueError, match="unknown metrics"):
        score(frame, ["bleu"], embedding_model=embedding_model)
    with pytest.raises(ValueError, match="contexts"):
        score(frame.drop("contexts"), EMB, embedding_model=embedding_model)
