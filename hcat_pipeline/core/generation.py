"""HCAT §2 step 5: LLM-driven query generation from the sampled chunks.

For each sampled chunk the LLM is asked for one query of every type the paper lists (§2, step 5):
simple factual, multi-hop / compound (the chunk plus a partner chunk of the same stratum),
inference / reasoning, yes/no and multiple choice. Each query comes with its reference answer and
the ids of the chunks that support it. Output is structured JSON validated against a per-type
JSON schema (the ``LLM`` resource retries invalid replies and raises ``LLMCallFailed``).

Prompts are versioned template files under ``hcat_pipeline/prompts/`` (``query_<type>_v1.txt``):
sections ``### system`` / ``### user`` / ``### assistant`` become chat messages, so every type
carries its own few-shot examples (a 0.5B model follows type instructions loosely without them).
The SHA-256 of the template file is recorded on every query (``prompt_hash``).

No dagster import here: the LLM is any object with ``.generate(messages, json_schema=..., ...)``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"

QUERY_TYPES = ("simple", "multi_hop", "inference", "yes_no", "multiple_choice")
PROMPT_VERSION = "v1"
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


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]

    def render(self, **values: str) -> list[dict]:
        """Chat messages from the ``### role`` sections, ``{{name}}`` placeholders filled in."""
        messages: list[dict] = []
        for block in re.split(r"^### ", self.text, flags=re.M):
            if not block.strip():
                continue
            role, _, body = block.partition("\n")
            role = role.strip()
            if role not in ("system", "user", "assistant"):
                raise ValueError(f"prompt {self.name}: unknown section {role!r}")
            for key, value in values.items():
                body = body.replace("{{" + key + "}}", value)
            if "{{" in body:
                missing = re.findall(r"\{\{(\w+)\}\}", body)
                raise ValueError(f"prompt {self.name}: no value for {missing}")
            messages.append({"role": role, "content": body.strip()})
        return messages


@lru_cache(maxsize=32)
def load_prompt(name: str, prompts_dir: str = str(PROMPTS_DIR)) -> PromptTemplate:
    path = Path(prompts_dir) / f"{name}.txt"
    if not path.exists():
        raise FileNotFoundError(f"prompt template {path} not found")
    return PromptTemplate(name, path.read_text(encoding="utf-8"))


def prompt_name(query_type: str, version: str = PROMPT_VERSION) -> str:
    return f"query_{query_type}_{version}"


def query_id_for(query_type: str, chunk_ids: list[str], seed: int, prompt_hash: str) -> str:
    """Id of a generation request (stable for the same chunks, type, seed and prompt)."""
    key = f"{query_type}|{'+'.join(chunk_ids)}|{seed}|{prompt_hash}"
    return "q-" + hashlib.sha256(key.encode()).hexdigest()[:12]


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


def generate_queries(
    sampled: list[dict],
    llm,
    partners: dict[str, dict] | None = None,
    query_types: tuple[str, ...] | list[str] = QUERY_TYPES,
    seed: int = 0,
    temperature: float = 0.0,
    max_tokens: int = 256,
    max_passage_chars: int = 1200,
    prompt_version: str = PROMPT_VERSION,
    failed_exceptions: tuple[type[BaseException], ...] = (),
) -> list[dict]:
    """One generation request per (sampled chunk, query type); one output row per request.

    ``sampled``: dicts with chunk_id, text, stratum, stratum_label. ``partners``: chunk_id -> a
    partner chunk dict (chunk_id, text) of the same stratum for multi-hop queries; a chunk without
    a partner gets an ``error`` row ("no_partner: ..."). An LLM call that raises one of
    ``failed_exceptions`` (the resource's ``LLMCallFailed``) becomes a row with ``error`` set;
    the batch goes on. Rows carry provenance: model, prompt_hash, seed, tokens, latency.
    """
    partners = partners or {}
    rows: list[dict] = []
    for chunk in sampled:
        for qtype in query_types:
            if qtype not in QUERY_TYPES:
                raise ValueError(f"unknown query type {qtype!r}; expected one of {QUERY_TYPES}")
            template = load_prompt(prompt_name(qtype, prompt_version))
            chunk_ids = [chunk["chunk_id"]]
            values = {"passage": _clip(chunk["text"], max_passage_chars)}
            if qtype == "multi_hop":
                partner = partners.get(chunk["chunk_id"])
                if partner is None:
                    rows.append(_row(chunk, qtype, chunk_ids, template, seed, error="no_partner: no other chunk in the same stratum"))
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
                rows.append(_row(chunk, qtype, chunk_ids, template, seed, error=f"llm_failed: {getattr(e, 'kind', type(e).__name__)}: {e}"))
                continue
            parsed = parse_reply(qtype, result.data or {})
            rows.append(
                _row(
                    chunk, qtype, chunk_ids, template, seed, **parsed,
                    model=result.model, latency_s=result.latency_s, input_tokens=result.input_tokens,
                    output_tokens=result.output_tokens, raw_reply=result.text,
                )
            )  # fmt: skip
    return rows


def _row(chunk: dict, qtype: str, chunk_ids: list[str], template: PromptTemplate, seed: int, **kw) -> dict:
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
        "error": None,
    }
    row.update(kw)
    return row


def colloquial_rewrite(query: str, llm, seed: int, failed_exceptions=(), max_tokens: int = 96, prompt_version: str = PROMPT_VERSION):
    """LLM rewrite of ``query`` in colloquial register. Returns (rewrite | None, prompt_hash, model, error)."""
    template = load_prompt(f"colloquial_rewrite_{prompt_version}")
    try:
        result = llm.generate(template.render(query=query), json_schema=COLLOQUIAL_SCHEMA, temperature=0.0, seed=seed, max_tokens=max_tokens)
    except failed_exceptions as e:
        return None, template.hash, None, f"llm_failed: {getattr(e, 'kind', type(e).__name__)}: {e}"
    return str((result.data or {}).get("rewrite", "")).strip(), template.hash, result.model, None
