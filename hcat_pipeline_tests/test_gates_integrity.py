"""Integrity: contamination risk against declared corpora, memorisation probe, grader-gaming flags."""

import json

import numpy as np
import polars as pl

from hcat_pipeline.gates.contamination import (
    case_risk,
    contamination_risk,
    memorisation_probe,
    read_reference_corpora,
    split_headline,
)
from hcat_pipeline.gates.gaming import gaming_flags, gaming_summary

LEAKED = "How does the for statement iterate over the items of any sequence such as a list or a string in order?"
NEAR = "The while statement repeats its body as long as the condition stays true and then runs the else clause once"
PARAPHRASE_DOC = "Intro text. " + NEAR + ". More unrelated text follows here about modules and packages."


def _corpora(tmp_path):
    d = tmp_path / "contamination"
    d.mkdir()
    (d / "old_release.jsonl").write_text(json.dumps({"query": LEAKED.upper() + "  "}) + "\n{bad json\n" + json.dumps({"x": 1}) + "\n")
    (d / "dump.txt").write_text(PARAPHRASE_DOC + "\n\nA totally different paragraph about the weather in Paris and trains.\n")
    (d / "notes.bin").write_bytes(b"\x00\x01")
    return d


def test_reference_corpora_read_with_errors_per_line(tmp_path):
    docs, errors = read_reference_corpora(_corpora(tmp_path))
    assert {d.source for d in docs} == {"old_release.jsonl", "dump.txt"} and len(docs) == 3
    assert {(e["file"], e["line"]) for e in errors} == {("old_release.jsonl", 2), ("old_release.jsonl", 3), ("notes.bin", None)}
    assert read_reference_corpora(tmp_path / "missing") == ([], [])


def test_contamination_exact_near_and_clean(tmp_path):
    docs, _ = read_reference_corpora(_corpora(tmp_path))
    cases = pl.DataFrame({"case_id": ["leak", "near", "edited", "clean"],
                          "query": [LEAKED, NEAR + "?", NEAR.replace("stays", "remains"), "What is the capital gains tax rate on shares held two years?"],
                          "reference_answer": [None, None, None, "It depends on the jurisdiction."]})  # fmt: skip
    per_field = contamination_risk(cases, docs)
    risk = {r["case_id"]: r for r in case_risk(per_field).to_dicts()}
    assert risk["leak"]["exact"] and risk["leak"]["risk"] == "high" and risk["leak"]["source"] == "old_release.jsonl"
    assert not risk["near"]["exact"] and risk["near"]["containment"] == 1.0 and risk["near"]["jaccard"] < 0.8  # copied inside a document
    assert risk["near"]["risk"] == "high" and risk["near"]["doc_id"] == "dump.txt:1"
    assert 0.5 <= risk["edited"]["containment"] < 0.8 and risk["edited"]["risk"] == "medium"  # one word changed: 5 shingles differ
    assert risk["clean"]["risk"] == "low"
    headline, apart = split_headline(pl.DataFrame({"case_id": ["leak", "near", "edited", "clean"], "score": [1.0, 1.0, 0.7, 0.5]}), case_risk(per_field))
    assert headline["case_id"].to_list() == ["edited", "clean"] and set(apart["case_id"]) == {"leak", "near"}
    none = contamination_risk(cases, [])
    assert set(none["risk"]) == {"low"} and set(none["evidence"]) == {"no reference corpora declared"}


def test_contamination_embedding_similarity(tmp_path):
    docs, _ = read_reference_corpora(_corpora(tmp_path))
    vocab = {}

    def embed(texts):  # bag-of-words vectors, normalised: a stand-in for the sentence encoder
        rows = []
        for t in texts:
            v = np.zeros(512)
            for w in t.lower().split():
                v[vocab.setdefault(w.strip(".,?:"), len(vocab)) % 512] += 1
            rows.append(v / (np.linalg.norm(v) or 1))
        return np.array(rows)

    cases = pl.DataFrame({"case_id": ["paris"], "query": ["Trains and the weather in Paris: a totally different paragraph about"]})
    row = contamination_risk(cases, docs, embed=embed).row(0, named=True)  # same words, other order: no shingle in common
    assert row["cosine"] > 0.95 and row["jaccard"] < 0.5 and row["risk"] == "high" and "cosine" in row["evidence"]
    assert row["doc_id"] == "dump.txt:2"


class _ParrotLLM:
    """Knows one text by heart; says something else otherwise; fails on request."""

    def __init__(self, known):
        self.known = known

    def generate(self, prompt, temperature=0.0, seed=0, max_tokens=None):
        if "FAIL" in prompt:
            raise RuntimeError("backend down")
        head = prompt.split("\n\n", 1)[1]
        return self.known[len(head) + 1:] if self.known.startswith(head) else "I am not sure what comes next here."


