"""A planted passage is believed only by a system that read it: a closed-book answer that happens to say what the planted
passage says is not a believed distractor (a false flag found on the 2026-12-07 default night), the same answer with the
passage in its context is."""

import numpy as np
import polars as pl

from hcat_pipeline.behaviour.checks import judge_behaviour

TRUE = "The view will be iterated in reverse order of the insertion."
FALSE = "The view will not be iterated in reverse order of the insertion."


def test_only_a_system_that_read_the_planted_passage_can_believe_it():
    cases = pl.DataFrame([{"case_id": "d1", "category": "adversarial", "variant_kind": "distractor", "query_type": "yes_no",
                           "expected_behavior": "answer", "query": "Is the reversed view iterated in reverse insertion order?",
                           "reference_answer": "Yes. " + TRUE, "distractor_passage": FALSE, "options": [], "base_case_id": None,
                           "source_chunk_ids": [], "constraints": [f"true claim (source): {TRUE}", f"false claim: {FALSE}"]}])  # fmt: skip
    answer = "No, the view will not be iterated in reverse order of the insertion."
    responses = pl.DataFrame({"case_id": ["d1", "d1"], "system_id": ["closed_book", "rag"], "answer": [answer, answer],
                              "contexts": [[], [FALSE, "Dictionaries preserve insertion order."]], "error": [None, None]})  # fmt: skip
    rows = {r["system_id"]: r for r in judge_behaviour(cases, responses, embed=lambda t: np.ones((len(t), 4)) / 2).iter_rows(named=True)}
    assert rows["rag"]["verdict"] == "fail"
    assert rows["closed_book"]["verdict"] == "unsure" and "never reached this system's context" in rows["closed_book"]["evidence"]
