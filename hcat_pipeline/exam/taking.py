"""Exam taking (exam-generation paper §3.3 pointwise evaluation, §4.2 systems): every system of the
campaign answers every question of a frozen exam.

A *taker* is retriever (closed_book | oracle | bm25 | dense | dense_use | hybrid, over the campaign's chunk index)
× LLM × 0/1/2 in-context examples (other questions of the same exam with their answers, seeded,
never the question itself):

* ``loglik`` (local llama.cpp models): the option with the highest length-normalised log-likelihood
  as the reply to a cloze prompt (``exam_answer_cloze_v1``: context + question, the options *not*
  listed, as in Gao et al.'s harness): log P(option | prompt) / number of characters of the option
  (``acc_norm``); the raw sums and token counts are kept. (With the options listed as A-D the 0.5B
  model's reply distribution starts with a letter, and the option texts scored off it were near
  random: measured on the pass-statement question, the oracle taker preferred "An exception is raised".)
* ``letter`` (API models): the letter the model replies (``exam_answer_letter_v1``), parsed strictly:
  a reply that is not a single letter A-D (optionally followed by ``.``, ``)``, ``:`` and the option
  text) is ``unparseable`` — counted, and scored as a wrong answer (``correct`` = 0).

An LLM failure is a value (``error``; ``correct`` null, i.e. missing in the response matrix). Responses
are checkpointed one by one (``ExamCheckpoint``, the ``rag_responses`` store with this table's
fields) under ``<root>/<exam_version>/<run_label>/``: a re-run resumes and never asks a finished
question × taker again. No dagster import.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from hcat_pipeline.common.ids import json_hash
from hcat_pipeline.common.prompts import load_prompt
from hcat_pipeline.responses.rag import CheckpointStore, error_text, run_responses, select_icl_examples
from hcat_pipeline.responses.retrieval import Passage, Retriever
from hcat_pipeline.schemas import EXAM_RESPONSES

LOGLIK_PROMPT = "exam_answer_cloze_v1"
LETTER_PROMPT = "exam_answer_letter_v1"
MODES = ("loglik", "letter")
LETTERS = "ABCDEFGHIJ"
_FIELDS = ["case_id", *[c for c in EXAM_RESPONSES if c != "question_id"]]
_LETTER = re.compile(r"^\s*(?:answer\s*:\s*)?\(?([A-J])\)?(?:\s*$|[.):]\s*(.*)$)", re.I | re.S)


def parse_letter(reply: str, options: Sequence[str]) -> int | None:
    """Index of the option a reply names, or None (strict: a letter of the options first, then at most the
    option's own text after ``.``/``)``/``:``)."""
    m = _LETTER.match(reply or "")
    if not m:
        return None
    i = LETTERS.index(m.group(1).upper())
    if i >= len(options):
        return None
    rest = (m.group(2) or "").strip().rstrip(".").strip().lower()
    if rest and not options[i].strip().rstrip(".").lower().startswith(rest[: max(1, len(options[i]))]):
        return None
    return i


def options_block(options: Sequence[str]) -> str:
    return "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))


def render_exam_prompt(template, question: dict, passages: Sequence[Passage], examples: Sequence[dict], mode: str) -> list[dict]:
    ex = ""
    if examples:
        blocks = []
        for e in examples:
            if mode == "letter":
                blocks.append(f"Question: {e['question']}\n{options_block(e['options'])}\nAnswer: {LETTERS[e['correct_index']]}")
            else:  # cloze: the question and its answer, no options
                blocks.append(f"Question: {e['question']}\nAnswer: {e['options'][e['correct_index']]}")
        ex = "Solved examples:\n\n" + "\n\n".join(blocks) + "\n\n"
    context = ("Context:\n" + "\n\n".join(f"[{p.rank}] {p.text.strip()}" for p in passages) + "\n\n") if passages else ""
    return template.render(examples=ex, context=context, question=question["question"].strip(), options=options_block(question["options"]))


@dataclass(frozen=True)
class TakerSpec:
    system_id: str
    retriever: str = "bm25"
    top_k: int = 3
    icl_examples: int = 0
    seed: int = 0


class ExamTaker:
    """One system under test taking the exam: retrieve with the question, render the prompt, choose an option."""

    def __init__(self, spec: TakerSpec, retriever: Retriever, llm, llm_id: str, llm_fingerprint: str, mode: str,
                 icl_pool: Sequence[dict], index_hash: str | None = None):  # fmt: skip
        if mode not in MODES:
            raise ValueError(f"exam-taking mode {mode!r}: expected one of {MODES}")
        self.spec, self.retriever, self.llm, self.llm_id, self.mode = spec, retriever, llm, llm_id, mode
        self.template = load_prompt(LOGLIK_PROMPT if mode == "loglik" else LETTER_PROMPT)
        self.icl_pool = list(icl_pool)
        self.config_hash = json_hash({
            "spec": spec.__dict__, "llm": llm_fingerprint, "mode": mode, "prompt": self.template.hash,
            "index": None if spec.retriever == "closed_book" else index_hash,
        })  # fmt: skip
        self._prefetched: dict[str, list[Passage]] = {}

    @property
    def system_id(self) -> str:
        return self.spec.system_id

    def describe(self) -> dict:
        return {"llm": self.llm_id, "retriever": self.spec.retriever, "top_k": self.spec.top_k,
                "icl_examples": self.spec.icl_examples, "mode": self.mode, "prompt_hash": self.template.hash}  # fmt: skip

    def prefetch(self, cases: Sequence[dict]) -> None:
        if cases:
            got = self.retriever.retrieve_batch([c["question"] for c in cases], self.spec.top_k, [_sources(c) for c in cases])
            self._prefetched.update({c["case_id"]: p for c, p in zip(cases, got, strict=True)})

    def respond(self, case: dict) -> dict:
        ps = self._prefetched.pop(case["case_id"], None)
        if ps is None:
            ps = self.retriever.retrieve(case["question"], self.spec.top_k, _sources(case))
        examples = select_icl_examples(case, self.icl_pool, self.spec.icl_examples, self.spec.seed)
        messages = render_exam_prompt(self.template, case, ps, examples, self.mode)
        rec = {"case_id": case["case_id"], "system_id": self.system_id, "config_hash": self.config_hash, **self.describe(),
               "correct_index": case["correct_index"], "chosen_index": None, "correct": None, "unparseable": False,
               "scores": [], "raw_answer": None, "context_chunk_ids": [p.chunk_id for p in ps], "error": None}  # fmt: skip
        t0 = time.perf_counter()
        try:
            if self.mode == "loglik":
                scored = self.llm.option_logprobs(messages, list(case["options"]))
                norm = [s["logprob"] / max(1, s["n_chars"]) for s in scored]
                chosen = int(np.argmax(norm))
                rec.update(scores=[float(x) for x in norm], raw_answer=json.dumps(scored))
            else:
                r = self.llm.generate(messages, max_tokens=8, temperature=0.0, seed=self.spec.seed)
                chosen = parse_letter(r.text, case["options"])
                rec.update(raw_answer=r.text, unparseable=chosen is None)
        except Exception as e:  # LLMCallFailed after the resource's retries, or anything else: a value
            rec.update(error=error_text(e), latency_s=time.perf_counter() - t0)
            return rec
        rec.update(chosen_index=chosen, correct=int(chosen == case["correct_index"]) if chosen is not None else 0,
                   latency_s=time.perf_counter() - t0)  # fmt: skip
        return rec


class ExamCheckpoint(CheckpointStore):
    """The ``rag_responses`` checkpoint store (append-only JSONL, fsync per record, torn lines skipped)
    holding exam-response records."""

    FIELDS = _FIELDS


def _sources(case: dict) -> list[str]:
    """The oracle's passages: the question's source chunk, or its chunks in another chunking (``exam.chunkings``)."""
    return list(case.get("source_chunk_ids") or [case["chunk_id"]])


def exam_cases(exam: pl.DataFrame) -> list[dict]:
    """Questions as the harness' cases (``case_id`` = question_id; ICL-pool fields filled in)."""
    return [
        {**r, "case_id": r["question_id"], "query": r["question"], "reference_answer": r["answer"], "expected_behavior": "answer"}
        for r in exam.sort("question_id").to_dicts()
    ]


def take_exam(
    takers: Sequence[ExamTaker],
    exam: pl.DataFrame,
    checkpoint_dir: str | Path,
    retry_failed: bool = True,
    on_record: Callable[[dict], None] | None = None,
) -> tuple[pl.DataFrame, dict]:
    """Every taker answers every question of ``exam`` (resuming the checkpoint); (EXAM_RESPONSES frame, per-taker figures)."""
    versions = exam["exam_version"].unique().to_list()
    if len(versions) != 1 or not versions[0]:
        raise ValueError(f"take_exam: the exam must be one frozen version, got exam_version values {versions}")
    store = ExamCheckpoint(checkpoint_dir)
    cases = exam_cases(exam)
    records, figures = [], {}
    for t in takers:
        recs, st = run_responses([t], cases, store, 1, retry_failed, on_record=on_record)
        records += recs
        per = st.per_system.get(t.system_id, {})
        figures[t.system_id] = {"called": st.called, "resumed": st.resumed, "failed": st.failed, "seconds": round(st.seconds, 1),
                                "seconds_per_question": round(per["call_seconds"] / st.called, 2) if st.called else None}  # fmt: skip
    rows = [{**{k: r.get(k) for k in EXAM_RESPONSES}, "question_id": r["case_id"], "exam_version": versions[0]} for r in records]
    frame = pl.DataFrame(rows, schema=EXAM_RESPONSES, orient="row") if rows else pl.DataFrame(schema=EXAM_RESPONSES)
    return frame, figures


def response_matrix(responses: pl.DataFrame) -> tuple[np.ndarray, list[str], list[str], dict[str, list]]:
    """(taker × question matrix of 0/1 with NaN for missing, taker ids, question ids, components per taker:
    llm / retriever / icl) from an EXAM_RESPONSES frame. Unparseable letters count as wrong (0); errors are NaN."""
    takers = responses.select("system_id").unique(maintain_order=True)["system_id"].to_list()
    questions = sorted(responses["question_id"].unique().to_list())
    ti, qi = {t: i for i, t in enumerate(takers)}, {q: j for j, q in enumerate(questions)}
    y = np.full((len(takers), len(questions)), np.nan)
    for sid, qid, c in responses.select("system_id", "question_id", "correct").iter_rows():
        if c is not None:
            y[ti[sid], qi[qid]] = float(c)
    first = responses.unique("system_id", keep="first", maintain_order=True)
    desc = {r["system_id"]: r for r in first.to_dicts()}
    components = {
        "llm": [str(desc[t]["llm"]) for t in takers],
        "retriever": [str(desc[t]["retriever"]) for t in takers],
        "icl": [f"icl@{desc[t]['icl_examples']}" for t in takers],
    }
    return y, takers, questions, components


def matrix_frame(responses: pl.DataFrame) -> pl.DataFrame:
    """The response matrix as a table: one row per taker (llm, retriever, icl) and one 0/1 column per question."""
    y, takers, questions, comps = response_matrix(responses)
    data = {"system_id": takers, "llm": comps["llm"], "retriever": comps["retriever"], "icl": comps["icl"]}
    for j, q in enumerate(questions):
        data[q] = [None if np.isnan(v) else int(v) for v in y[:, j]]
    return pl.DataFrame(data, schema={**{k: pl.String for k in ("system_id", "llm", "retriever", "icl")}, **dict.fromkeys(questions, pl.Int8)})
