"""Answer targets, term shapes, cloze questions and mined distractors (exam/spans.py), and how
filter_candidate uses them: the mined pool widens the LLM's, an off-topic LLM question falls back to a cloze."""

from __future__ import annotations

import json
from dataclasses import replace

from hcat_pipeline.exam.filters import FilterConfig, topic_overlap
from hcat_pipeline.exam.generation import filter_candidate
from hcat_pipeline.exam.spans import TermIndex, answer_targets, cloze_question, mined_distractors, sentences, shape, terms
from hcat_pipeline_tests.golden_data import bag_embed

CHUNK = (
    'The "with" statement wraps a block. The context manager\'s "__exit__()" method is called when the block is left, '
    "even if an exception occurred.\n\n   >>> with open(\"f\") as fh:\n   ...     pass\n\n"
    'In a generator function, a return statement causes "StopIteration" to be raised by the generator object.'
)
OTHER = [
    'A missing key raises "KeyError" when the mapping is subscripted with an unknown key value.',
    'The "__enter__()" method is called when the with block is entered by the interpreter at run time.',
    'Iterating an exhausted iterator again raises "StopAsyncIteration" in an asynchronous generator function body.',
    'Calling "__init__()" initialises a new instance after it has been created by the class constructor.',
    'Division by zero raises "ZeroDivisionError" for both integer and floating point operands in Python.',
]


def test_shapes_and_terms():
    assert shape("__exit__()") == "dunder" and shape("str.format()") == "call" and shape("KeyError") == "exception"
    assert shape("3.11") == "version" and shape("42") == "number" and shape("os.path") == "dotted" and shape("==") == "operator"
    assert terms('Use "len()" or *sequences*; since 3.11 the "x" is gone.') == ["len()", "sequences", "3.11"]  # "x" is trivial
    # TeX-style quotes of plain-text manuals and licences: two terms, not one running from a backquote to the next
    assert terms("The commands `show w' and `show c' should show the parts of the License.") == ["show w", "show c"]


def test_sentences_skip_code_and_fragments():
    got = sentences(CHUNK)
    assert all(">>>" not in s and "..." not in s for s in got)
    assert any("__exit__()" in s for s in got) and any(s.startswith('The "with" statement') for s in got)
    assert sentences("See below. Too short to ask about.") == []  # under 6 words each


def test_answer_targets_prefer_code_terms_once_each():
    targets = answer_targets(CHUNK, k=3)
    assert [t.answer for t in targets] == ["__exit__()", "StopIteration", "with"]  # code-like terms before a bare keyword
    assert all(t.answer in t.sentence for t in targets) and len({t.sentence for t in targets}) == len(targets)
    assert answer_targets(CHUNK, k=1)[0].shape == "dunder"


def test_cloze_question_blanks_the_key_and_refuses_ambiguous_sentences():
    s = 'The context manager\'s "__exit__()" method is called when the block is left.'
    q = cloze_question(s, "__exit__()")
    assert q is not None and "__exit__" not in q and "____" in q
    assert cloze_question('They call "__exit__()" when the block is left.', "__exit__()") is None  # pronoun referent
    assert cloze_question('"len()" calls "__len__()" and "len()" again.', "len()") is None  # key twice
    # a sentence that leans on the one before it is no question a stranger can answer (issue 47, the exam's read)
    assert cloze_question('In this case, "__exit__()" is called when the block is left.', "__exit__()") is None
    assert cloze_question('When doing so, "__exit__()" is called first.', "__exit__()") is None


def test_mined_distractors_same_shape_absent_from_chunk_and_deterministic():
    index = TermIndex([CHUNK, *OTHER])
    got = mined_distractors("StopIteration", CHUNK, index, bag_embed, k=3)
    assert got and all(shape(g) == "exception" for g in got)
    assert "StopIteration" not in got and all(g not in CHUNK for g in got)
    assert got == mined_distractors("StopIteration", CHUNK, index, bag_embed, k=3)
    dunders = mined_distractors("__exit__()", CHUNK, index, bag_embed, k=5)
    assert set(dunders) <= {"__enter__()", "__init__()"} and dunders


def _span_row(question: str, wrong: list[str]) -> dict:
    sentence = 'In a generator function, a return statement causes "StopIteration" to be raised by the generator object.'
    return {
        "chunk_id": "c1", "stratum": 0, "stratum_label": "s", "candidate_no": 0, "target_kind": "span:exception",
        "question": question, "answer": "StopIteration", "evidence": sentence, "wrong_pool": wrong,
        "question_prompt_hash": "h", "distractor_prompt_hash": "h", "model": "m", "seed": 1, "error": None,
    }  # fmt: skip


