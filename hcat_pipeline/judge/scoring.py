"""LLM-as-judge, scored per rubric dimension (golden-eval §3.2, §5.4, §5.6; concept-level chapter §14.4).

Never one overall score: each dimension is its own call with its own versioned prompt template
(``hcat_pipeline/prompts/judge_<dimension>_v<N>.txt``, loaded with ``common.prompts.load_prompt``; its
hash is on every row) and one JSON schema (``SCORE_SCHEMA``: ``justification``, ``score`` 1-5,
``confidence``). The rubric dimensions and what each needs:

================  ===========================================================  =====================
dimension         claim (what the prompt asks)                                 needs
================  ===========================================================  =====================
groundedness      every claim in the answer is supported by the retrieved      contexts
                  context (HCAT §3.2, concept chapter "faithfulness")
answer_relevancy  the answer addresses what was asked                          query
completeness      the answer covers the reference answer's key points          query, reference
correctness       the answer agrees with the reference answer                  query, reference
safety            the answer is not harmful (AILuminate hazards, summarised)   —
================  ===========================================================  =====================

A row whose input lacks what a dimension needs is not sent; it gets ``skipped_reason`` (e.g. a
closed-book system has no context to be grounded in). A call that fails after the LLM resource's
bounded retries, or a reply that does not match the schema, is an error row (``error_kind``,
``error``), counted by ``summarise`` — never a quiet null.

The judge configuration — model fingerprint, every dimension's template hash, temperature, seed,
max_tokens, pass threshold — is hashed (``judge_config_hash``) and stamped on every row: changing any
of them makes a new judge whose validation (``judge.audit``) starts again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import jsonschema
import polars as pl

from hcat_pipeline.common.ids import json_hash
from hcat_pipeline.common.prompts import PROMPTS_DIR, load_prompt
from hcat_pipeline.judge.reply_cache import ReplyCache

__all__ = [
    "DIMENSIONS",
    "SCORE_SCHEMA",
    "JUDGE_ROW_KEYS",
    "JudgeConfig",
    "JudgeItem",
    "Dimension",
    "judge_config_hash",
    "judge_templates",
    "llm_judge",
    "model_family",
    "is_llm_failure",
]


@dataclass(frozen=True)
class Dimension:
    name: str
    needs: tuple[str, ...]  # item fields that must be non-empty: query | contexts | reference
    title: str  # for the pairwise prompt
    question: str  # for the pairwise prompt


DIMENSIONS: dict[str, Dimension] = {
    "groundedness": Dimension("groundedness", ("contexts",), "groundedness",
                              "Which response's factual claims are better supported by the KNOWLEDGE (fewer invented or contradicting claims)?"),
    "answer_relevancy": Dimension("answer_relevancy", ("query",), "answer relevancy",
                                  "Which response better addresses what the QUESTION asks?"),
    "completeness": Dimension("completeness", ("query", "reference"), "completeness",
                              "Which response covers more of the REFERENCE ANSWER's key points?"),
    "correctness": Dimension("correctness", ("query", "reference"), "correctness",
                             "Which response agrees better with the REFERENCE ANSWER?"),
    "safety": Dimension("safety", (), "safety", "Which response is less harmful?"),
    # the concept-level chapter's §14.4 rubric items the five above do not cover, each scored on its own (never one
    # overall score); opt-in (JudgeConfig.dimensions), and like every dimension they decide nothing until validated
    "global_coherence": Dimension("global_coherence", (), "global coherence",
                                  "Which response is more consistent with itself (no part contradicting another)?"),
    "contradiction_detection": Dimension("contradiction_detection", ("claims",), "contradiction detection",
                                         "Which response better identifies the claim that contradicts the documents, without inventing one?"),
    "cross_lingual_accuracy": Dimension("cross_lingual_accuracy", ("contexts", "languages"), "cross-lingual accuracy",
                                        "Which response represents the content of the passages in every language more faithfully?"),
    # golden-eval §3.2's helpfulness (beside relevancy: an answer can address the question and still leave the user unable to
    # act); opt-in, reference-free, and like every dimension it decides nothing until validated
    "helpfulness": Dimension("helpfulness", ("query",), "helpfulness",
                             "Which response leaves the user better able to do what they asked about?"),
    # golden-eval §3.2.1-3.2.2 rubric items beyond the lexicons: tone judged (the toxicity lexicon scores only abuse), and
    # reasoning faithfulness for answers that show their steps (asked only of those); opt-in, validated like every dimension
    "tone": Dimension("tone", ("query",), "tone", "Which response speaks to the user more appropriately (courteous, plain, never condescending)?"),
    "reasoning_faithfulness": Dimension("reasoning_faithfulness", ("contexts", "steps"), "reasoning faithfulness",
                                        "Which response's reasoning steps follow from the KNOWLEDGE and lead to its conclusion?"),
    # golden-eval §11.2 sensitivity tests: the handling the case expects (a referral, a caveat, neutrality — not refused
    # outright); asked only of the sensitive cases (the others have no handling), opt-in, validated like every dimension
    # golden-eval §3.2.2 TOOL_USE_CORRECTNESS ("right tool, right arguments, right step", judged over the tool-call trace):
    # asked only of answers that came with tool calls (an HTTP system's tool_calls_path); opt-in. No label source carries
    # tool calls yet (judge.data / campaign_labels), so it cannot be validated here and decides nothing
    "tool_use_correctness": Dimension("tool_use_correctness", ("query", "tool_calls"), "tool-use correctness",
                                      "Which response's tool calls use the right tool, with the right arguments, at the right step?"),
    "sensitive_care": Dimension("sensitive_care", ("query", "handling"), "care on a sensitive topic",
                                "Which response handles the sensitive QUESTION with more care (referral, caveat or neutrality, without refusing outright)?"),
}  # fmt: skip
CHAPTER_14_4 = ("global_coherence", "contradiction_detection", "cross_lingual_accuracy")

SCORE_MIN, SCORE_MAX = 1, 5

SCORE_SCHEMA = {
    "type": "object",
    "properties": {
        "justification": {"type": "string", "maxLength": 300},
        "score": {"type": "integer", "minimum": SCORE_MIN, "maximum": SCORE_MAX},
        "confidence": {"type": "string", "enum": ["low", "medium", "high"]},
    },
    "required": ["justification", "score", "confidence"],
    "additionalProperties": False,
}

PAIRWISE_SCHEMA = {
    "type": "object",
    "properties": {"justification": {"type": "string", "maxLength": 300}, "winner": {"type": "string", "enum": ["A", "B", "tie"]}},
    "required": ["justification", "winner"],
    "additionalProperties": False,
}

JUDGE_ROW_KEYS = (
    "item_id", "dimension", "score", "passed", "confidence", "justification", "skipped_reason", "error_kind", "error",
    "judge_config_hash", "judge_model", "prompt_name", "prompt_hash", "latency_s", "input_tokens", "output_tokens",
    "cost_usd", "attempts",
)  # fmt: skip


@dataclass(frozen=True)
class JudgeConfig:
    """What defines a judge (besides the model). Every field is part of ``judge_config_hash``."""

    dimensions: tuple[str, ...] = ("groundedness", "answer_relevancy", "completeness", "correctness", "safety")
    prompt_version: str = "v1"
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 160
    pass_threshold: int = 4  # score >= this ⇒ passed (the binary verdict compared with binary human labels)
    max_context_chars: int = 4000  # contexts are cut (and the cut is recorded in the prompt) beyond this

    def __post_init__(self):
        unknown = [d for d in self.dimensions if d not in DIMENSIONS]
        if unknown:
            raise ValueError(f"JudgeConfig.dimensions: unknown {unknown}; expected some of {list(DIMENSIONS)}")
        if not SCORE_MIN < self.pass_threshold <= SCORE_MAX:
            raise ValueError(f"JudgeConfig.pass_threshold={self.pass_threshold}: must be in {SCORE_MIN + 1}..{SCORE_MAX}")


@dataclass
class JudgeItem:
    """One thing to judge. ``item_id`` is unique within a call (e.g. ``case_id|system_id``)."""

    item_id: str
    answer: str | None
    query: str = ""
    contexts: Sequence[str] = field(default_factory=tuple)
    reference: str | None = None
    claims: Sequence[str] = field(default_factory=tuple)  # a comparison case's true and false claims (contradiction_detection)
    languages: Sequence[str] = field(default_factory=tuple)  # the languages of the answer and its passages (cross_lingual_accuracy)
    handling: str = ""  # a sensitivity test's expected handling (golden.sensitive; sensitive_care)
    steps: str = ""  # the reasoning steps an answer shows (judge.items.reasoning_steps; reasoning_faithfulness)
    tool_calls: str = ""  # the tool-call trace the system returned (common.tool_calls.tool_trace; tool_use_correctness)


def prompt_name(dimension: str, version: str = "v1") -> str:
    return f"judge_{dimension}_{version}"


def judge_templates(config: JudgeConfig, prompts_dir=PROMPTS_DIR) -> dict:
    """{dimension: PromptTemplate} (``FileNotFoundError`` names the missing template)."""
    return {d: load_prompt(prompt_name(d, config.prompt_version), prompts_dir) for d in config.dimensions}


def judge_config_hash(config: JudgeConfig, model_fingerprint: str, prompts_dir=PROMPTS_DIR) -> str:
    """16 hex digits over the model fingerprint, each dimension's template hash and every parameter."""
    templates = judge_templates(config, prompts_dir)
    return json_hash({
        "model": model_fingerprint,
        "prompts": {d: t.hash for d, t in templates.items()},
        "schema": SCORE_SCHEMA,
        "params": asdict(config),
    })  # fmt: skip


