"""Difficulty asked at generation and measured after a night (issue 69 item 4; HCAT §2 step 5.3): the campaign file's mix
is handed out slot by slot and written into the LLM's prompt; nothing changes when none is asked; the night's
measurement reads the levels as asked when hard questions are answered less often and share fewer words with their
reference — and says "not as asked" for a set where the levels came out reversed."""

from types import SimpleNamespace

import polars as pl
import pytest

from hcat_pipeline.campaign_spec import CampaignSpec
from hcat_pipeline.golden.difficulty import (
    HINTS,
    difficulty_sequence,
    difficulty_shares,
    difficulty_table,
    lexical_overlap,
    with_hint,
)
from hcat_pipeline.golden.grounded import generate_grounded
from hcat_pipeline.reports.difficulty import difficulty_section

SAVINGS = ("The Easy Saver account is a variable-rate savings account for customers aged 16 or over. Interest is calculated daily "
           "on the cleared balance and paid monthly on the first business day of the month. You can make up to three withdrawals in "
           "each calendar year without losing interest.")


class _LLM:
    """Writes a question for the span it is given (or the sentence); answers round trips with the reference's words."""

    def __init__(self):
        self.seen = []

    def generate(self, messages, json_schema=None, **kw):
        user = messages[-1]["content"]
        self.seen.append(user)
        if "\nQuestion:" in user:
            return SimpleNamespace(data={"answer": "Yes, as the passage says."}, text="", model="fake")
        line = next(ln for ln in user.splitlines() if ln.startswith("Sentence:")).split(":", 1)[1].strip()
        answer = [ln.split(":", 1)[1].strip() for ln in user.splitlines() if ln.startswith("Answer:")]
        line = line.replace(answer[0], "what") if answer else line
        return SimpleNamespace(data={"question": f"Is it true that {line.rstrip('.')}?"}, text="", model="fake", latency_s=0.0,
                               input_tokens=1, output_tokens=1)  # fmt: skip


MORE = ("A fee of 5 pounds applies to each international payment made online. Payments sent after 3 pm on a business day are "
        "processed on the next business day. A recall request costs 25 pounds and is not guaranteed to succeed.")
POOLS = {0: [{"chunk_id": "a", "text": SAVINGS, "stratum": 0, "stratum_label": "s"}, {"chunk_id": "a2", "text": MORE, "stratum": 0, "stratum_label": "s"}]}


def _keep(rows):
    return {r["query_id"] for r in rows if not r["error"] and r.get("roundtrip_agrees") is not False}


def test_the_mix_is_validated_and_handed_out_in_its_shares():
    assert difficulty_shares(None) == {} and difficulty_sequence({}, 0) == []
    assert difficulty_shares({"easy": 1, "hard": 3}) == {"easy": 0.25, "hard": 0.75}
    seq = difficulty_sequence(difficulty_shares({"easy": 1, "hard": 1}), 0)
    assert seq.count("easy") == seq.count("hard") == len(seq) // 2
    with pytest.raises(ValueError, match="medium"):
        difficulty_shares({"medium": 1})
    with pytest.raises(ValueError, match="difficulty_shares"):
        CampaignSpec.model_validate({"generation": {"difficulty_shares": {"expert": 1.0}}})
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "Sentence: x"}]
    assert with_hint(msgs, None) is msgs and with_hint(msgs, "hard")[-1]["content"].endswith(HINTS["hard"]) and msgs[-1]["content"] == "Sentence: x"


def test_the_generator_is_asked_the_level_and_nothing_changes_when_none_is_asked():
    plain_llm, asked_llm = _LLM(), _LLM()
    plain, _ = generate_grounded(POOLS, plain_llm, _keep, budget=4, max_requests=6, slack=0, query_types=("simple",), seed=0)
    asked, summary = generate_grounded(POOLS, asked_llm, _keep, budget=4, max_requests=6, slack=0, query_types=("simple",), seed=0,
                                       difficulty={"easy": 0.5, "hard": 0.5})  # fmt: skip
    assert not any("Difficulty:" in m for m in plain_llm.seen) and all(r["difficulty_asked"] is None for r in plain)
    written = [r for r in asked if r["input_tokens"]]  # LLM-written (a condition or definition is asked by rule: no level)
    assert written and {r["difficulty_asked"] for r in written} == {"easy", "hard"}
    questions = [m for m in asked_llm.seen if "\nQuestion:" not in m]
    assert sum("Difficulty: hard" in m for m in questions) == sum(r["difficulty_asked"] == "hard" for r in written)
    assert all(r["difficulty_asked"] is None for r in asked if r["model"] and r["model"].startswith("rules:"))
    assert summary["difficulty_shares"] == {"easy": 0.5, "hard": 0.5}
    assert {r["query_id"] for r in plain}.isdisjoint({r["query_id"] for r in written})  # an asked question is another question


def _night(reverse: bool):
    cases, verdicts = [], []
    for i in range(20):
        hard = i % 2 == 1
        q = "What does the fee apply to?" if not hard else "Which charge is levied when money is sent abroad?"
        cases.append({"case_id": f"c{i}", "query_type": "simple", "query": q, "reference_answer": "A fee of 5 pounds applies to each international payment.",
                      "tags": [f"difficulty_asked:{'hard' if hard else 'easy'}"]})  # fmt: skip
        fails = hard != reverse and i % 4 != 1  # the harder level answered wrongly more often (or, reversed, the easy one)
        for s in ("a", "b"):
            verdicts.append({"case_id": f"c{i}", "rule": "answer_correct", "verdict": "fail" if fails and s == "a" else "pass"})
    return cases, verdicts


def test_the_night_reads_the_levels_as_asked_or_says_they_are_not():
    assert lexical_overlap("What does the fee apply to?", "A fee applies to each payment.") > lexical_overlap("Which charge is levied?", "A fee applies.")
    rows, by_type = difficulty_table(*_night(reverse=False))
    assert by_type["simple"].startswith("as asked: correct 0.") and {r["asked"]: r["cases"] for r in rows} == {"easy": 10, "hard": 10}
    hard = next(r for r in rows if r["asked"] == "hard")
    assert hard["answers"] == 20 and hard["ci_low"] < hard["correct"] < hard["ci_high"]
    assert difficulty_table(*_night(reverse=True))[1]["simple"].startswith("not as asked")
    cases, verdicts = _night(reverse=False)
    assert difficulty_table(cases, [v for v in verdicts if v["case_id"] in {"c0", "c2"}])[1]["simple"].startswith("undecided")
    frame = pl.DataFrame(cases)
    section, lines = difficulty_section(frame, pl.DataFrame(verdicts))
    assert len(section.rows) == 2 and lines and lines[0].startswith("Difficulty simple: as asked")
    none, _ = difficulty_section(frame.with_columns(pl.lit([]).cast(pl.List(pl.String)).alias("tags")), pl.DataFrame(verdicts))
    assert not none.available and "no difficulty was asked" in none.why
