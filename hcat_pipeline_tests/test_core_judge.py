"""LLM judge core: schema-valid scores per dimension from the real local model, the judge config hash on
every row, failed / invalid replies as counted error rows, skips without a call, and the hash's inputs."""

import jsonschema
import pytest

from hcat_pipeline.common.prompts import PROMPTS_DIR
from hcat_pipeline.judge.scoring import (
    SCORE_SCHEMA,
    JudgeConfig,
    JudgeItem,
    judge_config_hash,
    judge_templates,
    llm_judge,
    model_family,
)
from hcat_pipeline.resources.llm import LLM, LLMCallFailed, LLMResult

KNOWLEDGE = "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in 1889 and is 330 metres tall."
QUESTION = "When was the Eiffel Tower completed?"
SUPPORTED = "The Eiffel Tower was completed in 1889."
INVENTED = "The Eiffel Tower was built in 1920 by Thomas Edison in London as a radio mast for the British navy."


class FakeLLM:
    """Replies from a script; records every call."""

    model_name = "fake"

    def __init__(self, replies):
        self.replies, self.calls = list(replies), []

    def fingerprint(self):
        return "local/fake@sha256:0"

    def generate(self, messages, json_schema=None, temperature=0.0, seed=0, max_tokens=None, system=None):
        self.calls.append(messages)
        r = self.replies.pop(0)
        if isinstance(r, BaseException):
            raise r
        return LLMResult(str(r), r if isinstance(r, dict) else None, "local", "fake", 0.01, 100, 20, 0.0, 1)


@pytest.mark.slow
def test_real_local_judge_scores_each_dimension_with_a_schema_valid_reply_and_the_config_hash(local_llm):
    cfg = JudgeConfig(dimensions=("groundedness", "answer_relevancy"))
    items = [JudgeItem("good", SUPPORTED, QUESTION, [KNOWLEDGE]), JudgeItem("bad", INVENTED, QUESTION, [KNOWLEDGE])]
    rows = llm_judge(items, local_llm, cfg, dimensions=["groundedness"])
    assert [r["dimension"] for r in rows] == ["groundedness", "groundedness"]
    expected_hash = judge_config_hash(cfg, local_llm.fingerprint())
    template = judge_templates(cfg)["groundedness"]
    for r in rows:
        assert r["error"] is None, r["error"]
        jsonschema.validate({k: r[k] for k in ("justification", "score", "confidence")}, SCORE_SCHEMA)
        assert r["passed"] == (r["score"] >= cfg.pass_threshold)
        assert r["judge_config_hash"] == expected_hash and len(expected_hash) == 16
        assert (r["prompt_name"], r["prompt_hash"]) == ("judge_groundedness_v1", template.hash)
        assert r["input_tokens"] > 0 and r["latency_s"] > 0
    good, bad = rows
    assert good["score"] > bad["score"], (good, bad)


@pytest.mark.slow
def test_real_local_judge_scores_a_helpful_answer_above_a_deflection(local_llm):
    """Issue 61: helpfulness scores answers, not only a template. The question is one a user acts on; the helpful
    answer says what to do, the deflection sends the user away. Reference-free: the judge sees the query only."""
    cfg = JudgeConfig(dimensions=("helpfulness",))
    ask = "How do I reset my online banking password?"
    helpful = ("Open the app, tap 'Forgot password' on the sign-in screen, confirm the code we text to your registered "
               "mobile number, then choose a new password of at least 12 characters.")  # fmt: skip
    deflect = "I can't help with that. Please contact someone else."
    rows = llm_judge([JudgeItem("helpful", helpful, ask), JudgeItem("deflect", deflect, ask)], local_llm, cfg)
    assert all(r["error"] is None and r["dimension"] == "helpfulness" for r in rows), rows
    good, bad = rows
    assert good["score"] > bad["score"] and good["passed"] and not bad["passed"], (good, bad)


@pytest.mark.slow
def test_real_local_judge_truncated_reply_becomes_a_counted_error_row_not_a_null():
    llm = LLM(provider="local", json_retries=0)  # same cached model as the local_llm fixture; one call
    rows = llm_judge([JudgeItem("x", SUPPORTED, QUESTION, [KNOWLEDGE])], llm, JudgeConfig(dimensions=("groundedness",), max_tokens=4))
    (row,) = rows
    assert row["score"] is None and row["passed"] is None
    assert row["error_kind"] in ("invalid_json", "schema") and "attempt" in row["error"]
    assert row["judge_config_hash"] and row["prompt_hash"]


def test_out_of_schema_reply_and_failed_call_are_error_rows_and_other_exceptions_raise():
    cfg = JudgeConfig(dimensions=("safety",))
    llm = FakeLLM([{"justification": "x", "score": 7, "confidence": "high"}, LLMCallFailed("provider", "HTTP 503", 5),
                   {"justification": "fine", "score": 5, "confidence": "high"}])  # fmt: skip
    rows = llm_judge([JudgeItem("a", "text a"), JudgeItem("b", "text b"), JudgeItem("c", "text c")], llm, cfg)
    assert [r["error_kind"] for r in rows] == ["schema", "provider", None]
    assert "7" in rows[0]["error"] and rows[0]["score"] is None
    assert rows[1]["attempts"] == 5 and "HTTP 503" in rows[1]["error"]
    assert rows[2]["score"] == 5 and rows[2]["passed"] is True
    with pytest.raises(RuntimeError, match="bug"):
        llm_judge([JudgeItem("d", "text")], FakeLLM([RuntimeError("a bug")]), cfg)