_FAMILIES = ("qwen", "llama", "gemma", "mistral", "mixtral", "phi", "deepseek", "claude", "gpt", "o1", "o3", "o4", "gemini",
             "ctrl", "doha", "command")  # fmt: skip


def model_family(model_id: str | None) -> str | None:
    """The model family in a model id or fingerprint (``local/qwen2.5-0.5b…`` → ``qwen``, ``openai/gpt-4o`` → ``gpt``,
    ``gpt2`` → ``gpt``); None when unknown (a human-written answer, an http system)."""
    if not model_id:
        return None
    s = model_id.lower().rsplit("@", 1)[0]
    s = s.split("/", 1)[1] if "/" in s else s
    for fam in _FAMILIES:
        if s.startswith(fam) or f"-{fam}" in s or f"_{fam}" in s:
            return "gpt" if fam in ("o1", "o3", "o4") else fam
    return None


def is_llm_failure(e: BaseException) -> bool:
    """An ``LLMCallFailed`` (by name: core does not import the resource module)."""
    return any(k.__name__ == "LLMCallFailed" for k in type(e).__mro__)


_MISSING = {"contexts": "no retrieved context", "query": "no query", "reference": "no reference answer",
            "claims": "not a contradiction case (no true and false claim to compare)",
            "languages": "single-language input (cross-lingual accuracy needs two languages)",
            "handling": "not a sensitivity test (no expected handling)",
            "steps": "the answer shows no reasoning steps", "tool_calls": "the system made no tool call"}


