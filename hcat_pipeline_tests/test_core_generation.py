import hashlib
import re
import time

import numpy as np
import pytest

from hcat_pipeline.core.generation import QUERY_TYPES, generate_queries, load_prompt, parse_reply, prompt_name
from hcat_pipeline.core.selection import SelectionConfig, check_type, rejection_counts, select_queries

PASS = (
    "The pass statement is a null operation: when it is executed, nothing happens. "
    "It is useful as a placeholder when a statement is required syntactically but no code needs to be executed."
)
BREAK = "The break statement terminates the nearest enclosing for or while loop. The else clause of the loop is skipped."
CHUNKS = {"c1": PASS, "c2": BREAK}


def bow_embed(texts):
    """Deterministic bag-of-words vectors: cosine = word overlap (stands in for MiniLM in pure tests)."""
    out = np.zeros((len(texts), 512), np.float32)
    for i, t in enumerate(texts):
        for w in re.findall(r"[a-z0-9_]+", t.lower()):
            out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 512] += 1
    n = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(n == 0, 1, n)


def row(qtype, query, answer, chunk_ids=("c1",), **kw):
    r = {
        "query_id": f"q-{qtype}-{abs(hash(query)) % 10**6}", "query_type": qtype, "chunk_id": chunk_ids[0],
        "source_chunk_ids": list(chunk_ids), "query": query, "reference_answer": answer, "options": [],
        "correct_index": -1, "answer_label": None, "evidence": None, "error": None,
    }  # fmt: skip
    r.update(kw)
    return r


def test_prompts_have_few_shot_examples_and_a_hash():
    for qtype in QUERY_TYPES:
        t = load_prompt(prompt_name(qtype))
        values = {"passage": "P1", "passage_2": "P2"}
        msgs = t.render(**values)
        assert msgs[0]["role"] == "system" and msgs[-1]["role"] == "user" and "P1" in msgs[-1]["content"]
        assert sum(m["role"] == "assistant" for m in msgs) >= 2  # few-shot examples per type
        assert len(t.hash) == 16


def test_type_conformance():
    assert check_type(row("yes_no", "What does pass do?", "Yes.", answer_label="yes"))  # the seen failure
    assert check_type(row("yes_no", "Does pass do anything?", "No.", answer_label="no")) is None
    assert check_type(row("simple", "Is pass a statement?", "yes"))
    mc = dict(row("multiple_choice", "Which is a null operation?", "pass"), options=["break", "pass", "del", "raise"], correct_index=1)
    assert check_type(mc) is None
    assert check_type(dict(mc, options=["pass", "pass", "del", "raise"]))
    assert check_type(dict(mc, correct_index=-1))
    assert check_type(dict(mc, options=["yes", "no", "true", "false"]))