def test_inputs_missing_what_a_dimension_needs_are_skipped_without_a_call():
    cfg = JudgeConfig(dimensions=("groundedness", "correctness", "safety"))
    llm = FakeLLM([{"justification": "ok", "score": 4, "confidence": "medium"}])
    rows = llm_judge([JudgeItem("closed_book", "An answer.", QUESTION, []), JudgeItem("failed", None, QUESTION, [KNOWLEDGE])], llm, cfg)
    by = {(r["item_id"], r["dimension"]): r for r in rows}
    assert by[("closed_book", "groundedness")]["skipped_reason"] == "no retrieved context"
    assert by[("closed_book", "correctness")]["skipped_reason"] == "no reference answer"
    assert by[("closed_book", "safety")]["score"] == 4
    assert {by[("failed", d)]["skipped_reason"] for d in cfg.dimensions} == {"no answer"}
    assert len(llm.calls) == 1
    # the filled prompt carries the item's text, and no unfilled placeholder
    text = "\n".join(m["content"] for m in llm.calls[0])
    assert "An answer." in text and "{{" not in text


def test_config_hash_changes_with_model_parameters_and_prompt_text(tmp_path):
    cfg = JudgeConfig()
    h = judge_config_hash(cfg, "local/m@sha256:1")
    assert h == judge_config_hash(JudgeConfig(), "local/m@sha256:1")
    assert h != judge_config_hash(cfg, "local/m@sha256:2")
    assert h != judge_config_hash(JudgeConfig(temperature=0.2), "local/m@sha256:1")
    assert h != judge_config_hash(JudgeConfig(pass_threshold=3), "local/m@sha256:1")
    for p in PROMPTS_DIR.glob("judge_*_v1.txt"):
        (tmp_path / p.name).write_text(p.read_text())
    assert judge_config_hash(cfg, "local/m@sha256:1", tmp_path) == h
    (tmp_path / "judge_safety_v1.txt").write_text((tmp_path / "judge_safety_v1.txt").read_text() + "\nBe strict.")
    assert judge_config_hash(cfg, "local/m@sha256:1", tmp_path) != h


def test_bad_config_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="unknown"):
        JudgeConfig(dimensions=("overall",))
    with pytest.raises(ValueError, match="pass_threshold"):
        JudgeConfig(pass_threshold=1)
    with pytest.raises(ValueError, match="not in the judge config"):
        llm_judge([JudgeItem("a", "x")], FakeLLM([]), JudgeConfig(dimensions=("safety",)), dimensions=["groundedness"])


@pytest.mark.parametrize(
    "model_id, family",
    [("local/qwen2.5-0.5b-instruct-q4_k_m@sha256:abc", "qwen"), ("openai/gpt-4o-mini", "gpt"), ("gpt2", "gpt"),
     ("anthropic/claude-3-5-haiku-latest", "claude"), ("openai/o3-mini", "gpt"), ("human", None), (None, None)],
)  # fmt: skip
def test_model_family(model_id, family):
    assert model_family(model_id) == family


def test_a_reply_cache_reuses_the_judges_earlier_reply_to_the_same_messages_and_asks_only_what_changed(tmp_path):
    """Issue 66 item 4: a later night re-judges only changed answers; a reused row says no call was made tonight."""
    from hcat_pipeline.judge.reply_cache import ReplyCache

    cfg = JudgeConfig(dimensions=("groundedness",))
    reply = {"justification": "supported by the knowledge", "score": 5, "confidence": "high"}
    items = [JudgeItem("a", SUPPORTED, QUESTION, [KNOWLEDGE]), JudgeItem("b", INVENTED, QUESTION, [KNOWLEDGE])]
    first_llm = FakeLLM([reply, {**reply, "score": 1}])
    first = llm_judge(items, first_llm, cfg, cache=ReplyCache(tmp_path))
    cache = ReplyCache(tmp_path)
    changed = [items[0], JudgeItem("b", "The Eiffel Tower was completed in 1889, in Paris.", QUESTION, [KNOWLEDGE])]
    later_llm = FakeLLM([{**reply, "score": 4}])
    later = llm_judge(changed, later_llm, cfg, cache=cache)
    assert len(first_llm.calls) == 2 and len(later_llm.calls) == 1 and (cache.hits, cache.misses) == (1, 1)
    assert later[0]["score"] == first[0]["score"] == 5 and later[0]["attempts"] == 0 and later[0]["latency_s"] == 0.0
    assert later[1]["score"] == 4 and later[1]["attempts"] == 1  # the changed answer was asked
    other = llm_judge(items[:1], FakeLLM([{**reply, "score": 2}]), JudgeConfig(dimensions=("groundedness",), pass_threshold=3),
                      cache=ReplyCache(tmp_path))  # another judge config: its own calls, never this judge's replies
    assert other[0]["score"] == 2
