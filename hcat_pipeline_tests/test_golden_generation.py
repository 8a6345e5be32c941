import time

import pytest

from hcat_pipeline.golden.generation import QUERY_TYPES, generate_queries, load_prompt, parse_reply, prompt_name
from hcat_pipeline.golden.selection import SelectionConfig, check_mc_key, check_type, rejection_counts, select_queries
from hcat_pipeline_tests.golden_data import BREAK, CHUNKS, PASS, bow_embed, row  # noqa: F401


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
    assert check_type(dict(mc, correct_index=-1)) is None  # a key outside the options is its own reason
    assert check_mc_key(dict(mc, correct_index=-1)) and check_mc_key(dict(mc, correct_index=4))
    assert check_mc_key(mc) is None and check_mc_key(dict(mc, reference_answer="del"))
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
        dict(row("multiple_choice", "What does the interpreter do when it executes a pass statement?", "An error is raised"),
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
    assert reasons["What happens when pass is executed inside a loop body?"] == "reference_not_supported"
    assert reasons["What does pass do?"] == "type_mismatch"
    assert rejection_counts(rej)["mc_key_contradicts_evidence"] == 1  # the multiple choice with the wrong key
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


# ---------------------------------------------------------------- request plan: every stratum and type on a budget
def _sample(n_strata=16, size=24):
    """A round-robin sample like sampled_chunks: ranks 0..15 one chunk per stratum, then the largest strata again."""
    out = []
    for rank in range(size):
        stratum = rank % n_strata
        out.append({"chunk_id": f"s{stratum}-c{rank // n_strata}", "text": f"text {rank}", "stratum": stratum, "stratum_label": f"t{stratum}", "sample_rank": rank})
    return out


def test_plan_asks_every_stratum_and_every_type_with_one_request_per_chunk():
    from hcat_pipeline.golden.generation import plan_requests

    sample = _sample()
    alone = {"s5-c0"}  # a chunk without a multi-hop partner
    plan = plan_requests(sample[::-1], QUERY_TYPES, seed=0, has_partner=lambda c: c["chunk_id"] not in alone)
    assert len(plan) == 24 and len({c["chunk_id"] for c, _ in plan}) == 24
    assert [c["sample_rank"] for c, _ in plan] == list(range(24))  # sample order, whatever the input order
    counts = {t: sum(q == t for _, q in plan) for t in QUERY_TYPES}
    assert set(counts.values()) <= {4, 5}  # balanced
    first_round = plan[:16]  # one per stratum: types spread over the strata too
    assert {q for _, q in first_round} == set(QUERY_TYPES)
    assert all(q != "multi_hop" for c, q in plan if c["chunk_id"] in alone)
    assert plan == plan_requests(sample, QUERY_TYPES, seed=0, has_partner=lambda c: c["chunk_id"] not in alone)  # deterministic
    assert [q for _, q in plan] != [q for _, q in plan_requests(sample, QUERY_TYPES, seed=1)]  # seeded
    every = plan_requests(sample[:2], QUERY_TYPES, seed=0, types_per_chunk=9)
    assert len(every) == 10 and all({q for c, q in every if c["chunk_id"] == cid} == set(QUERY_TYPES) for cid in ("s0-c0", "s1-c0"))


def _rows_for(plan, kept_pred):
    rows = [{"query_id": f"{c['chunk_id']}|{t}", "query_type": t, "chunk_id": c["chunk_id"], "stratum": c["stratum"]} for c, t in plan]
    return rows, {r["query_id"] for r in rows if kept_pred(r)}


def test_repairs_target_uncovered_types_and_strata_within_the_cap():
    from hcat_pipeline.golden.generation import plan_repairs, plan_requests

    sample = _sample()
    plan = plan_requests(sample, QUERY_TYPES, seed=0)
    # every yes/no query and everything from strata 3 and 9 fails selection
    rows, kept = _rows_for(plan, lambda r: r["query_type"] != "yes_no" and r["stratum"] not in (3, 9))
    reserve = {s: [{"chunk_id": f"s{s}-r{i}", "text": "r", "stratum": s, "stratum_label": "t"} for i in range(2)] for s in range(16)}
    pools = {s: [c for c in sample if c["stratum"] == s] + reserve[s] for s in range(16)}
    repairs = plan_repairs(rows, kept, pools, QUERY_TYPES, seed=0, max_requests=8)
    asked = {(r["chunk_id"], r["query_type"]) for r in rows}
    assert not any((c["chunk_id"], t) in asked for c, t in repairs)  # never the same request again
    yn = [c for c, t in repairs if t == "yes_no"]
    assert len(yn) == 1 and any(r["chunk_id"] == yn[0]["chunk_id"] and r["query_id"] in kept for r in rows)  # on a chunk that worked
    by_stratum = {c["stratum"]: (c["chunk_id"], t) for c, t in repairs if t != "yes_no"}
    uncovered = {s for s in range(16) if not any(r["stratum"] == s and r["query_id"] in kept for r in rows)}
    assert {3, 9} <= uncovered and set(by_stratum) == uncovered and len(repairs) == 1 + len(uncovered) <= 8
    assert by_stratum[3][0] == "s3-r0" and by_stratum[9][0] == "s9-r0"  # every sampled chunk was asked: the reserve
    # with only the first 16 sampled chunks asked, stratum 3's other sampled chunk comes before its reserve
    rows16, kept16 = _rows_for(plan_requests(sample[:16], QUERY_TYPES, seed=0), lambda r: r["stratum"] != 3)
    assert [(c["chunk_id"]) for c, _ in plan_repairs(rows16, kept16, pools)] == ["s3-c1"]
    assert all(t != "yes_no" for _, t in by_stratum.values())  # the type that survived best, not the failing one
    for stratum, (_, t) in by_stratum.items():  # and not a type that already failed in that stratum
        assert t not in {r["query_type"] for r in rows if r["stratum"] == stratum}
    assert len(plan_repairs(rows, kept, pools, QUERY_TYPES, seed=0, max_requests=2)) == 2
    assert plan_repairs(rows, {r["query_id"] for r in rows}, pools) == []  # nothing uncovered: no second round
    assert repairs == plan_repairs(rows, kept, pools, QUERY_TYPES, seed=0, max_requests=8)


class _FakeLLM:
    """Schema-valid replies naming the passage; counts requests."""

    def __init__(self):
        self.calls = 0

    def generate(self, messages, json_schema=None, **kw):
        from types import SimpleNamespace

        self.calls += 1
        passage = messages[-1]["content"].split("\n", 1)[1]
        data = {"question": f"What does {passage} say?", "answer": passage, "evidence": passage, "options": ["a", "b", "c", "d"], "correct": "A"}
        data = {k: v for k, v in data.items() if k in json_schema["properties"]}
        if "answer" in data and json_schema["properties"]["answer"].get("enum"):
            data["answer"] = "yes"
        return SimpleNamespace(data=data, text=str(data), model="fake", latency_s=0.0, input_tokens=1, output_tokens=1)


def test_generate_covering_runs_a_bounded_repair_round():
    from hcat_pipeline.golden.generation import coverage, generate_covering

    sample = _sample(4, 6)
    pools = {s: [c for c in sample if c["stratum"] == s] + [{"chunk_id": f"s{s}-r0", "text": f"reserve {s}", "stratum": s, "stratum_label": "t"}] for s in range(4)}
    judged = []

    def keep(rows):  # stratum 2 and multiple choice never survive
        judged.append(len(rows))
        return {r["query_id"] for r in rows if r["stratum"] != 2 and r["query_type"] != "multiple_choice" and not r["error"]}

    llm = _FakeLLM()
    partner = lambda c: {"chunk_id": "s0-c0", "text": "partner"}  # noqa: E731
    rows, summary = generate_covering(sample, llm, keep, pools, partner, QUERY_TYPES, seed=3, max_repairs=8, repair_rounds=1)
    assert summary["round_1_requests"] == 6 and judged == [6]  # selection judged once, after round 1
    assert llm.calls == len(rows) == 6 + summary["repair_requests"] and summary["repair_requests"] >= 1
    assert [r["generation_round"] for r in rows] == [1] * 6 + [2] * summary["repair_requests"]
    assert len({r["query_id"] for r in rows}) == len(rows)
    missing = summary["after_round_1"]["strata_missing"]
    types_missing = summary["after_round_1"]["types_missing"]
    assert 2 in missing and "multiple_choice" in types_missing
    assert summary["repair_requests"] == len(types_missing) + len(missing)  # one per uncovered type and stratum
    again, _ = generate_covering(sample, _FakeLLM(), keep, pools, partner, QUERY_TYPES, seed=3, max_repairs=8, repair_rounds=1)
    assert [r["query_id"] for r in again] == [r["query_id"] for r in rows]
    # a further round only for what is still uncovered (stratum 2 and multiple choice never pass), within the budget
    more, s2 = generate_covering(sample, _FakeLLM(), keep, pools, partner, QUERY_TYPES, seed=3, max_repairs=8, repair_rounds=3)
    assert s2["requests_by_round"][:2] == [6, summary["repair_requests"]] and sum(s2["requests_by_round"][1:]) <= 8
    assert all(r["stratum"] == 2 or r["query_type"] == "multiple_choice" for r in more if r["generation_round"] == 3)
    tried_in_2 = [r["query_type"] for r in more if r["stratum"] == 2 and r["query_type"] != "multiple_choice"]
    assert len(tried_in_2) == len(set(tried_in_2)) >= 2  # each attempt on the failing stratum tries another type
    assert len({(r["chunk_id"], r["query_type"]) for r in more}) == len(more)  # never the same request twice
    none, s0 = generate_covering(sample, _FakeLLM(), keep, pools, partner, QUERY_TYPES, seed=3, max_repairs=0)
    assert len(none) == 6 and s0["repair_requests"] == 0
    cov = coverage([r for r in rows if r["query_id"] in keep(rows)], range(4), QUERY_TYPES)
    assert cov["strata_missing"] == [2] and cov["types_missing"] == ["multiple_choice"] and cov["n_strata"] == 4
    assert cov["strata_covered"] == 3 and set(missing) - {2} <= {r["stratum"] for r in rows if r["query_id"] in keep(rows)}  # repaired
