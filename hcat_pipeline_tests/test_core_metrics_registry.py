"""The metric registry and the scorer's failure rules, with a deterministic stand-in embedding (fast).
The real models go through ``score()`` in test_metrics_api.py."""


import polars as pl
import pytest

from hcat_pipeline.metrics import registry
from hcat_pipeline.metrics.batch import Resources
from hcat_pipeline.metrics.options import ScoreOptions
from hcat_pipeline.metrics.registry import NEEDS, MetricUnavailable, metric, registered, resolve_metrics
from hcat_pipeline.metrics.scoring import score_frame
from hcat_pipeline_tests.metrics_data import FRAME, fake_embed


@pytest.fixture
def scratch_metric():
    """Register throw-away metrics for one test (and remove them afterwards)."""
    names = []

    def register(name, **kw):
        names.append(name)
        return metric(name, **kw)

    yield register
    for n in names:
        registry._REGISTRY.pop(n, None)


def test_every_metric_declares_needs_columns_and_aggregations():
    metrics = registered()
    assert {"context_relevancy", "answer_relevancy", "groundedness_similarity", "groundedness_nli", "completeness_similarity",
            "completeness_wasserstein", "semantic_similarity", "cross_lingual_similarity", "toxicity", "pii_leak", "refusal",
            "citation_recall", "citation_precision", "citation_presence", "stated_confidence", "hierarchical_consistency",
            "long_document_faithfulness", "language_coverage", "conciseness", "tone"} == set(metrics)  # fmt: skip
    owners = {}
    for m in metrics.values():
        assert m.needs <= set(NEEDS) and m.doc and m.family in registry.FAMILIES
        for col in m.output_columns:
            assert col not in owners, f"{col} produced by {owners[col]} and {m.name}"
            owners[col] = m.name
    assert metrics["groundedness_nli"].needs == {"nli"} and metrics["pii_leak"].needs == {"pii"}
    assert metrics["semantic_similarity"].needs == {"embed", "reference"}
    assert metrics["context_relevancy"].aggregations == ("mean", "weighted", "minimax")
    assert metrics["completeness_similarity"].aggregations == ("mean", "weighted")
    assert metrics["toxicity"].aggregations == ()  # a maximum over sentences, not a configurable mean
    assert metrics["toxicity"].needs == {"embed_layers", "multilingual"} and "toxicity_profanity" in metrics["toxicity"].output_columns
    assert not metrics["cross_lingual_similarity"].default
    # the refusal metric needs embeddings only in the modes that use them
    assert metrics["refusal"].needs_for(ScoreOptions()) == set()
    assert metrics["refusal"].needs_for(ScoreOptions(refusal_mode="classifier+embedding")) == {"embed"}


def test_default_set_depends_on_the_reference_column_and_unknown_names_are_listed():
    with_ref = [m.name for m in resolve_metrics(None, has_reference=True)]
    without = [m.name for m in resolve_metrics(None, has_reference=False)]
    assert "semantic_similarity" in with_ref and "semantic_similarity" not in without
    assert "cross_lingual_similarity" not in with_ref  # opt-in
    with pytest.raises(ValueError, match=r"unknown metrics \['bleu'\].*context_relevancy"):
        resolve_metrics(["bleu"], True)


def test_registration_rejects_bad_declarations(scratch_metric):
    with pytest.raises(ValueError, match="unknown needs"):
        scratch_metric("x_bad_need", needs={"gpu"})
    with pytest.raises(ValueError, match="aggregations"):
        scratch_metric("x_bad_agg", aggregations=("weighted",))
    with pytest.raises(ValueError, match="does not declare needs"):
        scratch_metric("x_no_embed", embeds=("answer",))
    with pytest.raises(ValueError, match="already belong"):
        scratch_metric("x_clash", columns={"least_grounded_sentence": pl.String})(lambda b, r, o: {})


def test_a_new_metric_is_one_registration(scratch_metric):
    @scratch_metric("x_answer_words", dtype=pl.Int64, columns={"x_answer_first_word": pl.String})
    def words(batch, resources, options):
        """Words in the answer."""
        n, first = batch.column(), batch.column()
        for i in batch.valid:
            n[i], first[i] = len(batch.answers[i].split()), batch.answers[i].split()[0]
        return {"x_answer_words": n, "x_answer_first_word": first}

    out, info = score_frame(FRAME, ["x_answer_words"])
    assert out["x_answer_words"].to_list() == [5, None] and out["x_answer_first_word"].to_list() == ["The", None]
    assert info["metrics_computed"] == ["x_answer_words"] and out["score_skipped_reason"].to_list() == [None, "response failed: timeout"]