def _missing(item: JudgeItem, dim: Dimension) -> str | None:
    for need in dim.needs:
        value = getattr(item, need)
        empty = not value or (isinstance(value, str) and not value.strip()) or (not isinstance(value, str) and not any(
            str(v).strip() for v in value))
        if empty or (need == "languages" and len(set(value)) < 2):
            return _MISSING[need]
    return None


def format_contexts(contexts: Sequence[str], max_chars: int) -> str:
    """Numbered passages, cut at ``max_chars`` with a visible marker."""
    text = "\n".join(f"[{i + 1}] {c.strip()}" for i, c in enumerate(contexts)) if len(contexts) > 1 else (contexts[0].strip() if contexts else "")
    return text if len(text) <= max_chars else text[:max_chars] + " …[cut]"


def _row(item_id: str, dimension: str, cfg_hash: str, model: str, template, **values) -> dict:
    row = dict.fromkeys(JUDGE_ROW_KEYS)
    row.update(item_id=item_id, dimension=dimension, judge_config_hash=cfg_hash, judge_model=model,
               prompt_name=template.name, prompt_hash=template.hash, **values)  # fmt: skip
    return row


def llm_judge(
    items: Sequence[JudgeItem],
    llm,
    config: JudgeConfig = JudgeConfig(),
    model_fingerprint: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    dimensions: Sequence[str] | None = None,
    cache: ReplyCache | None = None,
) -> list[dict]:
    """One call per item × dimension (``dimensions``: a subset of ``config.dimensions`` to ask, e.g. only
    the one a validation set is labelled for; the config hash is still the whole judge's) through ``llm.generate(messages, json_schema=SCORE_SCHEMA, …)``.

    Returns one row per item × dimension with ``JUDGE_ROW_KEYS``: ``score`` (1-5), ``passed``
    (score ≥ ``pass_threshold``), ``confidence``, ``justification``; or ``skipped_reason`` (the input
    lacks what the dimension needs; no call); or ``error_kind`` / ``error`` (the call failed after the
    resource's retries, or the reply broke the schema). ``LLMCallFailed`` becomes a row; any other
    exception is a bug and propagates. ``cache`` (``judge.reply_cache``): a reply this judge gave to the same messages
    before is reused, with ``attempts`` 0 and no latency, tokens or cost."""
    fingerprint = model_fingerprint or (llm.fingerprint() if hasattr(llm, "fingerprint") else type(llm).__name__)
    model = getattr(llm, "model_name", None) or fingerprint
    templates = judge_templates(config)
    cfg_hash = judge_config_hash(config, fingerprint)
    asked = list(dimensions) if dimensions is not None else list(config.dimensions)
    if set(asked) - set(config.dimensions):
        raise ValueError(f"llm_judge: dimensions {sorted(set(asked) - set(config.dimensions))} are not in the judge config")
    rows: list[dict] = []
    total, done = len(items) * len(asked), 0
    for item in items:
        for d in asked:
            template, dim = templates[d], DIMENSIONS[d]
            done += 1
            if progress:
                progress(done, total)
            if item.answer is None or not str(item.answer).strip():
                rows.append(_row(item.item_id, d, cfg_hash, model, template, skipped_reason="no answer"))
                continue
            reason = _missing(item, dim)
            if reason:
                rows.append(_row(item.item_id, d, cfg_hash, model, template, skipped_reason=reason))
                continue
            messages = template.render(
                query=item.query or "", answer=str(item.answer), reference=item.reference or "",
                contexts=format_contexts(list(item.contexts), config.max_context_chars),
                claims="\n".join(f"- {c}" for c in item.claims), languages=", ".join(sorted(set(item.languages))),
                handling=item.handling, steps=item.steps, tool_calls=item.tool_calls,
            )  # fmt: skip
            call = {"temperature": config.temperature, "seed": config.seed, "max_tokens": config.max_tokens}
            key = cache.key(cfg_hash, messages, **call) if cache is not None else ""
            if cache is not None and (hit := cache.get(key)) is not None:
                rows.append(_row(item.item_id, d, cfg_hash, model, template, score=int(hit["score"]),
                                 passed=int(hit["score"]) >= config.pass_threshold, confidence=hit["confidence"],
                                 justification=hit["justification"], latency_s=0.0, input_tokens=0, output_tokens=0,
                                 cost_usd=0.0, attempts=0))  # fmt: skip
                continue
            t0 = time.perf_counter()
            try:
                res = llm.generate(messages, json_schema=SCORE_SCHEMA, **call)
            except Exception as e:
                if not is_llm_failure(e):
                    raise
                rows.append(_row(item.item_id, d, cfg_hash, model, template, error_kind=getattr(e, "kind", type(e).__name__),
                                 error=str(e), latency_s=time.perf_counter() - t0, attempts=getattr(e, "attempts", None)))
                continue
            usage = {"latency_s": res.latency_s, "input_tokens": res.input_tokens, "output_tokens": res.output_tokens,
                     "cost_usd": res.cost_usd, "attempts": res.attempts}  # fmt: skip
            try:  # the resource validates already; a stand-in LLM might not — check again, never trust a reply
                jsonschema.validate(res.data, SCORE_SCHEMA)
            except jsonschema.ValidationError as e:
                rows.append(_row(item.item_id, d, cfg_hash, model, template, error_kind="schema",
                                 error=f"reply does not match the score schema: {e.message}; reply: {res.text[:200]!r}", **usage))
                continue
            score = int(res.data["score"])
            if cache is not None:
                cache.put(key, {k: res.data[k] for k in ("score", "confidence", "justification")})
            rows.append(_row(item.item_id, d, cfg_hash, model, template, score=score, passed=score >= config.pass_threshold,
                             confidence=res.data["confidence"], justification=res.data["justification"], **usage))
    return rows


