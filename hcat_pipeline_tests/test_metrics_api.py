import json

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.metrics import MetricUnavailable, metric_names, score
from hcat_pipeline.metrics.batch import PROBE
from hcat_pipeline.metrics.registry import opt_in_metrics

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


def test_every_metric_through_score(frame, embedding_model):
    rows = pl.DataFrame({
        "case_id": ["grounded", "refuses", "leaks", "toxic"],
        "query": [QUERY] * 4,
        "contexts": [CONTEXT + ["Questions go to Jane Doe at jane.doe@example.com."]] * 4,
        "answer": [GROUNDED, "I don't know based on the provided context.",
                   "Write to Jane Doe at jane.doe@example.com or to john.smith@example.org.",
                   "You are a stupid idiot and I hate you."],
        "reference": ["It is in Paris and was completed in 1889.", "Le tour Eiffel est à Paris.", None, None],
    })  # fmt: skip
    metrics = [m for m in metric_names() if m not in opt_in_metrics()]  # the opt-in ones run only when named
    out, info = score(rows, embedding_model=embedding_model, return_info=True)  # default: every metric that applies
    assert info["metrics_computed"] == metrics and info["metrics_unavailable"] == {}
    r = {row["case_id"]: row for row in out.to_dicts()}
    g = r["grounded"]
    # NLI groundedness: the grounded answer is entailed, the refusal is not supported by the context
    assert g["groundedness_nli"] > 0.6 > r["refuses"]["groundedness_nli"]
    assert len(g["nli_sigma"]) == len(g["answer_sentences"]) and g["least_grounded_sentence_nli"] in g["answer_sentences"]
    assert r["toxic"]["toxicity"] > 0.5 > g["toxicity"] and len(r["toxic"]["toxicity_per_sentence"]) == 1
    # explained: the top sentence, a category, the signal, the head that scored; the old profanity score apart
    assert r["toxic"]["toxicity_top_sentence"] == "You are a stupid idiot and I hate you."
    assert r["toxic"]["toxicity_category"] != "none" and g["toxicity_category"] == "none"
    assert r["toxic"]["toxicity_head"] == "full" and r["toxic"]["toxicity_signal"] != "none"
    assert r["toxic"]["toxicity_profanity"] > 0.5 > g["toxicity_profanity"]
    # PII: the e-mail copied from the context is not a leak, the other one is
    assert r["leaks"]["pii_leak"] == 1 and [e["text"] for e in r["leaks"]["pii_leaks"]] == ["john.smith@example.org"]
    assert g["pii_leak"] == 0
    assert [r[c]["refused"] for c in ("grounded", "refuses", "leaks", "toxic")] == [False, True, False, False]
    assert r["refuses"]["refusal"] > 0.8 > 0.2 > g["refusal"]
    assert g["semantic_similarity"] > 0.6 and r["leaks"]["semantic_similarity"] is None  # no reference on that row
    # the opt-in multilingual metric, by name
    cl = score(rows.head(2), ["cross_lingual_similarity"], embedding_model=embedding_model)
    assert cl["cross_lingual_similarity"][0] is not None and cl["cross_lingual_similarity"][1] is not None
    # the embedding variant of the refusal detector
    emb = score(rows, ["refusal"], embedding_model=embedding_model, refusal_mode="classifier+embedding")
    assert emb["refused"][0] is False and emb["refused"][1] is True
    assert emb["refusal"].to_list() != out["refusal"].to_list()  # a different detector ran


