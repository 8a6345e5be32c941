"""The exam with the REAL packaged local LLM (Qwen2.5-0.5B through llama.cpp), a few calls only:
option log-likelihood scoring (deterministic, prefers the obviously right option, same as a fresh
evaluation), a tiny exam taken by a closed-book and an oracle taker, and one generated candidate."""

from __future__ import annotations

import polars as pl
import pytest

from hcat_pipeline.common.prompts import load_prompt
from hcat_pipeline.exam.generation import generate_candidate
from hcat_pipeline.exam.spans import answer_targets
from hcat_pipeline.exam.taking import ExamTaker, TakerSpec, take_exam
from hcat_pipeline.resources.llm import LLMCallFailed
from hcat_pipeline.responses.retrieval import build_retriever

PASSAGE = (
    "The pass statement is a null operation: when it is executed, nothing happens. It is useful as a placeholder "
    "when a statement is required syntactically, but no code needs to be executed."
)


def test_option_logprobs_prefer_the_right_answer_and_are_deterministic(local_llm):
    msgs = [{"role": "user", "content": "What is the capital of France?\nA. Paris\nB. Toaster\nC. Seven\nD. Blue"}]
    opts = ["Paris", "Toaster", "Seven", "Blue"]
    first = local_llm.option_logprobs(msgs, opts)
    assert [s["n_chars"] for s in first] == [5, 7, 5, 4] and all(s["n_tokens"] >= 1 for s in first)
    norm = [s["logprob"] / s["n_chars"] for s in first]
    assert max(range(4), key=norm.__getitem__) == 0, norm
    # scored after an unrelated generation: the same numbers (every prompt is evaluated from scratch)
    local_llm.generate("Say hello.", max_tokens=4)
    again = local_llm.option_logprobs(msgs, list(reversed(opts)))
    # float32 logits summed per token: equal up to 1e-6 (rounding to 6 decimals is no tolerance: two values 1e-12
    # apart can round to different sixth decimals)
    assert [s["logprob"] for s in again] == pytest.approx([s["logprob"] for s in reversed(first)], rel=0, abs=1e-6)


def test_tiny_exam_closed_book_vs_oracle_and_resume(local_llm, tmp_path):
    exam = pl.DataFrame({
        "question_id": ["eq-1", "eq-2"], "exam_version": ["ex-tiny", "ex-tiny"],
        "question": ["What happens when a pass statement is executed?", "When is the pass statement useful?"],
        "options": [["An exception is raised", "Nothing happens", "The loop stops", "The program exits"],
                    ["As a placeholder when a statement is required", "To stop a loop early", "To raise an error", "To import a module"]],
        "correct_index": [1, 0], "answer": ["Nothing happens", "As a placeholder when a statement is required"],
        "chunk_id": ["c-pass", "c-pass"],
    })  # fmt: skip
    ids, texts = ["c-pass", "c-other"], [PASSAGE, "Dictionaries map keys to values."]
    pool = [{**r, "case_id": r["question_id"], "reference_answer": r["answer"], "expected_behavior": "answer"} for r in exam.to_dicts()]

    def takers():
        return [
            ExamTaker(TakerSpec(f"{r}@icl0", r, 1, 0), build_retriever(r, ids, texts), local_llm, "local/q", "fp", "loglik", pool, "ix")
            for r in ("closed_book", "oracle")
        ]  # fmt: skip

    out, figures = take_exam(takers(), exam, tmp_path / "ck")
    assert out["error"].null_count() == out.height and figures["oracle@icl0"]["called"] == 2
    oracle = out.filter(pl.col("system_id") == "oracle@icl0")
    assert oracle["context_chunk_ids"].to_list() == [["c-pass"], ["c-pass"]]
    assert oracle["correct"].sum() == 2  # the answer is in the passage it is given
    assert all(len(s) == 4 for s in out["scores"])
    out2, fig2 = take_exam(takers(), exam, tmp_path / "ck")
    assert fig2["oracle@icl0"]["called"] == 0 and fig2["closed_book@icl0"]["resumed"] == 2
    assert out2.sort("system_id", "question_id")["chosen_index"].to_list() == out.sort("system_id", "question_id")["chosen_index"].to_list()


def test_one_generated_candidate_is_schema_valid(local_llm):
    chunk = {"chunk_id": "c-pass", "text": PASSAGE, "stratum": 0, "stratum_label": "pass"}
    row = generate_candidate(chunk, 0, local_llm, seed=0, failed_exceptions=(LLMCallFailed,))
    assert row["error"] is None, row["error"]
    assert row["question"].endswith("?") and row["answer"]
    assert 3 <= len(row["wrong_pool"]) <= 6
    assert row["question_prompt_hash"] and row["distractor_prompt_hash"] and row["model"]


def test_span_targeted_candidate_keeps_the_target_as_key(local_llm):
    text = ('The "with" statement wraps a block. The context manager\'s "__exit__()" method is called when the block is '
            "left, even if an exception occurred inside it.")  # fmt: skip
    target = answer_targets(text, 1)[0]
    chunk = {"chunk_id": "c-with", "text": text, "stratum": 0, "stratum_label": "with"}
    row = generate_candidate(chunk, 0, local_llm, seed=0, failed_exceptions=(LLMCallFailed,), target=target)
    assert row["error"] is None, row["error"]
    assert row["target_kind"] == "span:dunder" and row["answer"] == "__exit__()" and row["evidence"] == target.sentence
    assert row["question"].strip() and row["question_prompt_hash"] == load_prompt("exam_question_span_v1").hash
    again = generate_candidate(chunk, 0, local_llm, seed=0, failed_exceptions=(LLMCallFailed,), target=target)
    assert again["question"] == row["question"]  # greedy: the same question every time
