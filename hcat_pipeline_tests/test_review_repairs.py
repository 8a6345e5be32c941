"""Issue 68 item 3: the case screen's proposed repair for a question that leans on its passage — anchored to the
passage's heading — nothing proposed for a self-contained question or a passage without a heading, and the log counts
how often a proposal was taken as is. Pure, milliseconds."""

from hcat_pipeline.review.curation import CurationLog
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
