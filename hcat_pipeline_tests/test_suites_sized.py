"""Issue 58: one setting sizes the suites and the certificates; a yes-sayer FAILs a correctness gate; a suite holds its
plan on a small corpus; a version frozen for one level says so when read at another."""

from pathlib import Path

import polars as pl
import pytest

from hcat_pipeline.gates.certificate import probes_needed
from hcat_pipeline.gates.spec import SUITE_OF_RULE, load_gates, rule_floors, suite_plan, zero_tolerance
from hcat_pipeline.golden.cases import new_case

CORPORA = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "case_validity_corpora"
# the zero-tolerance suites and the gate reading each
ZERO_TOLERANCE_SUITES = {"injection": "no_prompt_injection", "jailbreak": "no_jailbreak_compliance", "pii_elicitation": "no_pii_elicited",
                         "distractor": "distractor_not_believed", "counterfactual_pairs": "no_counterfactual_inconsistency",
                         "exfiltration": "no_system_prompt_leak"}  # fmt: skip


def test_hcat_init_over_another_corpus_writes_the_level_and_the_suites_are_generated_for_it(tmp_path, monkeypatch):
    """A campaign file made by `hcat init` over a corpus other than the default, with an HTTP service: it names
    certify_below, and every zero-tolerance suite the generation asks for holds the probes its gate needs at that level
    (and at a level the file changes to)."""
    from hcat_pipeline.campaign_spec import generation_run_config, load_campaign, suite_counts
    from hcat_pipeline.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["init", "--corpus", str(CORPORA / "man_db"), "--http", "http://127.0.0.1:9/ask"]) == 0
    text = (tmp_path / "campaign.yaml").read_text()
    assert "\ncertify_below: 0.10" in text
    gates = {g.name: g for g in load_gates().gates}
    for level in (0.10, 0.05):
        (tmp_path / "c.yaml").write_text(text.replace("\ncertify_below: 0.10", f"\ncertify_below: {level}"))
        spec = load_campaign(tmp_path / "c.yaml")
        assert spec.certify_below == level and spec.systems[-1].http is not None
        counts, ops = suite_counts(spec), generation_run_config(spec)["ops"]["robustness_cases"]["config"]
        need = probes_needed(level)
        for suite, gate in ZERO_TOLERANCE_SUITES.items():
            assert zero_tolerance(gates[gate])
            planned = counts["pairs_per_attribute"] * len(spec.generation.bias_attributes) if suite == "counterfactual_pairs" else counts[suite]
            assert planned >= need, (level, suite, planned, need)
        assert ops["n_injection"] == counts["injection"] and ops["category_counts"]["jailbreak"] == counts["jailbreak"]
        assert ops["sized_for"] == level and ops["planned"]["injection"] >= need
        floors = rule_floors(load_gates(), level)  # the night's case selection takes at most what the suites hold
        for rule, suite in SUITE_OF_RULE.items():
            if suite in counts:
                assert counts[suite] >= floors.get(rule, 0), (rule, suite)


def test_a_suite_the_file_sets_wins_and_an_unset_one_follows_the_gates_own_level(tmp_path):
    from hcat_pipeline.campaign_spec import load_campaign, suite_counts

    base = "name: t\nsystems:\n  - system_id: s\n    retriever: bm25\n"
    (tmp_path / "a.yaml").write_text(base + "generation:\n  robustness: {injection: 7}\n")
    counts = suite_counts(load_campaign(tmp_path / "a.yaml"))
    assert counts["injection"] == 7  # the user's own number
    assert counts["jailbreak"] == suite_plan(load_gates())["jailbreak"] >= probes_needed(0.05)  # gates.yaml certifies 5 %


def _base(i: int, stratum: int = 0) -> dict:
    return new_case(category="happy_path", query_type="simple", query=f"What does option {i} do?", reference_answer=f"Option {i} does x.",
                    expected_behavior="answer", source_chunk_ids=[f"c{i}"], stratum=stratum, stratum_label=f"topic{stratum}")  # fmt: skip


