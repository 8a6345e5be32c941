"""The chapter's harness (issue 61 item 8, concept-level chapter §14.5): language coverage of multilingual synthesis
with the packaged multilingual encoder, and checks dispatched by task type — known answers: a synthesis that uses
every language's sources covers them all; one that reads only the English source covers one language of three."""

import polars as pl
import pytest

from hcat_pipeline.metrics import score
from hcat_pipeline.metrics.harness import TASK_CHECKS, evaluate_tasks

SOURCES = ["Das Girokonto kostet fünf Euro im Monat. Überweisungen innerhalb der EU sind kostenlos.",
           "Le compte d'épargne rapporte deux pour cent d'intérêts par an.",
           "The credit card has an annual fee of fifty pounds."]  # fmt: skip
ALL = ("The current account costs five euros a month. Transfers within the EU are free of charge. "
       "The savings account earns two percent interest a year. The credit card has an annual fee of fifty pounds.")  # fmt: skip
ENGLISH_ONLY = "The credit card has an annual fee of fifty pounds."


@pytest.fixture(scope="module")
def multilingual():
    from hcat_pipeline.resources.multilingual import MultilingualEncoder

    return MultilingualEncoder()


def test_a_synthesis_of_every_language_covers_them_all_and_one_that_reads_english_only_does_not(multilingual):
    frame = pl.DataFrame({"query": ["Summarise the fees."] * 2, "contexts": [SOURCES] * 2, "answer": [ALL, ENGLISH_ONLY]})
    out = score(frame, ["language_coverage"], multilingual=multilingual).to_dicts()
    assert out[0]["language_coverage"] == 1.0 and out[0]["language_coverage_missing"] == []
    assert [p["language"] for p in out[0]["language_coverage_languages"]] == ["de", "en", "fr"]
    assert out[1]["language_coverage"] == pytest.approx(1 / 3) and out[1]["language_coverage_missing"] == ["de", "fr"]
    best = {p["language"]: p["best_similarity"] for p in out[1]["language_coverage_languages"]}
    assert best["en"] > 0.95 and best["fr"] < 0.6


def test_checks_are_dispatched_by_task_type_and_an_unknown_type_is_named(multilingual, embedding_model):
    frame = pl.DataFrame({
        "task_type": ["multilingual_synthesis", "long_document", "multilingual_synthesis"],
        "query": ["Summarise the fees."] * 3, "contexts": [SOURCES] * 3, "answer": [ALL, "The card costs fifty pounds a year.", ENGLISH_ONLY],
        "reference": [ALL] * 3, "source_documents": [SOURCES, ["The credit card has an annual fee of fifty pounds a year."], SOURCES],
    })  # fmt: skip
    out = evaluate_tasks(frame, multilingual=multilingual, embedding_model=embedding_model)
    assert out["task_type"].to_list() == frame["task_type"].to_list()  # the input's order kept
    assert out["language_coverage"].to_list()[0] == 1.0 and out["language_coverage"][1] is None and out["language_coverage"][2] < 0.5
    assert out["long_document_faithfulness"].to_list()[1] == 1.0 and out["long_document_faithfulness"][0] is None
    assert set(TASK_CHECKS) == {"long_document", "multilingual_synthesis", "planning", "qa"}
    with pytest.raises(ValueError, match="task_type 'poetry' in row 0"):
        evaluate_tasks(frame.with_columns(pl.lit("poetry").alias("task_type")), multilingual=multilingual)


def test_hcat_score_dispatches_by_a_task_type_column(tmp_path, capsys):
    import json

    from hcat_pipeline.cli import main

    rows = [{"task_type": "multilingual_synthesis", "query": "Summarise the fees.", "contexts": SOURCES, "answer": a} for a in (ALL, ENGLISH_ONLY)]
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["score", str(src), str(dst), "--no-progress"]) == 0
    out = [json.loads(x) for x in dst.read_text().splitlines()]
    assert [r["language_coverage_missing"] for r in out] == [[], ["de", "fr"]]
    assert "multilingual_synthesis (2 rows)" in capsys.readouterr().out