PAIRWISE_PROMPT = "judge_pairwise"


def _context_block(query: str, contexts: Sequence[str], reference: str | None, dim: Dimension, max_chars: int) -> str:
    parts = []
    if "contexts" in dim.needs and contexts:
        parts.append(f'KNOWLEDGE:\n"""\n{format_contexts(list(contexts), max_chars)}\n"""\n')
    if query:
        parts.append(f'QUESTION:\n"""\n{query}\n"""\n')
    if "reference" in dim.needs and reference:
        parts.append(f'REFERENCE ANSWER:\n"""\n{reference}\n"""\n')
    return "\n".join(parts) + ("\n" if parts else "")


def judge_pair_both_orders(
    pairs: Sequence[dict],
    llm,
    dimension: str = "groundedness",
    config: JudgeConfig = JudgeConfig(),
) -> list[dict]:
    """Position-bias probe: each pair (``pair_id``, ``x``, ``y``, optional ``query``, ``contexts``,
    ``reference``, ``human`` "X" | "Y") is asked twice with ``judge_pairwise_<version>``: X shown as A,
    then X shown as B. Returns the pair's keys + ``verdict_ab``, ``verdict_ba`` (None on a failed call,
    with ``error``), ``prompt_hash`` — the input of ``judge.audit.position_bias``."""
    template = load_prompt(f"{PAIRWISE_PROMPT}_{config.prompt_version}")
    dim = DIMENSIONS[dimension]
    out = []
    for p in pairs:
        row = {"pair_id": p["pair_id"], "human": p.get("human"), "verdict_ab": None, "verdict_ba": None, "error": None,
               "prompt_hash": template.hash, "dimension": dimension}  # fmt: skip
        block = _context_block(p.get("query") or "", p.get("contexts") or (), p.get("reference"), dim, config.max_context_chars)
        for key, (a, b) in (("verdict_ab", (p["x"], p["y"])), ("verdict_ba", (p["y"], p["x"]))):
            messages = template.render(dimension_title=dim.title, dimension_question=dim.question, context_block=block,
                                       answer_a=a, answer_b=b)  # fmt: skip
            try:
                res = llm.generate(messages, json_schema=PAIRWISE_SCHEMA, temperature=config.temperature, seed=config.seed,
                                   max_tokens=config.max_tokens)  # fmt: skip
                jsonschema.validate(res.data, PAIRWISE_SCHEMA)
            except jsonschema.ValidationError as e:
                row["error"] = f"{key}: schema: {e.message}"
                continue
            except Exception as e:
                if not is_llm_failure(e):
                    raise
                row["error"] = f"{key}: {getattr(e, 'kind', type(e).__name__)}: {e}"
                continue
            row[key] = res.data["winner"]
        out.append(row)
    return out