def test_missing_resource_fails_loudly_unless_allowed():
    with pytest.raises(MetricUnavailable) as e:
        score_frame(FRAME, ["groundedness_similarity", "pii_leak"], embed=fake_embed)
    assert isinstance(e.value, ValueError) and e.value.metric == "pii_leak"
    assert "no pii resource was given" in str(e.value) and "PIIDetector" in str(e.value)  # metric, cause, fix
    out, info = score_frame(FRAME, ["groundedness_similarity", "pii_leak"], embed=fake_embed, allow_unavailable=True)
    assert info["metrics_unavailable"].keys() == {"pii_leak"} and "Fix: pass pii=PIIDetector" in info["metrics_unavailable"]["pii_leak"]
    assert info["metrics_computed"] == ["groundedness_similarity"]
    assert out["pii_leak"].null_count() == 2 and out["pii_leaks"].null_count() == 2
    assert out["groundedness_similarity"][0] == pytest.approx(1.0, abs=1e-6)


def test_several_unavailable_metrics_are_reported_together():
    with pytest.raises(MetricUnavailable) as e:
        score_frame(FRAME, ["semantic_similarity", "groundedness_nli"], embed=fake_embed)
    assert e.value.reasons.keys() == {"semantic_similarity", "groundedness_nli"}
    assert "'reference' column" in str(e.value) and "NLIModel" in str(e.value)


def test_embedding_modes_of_refusal_need_embed():
    with pytest.raises(MetricUnavailable, match="refusal.*no embed resource"):
        score_frame(FRAME, ["refusal"], refusal_mode="ensemble")
    out, _ = score_frame(FRAME, ["refusal"], refusal_mode="rules")
    assert out["refusal"].to_list() == [0.0, None] and out["refused"].to_list() == [False, None]


def test_a_bug_in_a_metric_is_never_a_quiet_null(scratch_metric):
    @scratch_metric("x_buggy")
    def buggy(batch, resources, options):
        """Raises."""
        raise ZeroDivisionError("bug")

    with pytest.raises(ZeroDivisionError):
        score_frame(FRAME, ["x_buggy"], allow_unavailable=True)

    @scratch_metric("x_wrong_columns", columns={"x_explained": pl.String})
    def wrong(batch, resources, options):
        """Forgets its explanation column."""
        return {"x_wrong_columns": batch.column()}

    with pytest.raises(RuntimeError, match="declared"):
        score_frame(FRAME, ["x_wrong_columns"], allow_unavailable=True)


def test_resource_loading_errors_unavailable_other_errors_propagate():
    class MissingWeights:
        def decision(self, premises, hypotheses, task="all"):
            raise FileNotFoundError("NLI head weights not found at /nowhere; run `hcat train-nli`")

    class Broken:
        def decision(self, premises, hypotheses, task="all"):
            raise TypeError("bug in the scorer")

    class OtherVersion:
        def decision(self, premises, hypotheses, task="all"):
            raise MetricUnavailable("groundedness_nli", "the head was trained on other features", "retrain: hcat train-nli")

    with pytest.raises(MetricUnavailable, match="'hallucination'.*other features. Fix: retrain") as e:
        Resources(nli=OtherVersion()).acquire("nli", "hallucination")
    assert e.value.metric == "hallucination"  # reported for the metric that asked
    res = Resources(nli=MissingWeights)  # a factory (class) is built when first needed
    with pytest.raises(MetricUnavailable, match="could not be loaded.*FileNotFoundError.*Fix: pass nli"):
        res.acquire("nli", "groundedness_nli")
    with pytest.raises(TypeError, match="bug in the scorer"):
        Resources(nli=Broken()).acquire("nli", "groundedness_nli")
    with pytest.raises(RuntimeError, match="declared"):
        Resources(nli=Broken()).get("nli")  # a metric using what it did not declare


def test_embedding_model_failing_to_load_makes_embedding_metrics_unavailable():
    def embed(texts):
        raise OSError("model files missing")

    with pytest.raises(MetricUnavailable, match="embedding model could not be loaded"):
        score_frame(FRAME, ["context_relevancy", "refusal"], embed=embed)
    out, info = score_frame(FRAME, ["context_relevancy", "refusal"], embed=embed, allow_unavailable=True)
    assert list(info["metrics_unavailable"]) == ["context_relevancy"] and info["metrics_computed"] == ["refusal"]
    assert out["context_relevancy"].null_count() == 2 and out["refusal"][0] is not None


def test_options_are_validated():
    with pytest.raises(TypeError, match="unknown score options"):
        score_frame(FRAME, ["refusal"], coverage=0.3)
    with pytest.raises(ValueError, match="refusal_mode"):
        ScoreOptions(refusal_mode="vibes")
    with pytest.raises(ValueError, match="unknown metrics"):
        score_frame(FRAME, ["refusal"], aggregation={"bleu": "mean"})
    with pytest.raises(ValueError, match="contexts"):
        score_frame(FRAME.drop("contexts"), ["refusal"])


def test_each_sentence_embedded_once_for_all_metrics():
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return fake_embed(texts)

    out, info = score_frame(FRAME, ["context_relevancy", "groundedness_similarity", "completeness_wasserstein"], embed=embed)
    assert len(calls) == 1 and sorted(calls[0]) == sorted({"Where is the tower?", "The tower is in Paris.", "It is tall."})
    assert info["timings"]["unique_sentences"] == 3
    assert out["context_sentences"].to_list() == [["The tower is in Paris.", "It is tall."], None]