def test_selection_filters_and_counts():
    rows = [
        row("simple", "What happens when a pass statement is executed?", "Nothing happens; it is a null operation."),
        row("simple", "So what happens when a pass statement is executed?", "Nothing happens; it is a null operation."),  # dup
        row("simple", "Why?", "Nothing."),  # too short
        row("simple", "What does the pass statement do when nothing happens?", "nothing happens"),  # leak
        row("simple", "What is the boiling point of water in Kelvin at sea level?", "373 K"),  # irrelevant
        row("inference", "What happens when pass is executed inside a loop body?", "The loop is terminated immediately and an exception is raised."),
        row("yes_no", "What does pass do?", "Yes. nothing", answer_label="yes", evidence="nothing happens"),  # type
        row("yes_no", "Does executing a pass statement change anything?", "No. when it is executed, nothing happens.",
            answer_label="no", evidence="The pass statement is a null operation: when it is executed, nothing happens."),
        dict(row("multiple_choice", "What happens when a pass statement is executed?", "An error is raised"),
             options=["Nothing happens", "An error is raised", "The loop stops", "It returns None"], correct_index=1,
             evidence="when it is executed, nothing happens"),  # wrong option declared correct
        row("multi_hop", "What do the pass statement and the break statement do in a while loop?",
            "pass does nothing, while break terminates the nearest enclosing loop.", chunk_ids=("c1", "c2")),
        dict(row("simple", None, None), error="llm_failed: schema: bad reply"),
        row("simple", "What is the pass statement useful for?", PASS),  # copies the whole passage (seen with the 0.5B model)
    ]  # fmt: skip
    kept, rej = select_queries(rows, CHUNKS, bow_embed, SelectionConfig(min_relevancy=0.25))
    reasons = {r["query"]: r["reason"] for r in rej}
    assert reasons["So what happens when a pass statement is executed?"] == "near_duplicate"
    assert reasons["Why?"] == "too_short"
    assert reasons["What does the pass statement do when nothing happens?"] == "answer_leaked"
    assert reasons["What is the boiling point of water in Kelvin at sea level?"] == "low_relevancy"
    assert reasons["What happens when pass is executed inside a loop body?"] == "unsupported_answer"
    assert reasons["What does pass do?"] == "type_mismatch"
    assert rejection_counts(rej)["unsupported_answer"] == 2  # also the multiple choice with the wrong option
    assert reasons[None] == "llm_failed"
    assert reasons["What is the pass statement useful for?"] == "too_long"
    kept_q = {k["query"] for k in kept}
    assert "Does executing a pass statement change anything?" in kept_q
    assert any(k["query_type"] == "multi_hop" for k in kept)
    assert len(kept) + len(rej) == len(rows)
    assert all(0 <= k["relevancy"] <= 1 for k in kept)


def test_parse_reply_multiple_choice_and_yes_no():
    mc = parse_reply("multiple_choice", {"question": "Q?", "options": ["a", "b", "c", "d"], "correct": "C", "evidence": "e"})
    assert mc["reference_answer"] == "c" and mc["correct_index"] == 2
    yn = parse_reply("yes_no", {"question": "Is it?", "answer": "no", "evidence": "It is not."})
    assert yn["reference_answer"] == "No. It is not." and yn["answer_label"] == "no"


def test_llm_failures_become_rows():
    from hcat_pipeline.resources.llm import LLMCallFailed

    class Broken:
        def generate(self, *a, **k):
            raise LLMCallFailed("schema", "not valid", 3)

    rows = generate_queries([{"chunk_id": "c1", "text": PASS, "stratum": 0, "stratum_label": "x"}], Broken(), failed_exceptions=(LLMCallFailed,))
    assert len(rows) == len(QUERY_TYPES)
    assert {r["error"].split(":")[0] for r in rows} == {"llm_failed", "no_partner"}


@pytest.mark.slow
def test_generate_with_the_local_llm(local_llm, embedding_model):
    """The packaged 0.5B model on two real chunks: every type is asked for; output parses; selection runs."""
    from hcat_pipeline.resources.llm import LLMCallFailed

    sampled = [{"chunk_id": "c1", "text": PASS, "stratum": 0, "stratum_label": "pass"}, {"chunk_id": "c2", "text": BREAK, "stratum": 0, "stratum_label": "break"}]
    t0 = time.perf_counter()
    rows = generate_queries(sampled[:1], local_llm, partners={"c1": sampled[1]}, failed_exceptions=(LLMCallFailed,), max_tokens=160)
    seconds = time.perf_counter() - t0
    assert [r["query_type"] for r in rows] == list(QUERY_TYPES)
    ok = [r for r in rows if not r["error"]]
    assert len(ok) >= 4, [r["error"] for r in rows]
    for r in ok:
        assert r["query"] and r["prompt_hash"] and r["model"]
        if r["query_type"] == "multiple_choice":
            assert len(r["options"]) == 4 and 0 <= r["correct_index"] < 4
    kept, rej = select_queries(rows, CHUNKS, embedding_model.embed)
    assert len(kept) + len(rej) == len(rows)
    print(f"\nlocal LLM: {len(rows)} queries in {seconds:.1f}s; kept {len(kept)}; rejections {rejection_counts(rej)}")
    # (determinism across whole runs is tested in test_assets_golden: llama.cpp reuses the previous prompt's KV
    # cache, so a repeated call right after a different prompt can differ; same call sequence ⇒ same output)
