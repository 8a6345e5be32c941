"""The one refusal detector: its modes, and every consumer agreeing (score()'s refusal metric,
retrieval_metrics' abstention / false-refusal rates). Accuracy on the hand-labelled set: test_core_safety.py."""

import polars as pl
import pytest

from hcat_pipeline.metrics.refusal import (
    DEFAULT_REFUSAL_MODE,
    REFUSAL_MODES,
    is_refusal,
    is_refused,
    refusal_probability,
    refusal_scores,
)
from hcat_pipeline.metrics.refusal import is_refusal as is_refusal_reexport
from hcat_pipeline.metrics.scoring import score_frame
from hcat_pipeline.responses.retrieval_metrics import per_case_retrieval, retrieval_metrics_table

ANSWERS = [
    "I don't know based on the provided context.",
    "That information is missing from what I was given.",  # a paraphrase the rules miss
    "No.",  # a yes/no answer, not a refusal
    "The fee is 5 dollars per month.",
    "",
    None,
]


def test_modes():
    rules = refusal_probability(ANSWERS, mode="rules")
    assert rules == [1.0, 0.0, 0.0, 0.0, None, None] == [None if a is None or a == "" else float(is_refusal(a)) for a in ANSWERS][:4] + [None, None]
    clf = refusal_probability(ANSWERS)  # default mode
    assert DEFAULT_REFUSAL_MODE == "classifier" and clf[4:] == [None, None]
    assert clf[0] > 0.5 and clf[1] > 0.5 and clf[2] < 0.5 and clf[3] < 0.5
    assert is_refused(ANSWERS) == [True, True, False, False, None, None]
    assert is_refused(ANSWERS, mode="rules") == [True, False, False, False, None, None]
    assert refusal_scores(ANSWERS) == clf  # the two-argument form callers still use
    assert is_refusal_reexport is is_refusal
    with pytest.raises(ValueError, match="expected one of"):
        refusal_probability(ANSWERS, mode="magic")
    for mode in ("classifier+embedding", "ensemble"):
        with pytest.raises(ValueError, match="needs an embed"):
            refusal_probability(ANSWERS, mode=mode)
    assert set(REFUSAL_MODES) == {"rules", "classifier", "classifier+embedding", "ensemble"}


def test_embedding_modes(embedding_model):
    embed = embedding_model.embed
    both = refusal_probability(ANSWERS, embed, "classifier+embedding")
    assert both == refusal_scores(ANSWERS, embed) and both[4:] == [None, None]
    assert both[:4] != refusal_probability(ANSWERS)[:4]  # the embedding head takes part
    ens = refusal_probability(ANSWERS, embed, "ensemble")
    # ensemble = mean of the rules (0/1) and classifier+embedding: the behaviour checks' refusal score
    assert ens[:4] == pytest.approx([(float(is_refusal(a)) + p) / 2 for a, p in zip(ANSWERS[:4], both[:4])])


def test_score_and_retrieval_metrics_use_the_same_detector():
    answers = ANSWERS[:4]
    frame = pl.DataFrame({"query": ["q?"] * 4, "contexts": [["c."]] * 4, "answer": answers})
    golden = pl.DataFrame({"case_id": [f"c{i}" for i in range(4)], "source_chunk_ids": [[]] * 4,
                           "expected_behavior": ["abstain", "abstain", "answer", "answer"], "category": ["x"] * 4})  # fmt: skip
    responses = pl.DataFrame({"case_id": golden["case_id"], "system_id": ["s"] * 4, "context_chunk_ids": [[]] * 4,
                              "answer": answers, "error": [None] * 4}, schema_overrides={"error": pl.String})  # fmt: skip
    for mode in ("rules", "classifier"):
        scored, _ = score_frame(frame, ["refusal"], refusal_mode=mode)
        per_case = per_case_retrieval(responses, golden, refusal_mode=mode)
        assert per_case["refused"].to_list() == scored["refused"].to_list()
        assert per_case["refusal_probability"].to_list() == scored["refusal"].to_list()
    table = retrieval_metrics_table(per_case_retrieval(responses, golden)).row(0, named=True)
    assert table["abstention_rate"] == 1.0 and table["false_refusal_rate"] == 0.0  # default mode catches the paraphrase
    rules = retrieval_metrics_table(per_case_retrieval(responses, golden, refusal_mode="rules")).row(0, named=True)
    assert rules["abstention_rate"] == 0.5
