"""Issue 61 item 9: the rubric dimensions the lexicons do not cover, judged — tone on every answer, reasoning
faithfulness on answers that show their steps (skipped, with the reason, on the others)."""

from types import SimpleNamespace

import polars as pl

from hcat_pipeline.judge.items import judge_items, reasoning_steps
from hcat_pipeline.judge.scoring import JudgeConfig, llm_judge


class Recording:  # records each prompt; the packaged LLM's replies are covered by test_core_judge
    def __init__(self):
        self.seen = []

    def generate(self, messages, **kw):
        self.seen.append(messages[-1]["content"])
        return SimpleNamespace(data={"justification": "ok", "score": 4, "confidence": "medium"}, text="{}", latency_s=0.0,
                               input_tokens=1, output_tokens=1, cost_usd=None, attempts=1)  # fmt: skip


def test_reasoning_steps_are_read_only_from_answers_that_show_them():
    shown = "First, the loop checks the condition.\nThen the body runs because the condition is true.\nSo it prints 3."
    assert reasoning_steps(shown).count("\n") >= 1 and "because" in reasoning_steps(shown)
    assert reasoning_steps("The break statement exits the loop.") == ""
    assert reasoning_steps("1. Open the file.\n2. Read it.") == "1. Open the file.\n2. Read it."


def test_tone_is_asked_of_every_answer_and_reasoning_only_of_those_with_steps():
    frame = pl.DataFrame([
        {"case_id": "c1", "system_id": "s", "query": "How do I close my account?", "contexts": ["Accounts close on request."],
         "answer": "First, call us. Then confirm by letter, because the bank needs it in writing.", "reference_answer": None},
        {"case_id": "c2", "system_id": "s", "query": "How do I close my account?", "contexts": ["Accounts close on request."],
         "answer": "Obviously you just ask, as anyone knows.", "reference_answer": None},
    ])  # fmt: skip
    items = judge_items(frame, pl.DataFrame({"case_id": ["c1", "c2"], "constraints": [[], []]}), ["tone", "reasoning_faithfulness"])
    llm = Recording()
    rows = llm_judge(items, llm, JudgeConfig(dimensions=("tone", "reasoning_faithfulness")), model_fingerprint="rec")
    got = {(r["item_id"].split("|")[0], r["dimension"]): r for r in rows}
    assert got[("c1", "tone")]["score"] == got[("c2", "tone")]["score"] == 4
    assert got[("c1", "reasoning_faithfulness")]["score"] == 4
    assert got[("c2", "reasoning_faithfulness")]["skipped_reason"] == "the answer shows no reasoning steps"
    assert any("REASONING STEPS SHOWN" in p and "because the bank needs it" in p for p in llm.seen)
