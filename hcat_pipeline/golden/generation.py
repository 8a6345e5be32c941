"""HCAT §2 step 5: LLM-driven query generation from the sampled chunks.

Query types as the paper lists them (§2, step 5): simple factual, multi-hop / compound (the chunk
plus a partner chunk of the same stratum), inference / reasoning, yes/no and multiple choice. Each
query comes with its reference answer and the ids of the chunks that support it.

Budget: a small local LLM costs seconds per request, so not every type is asked of every chunk.
``plan_requests`` gives each sampled chunk one type (rotated, seeded), so with the round-robin
sample every stratum and every type is asked for; ``plan_repairs`` adds a bounded second round for
the strata and types that no query survived selection for (``generate_covering`` runs both). Output is structured JSON validated against a per-type
JSON schema (the ``LLM`` resource retries invalid replies and raises ``LLMCallFailed``).

Prompts are versioned template files under ``hcat_pipeline/prompts/`` (``query_<type>_v1.txt``):
sections ``### system`` / ``### user`` / ``### assistant`` become chat messages, so every type
carries its own few-shot examples (a 0.5B model follows type instructions loosely without them).
The SHA-256 of the template file is recorded on every query (``prompt_hash``).

No dagster import here: the LLM is any object with ``.generate(messages, json_schema=..., ...)``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from functools import lru_cache

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.common.prompts import PromptTemplate, load_prompt

QUERY_TYPES = ("simple", "multi_hop", "inference", "yes_no", "multiple_choice")
PROMPT_VERSION = "v1"
MAX_TOKENS = 160  # per request: valid replies measured ≤ ~90 tokens (multiple choice); a runaway reply is cut early
MAX_PASSAGE_CHARS = 1200
OPTION_LETTERS = ("A", "B", "C", "D")

_STR = {"type": "string", "minLength": 1}
QUERY_SCHEMAS: dict[str, dict] = {
    "simple": {"type": "object", "properties": {"question": _STR, "answer": _STR}, "required": ["question", "answer"]},
    "multi_hop": {"type": "object", "properties": {"question": _STR, "answer": _STR}, "required": ["question", "answer"]},
    "inference": {"type": "object", "properties": {"question": _STR, "answer": _STR}, "required": ["question", "answer"]},
    "yes_no": {
        "type": "object",
        "properties": {"question": _STR, "answer": {"type": "string", "enum": ["yes", "no"]}, "evidence": _STR},
        "required": ["question", "answer", "evidence"],
    },
    "multiple_choice": {
        "type": "object",
        "properties": {
            "question": _STR,
            "options": {"type": "array", "items": _STR, "minItems": 4, "maxItems": 4},
            "correct": {"type": "string", "enum": list(OPTION_LETTERS)},
            "evidence": _STR,
        },
        "required": ["question", "options", "correct", "evidence"],
    },
}
COLLOQUIAL_SCHEMA = {"type": "object", "properties": {"rewrite": _STR}, "required": ["rewrite"]}


def prompt_name(query_type: str, version: str = PROMPT_VERSION) -> str:
    return f"query_{query_type}_{version}"


@lru_cache(maxsize=32)
def few_shot_questions(name: str) -> tuple[str, ...]:
    """The questions of a template's few-shot examples (a small model sometimes hands one back verbatim)."""
    try:
        messages = load_prompt(name).render(passage="", passage_2="")
    except (FileNotFoundError, ValueError):
        return ()
    out = []
    for m in messages:
        if m["role"] == "assistant":
            try:
                out.append(str(json.loads(m["content"]).get("question", "")).strip())
            except (ValueError, AttributeError):
                continue
    return tuple(q for q in out if q)


def query_id_for(query_type: str, chunk_ids: list[str], seed: int, prompt_hash: str) -> str:
    """Id of a generation request (stable for the same chunks, type, seed and prompt)."""
    key = f"{query_type}|{'+'.join(chunk_ids)}|{seed}|{prompt_hash}"
    return "q-" + short_hash(key, n=12)


