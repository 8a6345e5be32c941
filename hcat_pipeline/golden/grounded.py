"""Happy-path cases grounded by construction (HCAT §2 step 5, built the way the exam's answer targets are).

The reference comes first: a source sentence a reviewer would sign (``reference_sentences``: ``claims.sentence_problem``
— a grammatical, self-standing claim of 8-40 words, no documentation noise, no code, not leaning on the sentence
before it). The question is then written *for* that reference:

- ``simple``: a sentence stating a condition or a definition is asked by rule, no LLM (``claims.wh_question``: "X is
  rejected unless a director approves it." → "Under what condition is X rejected?"); otherwise the LLM writes the
  question for a span of the sentence (``answer_span``: a literal, number or named term — the exam's answer-target
  method, ``query_grounded_span_v2``; a question naming its answer is an error row); a sentence with neither gets a
  question written for the whole sentence (``query_grounded_simple_v2``). ``inference``: the LLM writes the
  question for a causal or conditional sentence (``query_grounded_inference_v2``). The reference is the sentence;
- ``yes_no``: never a negated question, and at most a third of a stratum's cases (``yes_no_allowed``; the rest are
  rejected ``yes_no_quota``). Polarity comes from the source: each stratum prefers one polarity, alternating over the
  strata (``stratum_polarity``), and a "yes" case is not asked while the kept "yes" cases outnumber the "no" ones, so
  about half the answers are "No": a "yes" case asks an affirmative sentence as it stands; a "no" case asks a claim the
  sentence contradicts, made by rule (``false_claim``: a negated sentence's positive claim, an antonym) and read as
  "no" by the polarity reader. The generator writes the question from the claim and the section title (not the
  sentence with two words swapped); the reference is "Yes." / "No." followed by the true source sentence;
- ``multi_hop`` (compound): the reference joins the sentence and the partner chunk's sentence sharing most content
  words with it (at least two); the LLM writes one question asking for both facts, "What …, and what …?"
  (``query_grounded_multi_hop_v2``: no "difference" questions — the v1 prompt's example led the 1.5B generator to
  contrast unrelated facts, 0 of 3 kept multi-hop cases sound), and the round trip must use both sentences;
- ``multiple_choice``: the question is written for a span of the sentence as for ``simple``; the options are the span
  and three terms of its shape from elsewhere in the corpus (``distractors_of``: the exam's mined distractors), in a
  seeded order; the reference is the span, the evidence the sentence.

The types are handed out in the shares the campaign file sets (``golden.query_mix``).

Every question names what it asks about: the prompts carry the chunk's section title (``chunks.title``), and a question
that leans on its text ("this method", "Does it …", "as follows") or names nothing specific is rejected ``no_referent``
(``golden.question_checks``). The round trip (``golden.roundtrip``): the generator answers each kept question from its
source chunk alone; an answer that disagrees with the reference rejects it (``roundtrip_disagrees``).

``generate_grounded`` asks, per stratum, until ``budget`` cases pass ``keep`` (selection + validity) or the stratum's
``max_requests`` are spent, each round asking a stratum for what it still lacks (plus ``slack``) on sentences not
asked yet (its chunks in pool order, types rotated). Deterministic for the same inputs and seed. No Dagster here:
the LLM is any object with ``.generate(messages, json_schema=..., ...)``.
"""

from __future__ import annotations

import inspect
import random
import re
from collections.abc import Callable
from types import SimpleNamespace

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.common.prompts import load_prompt
from hcat_pipeline.common.sentences import sentences, terms
from hcat_pipeline.common.text import answer_in_question
from hcat_pipeline.golden.case_signals import defers, leans_on_context
from hcat_pipeline.golden.claims import sentence_problem, wh_question, yes_no_question
from hcat_pipeline.golden.difficulty import difficulty_sequence, difficulty_shares, with_hint
from hcat_pipeline.golden.generation import item_seed, query_row
from hcat_pipeline.golden.query_mix import type_sequence, type_shares
from hcat_pipeline.golden.roundtrip import agrees, agrees_hops, roundtrip_answer
from hcat_pipeline.golden.selection import content_words, reference_polarity
from hcat_pipeline.golden.yes_no import (
    section_title,
    stratum_polarity,
    yes_no_allowed,
    yes_no_form_problem,
    yes_no_request,
)

