"""Reference answers checked at selection: yes/no polarity, multiple-choice keys, support by the source."""

import pytest

from hcat_pipeline.golden.selection import (
    REJECTION_REASONS,
    SelectionConfig,
    check_yes_no_polarity,
    negation_mismatch,
    reference_polarity,
    rejection_counts,
    select_queries,
    split_yes_no,
)
from hcat_pipeline_tests.golden_data import bow_embed, row

FORMAT = (
    "The format specification follows the colon. A format specification can be empty; then the value is "
    "formatted with str(). A field name cannot be empty when automatic numbering is switched off."
)
TUPLE = "A tuple is an immutable sequence. Items of a list can be replaced, appended or removed."


@pytest.mark.parametrize(
    "question, statement, expected",
    [
        ("Can a format specification be empty?", "No. A format specification can be empty.", "yes"),  # the seen case
        ("Can a format specification be empty?", "A format specification cannot be empty.", "no"),
        ("Can a field name be empty when automatic numbering is switched off?", FORMAT, "no"),
        ("Is a tuple mutable?", "A tuple is an immutable sequence.", "no"),  # negating prefix
        ("Is a tuple immutable?", "A tuple is an immutable sequence.", "yes"),
        ("Isn't a tuple immutable?", "A tuple is an immutable sequence.", "yes"),  # same proposition
        ("Is the argument required?", "The argument is optional.", "no"),  # antonym
        ("Does the pass statement do anything when executed?", "The pass statement is a null operation: when it is executed, nothing happens.", "no"),
        ("Can a for loop have an else clause?", "A for loop may have an else clause, which runs when the loop finishes without break.", "yes"),
        ("Don't dictionaries preserve insertion order?", "Dictionaries don't preserve insertion order.", "no"),
        # the statement does not restate the question: abstain rather than guess
        ("Can a string be changed in place by its upper() method?", "String methods such as upper() return a new string.", None),
        ("Is a tuple mutable?", "Lists are sequences.", None),
    ],
)
def test_reference_polarity(question, statement, expected):
    assert reference_polarity(question, statement) == expected


def test_contractions_are_negations():
    from hcat_pipeline.golden.selection import polarity_tokens as _tokens

    assert _tokens("It cannot; can't, won't, doesn’t") == ["it", "can", "not", "can", "not", "will", "not", "does", "not"]
    assert reference_polarity("Can the value be changed?", "The value can't be changed.") == "no"
    assert reference_polarity("Will the value be changed?", "The value won't not be changed.") == "yes"  # double negation


def test_split_yes_no():
    assert split_yes_no("No. A format specification can be empty.") == ("no", "A format specification can be empty.")
    assert split_yes_no("yes, it can") == ("yes", "it can")
    assert split_yes_no("Nothing happens.") == (None, "Nothing happens.")  # "No" must be a whole word


def test_negation_mismatch_is_per_clause():
    assert negation_mismatch("A tuple is a mutable sequence.", TUPLE)
    assert not negation_mismatch("A tuple is an immutable sequence.", TUPLE)
    # the negation belongs to another clause of the claim than the one the source restates
    assert not negation_mismatch("pass does nothing, while break terminates the nearest enclosing loop.",
                                 "The break statement terminates the nearest enclosing for or while loop.")  # fmt: skip


def yes_no(query, label, evidence, qid=None):
    return row("yes_no", query, f"{label.capitalize()}. {evidence}", ("f1",), answer_label=label, evidence=evidence, query_id=qid or query)


def test_yes_no_polarity_checks_against_explanation_and_source():
    q = "Can a format specification be empty?"
    seen = yes_no(q, "no", "A format specification can be empty.")
    assert check_yes_no_polarity(seen, FORMAT)[0] == "polarity_contradicts_explanation"
    assert check_yes_no_polarity(yes_no(q, "yes", "A format specification can be empty."), FORMAT) is None
    # explanation consistent with the label, but the source says otherwise (negation dropped from the evidence)
    invented = yes_no("Can a field name be empty when automatic numbering is switched off?", "yes", "Automatic numbering can be switched off.")
    assert check_yes_no_polarity(invented, FORMAT)[0] == "polarity_contradicts_source"