def test_the_injection_suite_reaches_its_plan_on_a_corpus_with_few_bases():
    from hcat_pipeline.golden.robustness import build_robustness_cases

    bases = [_base(i) for i in range(7)]
    embed = lambda texts: __import__("numpy").ones((len(texts), 4)) / 2.0  # noqa: E731
    cases, _ = build_robustness_cases(bases, {}, embed, embed(["x"]), 0, {k: 0 for k in ("typo", "colloquial", "paraphrase", "misleading_premise",
                                      "distractor", "ood", "counterfactual_pairs")} | {"injection": 32})  # fmt: skip
    inj = [c for c in cases if c["variant_kind"] == "injection"]
    canaries = {t for c in inj for t in c["tags"] if t.startswith("canary:")}
    assert len(inj) == 32 and len({c["case_id"] for c in inj}) == 32 and len(canaries) == 32  # each its own attack and canary


def _corpus_chunks(name: str) -> list[dict]:
    out = []
    for f in sorted((CORPORA / name).glob("*.txt")):
        for i, para in enumerate(p for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()):
            out.append({"chunk_id": f"{f.stem}-{i}", "text": para, "stratum": f.stem, "stratum_label": f.stem})
    return out


def test_the_rule_made_yes_no_suite_is_balanced_keyed_by_its_source_and_deterministic():
    from hcat_pipeline.golden.yes_no import answer_key, yes_no_suite

    chunks = _corpus_chunks("debian_policy")
    cases, failures = yes_no_suite(chunks, 5, 0, new_case)  # a user's corpus of three policy pages: 5 "No" questions by rule
    keys = [answer_key(c["reference_answer"]) for c in cases]
    assert keys.count("yes") == 5 and keys.count("no") == 5, (keys, failures)
    texts = {c["chunk_id"]: " ".join(c["text"].split()) for c in chunks}
    for c in cases:
        sentence = c["reference_answer"].split(". ", 1)[1]
        assert sentence in texts[c["source_chunk_ids"][0]] and c["query"].endswith("?") and "yes_no:rule" in c["tags"]
    assert [c["case_id"] for c in yes_no_suite(chunks, 5, 0, new_case)[0]] == [c["case_id"] for c in cases]
    short, why = yes_no_suite(chunks[:3], 11, 0, new_case)
    assert len(short) < 22 and why and all("of 11" in f["reason"] for f in why)  # a short suite names itself


@pytest.mark.parametrize("sentence,key,ok", [
    ("The GNU General Public License does not permit incorporating your program into proprietary programs.", "no", True),
    ("Functions defined with async def are always coroutines, even if they do not contain await.", "no", False),  # in a clause
    ("Optional arguments start and end are interpreted as in slice notation.", "no", False),  # the subject changed
    ("You can also obtain it by writing to the Free Software Foundation.", "yes", False),  # a pronoun's referent is elsewhere
    ("The operations in the following table are defined on mutable sequence types.", "yes", False),  # points at a table
    ("However, the tar format does not support compression.", "no", True),  # a connective read past
    ("Also, multiple jobs cannot be used together with the option --single-transaction.", "no", True),
    ("Note that tablespace directories are not cleaned up either way.", "no", False),  # "either way": of what?
    ("Also you will need superuser privileges to execute the saved script in order to be allowed to add roles.", "no", False),  # a purpose
])  # fmt: skip
def test_a_yes_no_probe_is_made_only_where_its_key_is_sure(sentence, key, ok):
    from hcat_pipeline.golden.yes_no import yes_no_probe

    assert (yes_no_probe(sentence, key) is not None) is ok


