"""Exam generation (exam-generation paper §3.2, App. A.1-A.2): multiple-choice questions from the corpus.

For each chunk of the stratified sample (the golden set's strata and sampling, with the exam's own
sample size and seed), ``candidates_per_chunk`` candidates, each made of two LLM calls:

1. ``exam_question_v1`` — a question, its short correct answer and the evidence sentence (few-shot,
   JSON-schema validated). Candidate 0 is greedy (temperature 0); further candidates are sampled at
   ``sample_temperature`` with their own seed, so they differ.
2. ``exam_distractors_v1`` — a pool of five wrong answers for that question and answer (few-shot).
   A small model writes plausible wrong answers far better when asked for them alone than when it
   has to write the question, the key and three distractors at once (measured: see the README).

``core.exam_filters.choose_distractors`` keeps the best 3 wrong answers of the pool that pass the
a-priori filters (App. A.2); per chunk the best passing candidate is kept (``select_per_chunk``).
Options are shuffled with a generator seeded by (seed, question id), the correct position recorded.
Every row carries the prompt hashes, model, seed, tokens and latency; an LLM failure is a row with
``error`` (reason ``unparseable``), and the batch goes on.

No dagster import: the LLM is any object with ``.generate(messages, json_schema=..., temperature=,
seed=, max_tokens=)`` returning an object with ``.data .model .latency_s .input_tokens .output_tokens``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence

import numpy as np

from hcat_pipeline.core.exam_filters import FILTER_REASONS, Candidate, FilterConfig, choose_distractors, duplicate_questions
from hcat_pipeline.core.generation import item_seed
from hcat_pipeline.core.ids import short_hash
from hcat_pipeline.core.prompts import load_prompt

QUESTION_PROMPT = "exam_question_v1"
DISTRACTOR_PROMPT = "exam_distractors_v1"
LETTERS = ("A", "B", "C", "D", "E", "F")
_STR = {"type": "string", "minLength": 1}
QUESTION_SCHEMA = {
    "type": "object",
    "properties": {"question": _STR, "answer": _STR, "evidence": _STR},
    "required": ["question", "answer", "evidence"],
}
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


def generate_candidate(
    chunk: dict,
    candidate_no: int,
    llm,
    seed: int = 0,
    sample_temperature: float = 0.7,
    max_passage_chars: int = MAX_PASSAGE_CHARS,
    failed_exceptions: tuple[type[BaseException], ...] = (),
) -> dict:
    """Two LLM calls for one candidate of ``chunk`` (chunk_id, text, stratum, stratum_label): question + key, then wrong answers."""
    qt, dt = load_prompt(QUESTION_PROMPT), load_prompt(DISTRACTOR_PROMPT)
    temperature = 0.0 if candidate_no == 0 else sample_temperature
    s = item_seed(seed, "exam_question", chunk["chunk_id"], str(candidate_no))
    row = {
        "chunk_id": chunk["chunk_id"], "stratum": chunk.get("stratum"), "stratum_label": chunk.get("stratum_label"),
        "candidate_no": candidate_no, "question": None, "answer": None, "evidence": None, "wrong_pool": [],
        "question_prompt_hash": qt.hash, "distractor_prompt_hash": dt.hash, "model": None, "seed": s,
        "temperature": temperature, "input_tokens": 0, "output_tokens": 0, "latency_s": 0.0, "error": None,
    }  # fmt: skip
    r1, err = _call(llm, qt.render(passage=_clip(chunk["text"], max_passage_chars)), QUESTION_SCHEMA, temperature, s,
                    QUESTION_MAX_TOKENS, failed_exceptions)  # fmt: skip
    if r1 is None:
        return {**row, "error": f"question: {err}"}
    data = r1.data or {}
    row.update(
        question=str(data.get("question", "")).strip(), answer=str(data.get("answer", "")).strip(),
        evidence=str(data.get("evidence", "")).strip(), model=r1.model, input_tokens=r1.input_tokens,
        output_tokens=r1.output_tokens, latency_s=r1.latency_s,
    )  # fmt: skip
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


def filter_candidate(row: dict, passage: str, embed: Callable[[list[str]], np.ndarray], cfg: FilterConfig, seed: int) -> dict:
    """Apply the a-priori filters to a generated candidate; add options, correct position, verdict and reasons."""
    out = {**row, "question_id": None, "options": [], "correct_index": -1, "distractors": [], "passed": False,
           "reasons": [], "filter_figures": "{}", "subsets_tried": 0}  # fmt: skip
    if row.get("error"):
        return {**out, "reasons": ["unparseable"]}
    verdict = choose_distractors(Candidate(row["question"], row["answer"], passage, list(row["wrong_pool"])), embed, cfg)
    qid = question_id_for(row["chunk_id"], row["question"], row["answer"])
    options, correct = shuffle_options(row["answer"], verdict["distractors"], seed, qid)
    return {
        **out, "question_id": qid, "options": options, "correct_index": correct, "distractors": verdict["distractors"],
        "passed": verdict["ok"], "reasons": verdict["reasons"], "filter_figures": json.dumps(verdict["figures"], sort_keys=True),
        "subsets_tried": verdict["subsets_tried"],
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
) -> list[dict]:
    """Every candidate of every chunk, filtered, with ``selected`` marking the exam's questions.

    With ``stop_after_passing`` a chunk's further candidates are generated only while none has passed
    (saves LLM calls: the second candidate is asked for the chunks the first one failed on).
    ``done`` — raw candidates already generated ((chunk_id, candidate_no) -> row, e.g. from a checkpoint):
    they are filtered again, not asked again; ``on_raw`` receives each newly generated raw row (to checkpoint it)."""
    rows: list[dict] = []
    done = done or {}
    for chunk in chunks:
        for k in range(max(1, candidates_per_chunk)):
            raw = done.get((chunk["chunk_id"], k))
            if raw is None:
                raw = generate_candidate(chunk, k, llm, seed, sample_temperature, max_passage_chars, failed_exceptions)
                if on_raw:
                    on_raw(raw)
            row = filter_candidate(raw, chunk["text"], embed, cfg, seed)
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
    }  # fmt: skip
