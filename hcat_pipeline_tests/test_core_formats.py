"""Instruction following / format compliance (golden-eval §3.2.1, §3.2.4): format cases and ``constraints_met`` on
answers whose verdict is known."""

import json

import pytest

from hcat_pipeline.behaviour.formats import constraints_met, detect_language
from hcat_pipeline.golden.case_rules import rule_for
from hcat_pipeline.golden.cases import new_case
from hcat_pipeline.golden.categories import variant_case
from hcat_pipeline.golden.formats import FORMAT_KINDS, format_cases, format_problems

BASES = [new_case(category="happy_path", query_type="simple", query=f"What does option {i} of the transfer form set?",
                  reference_answer=f"Option {i} sets the transfer limit.", expected_behavior="answer", stratum=i % 3,
                  source_chunk_ids=[f"c{i}"]) for i in range(7)]  # fmt: skip


@pytest.fixture(scope="module")
def cases():
    out, failures = format_cases(BASES, 5, 0, new_case, variant_case)
    assert not failures
    return {next(c for c in case["constraints"] if c.startswith("format:")).split()[0][7:]: case for case in out}


def test_one_case_per_kind_each_sound_and_judged_by_constraints_met(cases):
    assert sorted(cases) == sorted(FORMAT_KINDS)
    for case in cases.values():
        assert format_problems(case) == [] and rule_for(case) == "constraints_met" and case["base_case_id"]
        assert case["reference_answer"] and case["query"].startswith("What does option")
    broken = {**cases["max_words"], "query": "What does option 1 of the transfer form set?"}
    assert "does not carry the format instruction" in format_problems(broken)[0]
    assert "unknown format kind" in format_problems({**broken, "constraints": ["format:yaml x"]})[0]


@pytest.mark.parametrize("kind, good, bad, named", [
    ("json_schema", '{"answer": "It sets the transfer limit.", "confidence": "high"}',
     '{"answer": "It sets the transfer limit.", "confidence": "certain"}', "confidence"),
    ("json_schema", '```json\n{"answer": "It sets the limit.", "confidence": "low"}\n```', "It sets the transfer limit.", "not JSON"),
    ("list_items", "- It sets the transfer limit.\n- It applies per day.", "- one\n- two\n- three\n- four", "4 items"),
    ("list_items", "Two things:\n1. the limit\n2. the day", "It sets the transfer limit.", "not list items"),
    ("max_words", "It sets the daily transfer limit.", " ".join(["word"] * 30), "30 words"),
    ("must_include", 'Option 1 sets the limit. "This is not financial advice."', "This is not financial advice. Option 1 sets the limit.",
     "not at the end"),
])
def test_constraint_checks_on_known_answers(cases, kind, good, bad, named):
    assert constraints_met(cases[kind], good)[0] == "pass"
    verdict, score, evidence, detail = constraints_met(cases[kind], bad)
    assert verdict == "fail" and score == 0.0 and named in evidence and detail["failed"]
    if kind == "json_schema":
        assert detail["format_valid"] is False and constraints_met(cases[kind], good)[3]["format_valid"] is True


def test_language_is_identified_offline(cases):
    case = cases["language"]
    code = json.dumps(case["constraints"])
    answers = {"de": "Die Option legt das tägliche Überweisungslimit für das Konto fest.",
               "es": "La opción establece el límite diario de transferencias de la cuenta.",
               "fr": "L'option fixe la limite quotidienne des virements du compte."}
    asked = next(k for k in answers if f"format:language {k}" in code)
    assert constraints_met(case, answers[asked])[0] == "pass"
    assert constraints_met(case, "The option sets the daily transfer limit of the account.")[0] == "fail"
    assert detect_language(answers["de"])[0] == "de" and detect_language("The option sets the limit.")[0] == "en"


def test_an_answer_that_answers_nothing_keeps_no_format(cases):
    verdict, _, evidence, _ = constraints_met(cases["must_include"], "This is not financial advice.")
    assert verdict == "fail" and "no answer besides the required sentence" in evidence
    assert constraints_met(cases["max_words"], "I don't know based on the provided context.")[0] == "fail"
    assert "declined" in constraints_met(cases["list_items"], "- I don't know based on the provided context.")[2]
