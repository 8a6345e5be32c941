"""Generalisation bounds (issue 61 item 7, golden-eval §3.5.3): the report names the setting its results hold for —
corpus, strata covered of the corpus's, query types, question languages, each system's configuration, the night — and
what they do not speak for, read from the night's own tables (known answers below)."""

import polars as pl

from hcat_pipeline.reports.generalisation import setting_bounds
from hcat_pipeline.reports.sections import OptionalTable, setting_section

GOLDEN = pl.DataFrame({
    "case_id": ["a", "b", "c", "d"], "version": ["gs-1"] * 4, "corpus_hash": ["f00dfeedbeef0123"] * 4,
    "stratum": [0, 0, 1, None], "category": ["happy_path", "happy_path", "robustness", "out_of_scope"],
    "query_type": ["simple", "yes_no", "simple", "simple"],
    "query": ["How much is the yearly fee of the Gold card?", "Is the Easy Saver account open to customers aged 16?",
              "Wie hoch ist die Jahresgebühr der Goldkarte?", "What is the weather on Mars tomorrow?"],
})  # fmt: skip
RESPONSES = pl.DataFrame({"case_id": ["a", "a"], "system_id": ["bank-rag", "closed_book"], "config_hash": ["cfg-1", "cfg-2"],
                          "retriever": ["hybrid", "closed_book"]})  # fmt: skip
MANIFEST = {"provenance": {"generation": {"stratum_labels": {"0": "cards", "1": "savings", "2": "mortgages"},
                                          "kept_per_stratum": {"0": 2, "1": 1, "2": 0}}}}  # fmt: skip


def test_the_setting_names_what_the_results_hold_for_and_what_they_do_not():
    section, line = setting_bounds(GOLDEN, RESPONSES, MANIFEST, "2026-11-29")
    rows = {r[0]: r[1:] for r in section.rows}
    assert rows["corpus"][0] == "corpus hash f00dfeedbeef"
    assert rows["topics"] == ["2 topic strata of the corpus's 3", "strata with no case: 2 (mortgages)"]
    assert rows["query types"][0] == "simple 3, yes_no 1" and rows["query types"][1] == "multi_hop, inference, multiple_choice"
    assert "edge_case" in rows["categories"][1] and "happy_path" not in rows["categories"][1]
    assert rows["languages"][0] == "en 3, de 1"
    assert "bank-rag (config cfg-1; retriever=hybrid)" in rows["systems"][0] and "closed_book (config cfg-2" in rows["systems"][0]
    assert "2026-11-29" in rows["time"][0] and "4 cases of version gs-1" in rows["cases and traffic"][0]
    assert "not for strata with no case: 2 (mortgages)" in line and "2 question language(s) (de, en)" in line


def test_without_a_manifest_the_strata_are_those_held_and_nothing_is_claimed_of_the_rest():
    section, _ = setting_bounds(GOLDEN, RESPONSES, None, "2026-11-29")
    assert dict((r[0], r[1:]) for r in section.rows)["topics"] == ["2 topic strata", "topics the corpus does not hold"]


def test_the_report_says_why_when_the_tables_are_missing():
    section, line = setting_section({"night": "2026-11-29"}, {"golden_set": OptionalTable(GOLDEN)})
    assert not section.available and "not read" in line and "responses" in line
