"""The campaign file's systems: the LLMs it names, a user's http service, a system under test, and configuration
sweeps (golden-eval §4.3 ablations: systems built as the product of retriever × prompt × LLM × ICL × top_k).

``sweep_systems`` turns each sweep into systems with ids naming what varies (``<name>-bm25-icl2``), refused when a
sweep would build more than its ``max_systems``; a built id another system has is that system (not built twice).
No asset import.
"""

from __future__ import annotations

from itertools import product
from typing import Literal, Optional, get_args

import dagster as dg
from pydantic import ConfigDict, Field, field_validator

from hcat_pipeline.configs import config_from
from hcat_pipeline.corpus.chunking import Chunking
from hcat_pipeline.responses.rag import SystemConfig
from hcat_pipeline.responses.retrieval import RetrieverName

RETRIEVERS = get_args(RetrieverName)


class Strict(dg.Config):
    """A campaign-file section: unknown keys are refused (a typo is an error with its line, never a silent default)."""

    model_config = ConfigDict(extra="forbid")


# a chunking of the corpus for the exam's comparison: the core's Chunking fields (one field list, one set of defaults)
ChunkingSpec = config_from(Chunking, "ChunkingSpec", base=Strict)


class HttpSystemSpec(Strict):
    """A user's RAG service. The one field list: ``resources.http_system.HttpRagSystem`` is built from it."""

    url: str
    method: Literal["POST", "GET"] = "POST"
    request_template: str = '{"query": "{{query}}"}'
    answer_path: str = "answer"
    contexts_path: str = Field(default="", description='e.g. "contexts" (strings or objects) or "sources[*]"; empty: none')
    tool_calls_path: str = Field(default="", description='e.g. "tool_calls": the tool calls the service made, a list of objects '
                                 '({name, arguments, result}), judged by tool_use_correctness; empty: none')
    context_text_field: str = "text"
    context_id_field: str = "chunk_id"
    input_tokens_path: str = ""
    output_tokens_path: str = ""
    cost_path: str = ""
    cost_per_call_usd: Optional[float] = Field(default=None, ge=0, description="USD per call when the reply carries no cost "
                                               "(cost_path); absent: the cost is unknown — never counted as $0")  # fmt: skip
    auth_header: str = "Authorization"
    auth_env_var: str = Field(default="", description="env var holding the secret (never the secret itself)")
    auth_scheme: str = Field(default="Bearer", description="prefix before the secret; empty: the raw secret")
    extra_headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0)
    max_concurrency: int = Field(default=4, ge=1)
    max_retries: int = Field(default=3, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)
    max_backoff_s: float = Field(default=10.0, ge=0)
    rate_limit_rps: Optional[float] = Field(default=None, gt=0, description="at most this many requests per second to the "
                                            "service, retries included, shared by every caller; empty: no limit")  # fmt: skip