def test_memorisation_probe():
    known = " ".join(f"w{i}" for i in range(30))
    out = memorisation_probe([("k", known), ("u", " ".join(f"z{i}" for i in range(30))), ("s", "too short"),
                              ("f", "FAIL " * 20)], _ParrotLLM(known))  # fmt: skip
    rows = {r["case_id"]: r for r in out.to_dicts()}
    assert rows["k"]["memorised"] and rows["k"]["run"] == 1.0
    assert not rows["u"]["memorised"] and rows["u"]["recall"] == 0.0
    assert rows["s"]["error"].startswith("skipped") and rows["f"]["error"].startswith("RuntimeError")


def test_gaming_flags_and_summary():
    ctx = "The for statement in Python iterates over the items of any sequence, such as a list or a string, in the order that they appear in the sequence."
    gamer = [ctx, "**Answer:** yes", "", "I don't know the answer to that.", None, ctx, "**Answer:** yes",
             "Sorry, I cannot help with that.", None, "**Answer:** yes"]  # fmt: skip
    rows = []
    for i in range(10):
        rows.append({"case_id": f"c{i}", "system_id": "honest", "answer": f"It iterates over items of sequence number {i} in order.",
                     "contexts": [ctx], "error": None})  # fmt: skip
        rows.append({"case_id": f"c{i}", "system_id": "gamer", "contexts": [ctx], "answer": gamer[i],
                     "error": "timeout: no reply" if i == 8 else None})  # c8: a failed call, not gaming
    cases = pl.DataFrame({"case_id": [f"c{i}" for i in range(10)], "query_type": ["simple"] * 10, "expected_behavior": ["answer"] * 10})
    flags = gaming_flags(pl.DataFrame(rows), cases)
    g = {r["case_id"]: r for r in flags.filter(pl.col("system_id") == "gamer").to_dicts()}
    assert g["c0"]["context_copy"] and g["c5"]["context_copy"] and g["c0"]["gamed"]
    assert g["c1"]["format_only"] and g["c2"]["empty"] and g["c3"]["refusal"] and not g["c3"]["gamed"]
    assert g["c1"]["canned"] and g["c9"]["canned"] and not g["c0"]["canned"]  # 3 of 10 identical answers; 2 is not canned
    assert g["c4"]["empty"] and not g["c8"]["empty"] and g["c8"]["failed"]
    assert not flags.filter(pl.col("system_id") == "honest")["gamed"].any()
    summary = {r["system_id"]: r for r in gaming_summary(flags, n_boot=200).to_dicts()}
    assert summary["honest"]["gamed_rate"] == 0.0 and summary["gamer"]["gamed_rate"] > 0.5 and summary["gamer"]["failed"] == 1
    assert summary["gamer"]["gamed_ci_low"] <= summary["gamer"]["gamed_rate"] <= summary["gamer"]["gamed_ci_high"]
    refuser = pl.DataFrame([{"case_id": f"c{i}", "system_id": "r", "answer": "I'm sorry, but I can't answer that.", "contexts": [], "error": None}
                            for i in range(10)])  # fmt: skip
    rs = gaming_summary(gaming_flags(refuser, cases), n_boot=200).row(0, named=True)
    assert rs["refuses_everything"] and rs["refusal_on_answerable"] == 1.0


def test_question_echo_is_gaming_except_where_a_restatement_answers():
    resp = pl.DataFrame({
        "case_id": ["w", "w2", "y"], "system_id": ["s", "s", "s"],
        "query": ["What is the default behaviour for equality comparison?", "What is the default behaviour for equality comparison?",
                  "Is the match statement used for pattern matching?"],
        "answer": ["Yes. The default behaviour for equality comparison.", "It compares the identity of the two objects.",
                   "The match statement is used for pattern matching."],
        "error": [None, None, None], "contexts": [["ctx"]] * 3})  # fmt: skip
    cases = pl.DataFrame({"case_id": ["w", "w2", "y"], "query_type": ["simple", "simple", "yes_no"], "expected_behavior": ["answer"] * 3})
    flags = {r["case_id"]: r for r in gaming_flags(resp, cases).to_dicts()}
    assert flags["w"]["question_echo"] and flags["w"]["gamed"] and "question's own words" in flags["w"]["evidence"]
    assert not flags["w2"]["question_echo"] and not flags["y"]["question_echo"]  # adds content / a yes-no restatement answers