CFG = FilterConfig(intra_cosine_min=0.0, extra_cosine_min=0.0, extra_cosine_margin=1.0, extra_jaccard_margin=1.0)
LLM_FIRST = replace(CFG, question_form="llm_first")


def test_filter_uses_mined_pool_when_the_llm_pool_is_short():
    index = TermIndex([CHUNK, *OTHER])
    row = _span_row("Which exception does a generator object raise after a return statement in a generator function?",
                    ["StopIteration", "GeneratorExit"])  # the small model repeats the key: one usable wrong answer
    alone = filter_candidate(row, CHUNK, bag_embed, CFG, 0)
    assert not alone["passed"] and "not_one_correct" in alone["reasons"]
    widened = filter_candidate(row, CHUNK, bag_embed, LLM_FIRST, 0, index)
    assert widened["passed"], widened["reasons"]
    assert widened["question_form"] == "llm" and widened["distractor_sources"].count("corpus") >= 2
    assert widened["options"][widened["correct_index"]] == "StopIteration"


def test_off_topic_llm_question_falls_back_to_a_cloze():
    index = TermIndex([CHUNK, *OTHER])
    row = _span_row("What is the difference between a dictionary and a tuple?", ["GeneratorExit", "RuntimeError", "ValueError"])
    assert topic_overlap(row["question"], row["evidence"]) < CFG.question_evidence_overlap_min
    out = filter_candidate(row, CHUNK, bag_embed, LLM_FIRST, 0, index)
    assert out["passed"] and out["question_form"] == "cloze" and out["llm_question"] == row["question"]
    assert "StopIteration" not in out["question"] and json.loads(out["filter_figures"])["question_evidence_overlap"] >= 0.5
    free = filter_candidate({**row, "target_kind": "free"}, CHUNK, bag_embed, CFG, 0, index)  # a free question has no cloze
    assert not free["passed"] and "question_off_topic" in free["reasons"]


def test_prompt_example_copy_is_rejected():
    row = _span_row("Which exception is raised when a generator function executes a return statement?", ["A", "B", "C"])
    out = filter_candidate({**row, "target_kind": "free"}, CHUNK, bag_embed, CFG, 0)
    assert "copies_prompt_example" in out["reasons"] and not out["passed"]


def test_cloze_first_asks_the_sentence_and_keeps_the_models_question_only_where_no_cloze_passes():
    index = TermIndex([CHUNK, *OTHER])
    good = "Which exception does a generator object raise after a return statement in a generator function?"
    row = _span_row(good, ["GeneratorExit", "RuntimeError", "ValueError"])
    first = filter_candidate(row, CHUNK, bag_embed, CFG, 0, index)  # the default: the cloze even beside a good question
    assert FilterConfig().question_form == "cloze_first"
    assert first["passed"] and first["question_form"] == "cloze" and first["llm_question"] == good
    assert first["question"].startswith("Which term fills the blank?") and "StopIteration" not in first["question"]
    old = filter_candidate(row, CHUNK, bag_embed, LLM_FIRST, 0, index)  # the earlier method keeps the model's question
    assert old["passed"] and old["question_form"] == "llm" and old["question"] == good
    leaning = {**row, "evidence": "In this case, a return statement causes " + '"StopIteration"' + " to be raised."}
    kept = filter_candidate(leaning, CHUNK, bag_embed, CFG, 0, index)  # no cloze of a sentence leaning on its context
    assert kept["question_form"] == "llm" and kept["question"] == good


def test_cloze_only_rejects_every_candidate_without_a_passing_cloze():
    index = TermIndex([CHUNK, *OTHER])
    good = "Which exception does a generator object raise after a return statement in a generator function?"
    row = _span_row(good, ["GeneratorExit", "RuntimeError", "ValueError"])
    only = replace(CFG, question_form="cloze_only")
    kept = filter_candidate(row, CHUNK, bag_embed, only, 0, index)
    assert kept["passed"] and kept["question_form"] == "cloze"
    free = filter_candidate({**row, "target_kind": "free"}, CHUNK, bag_embed, only, 0, index)  # a good question, but no cloze
    assert not free["passed"] and free["reasons"] == ["no_cloze"] and free["question"] == good
    short = filter_candidate({**row, "wrong_pool": []}, CHUNK, bag_embed, replace(only, mined_distractors=0), 0, index)
    assert not short["passed"] and short["reasons"][0] == "no_cloze" and "not_one_correct" in short["reasons"]