GROUNDED_TYPES = ("simple", "inference", "yes_no", "multi_hop", "multiple_choice")
# multi-hop on request (listed in the campaign file's query_types): the 1.5B generator's compound questions read 0 of 6
# sound on the default corpus (v2 prompt) and its contrasts 0 of 3 (v1) — docs/golden_set.md
DEFAULT_TYPES = ("simple", "inference", "yes_no", "multiple_choice")  # in the shares of golden.query_mix.DEFAULT_SHARES
N_DISTRACTORS = 3  # a multiple-choice case has four options
PASSAGE_CHARS = 400  # context around the reference sentence in the prompt (the section title names the topic; shorter: faster)
PROMPT_VERSION = "v2"  # the templates name the chunk's section title (written for the 1.5B generator)
YES_NO_RULE = SimpleNamespace(name="rules:yes_no_inversion", hash=short_hash(inspect.getsource(yes_no_question), n=16))
WH_RULE = SimpleNamespace(name="rules:wh_question", hash=short_hash(inspect.getsource(wh_question), n=16))
CASES_PER_STRATUM = 4  # valid happy-path cases each stratum should end with (16 strata on the default corpus: 64)
MAX_REQUESTS_PER_STRATUM = 16
QUESTION_SCHEMA = {"type": "object", "properties": {"question": {"type": "string", "minLength": 1}}, "required": ["question"]}
MAX_TOKENS = 80
# its content is elsewhere ("the following", "described in the next section"), or it has no subject ("Called by str() to …")
_POINTS_ON = re.compile(r"\b(?:the following|as follows|described below|listed below|shown below|(?:next|previous|following) section)\b|:$|"
                        r"^(?:Called|Used|Invoked|Returned|Passed|Raised|Added|Changed|Removed|Deprecated)\b", re.I)
_SECTION = re.compile(r"(?:\d+\.){2,}\d*|(?:§|section|chapter|appendix)\s*[\dA-Z][\d.]*", re.I)
_CAUSAL = re.compile(r"\b(because|so that|in order to|therefore|which means|to avoid|since|as a result|if|unless|when)\b", re.I)


def reference_sentences(text: str) -> list[str]:
    """Sentences of a chunk fit to be a reference a reviewer would sign (``claims.sentence_problem``: a grammatical,
    self-standing claim of 8-40 words, no documentation noise or code; not deferring elsewhere nor leaning on unseen
    text, ``golden.case_signals``), in chunk order."""
    return [s for s in sentences(text) if sentence_problem(s) is None and not s.rstrip().endswith("?") and not _POINTS_ON.search(s)
            and not defers(s) and not leans_on_context(s)]  # validity would reject the reference whatever the question: no call spent


