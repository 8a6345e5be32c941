"""Happy-path cases grounded by construction (HCAT §2 step 5, built the way the exam's answer targets are).

The reference comes first: a source sentence a reviewer would sign (``reference_sentences``: ``claims.sentence_problem``
— a grammatical, self-standing claim of 8-40 words, no documentation noise, no code, not leaning on the sentence
before it). The question is then written *for* that reference:

- ``simple``: a sentence stating a condition or a definition is asked by rule, no LLM (``claims.wh_question``: "X is
  rejected unless a director approves it." → "Under what condition is X rejected?"); otherwise the LLM writes the
  question for a span of the sentence (``answer_span``: a literal, number or named term — the exam's answer-target
  method, ``query_grounded_span_v1``; a question naming its answer is an error row); a sentence with neither gets no
  simple question (the small model's questions without a target were rarely sound). ``inference``: the LLM writes the
  question for a causal or conditional sentence (``query_grounded_inference_v1``). The reference is the sentence;
- ``yes_no``: no LLM, never a negated question. Polarity comes from the source: a negated sentence asks its positive
  claim ("The account cannot be held jointly." → "Can the account be held jointly?", "No."); an affirmative one is
  inverted as it stands ("The *fill* value must be a string." → "Must the *fill* value be a string?",
  "Yes.", ``claims.yes_no_question``) or, by the seed, made false by a swapped antonym or number first ("No."); the
  reference is "Yes." / "No." followed by the true source sentence (``yes_no_request``);
- ``multi_hop`` (on request, not in ``DEFAULT_TYPES``): the reference joins the sentence and the partner chunk's
  sentence sharing most content words with it (at least two), the LLM writes one question needing both.

``generate_grounded`` asks, per stratum, until ``budget`` cases pass ``keep`` (selection + validity) or the stratum's
``max_requests`` are spent, each round asking a stratum for what it still lacks (plus ``slack``) on sentences not
asked yet (its chunks in pool order, types rotated). Deterministic for the same inputs and seed. No Dagster here:
the LLM is any object with ``.generate(messages, json_schema=..., ...)``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from types import SimpleNamespace

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.common.prompts import load_prompt
from hcat_pipeline.common.sentences import sentences, terms
from hcat_pipeline.common.text import answer_in_question
from hcat_pipeline.golden.case_checks import sources_for, validate_cases
from hcat_pipeline.golden.cases import case_from_query
from hcat_pipeline.golden.claims import sentence_problem, wh_question, yes_no_question
from hcat_pipeline.golden.generation import PROMPT_VERSION, item_seed, query_row, type_rotation
from hcat_pipeline.golden.robustness import contradict_sentence, swap_antonym_or_number
from hcat_pipeline.golden.selection import content_words, reference_polarity

GROUNDED_TYPES = ("simple", "inference", "yes_no", "multi_hop")
DEFAULT_TYPES = ("simple", "inference", "yes_no")  # multi_hop on request: two-chunk questions by the 0.5B model were rarely sound
PASSAGE_CHARS = 500  # context around the reference sentence in the prompt (shorter prompt: ~2x faster on 2 cores)
YES_NO_RULE = SimpleNamespace(name="rules:yes_no_inversion", hash=short_hash(inspect.getsource(yes_no_question), n=16))
WH_RULE = SimpleNamespace(name="rules:wh_question", hash=short_hash(inspect.getsource(wh_question), n=16))
CASES_PER_STRATUM = 4  # valid happy-path cases each stratum should end with (16 strata on the default corpus: 64)
MAX_REQUESTS_PER_STRATUM = 16
QUESTION_SCHEMA = {"type": "object", "properties": {"question": {"type": "string", "minLength": 1}}, "required": ["question"]}
MAX_TOKENS = 80
_CAUSAL = re.compile(r"\b(because|so that|in order to|therefore|which means|to avoid|since|as a result|if|unless|when)\b", re.I)


def reference_sentences(text: str) -> list[str]:
    """Sentences of a chunk fit to be a reference a reviewer would sign (``claims.sentence_problem``: a grammatical,
    self-standing claim of 8-40 words, no documentation noise or code), in chunk order."""
    return [s for s in sentences(text) if sentence_problem(s) is None and not s.rstrip().endswith("?")]


def _passage_around(text: str, sentence: str, max_chars: int) -> str:
    flat = " ".join(text.split())
    i = flat.find(sentence)
    if len(flat) <= max_chars or i < 0:
        return flat[:max_chars]
    start = max(0, min(i - max_chars // 3, len(flat) - max_chars))
    return flat[start : start + max_chars]


def yes_no_request(chunk: dict, sentence: str, seed: int) -> dict | None:
    """A yes/no question whose answer the source decides, never a negated question: a negated source sentence ("X
    cannot be held jointly") asks its positive claim ("Can X be held jointly?" → "No."); an affirmative one asks
    itself ("yes") or, by the seed, a claim made false by a swapped antonym or number ("no"; a "yes" when none applies)."""
    contra = contradict_sentence(sentence)
    if contra and contra[1] == "remove_negation":
        polarity, statement = "no", contra[0]
    else:
        polarity, statement = ("no" if item_seed(seed, "polarity", chunk["chunk_id"], sentence) % 2 else "yes"), sentence
        if polarity == "no":
            swapped = swap_antonym_or_number(sentence)
            question = yes_no_question(swapped[0]) if swapped and not sentence_problem(swapped[0]) else None
            if question is None or reference_polarity(question, sentence) != "no":
                polarity = "yes"  # no swap, or one the polarity reader of selection and validity cannot see as a "no"
            else:
                statement = swapped[0]
    question = yes_no_question(statement)
    if question is None:
        return None
    return {"question": question, "reference": f"{polarity.capitalize()}. {sentence}", "label": polarity, "evidence": sentence,
            "chunk_ids": [chunk["chunk_id"]]}  # fmt: skip


def answer_span(sentence: str) -> str | None:
    """The span of ``sentence`` a "simple" question asks for: its first exam answer term (``exam.spans.terms``: a
    literal, a number with its unit, a named term) that occurs once in it and leaves at least four other words."""
    for t in terms(sentence):
        if sentence.count(t) == 1 and len(sentence.replace(t, " ").split()) >= 4:
            return t
    return None


def build_request(chunk: dict, qtype: str, sentence: str, partner: dict | None, seed: int) -> dict | None:
    """Prompt values and the reference of one request; None when the type does not fit the sentence."""
    if qtype == "yes_no":  # no LLM: polarity from the source (see yes_no_request)
        return yes_no_request(chunk, sentence, seed)
    if qtype == "multi_hop":  # the partner's sentence sharing most content words: the two facts are about one thing
        mine = set(content_words(sentence))
        scored = sorted(((len(mine & set(content_words(o))), o) for o in (reference_sentences(partner["text"]) if partner else [])),
                        key=lambda t: -t[0])  # fmt: skip
        if not scored or scored[0][0] < 2:
            return None
        other = scored[0][1]
        return {"values": {"sentence": sentence, "sentence_2": other}, "reference": f"{sentence} {other}", "label": None,
                "evidence": "", "chunk_ids": [chunk["chunk_id"], partner["chunk_id"]]}  # fmt: skip
    if qtype == "simple" and (question := wh_question(sentence)):  # a condition or a definition: asked by rule, no LLM
        return {"question": question, "reference": sentence, "label": None, "evidence": "", "chunk_ids": [chunk["chunk_id"]],
                "rule": WH_RULE}  # fmt: skip
    if qtype == "inference" and not _CAUSAL.search(sentence):
        return None
    values = {"passage": _passage_around(chunk["text"], sentence, PASSAGE_CHARS), "sentence": sentence}
    target = answer_span(sentence) if qtype == "simple" else None
    if target:  # the question is written for a span of the sentence, as the exam's are (its answer)
        return {"values": {**values, "answer": target}, "reference": sentence, "label": None, "evidence": target,
                "chunk_ids": [chunk["chunk_id"]], "prompt": "query_grounded_span"}  # fmt: skip
    return {"values": values, "reference": sentence, "label": None, "evidence": "", "chunk_ids": [chunk["chunk_id"]]}


def ask(chunk: dict, qtype: str, sentence: str, llm, partner: dict | None, seed: int, failed_exceptions=(), generation_round: int = 1) -> dict:
    """One LLM request: a golden row (the ``generated_queries`` contract) with the reference built from the source."""
    req = build_request(chunk, qtype, sentence, partner, seed)
    name = (req or {}).get("prompt") or f"query_grounded_{qtype}"
    template = (req or {}).get("rule") or (YES_NO_RULE if qtype == "yes_no" else load_prompt(f"{name}_{PROMPT_VERSION}"))
    if req is None:
        return query_row(chunk, qtype, [chunk["chunk_id"]], template, seed, generation_round=generation_round,
                    error=f"type_mismatch: no {qtype} question fits the sentence" if qtype != "multi_hop" else "no_partner: no partner sentence")
    s = item_seed(seed, "grounded", qtype, *req["chunk_ids"], sentence)
    qid = "q-" + short_hash(f"{qtype}|{'+'.join(req['chunk_ids'])}|{seed}|{template.hash}|{sentence}", n=12)  # one per sentence
    extra = {"generation_round": generation_round, "evidence": req["evidence"] or None, "query_id": qid}
    if "question" in req:  # built by rule
        return query_row(chunk, qtype, req["chunk_ids"], template, seed, query=req["question"], reference_answer=req["reference"],
                         answer_label=req["label"], model=template.name, **extra)  # fmt: skip
    try:
        result = llm.generate(template.render(**req["values"]), json_schema=QUESTION_SCHEMA, temperature=0.0, seed=s, max_tokens=MAX_TOKENS)
    except failed_exceptions as e:  # noqa: PERF203 - one failure must not stop the batch
        return query_row(chunk, qtype, req["chunk_ids"], template, seed, error=f"llm_failed: {getattr(e, 'kind', type(e).__name__)}: {e}", **extra)
    question = str((result.data or {}).get("question", "")).strip()
    if req["evidence"] and answer_in_question(question, req["evidence"]):
        return query_row(chunk, qtype, req["chunk_ids"], template, seed, error=f"answer_in_question: the question names its answer {req['evidence']!r}",
                         model=result.model, raw_reply=result.text, **extra)  # fmt: skip
    return query_row(chunk, qtype, req["chunk_ids"], template, seed, query=question,
                reference_answer=req["reference"], answer_label=req["label"], model=result.model, latency_s=result.latency_s,
                input_tokens=result.input_tokens, output_tokens=result.output_tokens, raw_reply=result.text, **extra)  # fmt: skip


def fits(chunk: dict, sentence: str, qtype: str, partner_of=lambda c: None) -> bool:
    """Whether a question of ``qtype`` can be built for ``sentence``: yes/no by inversion, simple for a span or by the
    condition / definition rule, inference on a causal or conditional sentence, multi-hop with a partner chunk."""
    if qtype == "yes_no":
        return yes_no_request(chunk, sentence, 0) is not None
    if qtype == "simple":
        return bool(answer_span(sentence) or wh_question(sentence))
    if qtype == "inference":
        return bool(_CAUSAL.search(sentence))
    return qtype == "multi_hop" and partner_of(chunk) is not None


def _candidates(pool: list[dict], types: list[str], partner_of) -> list[tuple[dict, str, str]]:
    """(chunk, sentence, type) in asking order for one stratum: chunks in pool order, their sentences, types rotated. A
    sentence the type does not fit gets the first of simple / yes_no that fits it, else none (no request is spent on a
    question the small model would have to invent without a target: those were rarely sound)."""
    out, t = [], 0
    by_chunk = [(c, reference_sentences(c["text"])) for c in pool]
    for depth in range(max((len(s) for _, s in by_chunk), default=0)):
        for chunk, sents in by_chunk:
            if depth < len(sents):
                qtype = types[t % len(types)]
                t += 1
                chosen = next((q for q in (qtype, "simple", "yes_no") if fits(chunk, sents[depth], q, partner_of)), None)
                if chosen:
                    out.append((chunk, sents[depth], chosen))
    return out


def generate_grounded(
    pools: dict[int, list[dict]],
    llm,
    keep: Callable[[list[dict]], set[str]],
    budget: int = CASES_PER_STRATUM,
    max_requests: int = MAX_REQUESTS_PER_STRATUM,
    slack: int = 1,
    query_types=DEFAULT_TYPES,
    partner_of: Callable[[dict], dict | None] = lambda c: None,
    seed: int = 0,
    failed_exceptions: tuple[type[BaseException], ...] = (),
    max_rounds: int = 6,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> tuple[list[dict], dict]:
    """Rows of every request and a summary (requests per round, kept and short strata). See the module docstring."""
    types = [t for t in type_rotation(query_types, seed) if t in GROUNDED_TYPES]
    queue = {st: _candidates(pool, types, partner_of) for st, pool in sorted(pools.items())}
    asked = dict.fromkeys(queue, 0)
    rows: list[dict] = []
    summary: dict = {"requests_by_round": [], "kept_per_stratum": {}, "short_strata": {}}
    kept_ids: set[str] = set()
    for round_no in range(1, max_rounds + 1):
        kept_in = {st: sum(r["query_id"] in kept_ids for r in rows if r["stratum"] == st) for st in queue}
        todo = {st: min(budget - kept_in[st] + slack, max_requests - asked[st], len(queue[st])) for st in queue if kept_in[st] < budget}
        todo = {st: n for st, n in todo.items() if n > 0}
        if not todo:
            break
        batch = [queue[st].pop(0) for st, n in todo.items() for _ in range(n)]
        for st, n in todo.items():
            asked[st] += n
        for i, (chunk, sentence, qtype) in enumerate(batch):
            rows.append(ask(chunk, qtype, sentence, llm, partner_of(chunk), seed, failed_exceptions, round_no))
            progress(i + 1, len(batch))
        summary["requests_by_round"].append(len(batch))
        kept_ids = keep(rows)
    for st in queue:
        k = sum(r["query_id"] in kept_ids for r in rows if r["stratum"] == st)
        summary["kept_per_stratum"][st] = k
        if k < budget:
            summary["short_strata"][st] = f"{k} of {budget} after {asked[st]} request(s)" + ("" if queue[st] else "; no sentence left")
    return rows, summary


MAX_ANCHOR_RANK = 2  # the reference sentence must be an extractive reader's first or second pick for the question


def is_grounded(row: dict) -> bool:
    """A row made by this module (its reference is a source sentence by construction)."""
    name = row.get("prompt_name") or ""
    return name.startswith("query_grounded_") or name in (YES_NO_RULE.name, WH_RULE.name)


def accepted(case: dict, validity) -> tuple[bool, str]:
    """(kept, why not): valid, and for an LLM-written open question the round trip closes — an extractive reader of the
    source ranks the reference sentence among its top ``MAX_ANCHOR_RANK`` for the question (it was written *for* it)."""
    if validity.verdict != "valid":
        return False, f"{validity.verdict}: {'; '.join(validity.reasons) or f'score {validity.score:.2f}'}"
    rank = validity.checks.get("anchor_rank", 1.0)
    if case["query_type"] != "yes_no" and rank > MAX_ANCHOR_RANK:
        return False, f"anchor_rank {rank:.0f} > {MAX_ANCHOR_RANK}: the question is not best answered by its reference sentence"
    return True, ""


def validity_gate(kept: list[dict], chunk_text: dict[str, str], embed) -> tuple[list[dict], list[dict]]:
    """Split selected grounded rows into (kept, rejections) by ``accepted``; rows not made here pass through. A rejection
    has the selection's shape with reason ``case_invalid`` and the validity's reasons as its detail."""

    grounded = [r for r in kept if is_grounded(r)]
    if not grounded:
        return kept, []
    cases = [{**case_from_query(r), "query_id": r["query_id"]} for r in grounded]
    verdicts = {c["query_id"]: accepted(c, v) for c, v in zip(cases, validate_cases(cases, sources_for(cases, chunk_text), embed), strict=True)}
    out, rejections = [], []
    for r in kept:
        ok, why = verdicts.get(r["query_id"], (True, ""))
        if ok:
            out.append(r)
        else:
            rejections.append({"query_id": r["query_id"], "query_type": r["query_type"], "chunk_id": r["chunk_id"],
                               "source_chunk_ids": list(r["source_chunk_ids"]), "query": r.get("query"),
                               "reference_answer": r.get("reference_answer"), "stage": "validity", "reason": "case_invalid", "detail": why})  # fmt: skip
    return out, rejections