def _night(answers_right: dict[str, float], n_per_key: int = 12) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Golden yes/no cases (n_per_key a key) and behaviour rows of systems right on the given share of each key."""
    cases, rows = [], []
    for key in ("yes", "no"):
        for i in range(n_per_key):
            cid = f"{key}{i}"
            cases.append({"case_id": cid, "query_type": "yes_no", "reference_answer": f"{key.capitalize()}. Source sentence {i}."})
            for sid, share in answers_right.items():
                right = i < round(share[key] * n_per_key) if isinstance(share, dict) else key == "yes"
                rows.append({"case_id": cid, "system_id": sid, "rule": "answer_correct", "verdict": "pass" if right else "fail"})
    cases.append({"case_id": "open", "query_type": "simple", "reference_answer": "An open answer."})
    rows += [{"case_id": "open", "system_id": s, "rule": "answer_correct", "verdict": "pass"} for s in answers_right]
    return pl.DataFrame(cases), pl.DataFrame(rows)


def test_a_yes_sayer_fails_the_per_answer_correctness_gate_and_an_honest_system_does_not():
    from hcat_pipeline.gates.apply import evaluate_gates

    gate = [g for g in load_gates().gates if g.name == "yes_no_correct_per_answer"]
    cases, checks = _night({"yes_sayer": "always yes", "honest": {"yes": 0.75, "no": 0.67}})
    out = evaluate_gates(gate, {"behaviour_checks": checks}, cases)
    verdict = {(r["system_id"], r["group"]): r["verdict"] for r in out.to_dicts()}
    assert verdict[("yes_sayer", "no")] == "FAIL" and verdict[("yes_sayer", "yes")] == "PASS"
    assert "FAIL" not in {verdict[("honest", "no")], verdict[("honest", "yes")]}
    assert set(out["n"].to_list()) == {12}  # the open question is no yes/no case: out of scope


def test_the_night_takes_min_n_cases_of_each_answer():
    from hcat_pipeline.responses.rag import select_cases

    golden = pl.DataFrame([{**_base(i, i % 3), "case_id": f"o{i}"} for i in range(40)]
                          + [{**_base(100 + i), "case_id": f"{k}{i}", "query_type": "yes_no", "reference_answer": f"{k.capitalize()}. S{i}."}
                             for k in ("yes", "no") for i in range(12)])  # fmt: skip
    picked = select_cases(golden, 5, 0, floors=rule_floors(load_gates(), 0.10))
    ids = picked["case_id"].to_list()
    assert sum(i.startswith("no") for i in ids) >= 10 and sum(i.startswith("yes") for i in ids) >= 10


def test_a_version_sized_for_one_level_says_so_when_read_at_another():
    from hcat_pipeline.reports.sections import level_mismatch

    manifest = {"provenance": {"suites": {"sized_for": 0.10, "planned": {"injection": 32}, "made": {"injection": 32}, "short": {}}}}
    gates = pl.DataFrame({"gate": ["no_prompt_injection", "groundedness"], "certify_below": [0.05, None], "verdict": ["INDETERMINATE", "PASS"],
                          "n_more": [27, None]})  # fmt: skip
    line = level_mismatch(manifest, gates)
    assert "sized for certify_below 10%, read at 5%" in line and "no_prompt_injection" in line
    assert level_mismatch(manifest, gates.with_columns(pl.col("certify_below").replace(0.05, 0.10))) is None


@pytest.mark.parametrize("sentence,key", [
    ("A character is not a separate data type but a string of exactly one character.", "no"),  # "not … but" loses its sense
    ("The view will be iterated in reverse order of the insertion.", "yes"),  # "the view" was introduced elsewhere
])  # fmt: skip
def test_the_default_nights_unsound_rule_questions_are_not_made_again(sentence, key):
    from hcat_pipeline.golden.yes_no import yes_no_probe

    assert yes_no_probe(sentence, key) is None


def test_on_a_users_corpus_a_yes_sayer_fails_the_per_answer_gate_on_the_no_questions_the_rules_make():
    """The rule-made suite of a user's own corpus (three policy pages) holds the "No" questions the gate decides on
    (min_n 5): a system answering "Yes" to all of them FAILs, one right on each PASSes."""
    from hcat_pipeline.gates.apply import evaluate_gates
    from hcat_pipeline.golden.yes_no import answer_key, yes_no_suite

    gate = [g for g in load_gates().gates if g.name == "yes_no_correct_per_answer"]
    cases, _ = yes_no_suite(_corpus_chunks("debian_policy"), 11, 0, new_case)
    keys = {c["case_id"]: answer_key(c["reference_answer"]) for c in cases}
    assert list(keys.values()).count("no") >= gate[0].min_n
    rows = [{"case_id": cid, "system_id": sid, "rule": "answer_correct", "verdict": "pass" if sid == "honest" or key == "yes" else "fail"}
            for cid, key in keys.items() for sid in ("yes_sayer", "honest")]  # fmt: skip
    frame = pl.DataFrame([{k: c[k] for k in ("case_id", "query_type", "reference_answer")} for c in cases])
    out = evaluate_gates(gate, {"behaviour_checks": pl.DataFrame(rows)}, frame)
    verdict = {(r["system_id"], r["group"]): r["verdict"] for r in out.to_dicts()}
    assert verdict[("yes_sayer", "no")] == "FAIL" and verdict[("honest", "no")] == verdict[("honest", "yes")] == "PASS"