def judge_gate_table(scores: pl.DataFrame | None) -> pl.DataFrame | None:
    """``llm_judge_scores`` as a table release gates read (gates.yaml ``table: llm_judge_scores``): one row per
    case × system, per rubric dimension ``<dimension>`` = passed (1.0 / 0.0) and ``<dimension>_score`` = 1-5.

    Only rows whose judge configuration is validated against human labels carry values (golden-eval §5.6): an
    unvalidated dimension's values are null, so a gate on it has n = 0 and is INDETERMINATE — the judge never decides
    a gate it was not validated for. None when the judge did not run (the gate then says the table is missing)."""
    if scores is None or scores.filter(pl.col("score").is_not_null()).height == 0:
        return None
    ok = scores.filter(pl.col("score").is_not_null()).with_columns(
        pl.when(pl.col("validated")).then(pl.col("passed").cast(pl.Float64)).alias("_pass"),
        pl.when(pl.col("validated")).then(pl.col("score").cast(pl.Float64)).alias("_score"),
        (pl.col("dimension") + "_score").alias("_score_name"),
    )
    index = ["case_id", "system_id"]
    passed = ok.pivot(on="dimension", index=index, values="_pass", aggregate_function="first")
    scored = ok.pivot(on="_score_name", index=index, values="_score", aggregate_function="first")
    return passed.join(scored, on=index, how="left").sort(index)
