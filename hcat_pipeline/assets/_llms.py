"""The LLMs a campaign file names, built from the ``llm`` resource (``LLM.for_model``) for the assets that ask them."""

from __future__ import annotations

import dagster as dg

from hcat_pipeline.campaign_spec import CampaignSpec, LLMSpec
from hcat_pipeline.models import GENERATOR_MODEL, ModelNotAvailable
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.responses.campaign_run import LLMInfo


def named_llm(llm: LLM, spec: LLMSpec | None, who: str) -> LLM:
    """The LLM ``spec`` names (None: the resource), its model file checked now: a missing or unknown model stops
    the step naming ``who`` instead of failing every call."""
    try:
        chosen = llm.for_model(spec.overrides() if spec else None)
        chosen.fingerprint()
        return chosen
    except (OSError, RuntimeError, ValueError) as e:  # ModelNotAvailable / FileNotFoundError / a bad provider
        raise dg.Failure(f"{who}: its LLM cannot be used: {e}") from None


DEFAULT_GENERATOR = LLMSpec(model=GENERATOR_MODEL, reuse_prompt_prefix=True)


def generator_llm(llm: LLM, spec: LLMSpec | None, who: str, log=None) -> LLM:
    """The golden-set generator: ``spec`` (the campaign's ``generation.llm``), else the packaged Qwen2.5-Coder-1.5B-Instruct
    (``DEFAULT_GENERATOR``, its few-shot prefixes evaluated once), else — when its packages are not installed — the
    ``llm`` resource, said in the log."""
    if spec is not None:
        return named_llm(llm, spec, who)
    try:
        chosen = llm.for_model(DEFAULT_GENERATOR.overrides())
        chosen.fingerprint()
        return chosen
    except ModelNotAvailable as e:
        if log is not None:
            log.warning(f"{who}: the default generator is not available ({e}); generating with the llm resource instead")
        return named_llm(llm, None, who)


def system_llms(spec: CampaignSpec, llm: LLM) -> dict[str, LLMInfo]:
    """Each retrieval-augmented system's LLM (its own ``llm``, else the campaign's, else the resource), checked before
    any system is asked: a model file that is missing or not packaged stops the run naming the system."""
    out = {}
    for s in spec.systems:
        if s.http is not None:
            continue
        chosen = named_llm(llm, s.llm or spec.llm, f"system {s.system_id!r}")
        out[s.system_id] = LLMInfo(chosen, chosen.llm_id, chosen.fingerprint(), chosen.is_deterministic, chosen.max_concurrency)
    return out