def test_unavailable_metric_fails_with_cause_and_fix_unless_allowed(frame, embedding_model, tmp_path):
    from hcat_pipeline.resources.nli import NLIModel

    no_head = NLIModel(weights_path=str(tmp_path / "missing_head.json"))
    with pytest.raises(MetricUnavailable) as e:
        score(frame, ["groundedness_similarity", "groundedness_nli"], embedding_model=embedding_model, nli=no_head)
    msg = str(e.value)
    assert e.value.metric == "groundedness_nli" and "missing_head.json" in msg and "hcat train-nli" in msg
    out, info = score(frame, ["groundedness_similarity", "groundedness_nli"], embedding_model=embedding_model, nli=no_head,
                      allow_unavailable=True, return_info=True)  # fmt: skip
    assert list(info["metrics_unavailable"]) == ["groundedness_nli"] and "FileNotFoundError" in info["metrics_unavailable"]["groundedness_nli"]
    assert json.loads(out["score_info"][0])["metrics_unavailable"] == info["metrics_unavailable"]
    assert info["metrics_computed"] == ["groundedness_similarity"]
    assert out["groundedness_nli"].null_count() == out.height and out["nli_sigma"].null_count() == out.height
    assert out["groundedness_similarity"].null_count() == 1  # only the failed response
    # a reference-based metric asked for explicitly on a frame without references
    with pytest.raises(MetricUnavailable, match="semantic_similarity.*'reference' column"):
        score(frame.drop("reference"), ["semantic_similarity"], embedding_model=embedding_model)
    assert "semantic_similarity" not in score(frame.drop("reference"), ["refusal"], embedding_model=embedding_model).columns


def test_a_failing_model_is_a_bug_not_a_null_column(frame, embedding_model):
    class BrokenNLI:
        def decision(self, premises, hypotheses, task="all"):
            raise RuntimeError("NLI model crashed")

    with pytest.raises(RuntimeError, match="NLI model crashed"):
        score(frame, ["groundedness_nli"], embedding_model=embedding_model, nli=BrokenNLI(), allow_unavailable=True)


def test_groundedness_nli_scores_each_row_with_its_tasks_head(frame, embedding_model):
    """The call's ``task`` (default qa: RAG answers), overridden per row by a ``task`` column."""

    class Recorder:
        tasks: list = []

        def decision(self, premises, hypotheses, task="all"):
            if list(hypotheses) != [PROBE]:  # not the resource's load check
                self.tasks.append((task, len(hypotheses)))
            return {"z": np.zeros(len(hypotheses)), "D": np.zeros(len(hypotheses)), "sigma": np.full(len(hypotheses), 0.5)}

    rec = Recorder()
    score(frame, ["groundedness_nli"], embedding_model=embedding_model, nli=rec)
    assert {t for t, _ in rec.tasks} == {"qa"}
    rec.tasks.clear()
    score(frame, ["groundedness_nli"], embedding_model=embedding_model, nli=rec, task="summary")
    assert {t for t, _ in rec.tasks} == {"summary"}
    rec.tasks.clear()
    tasks = ["dialogue"] + [None] * (frame.height - 1)
    score(frame.with_columns(pl.Series("task", tasks)), ["groundedness_nli"], embedding_model=embedding_model, nli=rec, task="summary")
    assert {t for t, _ in rec.tasks} <= {"dialogue", "summary"} and "summary" in {t for t, _ in rec.tasks}
    with pytest.raises(ValueError, match="task 'chat'"):
        score(frame, ["groundedness_nli"], embedding_model=embedding_model, nli=rec, task="chat")


def test_unknown_metric_and_missing_columns_raise(frame, embedding_model):
    with pytest.raises(ValueError, match=r"unknown metrics \['bleu'\]; known metrics: .*groundedness_nli"):
        score(frame, ["bleu"], embedding_model=embedding_model)
    with pytest.raises(ValueError, match="contexts"):
        score(frame.drop("contexts"), EMB, embedding_model=embedding_model)


@pytest.mark.parametrize("text", [
    "What is the default value of i", "  Nothing happens when it is executed. ", "It returns a new list?",
    'The "__module__" attribute. The name of the module.', '"__module__" The name of the module in which it was defined.',
    "First line\nsecond line", "Use x (see below) and y. Then z.", "e.g. this one", "Yes. It does.", "Ends with a quote”",
])  # fmt: skip
def test_a_text_read_as_one_sentence_without_the_splitter_is_what_the_splitter_returns(text):
    """Issue 66: the metric batch skips the sentence splitter only where it could return nothing but the text."""
    from hcat_pipeline.corpus.chunking import split_sentences
    from hcat_pipeline.metrics.batch import one_sentence

    if one_sentence(text):
        assert split_sentences(text) == [text.strip()]
    assert one_sentence(text) == (text.strip() in ("What is the default value of i", "Nothing happens when it is executed.", "It returns a new list?"))
