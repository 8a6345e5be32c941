"""Conciseness and tone (golden-eval §3.2), opt-in: known answers, and they never decide a gate unvalidated."""

import polars as pl
import pytest

from hcat_pipeline.metrics import score
from hcat_pipeline.metrics.constructs import CONSTRUCTS
from hcat_pipeline.metrics.registry import opt_in_metrics
from hcat_pipeline.metrics.style import conciseness, tone


def test_a_padded_rude_answer_scores_below_a_short_polite_one():
    ref = "The break statement ends the nearest enclosing loop."
    polite = "The break statement ends the nearest enclosing loop."
    padded = ("Honestly, this is a stupid question and I hate answering it. The break statement ends the nearest enclosing loop, "
              "which you would know if you had read anything at all.")
    assert conciseness(polite, ref) == 1.0 and conciseness(padded, ref) == pytest.approx(8 / 30)
    assert conciseness("", ref) is None and conciseness(polite, None) is None
    t_polite, neg_polite = tone(polite)
    t_rude, neg_rude = tone(padded)
    assert t_rude < -0.3 < t_polite and neg_polite == [] and neg_rude == ["Honestly, this is a stupid question and I hate answering it."]
    frame = pl.DataFrame({"query": ["q", "q", "q"], "contexts": [["c"]] * 3, "answer": [polite, padded, "I cannot answer that from the documents."],
                          "reference": [ref] * 3})  # fmt: skip
    out = score(frame, metrics=["conciseness", "tone"])
    assert out["conciseness"].to_list()[:2] == [1.0, pytest.approx(8 / 30)] and out["conciseness"][2] is None  # a refusal is not scored
    assert out["answer_words"].to_list() == [8, 30, 7]


def test_opt_in_and_declared_not_validated():
    assert {"conciseness", "tone"} <= set(opt_in_metrics())
    for name in ("conciseness", "tone"):
        assert "not validated" in CONSTRUCTS[name].gap and CONSTRUCTS[name].dimension is None