def _passage_around(text: str, sentence: str, max_chars: int) -> str:
    flat = " ".join(text.split())
    i = flat.find(sentence)
    if len(flat) <= max_chars or i < 0:
        return flat[:max_chars]
    start = max(0, min(i - max_chars // 3, len(flat) - max_chars))
    return flat[start : start + max_chars]


def answer_span(sentence: str) -> str | None:
    """The span of ``sentence`` a "simple" question asks for: its first exam answer term (``exam.spans.terms``: a
    literal, a number with its unit, a named term) that occurs once in it and leaves at least four other words."""
    for t in terms(sentence):
        if sentence.count(t) == 1 and len(sentence.replace(t, " ").split()) >= 4 and not _section_number(t, sentence):
            return t
    return None


def _section_number(term: str, sentence: str) -> bool:
    """A term that numbers a section ("4.2.1", "section 6.3", "§ 12"): an answer nobody asks for (issue 68)."""
    t = term.strip()
    return bool(_SECTION.fullmatch(t) or re.search(rf"(?:§|\b(?:section|chapter|appendix|part|clause))\s*{re.escape(t)}\b", sentence, re.I))


def partner_sentence(sentence: str, partner: dict | None) -> str | None:
    """The partner chunk's reference sentence sharing most content words with ``sentence`` (at least two), or None."""
    mine = set(content_words(sentence))
    scored = sorted(((len(mine & set(content_words(o))), o) for o in (reference_sentences(partner["text"]) if partner else [])),
                    key=lambda t: -t[0])  # fmt: skip
    return scored[0][1] if scored and scored[0][0] >= 2 else None


def build_request(chunk: dict, qtype: str, sentence: str, partner: dict | None, polarity: str = "yes") -> dict | None:
    """Prompt values and the reference of one request; None when the type does not fit the sentence."""
    if qtype == "yes_no":  # polarity from the source (see yes_no_request)
        return yes_no_request(chunk, sentence, polarity)
    if qtype == "multi_hop":  # the partner's sentence sharing most content words: the two facts are about one thing
        other = partner_sentence(sentence, partner)
        if other is None:
            return None
        return {"values": {"sentence": sentence, "sentence_2": other, "title": section_title(chunk)}, "reference": f"{sentence} {other}", "label": None,
                "evidence": other, "chunk_ids": [chunk["chunk_id"], partner["chunk_id"]]}  # fmt: skip
    if qtype == "simple" and (question := wh_question(sentence)):  # a condition or a definition: asked by rule, no LLM
        return {"question": question, "reference": sentence, "label": None, "evidence": "", "chunk_ids": [chunk["chunk_id"]],
                "rule": WH_RULE}  # fmt: skip
    if qtype == "inference" and not _CAUSAL.search(sentence):
        return None
    values = {"passage": _passage_around(chunk["text"], sentence, PASSAGE_CHARS), "sentence": sentence, "title": section_title(chunk)}
    if qtype == "multiple_choice":  # the question for a span, which is the key among mined distractors (options made in ask)
        target = answer_span(sentence)
        return None if target is None else {"values": {**values, "answer": target}, "reference": target, "label": None,
                                             "evidence": sentence, "chunk_ids": [chunk["chunk_id"]], "prompt": "query_grounded_span"}  # fmt: skip
    target = answer_span(sentence) if qtype == "simple" else None
    if target:  # the question is written for a span of the sentence, as the exam's are (its answer)
        return {"values": {**values, "answer": target}, "reference": sentence, "label": None, "evidence": target,
                "chunk_ids": [chunk["chunk_id"]], "prompt": "query_grounded_span"}  # fmt: skip
    return {"values": values, "reference": sentence, "label": None, "evidence": "", "chunk_ids": [chunk["chunk_id"]]}


def _template(req: dict | None, qtype: str):
    if (req or {}).get("rule"):
        return req["rule"]
    name = (req or {}).get("prompt") or f"query_grounded_{qtype}"
    return load_prompt(f"{name}_{PROMPT_VERSION}")


def _choices(req: dict, chunk: dict, qid: str, seed: int, distractors_of) -> dict | str:
    """A multiple-choice row's options and key (the span among ``N_DISTRACTORS`` mined distractors, seeded order), or why
    there are none."""
    wrong = [d for d in dict.fromkeys(distractors_of(req["reference"], chunk)) if d.lower() != req["reference"].lower()][:N_DISTRACTORS]
    if len(wrong) < N_DISTRACTORS:
        return f"type_mismatch: {len(wrong)} distractor(s) of the shape of {req['reference']!r} in the corpus, {N_DISTRACTORS} needed"
    order = list(range(N_DISTRACTORS + 1))
    random.Random(item_seed(seed, "mc_shuffle", qid)).shuffle(order)
    options = [[req["reference"], *wrong][i] for i in order]
    return {"options": options, "correct_index": order.index(0)}


def ask(chunk: dict, qtype: str, sentence: str, llm, partner: dict | None, seed: int, failed_exceptions=(), generation_round: int = 1,
        polarity: str = "yes", distractors_of=lambda answer, chunk: [], difficulty: str | None = None) -> dict:
    """One LLM request: a golden row (the ``generated_queries`` contract) with the reference built from the source.
    ``distractors_of(answer, chunk)``: wrong options of the answer's shape (multiple choice); ``difficulty``: the level
    the LLM is asked for (``golden.difficulty``; a question made by rule is asked none)."""
    req = build_request(chunk, qtype, sentence, partner, polarity)
    template = _template(req, qtype)
    if req is None:
        return query_row(chunk, qtype, [chunk["chunk_id"]], template, seed, generation_round=generation_round,
                    error=f"type_mismatch: no {qtype} question fits the sentence" if qtype != "multi_hop" else "no_partner: no partner sentence")
    s = item_seed(seed, "grounded", qtype, *req["chunk_ids"], sentence)
    asked = difficulty if not req.get("rule") else None
    qid = "q-" + short_hash(f"{qtype}|{'+'.join(req['chunk_ids'])}|{seed}|{template.hash}|{sentence}|{req.get('claim', '')}"
                            + (f"|{asked}" if asked else ""), n=12)
    extra = {"generation_round": generation_round, "evidence": req["evidence"] or None, "query_id": qid}
    if qtype == "multiple_choice":
        choices = _choices(req, chunk, qid, seed, distractors_of)
        if isinstance(choices, str):  # no LLM call spent on a question without options
            return query_row(chunk, qtype, req["chunk_ids"], template, seed, error=choices, **extra)
        extra |= choices
    if "question" in req:  # built by rule
        return query_row(chunk, qtype, req["chunk_ids"], template, seed, query=req["question"], reference_answer=req["reference"],
                         answer_label=req["label"], model=template.name, **extra)  # fmt: skip
    try:
        result = llm.generate(with_hint(template.render(**req["values"]), asked), json_schema=QUESTION_SCHEMA, temperature=0.0, seed=s,
                              max_tokens=MAX_TOKENS)  # fmt: skip
    except failed_exceptions as e:  # noqa: PERF203 - one failure must not stop the batch
        return query_row(chunk, qtype, req["chunk_ids"], template, seed, error=f"llm_failed: {getattr(e, 'kind', type(e).__name__)}: {e}", **extra)
    question = str((result.data or {}).get("question", "")).strip()
    error = None
    if qtype == "yes_no" and (yes_no_form_problem(question, req["claim"]) or reference_polarity(question, req["claim"]) != "yes"):
        # the generator's question does not ask the claim (a wh-question, a negation of its own, another claim): the
        # claim inverted by rule instead (``claims.yes_no_question``), recorded as such
        fallback = yes_no_question(req["claim"])
        if fallback is None:
            return query_row(chunk, qtype, req["chunk_ids"], template, seed, error=f"type_mismatch: {question[:60]!r} does not ask the claim",
                             query=question or None, model=result.model, raw_reply=result.text, **extra)  # fmt: skip
        return query_row(chunk, qtype, req["chunk_ids"], YES_NO_RULE, seed, query=fallback, reference_answer=req["reference"],
                         answer_label=req["label"], model=YES_NO_RULE.name, raw_reply=result.text, **extra)  # fmt: skip
    target = req["reference"] if qtype == "multiple_choice" else None if qtype == "multi_hop" else req["evidence"]
    if qtype != "yes_no" and target and answer_in_question(question, target):
        error = f"answer_in_question: the question names its answer {target!r}"
    elif qtype in ("simple", "inference", "multiple_choice") and (condition := consequence_only(question, sentence)):
        error = f"consequence_clause: the question asks the sentence's consequence without its condition {condition!r}"
    if error:
        return query_row(chunk, qtype, req["chunk_ids"], template, seed, error=error, query=question or None, model=result.model,
                         raw_reply=result.text, **extra)  # fmt: skip
    return query_row(chunk, qtype, req["chunk_ids"], template, seed, query=question,
                reference_answer=req["reference"], answer_label=req["label"], model=result.model, latency_s=result.latency_s,
                input_tokens=result.input_tokens, output_tokens=result.output_tokens, raw_reply=result.text, difficulty_asked=asked, **extra)  # fmt: skip


# a sentence that opens with its condition: "If the server stops, the data is lost."
_CONDITION_FIRST = re.compile(r"^\s*(?P<cond>(?:if|when|whenever|unless|once|although|while|where|after|before)\b[^,;:]{3,}?),\s+\S", re.I)


def consequence_only(question: str, sentence: str) -> str | None:
    """The condition ``sentence`` opens with when ``question`` shares none of its content words — a question made of the
    consequence clause alone ("What is lost?" of "If the server stops, the data is lost."), whose answer holds only under
    a condition the asker never states (issue 68) — else None."""
    m = _CONDITION_FIRST.match(sentence or "")
    cond = set(content_words(m["cond"])) if m else set()
    return m["cond"] if cond and not cond & set(content_words(question)) else None


def fits(chunk: dict, sentence: str, qtype: str, partner_of=lambda c: None, polarity: str = "yes") -> bool:
    """Whether a question of ``qtype`` can be built for ``sentence``: yes/no of the given polarity (``yes_no_request``),
    simple for a span or by the condition / definition rule, inference on a causal or conditional sentence, multi-hop
    with a partner chunk."""
    if qtype == "yes_no":
        return yes_no_request(chunk, sentence, polarity) is not None
    if qtype == "simple":
        return True  # for a span, by rule, else for the sentence (the 1.5B generator's questions without a target are mostly sound)
    if qtype == "inference":
        return bool(_CAUSAL.search(sentence))
    if qtype == "multiple_choice":
        return answer_span(sentence) is not None  # the distractors are looked for when it is asked (``_choices``)
    return qtype == "multi_hop" and partner_sentence(sentence, partner_of(chunk)) is not None


Candidate = tuple[dict, str, str, str]  # chunk, sentence, query type, yes/no polarity


def candidate_plan(pool: list[dict], types: list[str], partner_of, polarity: str = "yes") -> list[Candidate]:
    """(chunk, sentence, type, polarity) in asking order for one stratum: chunks in pool order, their sentences, the
    slots' types from ``types`` (``golden.query_mix.type_sequence``). Each slot takes the next unasked sentence its type
    fits (``fits``: a yes/no slot the stratum's ``polarity`` first, then the other; multi-hop a sentence with a partner
    sentence; multiple choice a sentence with an answer term), so the requests follow the shares as far as the
    sentences allow; when no sentence left fits the type, the next sentence gets a simple question. Every sentence is
    asked once, also when overlapping chunks both hold it (the first chunk in asking order has it)."""
    order, seen = [], set()
    by_chunk = [(c, reference_sentences(c["text"])) for c in pool]
    for depth in range(max((len(s) for _, s in by_chunk), default=0)):
        for chunk, sents in by_chunk:
            if depth < len(sents) and (key := " ".join(sents[depth].split())) not in seen:
                seen.add(key)
                order.append((chunk, sents[depth]))
    out, used, t, i = [], set(), 0, 0
    while (i := next((k for k in range(i, len(order)) if k not in used), -1)) >= 0:
        qtype = types[t % len(types)]
        t += 1
        pick = None
        for pol in ((polarity, "yes" if polarity == "no" else "no") if qtype == "yes_no" else (polarity,)):
            j = next((j for j in range(i, len(order)) if j not in used and fits(order[j][0], order[j][1], qtype, partner_of, pol)), None)
            if j is not None:
                pick = (j, qtype, pol)
                break
        j, qtype, pol = pick or (i, "simple", polarity)
        used.add(j)
        out.append((order[j][0], order[j][1], qtype, pol))
    return out


ROUNDTRIP_CHARS = 600  # the source chunk around the reference sentence (~150 tokens: the neighbours that could answer instead)


def _hops(row: dict, chunk_of: dict[str, dict]) -> list[tuple[str, str]]:
    """A multi-hop row's (chunk id, sentence) per hop — the reference is the first sentence then the second (its
    ``evidence``) — or [] for any other row or one whose partner chunk is unknown."""
    ids, second = row.get("source_chunk_ids") or [], row.get("evidence") or ""
    ref = row.get("reference_answer") or ""
    if row["query_type"] != "multi_hop" or len(ids) < 2 or not second or not ref.endswith(second) or ids[1] not in chunk_of:
        return []
    return [(ids[0], ref[: -len(second)].strip()), (ids[1], second)]


def _roundtrip(rows: list[dict], kept_ids: set[str], chunk_of: dict[str, dict], llm, seed: int, failed_exceptions,
               progress: Callable[[int, int], None] = lambda done, total: None) -> None:
    """The round trip (``golden.roundtrip``) for every kept open question that has none yet; recorded on the row. Not
    for yes/no: the generator answered "Yes" to 16 of 16 yes/no questions, the 4 "No" cases included (see the README),
    so it cannot check a polarity; the rules do (``false_claim``, the polarity reader)."""
    todo = [r for r in rows if r["query_id"] in kept_ids and r.get("roundtrip_agrees") is None and r["chunk_id"] in chunk_of
            and r["query_type"] != "yes_no"]  # fmt: skip
    for i, r in enumerate(todo):
        sentence = r["reference_answer"]
        hops = _hops(r, chunk_of)
        if hops:  # multi-hop: both passages, and the answer must draw on both sentences
            passage = " ".join(_passage_around(chunk_of[c]["text"], s, ROUNDTRIP_CHARS // 2) for c, s in hops)
        else:
            passage = _passage_around(chunk_of[r["chunk_id"]]["text"], sentence, ROUNDTRIP_CHARS)
        answer, error = roundtrip_answer(r["query"], passage, llm, item_seed(seed, "roundtrip", r["query_id"]), failed_exceptions)
        r["roundtrip_answer"] = answer if error is None else error
        term = r["reference_answer"] if r["query_type"] == "multiple_choice" else r.get("evidence")  # the key is the span asked for
        r["roundtrip_agrees"] = error is None and (agrees_hops(answer, hops[0][1], hops[1][1]) if hops else
                                                   agrees(answer, r["reference_answer"], r.get("answer_label"), term))  # fmt: skip
        progress(i + 1, len(todo))


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
    roundtrip: bool = True,
    shares: dict[str, float] | None = None,
    distractors_of: Callable[[str, dict], list[str]] = lambda answer, chunk: [],
    difficulty: dict[str, float] | None = None,
) -> tuple[list[dict], dict]:
    """Rows of every request and a summary (requests per round, kept and short strata). See the module docstring.
    ``roundtrip``: the generator answers every kept question from its source chunk (``golden.roundtrip``) and a
    disagreement rejects it; yes/no questions are asked only while a stratum has fewer than ``yes_no_allowed``.
    ``shares``: of each of ``query_types`` (``golden.query_mix.type_shares``); ``distractors_of``: multiple choice;
    ``difficulty``: {level: share} the LLM is asked for, slot by slot (``golden.difficulty``; empty: none asked)."""
    bad = [t for t in query_types if t not in GROUNDED_TYPES]
    if bad:
        raise ValueError(f"grounded generation: no such query type {bad}; one of {list(GROUNDED_TYPES)}")
    target_shares = type_shares(query_types, shares)
    types = type_sequence(target_shares, seed)
    levels, slot = difficulty_sequence(difficulty_shares(difficulty), seed), 0
    queue = {st: candidate_plan(pool, types, partner_of, stratum_polarity(rank, seed)) for rank, (st, pool) in enumerate(sorted(pools.items()))}
    chunk_of = {c["chunk_id"]: c for pool in pools.values() for c in pool}
    asked = dict.fromkeys(queue, 0)
    rows: list[dict] = []
    summary: dict = {"requests_by_round": [], "kept_per_stratum": {}, "short_strata": {}, "roundtrip_calls": 0, "type_shares": target_shares,
                     "difficulty_shares": difficulty_shares(difficulty)}
    kept_ids: set[str] = set()
    for round_no in range(1, max_rounds + 1):
        kept_in = {st: sum(r["query_id"] in kept_ids for r in rows if r["stratum"] == st) for st in queue}
        yes_no_in = {st: sum(r["query_id"] in kept_ids and r["query_type"] == "yes_no" for r in rows if r["stratum"] == st) for st in queue}
        labels = [r.get("answer_label") for r in rows if r["query_id"] in kept_ids and r["query_type"] == "yes_no"]
        balance = labels.count("no") - labels.count("yes")  # a "yes" case is asked only while "no" cases are not outnumbered
        for st in queue:
            if yes_no_in[st] >= yes_no_allowed(budget):
                queue[st] = [c for c in queue[st] if c[2] != "yes_no"]
        todo = {st: min(budget - kept_in[st] + slack, max_requests - asked[st], len(queue[st])) for st in queue if kept_in[st] < budget}
        todo = {st: n for st, n in todo.items() if n > 0}
        if not todo:
            break
        batch = []
        for st, n in todo.items():
            for _ in range(n):
                while queue[st] and queue[st][0][2] == "yes_no" and queue[st][0][3] == "yes" and balance < 0:
                    queue[st].pop(0)  # a "yes" case would outnumber the "no" ones: dropped (its sentence is not asked)
                if queue[st]:
                    cand = queue[st].pop(0)
                    balance += (cand[3] == "no" if cand[2] == "yes_no" else 0) - (cand[3] == "yes" if cand[2] == "yes_no" else 0)
                    batch.append(cand)
        if not batch:
            break
        for st, n in todo.items():
            asked[st] += n
        for i, (chunk, sentence, qtype, polarity) in enumerate(batch):
            partner = partner_of(chunk) if qtype == "multi_hop" else None
            if partner:
                chunk_of.setdefault(partner["chunk_id"], partner)  # the round trip reads both hops
            level = levels[slot % len(levels)] if levels else None
            slot += 1
            rows.append(ask(chunk, qtype, sentence, llm, partner, seed, failed_exceptions, round_no, polarity, distractors_of, level))
            progress(i + 1, len(batch))
        summary["requests_by_round"].append(len(batch))
        kept_ids = keep(rows)
        if roundtrip:
            before = sum(r.get("roundtrip_agrees") is not None for r in rows)
            _roundtrip(rows, kept_ids, chunk_of, llm, seed, failed_exceptions, progress)
            summary["roundtrip_calls"] += sum(r.get("roundtrip_agrees") is not None for r in rows) - before
            kept_ids = keep(rows)
    twins = no_twins([r for r in rows if r["query_id"] in kept_ids], chunk_of, seed)
    if twins:  # every kept "Yes" gets its "No" where a rule can make its claim false: an always-yes system meets both
        rows += twins
        kept_ids = keep(rows)
    summary["no_twins"] = sum(t["query_id"] in kept_ids for t in twins)
    summary["kept_types"] = [r["query_type"] for r in rows if r["query_id"] in kept_ids]
    for st in queue:
        k = sum(r["query_id"] in kept_ids for r in rows if r["stratum"] == st)
        summary["kept_per_stratum"][st] = k
        if k < budget:
            summary["short_strata"][st] = f"{k} of {budget} after {asked[st]} request(s)" + ("" if queue[st] else "; no sentence left")
    return rows, summary


def no_twins(kept: list[dict], chunk_of: dict[str, dict], seed: int) -> list[dict]:
    """The "No" twin of each kept "Yes" yes/no case, by rule and without an LLM call: a claim its source sentence
    contradicts (``yes_no.false_claim``: an antonym or a number swapped) asked by auxiliary inversion
    (``claims.yes_no_question``), reference "No." + the sentence. The pair shares one yes/no slot of its stratum."""
    out = []
    for r in kept:
        chunk, sentence = chunk_of.get(r.get("chunk_id")), r.get("evidence")
        if r["query_type"] != "yes_no" or r.get("answer_label") != "yes" or chunk is None or not sentence:
            continue
        req = yes_no_request(chunk, sentence, "no")
        question = yes_no_question(req["claim"]) if req else None
        if question is None:
            continue
        qid = "q-" + short_hash(f"yes_no|{chunk['chunk_id']}|{seed}|{YES_NO_RULE.hash}|{sentence}|{req['claim']}|twin", n=12)
        out.append(query_row(chunk, "yes_no", req["chunk_ids"], YES_NO_RULE, seed, query=question, reference_answer=req["reference"],
                             answer_label="no", model=YES_NO_RULE.name, evidence=sentence, query_id=qid,
                             generation_round=r.get("generation_round")))  # fmt: skip
    return out