def item_seed(seed: int, *parts: str) -> int:
    """A per-item seed derived from the campaign seed (stable across runs and orderings)."""
    h = hashlib.sha256(("|".join([str(seed), *parts])).encode()).digest()
    return int.from_bytes(h[:4], "big") & 0x7FFFFFFF


def _clip(text: str, max_chars: int) -> str:
    text = text.strip()
    return text if len(text) <= max_chars else text[:max_chars].rsplit(" ", 1)[0] + " …"


def parse_reply(query_type: str, data: dict) -> dict:
    """Normalise a schema-valid reply into (query, options, correct_index, reference_answer, evidence)."""
    q = str(data.get("question", "")).strip()
    if query_type == "multiple_choice":
        options = [str(o).strip() for o in data.get("options", [])]
        idx = OPTION_LETTERS.index(data["correct"]) if data.get("correct") in OPTION_LETTERS else -1
        answer = options[idx] if 0 <= idx < len(options) else ""
        return {"query": q, "options": options, "correct_index": idx, "reference_answer": answer, "evidence": str(data.get("evidence", "")).strip()}
    if query_type == "yes_no":
        yn = str(data.get("answer", "")).strip().lower()
        ev = str(data.get("evidence", "")).strip()
        ref = f"{yn.capitalize()}. {ev}" if yn in ("yes", "no") else ev
        return {"query": q, "options": [], "correct_index": -1, "reference_answer": ref, "answer_label": yn, "evidence": ev}
    return {"query": q, "options": [], "correct_index": -1, "reference_answer": str(data.get("answer", "")).strip(), "evidence": ""}


