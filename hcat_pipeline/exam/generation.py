"""Exam generation (exam-generation paper §3.2, App. A.1-A.2): multiple-choice questions from the corpus.

For each chunk of the stratified sample (the golden set's strata and sampling, with the exam's own
sample size and seed), up to ``candidates_per_chunk`` candidates, each made of two LLM calls:

1. the question call. Candidate k of a chunk with an answer target (``exam.spans.answer_targets``:
   a term of a readable sentence) uses ``exam_question_span_v1``: the passage, the sentence and the term
   are given, the model writes the question (greedy); the term is the key and the sentence its evidence.
   Beyond the chunk's targets, ``exam_question_v1``: question, short key and evidence sentence all by
   the model (few-shot), greedy for the first free candidate, then sampled at ``sample_temperature``.
   (The 0.5B model asked to choose the fact itself wrote keys that were whole sentences or
   not answers at all; told the fact, it writes a usable question — measured, see the README.)
2. ``exam_distractors_v1`` — a pool of five wrong answers for that question and answer (few-shot).

The pool is widened with *mined* distractors (``exam.spans.mined_distractors``: terms of the key's
shape from other chunks, absent from this one, deterministic), and ``exam.filters.choose_distractors``
keeps the best 3 wrong answers that pass the a-priori filters (App. A.2); where each chosen distractor came
from (``llm`` / ``corpus``) is recorded. Per chunk the best passing candidate is kept (``select_per_chunk``).
Options are shuffled with a generator seeded by (seed, question id), the correct position recorded.
Every row carries the prompt hashes, model, seed, tokens and latency; an LLM failure is a row with
``error`` (reason ``unparseable``), and the batch goes on.

No dagster import: the LLM is any object with ``.generate(messages, json_schema=..., temperature=,
seed=, max_tokens=)`` returning an object with ``.data .model .latency_s .input_tokens .output_tokens``.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.common.prompts import load_prompt
from hcat_pipeline.exam.filters import (
    FILTER_REASONS,
    QUESTION_LEVEL,
    Candidate,
    FilterConfig,
    choose_distractors,
    duplicate_questions,
    jaccard,
    topic_overlap,
)
from hcat_pipeline.exam.spans import Target, TermIndex, answer_targets, cloze_question, mined_distractors, sources
from hcat_pipeline.golden.generation import item_seed
from hcat_pipeline.golden.question_checks import referent_problem

QUESTION_PROMPT = "exam_question_v1"
SPAN_QUESTION_PROMPT = "exam_question_span_v1"
DISTRACTOR_PROMPT = "exam_distractors_v1"
LETTERS = ("A", "B", "C", "D", "E", "F")
_STR = {"type": "string", "minLength": 1}
QUESTION_SCHEMA = {
    "type": "object",
    "properties": {"question": _STR, "answer": _STR, "evidence": _STR},
    "required": ["question", "answer", "evidence"],
}
SPAN_QUESTION_SCHEMA = {"type": "object", "properties": {"question": _STR}, "required": ["question"]}
DISTRACTOR_SCHEMA = {
    "type": "object",
    "properties": {"wrong_answers": {"type": "array", "items": _STR, "minItems": 3, "maxItems": 6}},
    "required": ["wrong_answers"],
}
MAX_PASSAGE_CHARS = 1200
QUESTION_MAX_TOKENS = 160
DISTRACTOR_MAX_TOKENS = 120


def _clip(text: str, max_chars: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= max_chars else text[:max_chars].rsplit(" ", 1)[0] + " …"


def shuffle_options(answer: str, distractors: Sequence[str], seed: int, question_id: str) -> tuple[list[str], int]:
    """(options in a seeded random order, index of the correct one); depends only on (seed, question_id)."""
    options = [answer, *distractors]
    order = list(range(len(options)))
    random.Random(item_seed(seed, "exam_shuffle", question_id)).shuffle(order)
    return [options[i] for i in order], order.index(0)


def question_id_for(chunk_id: str, question: str, answer: str) -> str:
    return "eq-" + short_hash(chunk_id, question.strip(), answer.strip(), n=16)


def _call(llm, messages, schema, temperature, seed, max_tokens, failed_exceptions):
    try:
        return llm.generate(messages, json_schema=schema, temperature=temperature, seed=seed, max_tokens=max_tokens), None
    except failed_exceptions as e:
        return None, f"llm_failed: {getattr(e, 'kind', type(e).__name__)}: {e}"


def _passage_around(text: str, sentence: str, max_chars: int) -> str:
    """The chunk clipped to ``max_chars``, keeping the target sentence inside the window."""
    flat = " ".join((text or "").split())
    if len(flat) <= max_chars:
        return flat
    i = max(0, flat.find(sentence))
    start = max(0, min(i - max_chars // 3, len(flat) - max_chars))
    return _clip(flat[start:], max_chars)


def generate_candidate(
    chunk: dict,
    candidate_no: int,
    llm,
    seed: int = 0,
    sample_temperature: float = 0.7,
    max_passage_chars: int = MAX_PASSAGE_CHARS,
    failed_exceptions: tuple[type[BaseException], ...] = (),
    target: Target | None = None,
    free_no: int = 0,
) -> dict:
    """Two LLM calls for one candidate of ``chunk`` (chunk_id, text, stratum, stratum_label): question (+ key), then wrong answers.

    With a ``target`` the key is its term and the model writes only the question (greedy); without, the model writes
    question, key and evidence (greedy for ``free_no`` 0, sampled after)."""
    qt = load_prompt(SPAN_QUESTION_PROMPT if target else QUESTION_PROMPT)
    dt = load_prompt(DISTRACTOR_PROMPT)
    temperature = 0.0 if target or free_no == 0 else sample_temperature
    s = item_seed(seed, "exam_question", chunk["chunk_id"], str(candidate_no))
    row = {
        "chunk_id": chunk["chunk_id"], "stratum": chunk.get("stratum"), "stratum_label": chunk.get("stratum_label"),
        "candidate_no": candidate_no, "target_kind": f"span:{target.shape}" if target else "free", "question": None,
        "answer": target.answer if target else None, "evidence": target.sentence if target else None, "wrong_pool": [],
        "question_prompt_hash": qt.hash, "distractor_prompt_hash": dt.hash, "model": None, "seed": s,
        "temperature": temperature, "input_tokens": 0, "output_tokens": 0, "latency_s": 0.0, "error": None,
    }  # fmt: skip
    if target:
        messages = qt.render(passage=_passage_around(chunk["text"], target.sentence, max_passage_chars),
                             sentence=target.sentence, answer=target.answer)  # fmt: skip
        r1, err = _call(llm, messages, SPAN_QUESTION_SCHEMA, temperature, s, QUESTION_MAX_TOKENS, failed_exceptions)
    else:
        r1, err = _call(llm, qt.render(passage=_clip(chunk["text"], max_passage_chars)), QUESTION_SCHEMA, temperature, s,
                        QUESTION_MAX_TOKENS, failed_exceptions)  # fmt: skip
    if r1 is None:
        return {**row, "error": f"question: {err}"}
    data = r1.data or {}
    row.update(
        question=str(data.get("question", "")).strip(), model=r1.model, input_tokens=r1.input_tokens,
        output_tokens=r1.output_tokens, latency_s=r1.latency_s,
    )  # fmt: skip
    if not target:
        row.update(answer=str(data.get("answer", "")).strip(), evidence=str(data.get("evidence", "")).strip())
    if not row["question"] or not row["answer"]:
        return {**row, "error": "question: empty question or answer"}
    s2 = item_seed(seed, "exam_distractors", chunk["chunk_id"], str(candidate_no))
    r2, err = _call(llm, dt.render(question=row["question"], answer=row["answer"]), DISTRACTOR_SCHEMA, temperature, s2,
                    DISTRACTOR_MAX_TOKENS, failed_exceptions)  # fmt: skip
    if r2 is None:
        return {**row, "error": f"distractors: {err}"}
    row.update(
        wrong_pool=[str(w).strip() for w in (r2.data or {}).get("wrong_answers", []) if str(w).strip()],
        input_tokens=row["input_tokens"] + r2.input_tokens, output_tokens=row["output_tokens"] + r2.output_tokens,
        latency_s=row["latency_s"] + r2.latency_s,
    )  # fmt: skip
    return row


@lru_cache(maxsize=8)
def _example_questions(prompt_hashes: tuple[str, ...]) -> tuple[str, ...]:
    out = []
    for name in (QUESTION_PROMPT, SPAN_QUESTION_PROMPT):
        for m in load_prompt(name).render(passage="", sentence="", answer=""):
            if m["role"] == "assistant":
                out.append(str(json.loads(m["content"]).get("question", "")))
    return tuple(out)


def copies_example(question: str, threshold: float = 0.7) -> bool:
    """The question is (nearly) a few-shot example question of the prompts: the model copied instead of asking."""
    hashes = tuple(load_prompt(n).hash for n in (QUESTION_PROMPT, SPAN_QUESTION_PROMPT))
    return any(jaccard(question, q, 1) >= threshold for q in _example_questions(hashes))


def _judge(question: str, row: dict, passage: str, pool: list[str], embed, cfg: FilterConfig) -> tuple[dict, list[str]]:
    """choose_distractors for ``question`` plus the question-level checks of this module (example copy, topic)."""
    verdict = choose_distractors(Candidate(question, row["answer"], passage, pool), embed, cfg)
    reasons = list(verdict["reasons"])
    if copies_example(question):
        reasons.insert(0, "copies_prompt_example")
    if referent_problem(question) is not None:  # the golden set's referent check (issue 47): names nothing a reader can look up
        reasons.append("no_referent")
    overlap = topic_overlap(question, row.get("evidence") or "")
    verdict["figures"] = {**verdict["figures"], "question_evidence_overlap": round(overlap, 3)}
    if overlap < cfg.question_evidence_overlap_min:
        reasons.append("question_off_topic")
    return verdict, reasons


def filter_candidate(
    row: dict, passage: str, embed: Callable[[list[str]], np.ndarray], cfg: FilterConfig, seed: int,
    term_index: TermIndex | None = None,
) -> dict:  # fmt: skip
    """Apply the a-priori filters to a generated candidate; add options, correct position, verdict and reasons.

    With a ``term_index`` the LLM's wrong answers are joined by up to ``cfg.mined_distractors`` mined ones
    (deterministic: the same row and corpus give the same pool). A span candidate is asked as a cloze of its evidence
    sentence (``question_form`` "cloze", the model's question kept in ``llm_question``) when that passes and
    ``cfg.question_form`` is "cloze_first" (with "cloze_only" any other candidate is rejected ``no_cloze``); with
    "llm_first" only when the model's question fails nothing but
    question-level filters (``QUESTION_LEVEL``)."""
    out = {**row, "question_id": None, "options": [], "correct_index": -1, "distractors": [], "passed": False,
           "reasons": [], "filter_figures": "{}", "subsets_tried": 0, "mined_pool": [], "distractor_sources": [],
           "question_form": "llm", "llm_question": row.get("question")}  # fmt: skip
    if row.get("error"):
        return {**out, "reasons": ["unparseable"]}
    llm_pool = list(row["wrong_pool"])
    mined = (mined_distractors(row["answer"], passage, term_index, embed, cfg.mined_distractors)
             if term_index is not None and cfg.mined_distractors > 0 else [])  # fmt: skip
    question, pool = row["question"], llm_pool + mined
    cloze = cloze_question(row["evidence"], row["answer"]) if str(row.get("target_kind", "")).startswith("span") else None
    judged = {}  # question → (verdict, reasons), each form judged at most once

    def judge(q: str) -> tuple[dict, list[str]]:
        judged.setdefault(q, _judge(q, row, passage, pool, embed, cfg))
        return judged[q]

    llm_fails_wording = cfg.question_form == "llm_first" and set(judge(question)[1]) <= QUESTION_LEVEL and judge(question)[1]
    if cloze and (cfg.question_form != "llm_first" or llm_fails_wording) and not judge(cloze)[1]:
        question, out["question_form"] = cloze, "cloze"
        verdict, reasons = judge(cloze)
    elif cfg.question_form == "cloze_only":
        verdict, reasons = judge(cloze) if cloze else ({"distractors": [], "figures": {}, "subsets_tried": 0}, [])
        reasons = ["no_cloze", *reasons]
    else:
        verdict, reasons = judge(question)
    qid = question_id_for(row["chunk_id"], question, row["answer"])
    options, correct = shuffle_options(row["answer"], verdict["distractors"], seed, qid)
    return {
        **out, "question": question, "question_id": qid, "options": options, "correct_index": correct,
        "distractors": verdict["distractors"], "passed": not reasons, "reasons": reasons,
        "filter_figures": json.dumps(verdict["figures"], sort_keys=True), "subsets_tried": verdict["subsets_tried"],
        "mined_pool": mined, "distractor_sources": sources(verdict["distractors"], llm_pool),
    }  # fmt: skip


def _quality(row: dict) -> tuple:
    """Order of preference between passing candidates of one chunk: most grounded key, then least length giveaway."""
    f = json.loads(row.get("filter_figures") or "{}")
    return (-f.get("answer_passage_cosine", 0.0), abs(1 - f.get("length_ratio_longest", 1.0)), row["candidate_no"])


def select_per_chunk(rows: list[dict], embed: Callable[[list[str]], np.ndarray], cfg: FilterConfig) -> list[dict]:
    """Mark ``selected`` = the best passing candidate of each chunk that is no near-duplicate of an earlier selection.

    Near-duplicates (question cosine ≥ ``cfg.duplicate_question_cosine``) are rejected with ``duplicate_question``.
    Candidates that passed but lost to a better candidate of the same chunk keep ``selected`` False, reason
    ``not_chosen`` (they are not rejections: their chunk already has a question)."""
    by_chunk: dict[str, list[dict]] = {}
    for r in rows:
        r["selected"] = False
        by_chunk.setdefault(r["chunk_id"], []).append(r)
    picks = []
    for chunk_id in by_chunk:
        passing = sorted((r for r in by_chunk[chunk_id] if r["passed"]), key=_quality)
        if passing:
            picks.append(passing[0])
            for r in passing[1:]:
                r["reasons"] = ["not_chosen"]
    dup = duplicate_questions([r["question"] for r in picks], embed, cfg.duplicate_question_cosine)
    for r, d in zip(picks, dup, strict=True):
        if d is None:
            r["selected"] = True
        else:
            r["passed"], r["reasons"] = False, ["duplicate_question"]
    return rows


def generate_exam_candidates(
    chunks: Sequence[dict],
    llm,
    embed: Callable[[list[str]], np.ndarray],
    candidates_per_chunk: int = 2,
    seed: int = 0,
    cfg: FilterConfig = FilterConfig(),
    sample_temperature: float = 0.7,
    max_passage_chars: int = MAX_PASSAGE_CHARS,
    failed_exceptions: tuple[type[BaseException], ...] = (),
    stop_after_passing: bool = True,
    on_row: Callable[[dict], None] | None = None,
    done: dict[tuple[str, int], dict] | None = None,
    on_raw: Callable[[dict], None] | None = None,
    answer_targets_first: bool = True,
    term_index: TermIndex | None = None,
) -> list[dict]:
    """Every candidate of every chunk, filtered, with ``selected`` marking the exam's questions.

    Candidate k of a chunk asks about the chunk's k-th answer target while there is one (``answer_targets_first``),
    then free questions. With ``stop_after_passing`` a chunk's further candidates are generated only while none has
    passed. ``term_index`` (mined distractors) defaults to the terms of ``chunks``' texts.
    ``done`` — raw candidates already generated ((chunk_id, candidate_no) -> row, e.g. from a checkpoint):
    they are filtered again, not asked again; ``on_raw`` receives each newly generated raw row (to checkpoint it)."""
    rows: list[dict] = []
    done = done or {}
    if term_index is None and cfg.mined_distractors > 0:
        term_index = TermIndex(c["text"] for c in chunks)
    n = max(1, candidates_per_chunk)
    for chunk in chunks:
        targets = answer_targets(chunk["text"], n) if answer_targets_first else []
        for k in range(n):
            raw = done.get((chunk["chunk_id"], k))
            if raw is None:
                target = targets[k] if k < len(targets) else None
                raw = generate_candidate(chunk, k, llm, seed, sample_temperature, max_passage_chars, failed_exceptions,
                                         target, free_no=k - len(targets))  # fmt: skip
                if on_raw:
                    on_raw(raw)
            row = filter_candidate(raw, chunk["text"], embed, cfg, seed, term_index)
            row["sample_rank"] = chunk.get("sample_rank")
            rows.append(row)
            if on_row:
                on_row(row)
            if stop_after_passing and row["passed"]:
                break
    return select_per_chunk(rows, embed, cfg)


def reason_counts(rows: Sequence[dict]) -> dict[str, int]:
    """Rejections per reason over every candidate (a candidate failing several filters counts under each; zeros kept)."""
    counts = dict.fromkeys(FILTER_REASONS, 0)
    for r in rows:
        if r.get("selected"):
            continue
        for reason in r.get("reasons") or []:
            counts[reason] = counts.get(reason, 0) + 1
    return counts


def survival(rows: Sequence[dict]) -> dict:
    """Survival figures: candidates generated, passing the filters, selected; chunks with a question."""
    n = len(rows)
    passed = sum(1 for r in rows if r.get("passed"))
    selected = sum(1 for r in rows if r.get("selected"))
    chunks = {r["chunk_id"] for r in rows}
    return {
        "candidates": n, "passed_filters": passed, "selected": selected, "chunks": len(chunks),
        "candidate_survival_rate": passed / n if n else float("nan"),
        "chunk_survival_rate": selected / len(chunks) if chunks else float("nan"),
        "unparseable": sum(1 for r in rows if r.get("error")),
        "llm_calls": sum(2 if r.get("wrong_pool") else 1 for r in rows),
        "candidates_by_kind": dict(Counter(str(r.get("target_kind") or "free").split(":")[0] for r in rows)),
        "selected_by_kind": dict(Counter(str(r.get("target_kind") or "free").split(":")[0] for r in rows if r.get("selected"))),
        "selected_by_form": dict(Counter(str(r.get("question_form") or "llm") for r in rows if r.get("selected"))),
        "selected_distractor_sources": dict(Counter(s for r in rows if r.get("selected") for s in r.get("distractor_sources") or [])),
    }  # fmt: skip
