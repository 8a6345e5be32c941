"""LLM: one interface over local llama.cpp (default), OpenAI and Anthropic.

``generate(prompt_or_messages, json_schema=None, temperature=0.0, seed=0)`` returns an
``LLMResult`` with the text, the parsed + schema-validated JSON (when a schema is given), latency,
input/output tokens and cost (from a configurable price table). Invalid JSON or schema violations
are retried a bounded number of times with the validation error fed back; transient provider
errors (rate limit, 5xx, timeout) are retried with exponential backoff. After the retries an
``LLMCallFailed`` is raised; assets catch it per row, count it and report it.

The resource is also a factory: ``for_model(spec)`` is the LLM a campaign file names for a system, the
generator or the judge (``campaign_spec.LLMSpec``): one instance per distinct model configuration, and
one loaded llama.cpp model per distinct GGUF whichever instance asks for it.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import dagster as dg
import jsonschema
from pydantic import Field, PrivateAttr

from hcat_pipeline.resources.llm_providers import (
    AnthropicBackend,
    LocalLlamaBackend,
    OpenAIBackend,
    ProviderError,
)

# USD per 1M tokens (input, output); local models cost nothing. Override in config.
DEFAULT_PRICES: dict[str, list[float]] = {
    "local": [0.0, 0.0],
    "gpt-4o-mini": [0.15, 0.60],
    "gpt-4o": [2.50, 10.00],
    "gpt-4.1-mini": [0.40, 1.60],
    "claude-3-5-haiku-latest": [0.80, 4.00],
    "claude-sonnet-4-5": [3.00, 15.00],
}


DEFAULT_MODELS = {"local": "qwen2.5-0.5b-instruct-q4_k_m", "openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}
# what names a model (``for_model`` takes these from a spec alone, never from the resource it derives from)
IDENTITY_FIELDS = ("provider", "model", "model_path", "base_url", "api_key_env", "openai_json_mode")


@dataclass
class LLMResult:
    text: str
    data: dict | list | None
    provider: str
    model: str
    latency_s: float
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None: the model is not in the price table (unknown, not free)
    attempts: int

    def as_record(self) -> dict:
        d = asdict(self)
        d.pop("data")
        return d


TRANSIENT_MARK = "transient"  # in an LLMCallFailed message: rate limit / 5xx / timeout / connection — a later retry may help


class LLMCallFailed(RuntimeError):
    """The call did not give a valid reply after the bounded retries."""

    def __init__(self, kind: str, message: str, attempts: int, last_text: str = ""):
        super().__init__(f"{kind} after {attempts} attempt(s): {message}")
        self.kind, self.attempts, self.last_text = kind, attempts, last_text


def extract_json(text: str):
    """Parse the JSON object in a reply, tolerating code fences and prose around it."""
    s = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", s, re.S)
    if fence:
        s = fence.group(1).strip()
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        pass
    start = min((i for i in (s.find("{"), s.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError("no JSON object in the reply")
    obj, _ = json.JSONDecoder().raw_decode(s[start:])
    return obj


class LLM(dg.ConfigurableResource):
    """A chat LLM. provider: ``local`` (llama.cpp GGUF) | ``openai`` | ``anthropic``."""

    provider: str = "local"
    model: str = ""  # empty: provider default (local: the packaged Qwen2.5-0.5B-Instruct)
    model_path: str = ""  # local: any GGUF; empty = packaged
    n_ctx: int = 4096
    n_threads: int = 2
    reuse_prompt_prefix: bool = False  # local: evaluate a prompt's leading messages once and reuse their state (deterministic)
    base_url: str = ""  # openai / anthropic: empty = the official endpoint; env HCAT_LLM_BASE_URL
    api_key_env: str = ""  # empty: OPENAI_API_KEY / ANTHROPIC_API_KEY
    openai_json_mode: str = "json_schema"  # or "json_object" (llama.cpp server style)
    timeout_s: float = 120.0
    max_tokens: int = 512
    json_retries: int = 2
    transient_retries: int = 4
    backoff_s: float = 1.0
    max_concurrency: int = 1
    prices: dict[str, list[float]] = Field(default_factory=lambda: dict(DEFAULT_PRICES))

    _backend: object = PrivateAttr(default=None)
    _limiter: threading.Semaphore | None = PrivateAttr(default=None)
    _variants: dict = PrivateAttr(default_factory=dict)

    @property
    def model_name(self) -> str:
        if self.model:
            return self.model
        if self.provider == "local" and self.model_path:
            return Path(self.model_path).stem
        return DEFAULT_MODELS[self.provider]

    @property
    def llm_id(self) -> str:
        """provider/model: how responses, costs and the exam's θ_llm name this LLM."""
        return f"{self.provider}/{self.model_name}"

    def gguf_path(self) -> Path:
        """The local model file: ``model_path``, else the packaged GGUF of ``model`` (default Qwen2.5-0.5B)."""
        from hcat_pipeline.models import packaged_gguf

        return Path(self.model_path).expanduser() if self.model_path else packaged_gguf(self.model_name)

    def fingerprint(self) -> str:
        """What identifies this model's answers: the model file's SHA-256 (local) or provider/model at its server (API)."""
        if self.provider == "local":
            from hcat_pipeline.models import file_sha256

            return f"local/{self.model_name}@sha256:{file_sha256(self.gguf_path())[:16]}"
        return f"{self.provider}/{self.model_name}" + (f"@{self.base_url}" if self.base_url else "")

    def for_model(self, spec: dict | None) -> LLM:
        """The LLM ``spec`` names (the fields of ``campaign_spec.LLMSpec``; None or empty: this resource).

        The spec is the model's identity — provider, model, model_path, base_url, api_key_env, json mode — so
        those fields are taken from it alone (a system on ``openai`` does not inherit the local model's path);
        timeouts, retries, prices, threads and context size come from this resource unless the spec sets them.
        One instance per distinct spec, so its concurrency limiter is shared by every system naming it."""
        given = {k: v for k, v in (spec or {}).items() if v is not None}
        if not given:
            return self
        key = json.dumps(given, sort_keys=True)
        if key not in self._variants:
            runtime = {k: getattr(self, k) for k in type(self).model_fields if k not in IDENTITY_FIELDS}
            variant = type(self)(**{**runtime, **given})
            self._variants[key] = self if variant.model_dump() == self.model_dump() else variant
        return self._variants[key]

    def is_deterministic(self, temperature: float) -> bool:
        """Same prompt ⇒ same answer: only the local llama.cpp model at temperature 0 (each prompt evaluated
        from scratch, tested); a hosted API may change behind the same model name, so it never is."""
        return self.provider == "local" and temperature == 0.0

    def _get_backend(self):
        if self._backend is None:
            import os

            base_url = self.base_url or os.environ.get("HCAT_LLM_BASE_URL", "")
            if self.provider == "local":
                self._backend = LocalLlamaBackend(str(self.gguf_path()), self.n_ctx, self.n_threads, self.model_name)
                self._backend.reuse_prefix = self.reuse_prompt_prefix
            elif self.provider == "openai":
                self._backend = OpenAIBackend(
                    self.model_name, self.api_key_env or "OPENAI_API_KEY", base_url, self.timeout_s, self.openai_json_mode
                )
            elif self.provider == "anthropic":
                self._backend = AnthropicBackend(self.model_name, self.api_key_env or "ANTHROPIC_API_KEY", base_url, self.timeout_s)
            else:
                raise ValueError(f"unknown LLM provider {self.provider!r} (local | openai | anthropic)")
            self._limiter = threading.Semaphore(max(1, self.max_concurrency))
        return self._backend

    @property
    def supports_logprobs(self) -> bool:
        """Whether ``option_logprobs`` works: the local llama.cpp model (API chat endpoints do not score given text)."""
        return self.provider == "local"

    def option_logprobs(self, prompt: str | list[dict], options: list[str], system: str | None = None) -> list[dict]:
        """Log-likelihood of each option as the reply to ``prompt`` (local only): dicts with logprob, n_tokens, n_chars.

        Deterministic (every prompt evaluated from scratch). Raises ``LLMCallFailed`` (kind ``unsupported`` for an
        API provider, ``provider`` when llama.cpp rejects the prompt)."""
        if not self.supports_logprobs:
            raise LLMCallFailed("unsupported", f"provider {self.provider!r} gives no option log-likelihoods; ask for a letter", 0)
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
        if system:
            messages.insert(0, {"role": "system", "content": system})
        try:
            backend = self._get_backend()
            with self._limiter:
                return backend.option_logprobs(messages, options)
        except ProviderError as e:
            raise LLMCallFailed("provider", str(e), 1) from e

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """USD of one call from the price table; None (unknown, never $0) for a model the table does not list."""
        key = "local" if self.provider == "local" else self.model_name
        price = self.prices.get(key) or self.prices.get(self.model_name)
        return None if price is None else (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000

    def generate(
        self,
        prompt: str | list[dict],
        json_schema: dict | None = None,
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int | None = None,
        system: str | None = None,
    ) -> LLMResult:
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
        if system:
            messages.insert(0, {"role": "system", "content": system})
        try:
            backend = self._get_backend()
        except ProviderError as e:
            raise LLMCallFailed("provider", str(e), 0) from e
        t0 = time.perf_counter()
        tin = tout = 0
        attempts = 0
        transient_left = self.transient_retries
        json_left = self.json_retries
        last_text, last_err = "", ""
        while True:
            attempts += 1
            try:
                with self._limiter:
                    raw = backend.complete(messages, json_schema, temperature, seed, max_tokens or self.max_tokens)
            except ProviderError as e:
                last_err = str(e)
                if e.retryable and transient_left > 0:
                    time.sleep(self.backoff_s * 2 ** (self.transient_retries - transient_left))
                    transient_left -= 1
                    continue
                transient = f" [{TRANSIENT_MARK}: retries exhausted]" if e.retryable else ""
                raise LLMCallFailed("provider", last_err + transient, attempts) from e
            tin += raw.input_tokens
            tout += raw.output_tokens
            last_text = raw.text
            data = None
            if json_schema is not None:
                try:
                    data = extract_json(raw.text)
                    jsonschema.validate(data, json_schema)
                except (ValueError, jsonschema.ValidationError) as e:
                    last_err = e.message if isinstance(e, jsonschema.ValidationError) else str(e)
                    if json_left > 0:
                        json_left -= 1
                        messages = messages + [
                            {"role": "assistant", "content": raw.text},
                            {"role": "user", "content": f"That reply is invalid ({last_err}). Reply again with JSON only, matching the schema."},
                        ]
                        continue
                    kind = "schema" if isinstance(e, jsonschema.ValidationError) else "invalid_json"
                    raise LLMCallFailed(kind, last_err, attempts, last_text) from None
            return LLMResult(
                text=raw.text,
                data=data,
                provider=self.provider,
                model=raw.model,
                latency_s=time.perf_counter() - t0,
                input_tokens=tin,
                output_tokens=tout,
                cost_usd=self.cost(tin, tout),
                attempts=attempts,
            )


_TRANSIENT_HTTP = re.compile(r"^(http_(429|5\d\d)|http_timeout|http_connect|timeout|connection)", re.I)


def is_transient_error(error: str) -> bool:
    """Whether a response's stored ``error`` is a provider hiccup a later retry may fix: an LLM call that ran
    out of retries on a rate limit / 5xx / timeout / connection error, or such an HTTP-system failure."""
    return f"[{TRANSIENT_MARK}:" in error or bool(_TRANSIENT_HTTP.match(error))