def test_selection_rejects_bad_references_with_named_reasons():
    chunks = {"f1": FORMAT, "t1": TUPLE}
    mc = dict(row("multiple_choice", "Which kind of sequence is a tuple?", "mutable", ("t1",)),
              options=["mutable", "immutable", "sorted", "infinite"], correct_index=0, evidence="A tuple is an immutable sequence.")  # fmt: skip
    rows = [
        yes_no("Can a format specification be empty?", "no", "A format specification can be empty.", "yn-bad"),
        yes_no("Can a format specification be left empty?", "yes", "A format specification can be empty.", "yn-good"),
        yes_no("Is the format specification written before the colon?", "yes", "It is always written before the colon.", "yn-invented"),
        dict(mc, query_id="mc-wrong-key"),
        dict(mc, query_id="mc-key-out", query="What is a tuple, according to the documentation?", correct_index=5),
        dict(mc, query_id="mc-ref-not-option", query="How is a tuple described in the documentation?", correct_index=1, reference_answer="a list"),
        dict(mc, query_id="mc-good", query="What kind of sequence is a tuple in Python?", correct_index=1, reference_answer="immutable"),
        row("simple", "What kind of sequence is a tuple in Python code?", "A tuple is a mutable sequence.", ("t1",), query_id="open-contradicts"),
        row("simple", "What can be done with the items of a list?", "They can be replaced, appended or removed.", ("t1",), query_id="open-good"),
        row("simple", "What happens with the items of a list in a loop?", "They are sorted by the garbage collector.", ("t1",), query_id="open-unsupported"),
        yes_no("Is a tuple a sequence that can be changed?", "no", "A", "yn-no-explanation"),  # "Yes. A" was seen
        yes_no("Can a for loop have an else clause?", "yes", "A tuple is an immutable sequence.", "yn-few-shot-copy"),
        dict(mc, query_id="mc-yes-no", query="A tuple is an immutable sequence, right?", options=["Yes", "No", "It depends", "Never"]),
        dict(mc, query_id="mc-key-unsupported", query="Which sort of sequence is a tuple, per the docs?",  # the key is the evidence's
             options=["frozen sequence", "list", "mapping", "set"], correct_index=0, reference_answer="frozen sequence"),  # best match, not in the source
    ]
    kept, rej = select_queries(rows, chunks, bow_embed, SelectionConfig(min_relevancy=0.1, max_duplicate_similarity=0.99))
    reasons = {r["query_id"]: r["reason"] for r in rej}
    assert reasons == {
        "yn-bad": "polarity_contradicts_explanation",
        "yn-invented": "evidence_not_in_source",
        "mc-wrong-key": "mc_key_contradicts_evidence",
        "mc-key-out": "mc_key_not_in_options",
        "mc-ref-not-option": "mc_key_not_in_options",
        "open-contradicts": "reference_contradicts_source",
        "open-unsupported": "reference_not_supported",
        "yn-no-explanation": "evidence_too_short",
        "yn-few-shot-copy": "copies_prompt_example",
        "mc-yes-no": "type_mismatch",
        "mc-key-unsupported": "reference_not_supported",
    }
    assert {k["query_id"] for k in kept} == {"yn-good", "mc-good", "open-good"}
    assert all(r["detail"] for r in rej) and set(reasons.values()) <= set(REJECTION_REASONS)
    assert sum(rejection_counts(rej).values()) == len(rej) == len(rows) - len(kept)


def test_the_dagster_selection_config_is_derived_from_the_core_dataclass():
    """One field list: every SelectionConfig field (max_answer_words included) is a launchpad field with its default."""
    import dataclasses

    from hcat_pipeline.assets.queries import QuerySelectionConfig
    from hcat_pipeline.configs import to_core
    from hcat_pipeline.golden.selection import SelectionConfig

    names = [f.name for f in dataclasses.fields(SelectionConfig)]
    assert list(QuerySelectionConfig.model_fields) == names and "max_answer_words" in names
    assert to_core(SelectionConfig, QuerySelectionConfig()) == SelectionConfig()
    assert to_core(SelectionConfig, QuerySelectionConfig(min_relevancy=0.9)).min_relevancy == 0.9
