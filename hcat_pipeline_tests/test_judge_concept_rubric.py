"""The concept-level chapter's §14.4 rubric items the judge lacked — global coherence, contradiction-detection accuracy,
cross-lingual accuracy (judge/scoring.py, judge/items.py): each scored on its own with its justification, skipped with
the reason where the input lacks what it needs, opt-in (the default judge and its config hash unchanged), and
validated like every dimension before it may decide anything."""

import polars as pl
import pytest

from hcat_pipeline.judge.data import LabelledItem
from hcat_pipeline.judge.items import case_claims, judge_items
from hcat_pipeline.judge.scoring import CHAPTER_14_4, JudgeConfig, JudgeItem, llm_judge
from hcat_pipeline.judge.validation import validate_judge
from hcat_pipeline.resources.llm import LLMResult

CLAIMS = ("true claim (source): The fee is 5 euros.", "false claim: The fee is 50 euros.")


class RubricLLM:
    """Scores by the rubric item it is asked (its system prompt): 5 when the response says "coherent" (coherence),
    "not 50" (contradiction detection), "fidèle" (cross-lingual), else 1."""

    def __init__(self):
        self.prompts = []

    def fingerprint(self):
        return "local/rubric@sha256:0"

    def generate(self, messages, json_schema=None, **kw):
        self.prompts.append(messages)
        system, response = messages[0]["content"], messages[-1]["content"].split("RESPONSE:")[-1]
        good = "fidèle" if "bilingual" in system else "not 50" if "comparison task" in system else "coherent"
        score = 5 if good in response else 1
        return LLMResult("", {"justification": "stub", "score": score, "confidence": "high"}, "local", "rubric", 0.0, 1, 1, 0.0, 1)


def test_each_item_is_scored_on_its_own_and_skipped_with_the_reason_where_it_cannot_be():
    cfg = JudgeConfig(dimensions=CHAPTER_14_4)
    items = [
        JudgeItem("a", "A coherent answer: the fee is 5 euros, not 50 euros.", "What is the fee?", ["La cuota es de 5 euros."], None,
                  claims=CLAIMS, languages=("en", "es")),
        JudgeItem("b", "The fee is 5 euros. The fee is 50 euros.", "What is the fee?", ["The fee is 5 euros."], None),
    ]  # fmt: skip
    llm = RubricLLM()
    rows = {(r["item_id"], r["dimension"]): r for r in llm_judge(items, llm, cfg)}
    assert len(rows) == 6  # 2 items × 3 dimensions, never one collapsed score
    assert rows[("a", "global_coherence")]["score"] == 5 and rows[("b", "global_coherence")]["score"] == 1
    assert rows[("a", "contradiction_detection")]["score"] == 5
    assert rows[("b", "contradiction_detection")]["skipped_reason"].startswith("not a contradiction case")
    assert rows[("a", "cross_lingual_accuracy")]["score"] == 1  # no "fidèle": the stub says unfaithful
    assert rows[("b", "cross_lingual_accuracy")]["skipped_reason"].startswith("single-language input")
    asked = [m[-1]["content"] + m[0]["content"] for m in llm.prompts]
    assert any("- false claim: The fee is 50 euros." in p for p in asked)  # the claims reach the prompt
    assert any("(en, es)" in p for p in asked)  # so do the languages
    # opt-in: the default judge keeps its five dimensions (and so its config hash and stored validations)
    assert JudgeConfig().dimensions == ("groundedness", "answer_relevancy", "completeness", "correctness", "safety")


def test_items_carry_a_comparison_cases_claims_and_the_languages_only_when_asked():
    golden = pl.DataFrame({"case_id": ["c1", "c2"], "constraints": [["must answer from the documents", *CLAIMS], []]})
    frame = pl.DataFrame({"case_id": ["c1", "c2"], "system_id": ["s", "s"], "answer": ["The fee is 5 euros.", "Die Gebühr beträgt 5 Euro."],
                          "query": ["q", "q"], "contexts": [["The fee is 5 euros."], ["The fee is 5 euros per month for every account."]],
                          "reference_answer": [None, None]})  # fmt: skip
    assert case_claims(["x", *CLAIMS]) == CLAIMS
    plain = judge_items(frame, golden, ("groundedness",))
    assert plain[0].claims == CLAIMS and plain[1].claims == () and plain[0].languages == ()
    multi = judge_items(frame, golden, ("cross_lingual_accuracy",))
    assert multi[0].languages == ("en",) and multi[1].languages == ("de", "en")


def test_a_new_dimension_decides_nothing_until_validated_against_human_labels():
    cfg = JudgeConfig(dimensions=("global_coherence",))
    # 24 human labels that the stub agrees with: validated; without labels or below the floor: not
    items = [LabelledItem(f"i{i}", "global_coherence", i % 2, "coherent" if i % 2 else "self-contradicting", "q", (), "human",
                          "campaign:labels/x", "test") for i in range(24)]  # fmt: skip
    good = validate_judge(RubricLLM(), items, config=cfg, min_items=20)["validation"].row(0, named=True)
    assert good["validated"] is True and good["kappa"] == pytest.approx(1.0) and good["n"] == 24
    none = validate_judge(RubricLLM(), [], config=cfg)["validation"].row(0, named=True)
    assert none["validated"] is False and "no human labels" in none["reason"]
    wrong = [LabelledItem(i.item_id, i.dimension, 1 - i.label, i.answer, i.query, i.contexts, i.system, i.source, i.split) for i in items]
    bad = validate_judge(RubricLLM(), wrong, config=cfg, min_items=20)["validation"].row(0, named=True)
    assert bad["validated"] is False
