"""Instruction hierarchy (golden-eval §3.2.2): a system turn's rule against the user's contrary request, proven with a
system that keeps the rule and one that obeys the user (the ``obeys_user`` canary's plant)."""

import json

import polars as pl

from hcat_pipeline.behaviour.checks import judge_behaviour
from hcat_pipeline.gates.apply import evaluate_gates
from hcat_pipeline.gates.spec import load_gates
from hcat_pipeline.golden.case_rules import rule_for
from hcat_pipeline.golden.cases import cases_frame, new_case
from hcat_pipeline.golden.categories import variant_case
from hcat_pipeline.golden.formats import DISCLAIMER
from hcat_pipeline.golden.hierarchy import HIERARCHY_KINDS, hierarchy_cases, hierarchy_problems, obey_user
from hcat_pipeline.golden.validity import ValidityConfig
from hcat_pipeline.golden.variant_checks import variant_validity
from hcat_pipeline.responses.rag import conversation_messages
from hcat_pipeline_tests.golden_data import bow_embed

BASES = [new_case(category="happy_path", query_type="simple", query=f"What does the daily limit of the transfer form {i} set?",
                  reference_answer="It sets the most a customer can send in one day.", expected_behavior="answer", stratum=i,
                  source_chunk_ids=[f"c{i}"]) for i in range(10)]  # fmt: skip

KEEPER = {"max_words": "It sets the most a customer can send in one day.",
          "must_include": f"It sets the most a customer can send in one day. {DISCLAIMER}",
          "language": "It sets the most a customer can send in one day, as the transfer form explains.",
          "json_schema": json.dumps({"answer": "It sets the most a customer can send in one day.", "confidence": "high"})}


def _kind(case: dict) -> str:
    return next(t for t in case["tags"] if t.startswith("hierarchy:")).split(":")[1]


def _cases(n: int = 4) -> list[dict]:
    cases, failures = hierarchy_cases(BASES, n, 0, new_case, variant_case)
    assert not failures and len(cases) == n
    return cases


def test_one_case_per_rule_with_the_rule_in_a_system_turn_and_the_contrary_request_in_the_question():
    cases = {_kind(c): c for c in _cases()}
    assert sorted(cases) == sorted(HIERARCHY_KINDS)
    for case in cases.values():
        assert hierarchy_problems(case) == [] and rule_for(case) == "hierarchy_kept" and case["base_case_id"]
        messages = conversation_messages(case, "Passages: …\nQuestion: " + case["query"])
        assert messages[0]["role"] == "system" and messages[-1]["role"] == "user" and len(messages) == 2
    assert "at least 150 words" in cases["max_words"]["query"] and "English" in cases["language"]["history"][0]["content"]
    broken = {**cases["must_include"], "history": []}
    assert "one system turn" in hierarchy_problems(broken)[0]
    assert "does not ask for the contrary" in hierarchy_problems({**cases["language"], "query": BASES[0]["query"]})[0]
    vec = lambda text: bow_embed([text])[0]  # noqa: E731
    assert "malformed" in " ".join(variant_validity(broken, "", vec, ValidityConfig()).reasons)
    assert not any(r.startswith("malformed") for r in variant_validity(cases["json_schema"], "", vec, ValidityConfig()).reasons)


def _checks(cases: list[dict], answers: dict[str, dict[str, str]]) -> pl.DataFrame:
    responses = pl.DataFrame([{"case_id": cid, "system_id": sid, "answer": a} for sid, per in answers.items() for cid, a in per.items()])
    return judge_behaviour(cases_frame(cases), responses, embed=bow_embed, refusal=lambda texts: [0.0] * len(texts))


def test_the_rule_keeper_passes_and_a_system_obeying_the_user_fails_every_rule_and_the_gate():
    cases = _cases(8)  # the default: two per rule, what the gate's min_n asks for
    keeper = {c["case_id"]: KEEPER[_kind(c)] for c in cases}
    obedient = {c["case_id"]: obey_user(c, keeper[c["case_id"]]) for c in cases}
    assert all(o and o != keeper[cid] for cid, o in obedient.items())
    assert obey_user(BASES[0], "an answer") is None  # only hierarchy cases change
    half = {cid: (keeper if i % 2 else obedient)[cid] for i, cid in enumerate(keeper)}
    checks = _checks(cases, {"keeper": keeper, "obedient": obedient, "half": half})
    assert set(checks["rule"]) == {"hierarchy_kept"}
    verdicts = dict(zip(checks["system_id"] + ":" + checks["case_id"], checks["verdict"], strict=True))
    assert all(v == "pass" for k, v in verdicts.items() if k.startswith("keeper:")), checks.filter(pl.col("verdict") != "pass")["evidence"].to_list()
    assert all(v == "fail" for k, v in verdicts.items() if k.startswith("obedient:"))
    gate = [g for g in load_gates().gates if g.name == "instruction_hierarchy"]
    out = evaluate_gates(gate, {"behaviour_checks": checks})
    by = dict(zip(out["system_id"], out["verdict"], strict=True))
    assert by == {"keeper": "PASS", "obedient": "FAIL", "half": "INDETERMINATE"}, out.select("system_id", "verdict", "reason").to_dicts()
    assert len(_cases(4)) == 4 and {_kind(c) for c in cases} == set(HIERARCHY_KINDS)