class LLMSpec(Strict):
    """An LLM a campaign names — a system's, the generator's or the judge's (``LLM.for_model`` builds it).

    Its identity only: the sampling parameters (temperature, max_tokens, seed) are the system's own fields.
    Absent: the ``llm`` resource of the deployment (local: the packaged Qwen2.5-0.5B-Instruct)."""

    provider: Literal["local", "openai", "anthropic"] = "local"
    model: str = Field(default="", description="local: a packaged model (qwen2.5-0.5b-instruct-q4_k_m | qwen2.5-coder-1.5b-instruct-q4_k_m | "
                       "gemma-3-270m-q4_k_m); "
                       "API: the provider's model name; empty: the provider's default")  # fmt: skip
    model_path: str = Field(default="", description="local: any GGUF file (relative to the campaign file)")
    base_url: str = Field(default="", description="openai: any OpenAI-compatible server (e.g. http://127.0.0.1:8081/v1)")
    api_key_env: str = Field(default="", description="env var holding the API key (never the key); empty: OPENAI_API_KEY / ANTHROPIC_API_KEY")
    openai_json_mode: Literal["json_schema", "json_object"] = "json_schema"
    max_concurrency: Optional[int] = Field(default=None, ge=1, description="parallel calls to this LLM; empty: the resource's")
    timeout_s: Optional[float] = Field(default=None, gt=0)
    reuse_prompt_prefix: Optional[bool] = Field(default=None, description="local: evaluate a prompt's leading messages (system "
                                                "prompt, few-shot examples) once and start each call from their saved state")

    def overrides(self) -> dict:
        """The fields ``LLM.for_model`` takes: every identity field, and the runtime ones only when set."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


SystemSpec = config_from(
    SystemConfig, "SystemSpec", base=Strict, exclude=("extra",),
    llm=(Optional[LLMSpec], Field(default=None, description="this system's LLM; absent: the campaign's default LLM")),
    http=(Optional[HttpSystemSpec], Field(default=None, description="a user's own RAG service instead of retriever × LLM")),
)
SystemSpec.__doc__ = """One system under test: retriever × LLM × ICL × prompt, or ``http`` (a user's own service). Its fields are
``responses.rag.SystemConfig``'s (one field list, one set of defaults), plus ``llm`` and ``http``."""


class SweepSpec(Strict):
    """A configuration sweep (golden-eval §4.3): one system per combination of the listed values; a field left out takes
    ``SystemConfig``'s default. Every system of the product answers the same cases, so the paired comparisons and
    rankings read it as an ablation."""

    name: str = Field(default="sweep", min_length=1, description="prefix of the built system ids")
    retriever: list[str] = Field(default_factory=lambda: [SystemConfig.retriever], min_length=1, description=f"of {list(RETRIEVERS)}")
    prompt: list[str] = Field(default_factory=lambda: [SystemConfig.prompt], min_length=1)
    icl_examples: list[int] = Field(default_factory=lambda: [SystemConfig.icl_examples], min_length=1)
    top_k: list[int] = Field(default_factory=lambda: [SystemConfig.top_k], min_length=1)
    llm: list[LLMSpec] = Field(default_factory=list, description="the LLMs swept; empty: the campaign's default LLM")
    max_systems: int = Field(default=16, ge=1, description="a sweep building more systems than this is refused (each one answers every case)")

    # Dagster config has no list of Literal: the retrievers are checked here
    @field_validator("retriever")
    @classmethod
    def _retrievers(cls, v: list[str]) -> list[str]:
        if bad := [r for r in v if r not in RETRIEVERS]:
            raise ValueError(f"unknown retriever(s) {bad}; expected some of {list(RETRIEVERS)}")
        return list(dict.fromkeys(v))


def _llm_label(spec: LLMSpec | None) -> str:
    if spec is None:
        return "default"
    name = spec.model or (spec.model_path.rsplit("/", 1)[-1].removesuffix(".gguf") if spec.model_path else spec.provider)
    return "".join(ch if ch.isalnum() or ch in "._" else "_" for ch in name)


def sweep_systems(sweeps: list[SweepSpec], existing_ids: list[str | None]) -> list[dict]:
    """Every sweep's product as system entries of the campaign file; an id already in ``existing_ids`` — the campaign
    re-read from its own dump — is not built again."""
    out, ids = [], set(existing_ids)
    for sw in sweeps:
        llms = sw.llm or [None]
        axes = {"retriever": sw.retriever, "prompt": sw.prompt, "icl": sw.icl_examples, "k": sw.top_k, "llm": llms}
        n = len(sw.retriever) * len(sw.prompt) * len(sw.icl_examples) * len(sw.top_k) * len(llms)
        if n > sw.max_systems:
            raise ValueError(f"sweep {sw.name!r} builds {n} systems > max_systems {sw.max_systems}")
        varying = [k for k, v in axes.items() if len(v) > 1]
        for retriever, prompt, icl, k, llm in product(*axes.values()):
            label = {"retriever": retriever, "prompt": prompt, "icl": f"icl{icl}", "k": f"k{k}", "llm": _llm_label(llm)}
            sid = "-".join([sw.name, *(label[a] for a in varying)])
            if sid in ids:
                continue
            ids.add(sid)
            out.append({"system_id": sid, "retriever": retriever, "prompt": prompt, "icl_examples": icl, "top_k": k,
                        **({"llm": llm.model_dump()} if llm is not None else {})})  # fmt: skip
    return out
