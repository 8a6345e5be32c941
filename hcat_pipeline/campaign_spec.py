"""The campaign file: which systems a campaign evaluates, on how many cases, with which options.

One schema, two uses: ``CampaignSpec`` is a ``dg.Config`` — the run config of ``rag_responses``
(UI launchpad, schedule, sensors) — and the schema ``campaign.yaml`` is validated against
(``load_campaign``). There is no second field list. Modes are ``Literal[...]``, unknown keys are
refused, so a typo stops a campaign before any run starts; errors name the file, line and reason.

``campaign_sha256`` hashes the *validated* campaign (canonical JSON, defaults filled in), so the
same campaign gives the same hash whether it came from a file, with comments or without, or inline
from the launchpad. It is recorded on every row of a campaign run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Literal, Optional

import dagster as dg
import yaml
from pydantic import ConfigDict, Field, ValidationError

from hcat_pipeline.core.yaml_errors import validation_problems
from hcat_pipeline.paths import PROJECT_ROOT

DEFAULT_CAMPAIGN_FILE = Path(os.environ.get("HCAT_CAMPAIGN_FILE", PROJECT_ROOT / "campaign.yaml"))

Retriever = Literal["closed_book", "oracle", "bm25", "dense", "hybrid"]


class _Strict(dg.Config):
    model_config = ConfigDict(extra="forbid")


class HttpSystemSpec(_Strict):
    """A user's RAG service. The one field list: ``resources.http_system.HttpRagSystem`` is built from it."""

    url: str
    method: Literal["POST", "GET"] = "POST"
    request_template: str = '{"query": "{{query}}"}'
    answer_path: str = "answer"
    contexts_path: str = Field(default="", description='e.g. "contexts" (strings or objects) or "sources[*]"; empty: none')
    context_text_field: str = "text"
    context_id_field: str = "chunk_id"
    input_tokens_path: str = ""
    output_tokens_path: str = ""
    cost_path: str = ""
    auth_header: str = "Authorization"
    auth_env_var: str = Field(default="", description="env var holding the secret (never the secret itself)")
    auth_scheme: str = Field(default="Bearer", description="prefix before the secret; empty: the raw secret")
    extra_headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0)
    max_concurrency: int = Field(default=4, ge=1)
    max_retries: int = Field(default=3, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)
    max_backoff_s: float = Field(default=10.0, ge=0)


class SystemSpec(_Strict):
    """One system under test: retriever × LLM (the ``llm`` resource) × ICL × prompt, or ``http``."""

    system_id: str = Field(min_length=1)
    retriever: Retriever = "bm25"
    top_k: int = Field(default=3, ge=1, le=20)
    icl_examples: int = Field(default=0, ge=0, le=2, description="in-context examples from other cases of the golden set")
    prompt: str = Field(default="rag_v1", description="hcat_pipeline/prompts/<prompt>.txt")
    max_tokens: int = Field(default=96, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int = 0
    inject_distractors: bool = Field(default=True, description="plant a distractor case's contradicting passage in its context")
    http: Optional[HttpSystemSpec] = None


class CampaignSpec(_Strict):
    """A campaign: systems, case budget and options (the schema of campaign.yaml)."""

    name: str = "default"
    golden_set_version: str = Field(default="latest", description="'latest' = the most recently frozen version")
    max_cases: int = Field(default=0, ge=0, description="cases per system, spread over strata and categories; 0 = all")
    case_seed: int = 0
    max_failure_rate: float = Field(default=0.2, ge=0.0, le=1.0, description="a system failing more cases fails the run")
    retry_failed: bool = Field(default=True, description="re-ask checkpointed failures when a run resumes")
    provider_retries: int = Field(
        default=2, ge=0, description="a step failed only by transient provider errors (connection, timeout, 429, 5xx) is "
        "retried this many times, resuming its checkpoint (op retry with exponential backoff)"
    )
    provider_retry_delay_s: float = Field(default=30.0, ge=0.0, description="wait before the first such retry; doubled each time")
    reuse: Literal["deterministic_local", "never"] = Field(
        default="deterministic_local",
        description="deterministic_local: a local system at temperature 0 whose whole configuration (model file hash, "
        "prompt hash, parameters, retriever index hash) is unchanged reuses its earlier answer, recorded as reused; "
        "http and API systems are always asked again. never: every system is asked every night.",
    )
    include_imports: bool = Field(default=True, description="add responses imported with `hcat import-responses`")
    systems: list[SystemSpec] = Field(min_length=1)


class CampaignFileError(ValueError):
    """A campaign file that cannot be used; the message says file, line and reason."""


def campaign_sha256(spec: CampaignSpec) -> str:
    return hashlib.sha256(json.dumps(spec.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


def parse_campaign(text: str, source: str = "<campaign>") -> CampaignSpec:
    """Validate campaign YAML text; raise ``CampaignFileError`` listing every problem with its line."""
    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        raise CampaignFileError(f"{where}: not valid YAML: {getattr(e, 'problem', e)}") from e
    if not isinstance(data, dict):
        raise CampaignFileError(f"{source}:1: a campaign file is a mapping (name, systems, max_cases, …)")
    try:
        return CampaignSpec(**data)
    except ValidationError as e:
        problems = validation_problems(e, root, source)
        raise CampaignFileError("invalid campaign file:\n  " + "\n  ".join(problems)) from None
    except TypeError as e:  # e.g. a non-string key
        raise CampaignFileError(f"{source}: {e}") from None


def load_campaign(path: str | Path | None = None) -> CampaignSpec:
    path = Path(path or DEFAULT_CAMPAIGN_FILE)
    if not path.exists():
        raise CampaignFileError(f"campaign file {path} not found (set HCAT_CAMPAIGN_FILE or pass --config)")
    spec = parse_campaign(path.read_text(encoding="utf-8"), str(path))
    ids = [s.system_id for s in spec.systems]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise CampaignFileError(f"{path}: systems: duplicate system_id {dup}")
    return spec


def campaign_run_config(spec: CampaignSpec) -> dict:
    """The run config that hands ``spec`` to a campaign run (rag_responses reads it)."""
    return {"ops": {"rag_responses": {"config": {"campaign": spec.model_dump(mode="json"), "campaign_file": ""}}}}
