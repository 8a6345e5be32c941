"""Issue 68 item 3: the case screen's proposed repairs — a question that leans on its passage anchored to the
passage's heading; a "why" / "purpose" question whose reference gives no reason re-asked as "what"; a multiple-choice
case with two right options keeping the key — nothing proposed where the case is sound or the form is not covered, an
options edit recorded and applied as a new case, and the log counts how often a proposal was taken as is. Pure,
milliseconds."""

import polars as pl
import pytest

from hcat_pipeline.golden.cases import cases_frame, new_case
from hcat_pipeline.review.curation import CurationLog, apply_decisions
from hcat_pipeline.review.repairs import proposal_counts, propose

PASSAGE = "pg_dump - extract a PostgreSQL database\n\nThe default settings dump every schema. Use -n to pick one."


def test_a_question_that_leans_on_its_passage_is_anchored_to_the_heading():
    case = {"category": "happy_path", "query": "What do the default settings dump?", "reference_answer": "Every schema."}
    p = propose(case, [PASSAGE])
    assert p["kind"] == "lost_context" and p["edits"] == {"query": "What do the default settings dump (in “pg_dump - extract a PostgreSQL database”)?"}
    for q in ("What should you do if you are affected?", "How is the SELECT statement rewritten?"):
        assert propose({**case, "query": q}, [PASSAGE]) is not None, q
    assert propose({**case, "query": "What does pg_dump -n select?"}, [PASSAGE]) is None  # self-contained
    assert propose(case, ["The default settings dump every schema, which is what most users want."]) is None  # no heading
    assert propose({**case, "variant_kind": "typo"}, [PASSAGE]) is None  # a variant is repaired at its base


def test_the_log_counts_proposals_taken_as_is(tmp_path):
    log = CurationLog(tmp_path, "gs-1")
    offered = {"kind": "lost_context", "edits": {"query": "What do the default settings dump (in “pg_dump”)?"}}
    log.record("c1", "edit", "alice", edits=offered["edits"], proposal=offered)
    log.record("c2", "edit", "alice", edits={"query": "What does pg_dump dump by default?"}, proposal=offered)
    log.record("c3", "reject", "alice", reason="no answer in the passage", proposal=offered)
    log.record("c4", "accept", "alice")
    assert proposal_counts(log.entries()) == {"offered": 3, "taken_as_is": 1}


def _happy(query: str, reference: str, **kw) -> dict:
    return {"category": "happy_path", "query": query, "reference_answer": reference, **kw}


@pytest.mark.parametrize(("query", "reference", "repaired"), [
    ("Why are exceptions cleared when a traceback is attached to them?", "Exceptions are cleared when a traceback is attached to them.",
     "What happens to exceptions when a traceback is attached to them?"),
    ("Why is the name bound by 'except E as N' deleted at the end of the except clause?", "The name is deleted at the end of the clause.",
     "What happens to the name bound by 'except E as N' at the end of the except clause?"),
    ("What is the purpose of using the identifier to determine the corresponding slot for keyword arguments?",
     "For each keyword argument, the identifier is used to determine the corresponding slot.",
     "What is used to determine the corresponding slot for keyword arguments?"),
    ("What is the purpose of the global statement?", "The global statement is a declaration which holds for the entire code block.",
     "What does the global statement do?"),
])  # fmt: skip
def test_a_why_question_whose_reference_gives_no_reason_is_re_asked_as_what(query, reference, repaired):
    p = propose(_happy(query, reference), [])
    assert p["kind"] == "why_to_what" and p["edits"] == {"query": repaired}


def test_nothing_is_proposed_when_the_reference_gives_the_reason_or_the_form_is_not_covered():
    because = "Exceptions are cleared because, with the traceback attached, they form a reference cycle with the stack frame."
    assert propose(_happy("Why are exceptions cleared when a traceback is attached to them?", because), []) is None
    cause = "Using yield in a function definition is sufficient to cause that definition to create a generator function."
    assert propose(_happy("What is the purpose of using the yield statement in a function definition?", cause), []) is None
    # a purpose clause that only repeats the question is no reason
    echo = "The identifier is used to determine the corresponding slot."
    assert propose(_happy("What is the purpose of using the identifier to determine the corresponding slot?", echo), []) is not None
    assert propose(_happy("Why does Python mangle private names?", "Python mangles private names."), []) is None  # form not covered
    assert propose(_happy("Why is it raised by the parser?", "It is raised by the parser."), []) is None  # "raised by": no participle left


def test_two_right_options_keep_the_key_and_drop_the_other():
    case = _happy("Which built-in returns the identity of an object?", "id()", query_type="multiple_choice",
                  options=["hash(x)", "id(x)", "id()", "type(x)"])  # fmt: skip
    p = propose(case, [])
    assert p["kind"] == "two_right_options" and p["edits"] == {"options": ["hash(x)", "id()", "type(x)"]}
    pep = _happy("Which PEP set the scoping rules?", "572", query_type="multiple_choice", options=["562", "PEP 572", "572", "492"])
    assert propose(pep, [])["edits"] == {"options": ["562", "572", "492"]}
    distinct = _happy("Which exception ends a for loop over a sequence?", "IndexError", query_type="multiple_choice",
                      options=["IndexError", "TypeError", "ValueError", "NameError"])  # fmt: skip
    assert propose(distinct, []) is None
    two = _happy("Which built-in?", "id()", query_type="multiple_choice", options=["id(x)", "id()"])
    assert propose(two, []) is None  # dropping one would leave a single option: the reviewer decides


def test_an_options_edit_is_recorded_and_makes_a_new_case(tmp_path):
    case = new_case(category="happy_path", query="Which built-in returns the identity of an object?", reference_answer="id()",
                    options=["hash(x)", "id(x)", "id()", "type(x)"], expected_behavior="answer", query_type="multiple_choice",
                    source_chunk_ids=[], created_at="2026-12-07")  # fmt: skip
    log = CurationLog(tmp_path, "gs-mc")
    offered = propose(case, [])
    entry = log.record(case["case_id"], "edit", "alice", edits={"options": "hash(x)\n id() \n\ntype(x)"}, proposal=offered)
    assert entry["edits"] == {"options": ["hash(x)", "id()", "type(x)"]} and entry["as_proposed"]  # one a line, as the page sends it
    with pytest.raises(ValueError, match="2 or more distinct options"):
        log.record(case["case_id"], "edit", "alice", edits={"options": ["id()", "id()"]})
    curated = apply_decisions(cases_frame([case]), log.decisions())
    row = curated.frame.row(0, named=True)
    assert row["options"] == ["hash(x)", "id()", "type(x)"] and row["case_id"] != case["case_id"] == next(iter(curated.renamed))
    assert isinstance(curated.frame, pl.DataFrame) and row["review_verdict"] == "edit"
