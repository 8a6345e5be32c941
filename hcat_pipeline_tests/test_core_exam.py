"""Exam core on constructed data: a-priori filters (App. A.2), baselines (App. A.3), option shuffling,
freezing (determinism, immutability, integrity), strict letter parsing, response matrix, resume."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.exam.filters import (
    Candidate,
    FilterConfig,
    answer_in_question,
    baselines,
    choose_distractors,
    fixed_position_accuracy,
    jaccard,
    longest_answer_accuracy,
    self_contained,
    wilson_interval,
)
from hcat_pipeline.exam.freeze import ExamIntegrityError, ExamVersionConflict, exam_table, freeze_exam, load_exam
from hcat_pipeline.exam.generation import filter_candidate, reason_counts, select_per_chunk, shuffle_options, survival
from hcat_pipeline.exam.taking import ExamCheckpoint, exam_cases, parse_letter, response_matrix, take_exam
from hcat_pipeline_tests.golden_data import bag_embed  # noqa: F401

PASSAGE = (
    "The pass statement is a null operation: when it is executed, nothing happens. "
    "It is useful as a placeholder when a statement is required syntactically but no code needs to be executed."
)


CFG = FilterConfig(intra_cosine_min=0.0, extra_cosine_min=0.05)


def good_candidate(**kw) -> Candidate:
    base = dict(
        question="What happens when a pass statement is executed?",
        answer="Nothing happens",
        passage=PASSAGE,
        wrong=["An exception is raised", "The loop stops", "The function returns", "Nothing happens at all"],
    )
    return Candidate(**{**base, **kw})


def test_self_contained_patterns():
    assert not self_contained("According to the passage, what does pass do?")
    assert not self_contained("What does the text above say about pass?")
    assert not self_contained("Which statement is described in this section of the documentation?")
    assert self_contained("What happens when a pass statement is executed?")


def test_answer_in_question_and_jaccard():
    assert answer_in_question("Is the pass statement a null operation?", "a null operation")
    assert not answer_in_question("What kind of operation is pass?", "a null operation")
    assert jaccard("the exit method", "the exit method") == 1.0
    assert jaccard("a b c", "d e f") == 0.0
    assert 0 < jaccard("the enter method", "the exit method", n=1) < 1


def test_choose_distractors_drops_a_rephrased_correct_answer():
    # "Nothing happens at all" contains the key: choosing it would give two correct options
    v = choose_distractors(good_candidate(), bag_embed, CFG)
    assert v["ok"], v
    assert "Nothing happens at all" not in v["distractors"]
    assert len(v["distractors"]) == 3 and v["subsets_tried"] == 4


def test_choose_distractors_rejects_each_reason():
    # fewer than 3 usable wrong answers after dropping the copies of the key
    v = choose_distractors(good_candidate(wrong=["Nothing happens", "nothing happens.", "The loop stops"]), bag_embed, CFG)
    assert not v["ok"] and v["reasons"][0] == "not_one_correct"
    # a question that points at its source
    v = choose_distractors(good_candidate(question="According to the passage, what happens when pass is executed?"), bag_embed, CFG)
    assert "not_self_contained" in v["reasons"]
    # length giveaway: the key is far longer than every wrong answer
    long_key = "Nothing happens: it is a null operation useful as a placeholder"
    v = choose_distractors(good_candidate(answer=long_key, wrong=["Error", "Exit", "Stop", "Loop"]), bag_embed, CFG)
    assert "length_giveaway" in v["reasons"]
    # extra-candidate similarity: wrong answers closer to the passage than the key
    v = choose_distractors(
        good_candidate(answer="A keyword", wrong=["A null operation when executed", "Useful as a placeholder statement",
                                                  "Required syntactically but no code", "Nothing happens when executed"]),
        bag_embed, CFG,
    )  # fmt: skip
    assert "extra_similarity_high" in v["reasons"]
    # intra-candidate similarity too low: wrong answers unrelated to the question
    strict = FilterConfig(intra_cosine_min=0.2, extra_cosine_min=0.05)
    v = choose_distractors(good_candidate(wrong=["Blue whales", "Paris France", "Seven apples", "Green grass"]), bag_embed, strict)
    assert "intra_similarity_low" in v["reasons"]
    # ungrounded key
    v = choose_distractors(good_candidate(answer="Quantum flux capacitor"), bag_embed, FilterConfig(extra_cosine_min=0.3))
    assert "extra_similarity_low" in v["reasons"]


def test_shuffle_is_seeded_and_balanced():
    a = shuffle_options("key", ["w1", "w2", "w3"], 0, "q1")
    assert a == shuffle_options("key", ["w1", "w2", "w3"], 0, "q1")
    assert a[0][a[1]] == "key"
    positions = [shuffle_options("key", ["w1", "w2", "w3"], 0, f"q{i}")[1] for i in range(400)]
    counts = np.bincount(positions, minlength=4)
    assert counts.min() > 70, counts  # ≈ 100 each: the fixed-position baseline stays near 1/4


def test_baselines_on_constructed_exam():
    options = [["aa", "b", "c", "d"], ["a", "bbbb", "c", "d"], ["a", "b", "c", "dddd"], ["a", "b", "ccc", "d"]]
    correct = [0, 1, 2, 0]
    lon = longest_answer_accuracy(options, correct)
    assert lon["correct"] == 2 and lon["n"] == 4 and lon["ci_low"] < 0.5 < lon["ci_high"]
    fix = fixed_position_accuracy(correct)
    assert fix["position"] == "A" and fix["accuracy"] == 0.5
    b = baselines(options, correct)
    assert b["chance"] == 0.25
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)



def test_wilson_interval_contains_the_proportion_exactly():
    # the formula alone gives hi = 0.9999999999999999 < 1 at k = n = 29 and lo > 0 at k = 0, n = 69
    assert wilson_interval(29, 29)[1] == 1.0 and wilson_interval(0, 69)[0] == 0.0
    for n in range(1, 400):
        for k in (0, 1, n // 2, n - 1, n):
            lo, hi = wilson_interval(k, n)
            assert 0.0 <= lo <= k / n <= hi <= 1.0, (k, n, lo, hi)

def _generated(chunk_id: str, no: int, answer="Nothing happens", wrong=None, question=None) -> dict:
    return {
        "chunk_id": chunk_id, "stratum": 0, "stratum_label": "s", "candidate_no": no,
        "question": question or f"What happens when a pass statement is executed in case {chunk_id}?", "answer": answer,
        "evidence": "The pass statement is a null operation: when it is executed, nothing happens.", "wrong_pool": wrong or ["An exception is raised", "The loop stops", "The function returns"],
        "question_prompt_hash": "h1", "distractor_prompt_hash": "h2", "model": "m", "seed": 1, "error": None,
    }  # fmt: skip


def test_filter_select_and_counts():
    rows = [
        filter_candidate({**_generated("c1", 0), "error": "question: llm_failed: schema"}, PASSAGE, bag_embed, CFG, 0),
        filter_candidate(_generated("c1", 1), PASSAGE, bag_embed, CFG, 0),
        filter_candidate(_generated("c2", 0, wrong=["Nothing happens", "x"]), PASSAGE, bag_embed, CFG, 0),
        filter_candidate(_generated("c3", 0, question="What happens when a pass statement is executed in case c1?"), PASSAGE, bag_embed, CFG, 0),
    ]
    rows = select_per_chunk(rows, bag_embed, CFG)
    assert [r["selected"] for r in rows] == [False, True, False, False]
    assert rows[3]["reasons"] == ["duplicate_question"]  # same question as c1's
    counts = reason_counts(rows)
    assert counts["unparseable"] == 1 and counts["not_one_correct"] == 1 and counts["duplicate_question"] == 1
    s = survival(rows)
    assert s["candidates"] == 4 and s["selected"] == 1 and s["chunks"] == 3
    ok = rows[1]
    assert ok["options"][ok["correct_index"]] == "Nothing happens" and len(ok["options"]) == 4


def _exam_frame(n: int = 6) -> pl.DataFrame:
    rows = []
    for i in range(n):
        r = filter_candidate(_generated(f"c{i}", 0), PASSAGE, bag_embed, CFG, 0)
        rows.append({**r, "question": f"Question {i}: what happens when pass runs?", "question_id": f"eq-{i:03d}"})
    return exam_table(rows, corpus_hash="corpus1")


def test_freeze_is_deterministic_and_immutable(tmp_path):
    exam = _exam_frame()
    m1 = freeze_exam(exam, tmp_path / "a")
    m2 = freeze_exam(_exam_frame(), tmp_path / "b")
    assert m1["version"] == m2["version"] and m1["version"].startswith("ex-")
    assert m1["content_sha256"] == m2["content_sha256"]  # byte-identical Parquet
    again = freeze_exam(_exam_frame(), tmp_path / "a")
    assert again["frozen_at"] == m1["frozen_at"]  # the stored manifest, not a rewrite
    changed = _exam_frame().with_columns(pl.when(pl.col("question_id") == "eq-000").then(pl.lit("Other?")).otherwise(pl.col("question")).alias("question"))
    with pytest.raises(ExamVersionConflict):
        freeze_exam(changed, tmp_path / "a", version=m1["version"])
    frame, manifest = load_exam(m1["version"], tmp_path / "a")
    assert frame["exam_version"].unique().to_list() == [m1["version"]] and frame.height == 6
    path = tmp_path / "a" / m1["version"] / "exam.parquet"
    frame.with_columns(pl.lit(0, pl.Int32).alias("correct_index")).write_parquet(path)
    with pytest.raises(ExamIntegrityError):
        load_exam(m1["version"], tmp_path / "a")


def test_parse_letter_is_strict():
    opts = ["Nothing happens", "An error", "A loop", "A return"]
    assert parse_letter("B", opts) == 1
    assert parse_letter(" c.", opts) == 2
    assert parse_letter("A. Nothing happens", opts) == 0
    assert parse_letter("Answer: D", opts) == 3
    assert parse_letter("A. An error", opts) is None  # letter and text disagree
    assert parse_letter("I think B", opts) is None
    assert parse_letter("E", opts) is None
    assert parse_letter("", opts) is None


class FakeTaker:
    """Answers option 0 always; counts its calls."""

    def __init__(self, system_id: str, retriever: str, icl: int):
        self.system_id, self.config_hash, self.calls = system_id, f"h-{system_id}", 0
        self.retriever, self.icl = retriever, icl

    def respond(self, case):
        self.calls += 1
        if case["case_id"] == "eq-005" and self.system_id == "bm25@icl0":
            return {"case_id": case["case_id"], "system_id": self.system_id, "config_hash": self.config_hash, "error": "provider: down",
                    "llm": "local/q", "retriever": self.retriever, "icl_examples": self.icl}  # fmt: skip
        return {"case_id": case["case_id"], "system_id": self.system_id, "config_hash": self.config_hash, "llm": "local/q",
                "retriever": self.retriever, "icl_examples": self.icl, "chosen_index": 0, "correct_index": case["correct_index"],
                "correct": int(case["correct_index"] == 0), "unparseable": False, "scores": [0.0], "error": None}  # fmt: skip


def test_take_exam_resumes_and_builds_the_matrix(tmp_path):
    exam = _exam_frame().with_columns(pl.lit("ex-test").alias("exam_version"))
    takers = [FakeTaker("bm25@icl0", "bm25", 0), FakeTaker("oracle@icl1", "oracle", 1)]
    out, figures = take_exam(takers, exam, tmp_path / "ck")
    assert out.height == 12 and figures["bm25@icl0"]["called"] == 6 and figures["bm25@icl0"]["failed"] == 1
    assert set(out["exam_version"]) == {"ex-test"}
    # a second run asks again only the failed answer, and nothing else
    again = [FakeTaker("bm25@icl0", "bm25", 0), FakeTaker("oracle@icl1", "oracle", 1)]
    out2, fig2 = take_exam(again, exam, tmp_path / "ck")
    assert again[0].calls == 1 and again[1].calls == 0 and fig2["oracle@icl1"]["resumed"] == 6
    y, ids, qids, comps = response_matrix(out2)
    assert y.shape == (2, 6) and ids == ["bm25@icl0", "oracle@icl1"] and qids == sorted(exam["question_id"].to_list())
    assert np.isnan(y[0, 5]) and comps["icl"] == ["icl@0", "icl@1"] and comps["retriever"] == ["bm25", "oracle"]
    expected = (exam.sort("question_id")["correct_index"] == 0).cast(int).to_numpy()
    assert np.array_equal(y[1], expected)
    store = ExamCheckpoint(tmp_path / "ck")
    assert len(store) == 12
    line = json.loads((tmp_path / "ck" / "responses.jsonl").read_text().splitlines()[0])
    assert "correct" in line and "answer" not in line


def test_exam_cases_carry_icl_fields():
    cases = exam_cases(_exam_frame().with_columns(pl.lit("ex-t").alias("exam_version")))
    assert all(c["case_id"] == c["question_id"] and c["reference_answer"] and c["expected_behavior"] == "answer" for c in cases)


def test_an_exam_question_that_names_nothing_is_a_question_level_fault_and_may_become_a_cloze():
    from hcat_pipeline.exam.filters import QUESTION_LEVEL
    from hcat_pipeline.golden.question_checks import referent_problem

    assert "no_referent" in QUESTION_LEVEL  # a span candidate failing only this is asked as a cloze of its sentence instead
    assert referent_problem("What does it return when called?") is not None
    assert referent_problem("What does the break statement terminate?") is None