def generate_requests(
    requests: list[tuple[dict, str]],
    llm,
    partner_of: Callable[[dict], dict | None] = lambda chunk: None,
    seed: int = 0,
    temperature: float = 0.0,
    max_tokens: int = MAX_TOKENS,
    max_passage_chars: int = MAX_PASSAGE_CHARS,
    prompt_version: str = PROMPT_VERSION,
    failed_exceptions: tuple[type[BaseException], ...] = (),
    generation_round: int = 1,
) -> list[dict]:
    """One LLM request per (chunk, query type) of ``requests``; one output row per request.

    Chunks are dicts with chunk_id, text, stratum, stratum_label. ``partner_of(chunk)`` gives the
    partner chunk (chunk_id, text) of the same stratum for a multi-hop query; a chunk without one gets
    an ``error`` row ("no_partner: ..."). An LLM call that raises one of ``failed_exceptions`` (the
    resource's ``LLMCallFailed``) becomes a row with ``error`` set; the batch goes on. Rows carry
    provenance: model, prompt_hash, seed, tokens, latency, generation_round.
    """
    rows: list[dict] = []
    for chunk, qtype in requests:
        if qtype not in QUERY_TYPES:
            raise ValueError(f"unknown query type {qtype!r}; expected one of {QUERY_TYPES}")
        template = load_prompt(prompt_name(qtype, prompt_version))
        chunk_ids = [chunk["chunk_id"]]
        values = {"passage": _clip(chunk["text"], max_passage_chars)}
        extra = {"generation_round": generation_round}
        if qtype == "multi_hop":
            partner = partner_of(chunk)
            if partner is None:
                rows.append(query_row(chunk, qtype, chunk_ids, template, seed, error="no_partner: no other chunk in the same stratum", **extra))
                continue
            chunk_ids.append(partner["chunk_id"])
            values["passage"] = _clip(chunk["text"], max_passage_chars // 2 + 200)
            values["passage_2"] = _clip(partner["text"], max_passage_chars // 2 + 200)
        s = item_seed(seed, qtype, *chunk_ids)
        try:
            result = llm.generate(
                template.render(**values), json_schema=QUERY_SCHEMAS[qtype], temperature=temperature, seed=s, max_tokens=max_tokens
            )
        except failed_exceptions as e:  # noqa: PERF203 - one failure must not stop the batch
            rows.append(query_row(chunk, qtype, chunk_ids, template, seed, error=f"llm_failed: {getattr(e, 'kind', type(e).__name__)}: {e}", **extra))
            continue
        parsed = parse_reply(qtype, result.data or {})
        rows.append(
            query_row(
                chunk, qtype, chunk_ids, template, seed, **parsed, **extra,
                model=result.model, latency_s=result.latency_s, input_tokens=result.input_tokens,
                output_tokens=result.output_tokens, raw_reply=result.text,
            )
        )  # fmt: skip
    return rows


def generate_queries(sampled: list[dict], llm, partners: dict[str, dict] | None = None, query_types=QUERY_TYPES, seed: int = 0, **kw) -> list[dict]:
    """Every query type for every chunk of ``sampled`` (``partners``: chunk_id -> multi-hop partner chunk)."""
    partners = partners or {}
    requests = [(chunk, t) for chunk in sampled for t in query_types]
    return generate_requests(requests, llm, lambda c: partners.get(c["chunk_id"]), seed, **kw)


# ---------------------------------------------------------------- request plan: every stratum and type on a budget
def type_rotation(query_types, seed: int) -> list[str]:
    """The seeded order in which query types are handed out."""
    order = list(dict.fromkeys(query_types))
    random.Random(item_seed(seed, "type_rotation")).shuffle(order)
    return order


def plan_requests(
    sampled: list[dict], query_types=QUERY_TYPES, seed: int = 0, types_per_chunk: int = 1, has_partner: Callable[[dict], bool] = lambda c: True
) -> list[tuple[dict, str]]:
    """Round 1: ``types_per_chunk`` query types for each sampled chunk, in ``sample_rank`` order.

    Types rotate in a seeded order so every type appears (balanced: each chunk gets the feasible
    types handed out least so far, ties by rotation); multi-hop only for a chunk with a partner.
    The sample is round-robin over strata, so with one type per chunk every stratum and every type
    is asked for with ``len(sampled)`` requests. ``types_per_chunk >= len(query_types)``: every type for every chunk.
    """
    order = type_rotation(query_types, seed)
    counts = dict.fromkeys(order, 0)
    k = min(max(types_per_chunk, 1), len(order))
    cursor, plan = 0, []
    for chunk in sorted(sampled, key=lambda c: c.get("sample_rank", 0)):
        feasible = [t for t in order if t != "multi_hop" or has_partner(chunk)]
        chosen = sorted(feasible, key=lambda t: (counts[t], (order.index(t) - cursor) % len(order)))[:k]
        for t in chosen:
            counts[t] += 1
        if chosen:
            cursor = (order.index(chosen[-1]) + 1) % len(order)
        plan += [(chunk, t) for t in order if t in chosen]
    return plan


def plan_repairs(
    rows: list[dict],
    kept_ids: set[str],
    pools: dict[int, list[dict]],
    query_types=QUERY_TYPES,
    seed: int = 0,
    max_requests: int = 8,
    has_partner: Callable[[dict], bool] = lambda c: True,
) -> list[tuple[dict, str]]:
    """A bounded second round for what the first left uncovered after selection (``kept_ids``).

    * a query type with no kept query: that type on a chunk that already gave a kept query (a chunk
      known to give good questions), in sample order;
    * a stratum (of the first round) with no kept query: the next chunk of that stratum not asked
      yet (``pools[stratum]``: its sampled chunks, then reserve chunks, in order), with the type that
      survived selection best (ties by the seeded rotation) among those not yet failed in that stratum
      (a table chunk that failed as multi-hop is next asked a simpler type); when the pool is used
      up, an untried type on one of its chunks.
    At most ``max_requests`` requests, type repairs first. Deterministic for the same inputs and seed.
    """
    order = type_rotation(query_types, seed)
    asked = {(r["chunk_id"], r["query_type"]) for r in rows}
    kept = [r for r in rows if r["query_id"] in kept_ids]
    asked_chunks = {r["chunk_id"] for r in rows}
    rate = {t: sum(r["query_id"] in kept_ids for r in rows if r["query_type"] == t) / max(1, sum(r["query_type"] == t for r in rows)) for t in order}
    by_rate = sorted(order, key=lambda t: (-rate[t], order.index(t)))
    plan: list[tuple[dict, str]] = []

    def add(chunk: dict, qtype: str) -> None:
        plan.append((chunk, qtype))
        asked.add((chunk["chunk_id"], qtype))
        asked_chunks.add(chunk["chunk_id"])

    chunk_by_id = {c["chunk_id"]: c for pool in pools.values() for c in pool}
    for qtype in [t for t in order if not any(r["query_type"] == t for r in kept)]:
        for r in kept:
            chunk = chunk_by_id.get(r["chunk_id"])
            if chunk and (chunk["chunk_id"], qtype) not in asked and (qtype != "multi_hop" or has_partner(chunk)):
                add(chunk, qtype)
                break
    strata = list(dict.fromkeys(r["stratum"] for r in rows if r.get("stratum") is not None))
    for stratum in sorted(s for s in strata if not any(r.get("stratum") == s for r in kept)):
        pool = pools.get(stratum, [])
        fresh = [c for c in pool if c["chunk_id"] not in asked_chunks]
        failed_here = {r["query_type"] for r in rows if r.get("stratum") == stratum}
        types = [t for t in by_rate if t not in failed_here] + [t for t in by_rate if t in failed_here]
        for chunk in fresh or pool:
            pick = next((t for t in types if (chunk["chunk_id"], t) not in asked and (t != "multi_hop" or has_partner(chunk))), None)
            if pick:
                add(chunk, pick)
                break
    return plan[: max(0, max_requests)]


def coverage(kept: list[dict], strata, query_types=QUERY_TYPES) -> dict:
    """Strata and query types covered by ``kept`` queries (``strata``: every stratum id that should be)."""
    strata = sorted(set(strata))
    got_s = {r.get("stratum") for r in kept}
    got_t = {r["query_type"] for r in kept}
    return {
        "strata_covered": sum(s in got_s for s in strata), "n_strata": len(strata), "strata_missing": [s for s in strata if s not in got_s],
        "types_covered": sum(t in got_t for t in query_types), "n_types": len(query_types), "types_missing": [t for t in query_types if t not in got_t],
    }  # fmt: skip


def generate_covering(
    sampled: list[dict],
    llm,
    keep: Callable[[list[dict]], set[str]],
    pools: dict[int, list[dict]] | None = None,
    partner_of: Callable[[dict], dict | None] = lambda chunk: None,
    query_types=QUERY_TYPES,
    seed: int = 0,
    types_per_chunk: int = 1,
    max_repairs: int = 8,
    repair_rounds: int = 2,
    **generation,
) -> tuple[list[dict], dict]:
    """Round 1 (``plan_requests``), then up to ``repair_rounds`` repair rounds (``plan_repairs``) for the
    strata and types that no query covers after selection (``keep(rows) -> kept query ids``), sharing a
    budget of ``max_repairs`` requests; a round is planned only for what the previous ones left uncovered.
    ``pools``: stratum -> chunks a repair may use (default: the sampled chunks). Returns (rows of every
    round, summary: requests per round, coverage after round 1)."""
    has_partner = lambda c: partner_of(c) is not None  # noqa: E731
    first = plan_requests(sampled, query_types, seed, types_per_chunk, has_partner)
    rows = generate_requests(first, llm, partner_of, seed, **generation, generation_round=1)
    summary: dict = {"round_1_requests": len(first), "repair_requests": 0, "requests_by_round": [len(first)]}
    if pools is None:
        pools = {}
        for c in sorted(sampled, key=lambda c: c.get("sample_rank", 0)):
            pools.setdefault(c.get("stratum"), []).append(c)
    strata = [c.get("stratum") for c in sampled if c.get("stratum") is not None]
    for round_no in range(2, 2 + max(0, repair_rounds)):
        budget = max_repairs - summary["repair_requests"]
        if budget <= 0 or not rows:
            break
        kept_ids = keep(rows)
        if round_no == 2:
            summary["after_round_1"] = coverage([r for r in rows if r["query_id"] in kept_ids], strata, query_types)
        repairs = plan_repairs(rows, kept_ids, pools, query_types, seed, budget, has_partner)
        if not repairs:
            break
        rows += generate_requests(repairs, llm, partner_of, seed, **generation, generation_round=round_no)
        summary["repair_requests"] += len(repairs)
        summary["requests_by_round"].append(len(repairs))
    return rows, summary


def query_row(chunk: dict, qtype: str, chunk_ids: list[str], template: PromptTemplate, seed: int, **kw) -> dict:
    """A ``generated_queries`` row with every column (``kw`` overrides any of them)."""
    row = {
        "query_id": query_id_for(qtype, chunk_ids, seed, template.hash),
        "query_type": qtype,
        "chunk_id": chunk["chunk_id"],
        "source_chunk_ids": list(chunk_ids),
        "stratum": chunk.get("stratum"),
        "stratum_label": chunk.get("stratum_label"),
        "query": None,
        "options": [],
        "correct_index": -1,
        "reference_answer": None,
        "answer_label": None,
        "evidence": None,
        "model": None,
        "prompt_hash": template.hash,
        "prompt_name": template.name,
        "seed": seed,
        "latency_s": None,
        "input_tokens": None,
        "output_tokens": None,
        "raw_reply": None,
        "generation_round": 1,
        "error": None,
        "roundtrip_answer": None,
        "roundtrip_agrees": None,
        "difficulty_asked": None,
    }
    row.update(kw)
    return row


def llm_rewrite(prompt: str, query: str, llm, seed: int, failed_exceptions=(), max_tokens: int = 96, prompt_version: str = PROMPT_VERSION):
    """LLM rewrite of ``query`` by the ``<prompt>_<version>`` template ({"rewrite": …}).
    Returns (rewrite | None, prompt_hash, model, error)."""
    template = load_prompt(f"{prompt}_{prompt_version}")
    try:
        result = llm.generate(template.render(query=query), json_schema=COLLOQUIAL_SCHEMA, temperature=0.0, seed=seed, max_tokens=max_tokens)
    except failed_exceptions as e:
        return None, template.hash, None, f"llm_failed: {getattr(e, 'kind', type(e).__name__)}: {e}"
    return str((result.data or {}).get("rewrite", "")).strip(), template.hash, result.model, None


def paraphrases(query: str, n: int, llm, seed: int, failed_exceptions=(), max_tokens: int = 256):
    """``n`` meaning-preserving rewordings of ``query`` in one LLM call (golden-eval §3.2.3 ROBUSTNESS), by the
    ``paraphrase_v1`` template. Returns (rewrites, prompt_hash, model, error)."""
    template = load_prompt("paraphrase_v1")
    schema = {"type": "object", "properties": {"paraphrases": {"type": "array", "items": _STR, "minItems": n, "maxItems": n}},
              "required": ["paraphrases"]}  # fmt: skip
    try:
        result = llm.generate(template.render(query=query, n=str(n)), json_schema=schema, temperature=0.0, seed=seed, max_tokens=max_tokens)
    except failed_exceptions as e:
        return [], template.hash, None, f"llm_failed: {getattr(e, 'kind', type(e).__name__)}: {e}"
    return [str(p).strip() for p in (result.data or {}).get("paraphrases", [])], template.hash, result.model, None


def colloquial_rewrite(query: str, llm, seed: int, failed_exceptions=(), **kw):
    """``query`` in colloquial register (robustness variants)."""
    return llm_rewrite("colloquial_rewrite", query, llm, seed, failed_exceptions, **kw)
