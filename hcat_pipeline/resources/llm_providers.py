"""LLM provider backends behind the ``LLM`` resource: local llama.cpp, OpenAI, Anthropic.

Each backend turns chat messages into (text, input_tokens, output_tokens). Structured output is
requested natively where the backend supports it (llama.cpp grammar from the JSON schema, OpenAI
``response_format``); the resource validates the result against the schema either way.
"""

from __future__ import annotations

import atexit
import inspect
import json
import os
import threading
from dataclasses import dataclass


@dataclass
class RawReply:
    text: str
    input_tokens: int
    output_tokens: int
    model: str


class ProviderError(RuntimeError):
    """A provider call failed; ``retryable`` says whether a retry may help (rate limit, 5xx, timeout)."""

    def __init__(self, message: str, retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable


_LLAMA_CACHE: dict[tuple, object] = {}
_PREFIX_STATES: dict[tuple, dict] = {}  # (model, n_ctx, n_threads) -> prefix messages (JSON) -> llama.cpp state
_LLAMA_LOCK = threading.Lock()
_MODEL_LOCKS: dict[tuple, threading.Lock] = {}
# a base (not instruct) model's GGUF has no chat template: the messages as plain text, the reply after "Answer:"
BASE_MODEL_TEMPLATE = ("{{ bos_token }}{% for m in messages %}{{ m['content'] }}\n\n{% endfor %}"
                       "{% if add_generation_prompt %}Answer: {% endif %}")


@atexit.register
def _close_llamas() -> None:
    """Free llama.cpp contexts before interpreter teardown (else Llama.__del__ prints a traceback at exit)."""
    while _LLAMA_CACHE:
        _, llm = _LLAMA_CACHE.popitem()
        try:
            llm.close()
        except Exception:
            pass


class LocalLlamaBackend:
    """llama-cpp-python on a GGUF file (default: the packaged Qwen2.5-0.5B-Instruct)."""

    def __init__(self, model_path: str, n_ctx: int, n_threads: int, model_name: str):
        self.model_path, self.n_ctx, self.n_threads, self.model_name = model_path, n_ctx, n_threads, model_name
        # one llama.cpp context is not re-entrant: calls on the same loaded model are serialised, whichever
        # backend (one per LLM resource instance) holds it
        with _LLAMA_LOCK:
            self.lock = _MODEL_LOCKS.setdefault((model_path, n_ctx, n_threads), threading.Lock())

    def _llama(self):
        key = (self.model_path, self.n_ctx, self.n_threads)
        with _LLAMA_LOCK:
            if key not in _LLAMA_CACHE:
                from llama_cpp import Llama

                _LLAMA_CACHE[key] = Llama(
                    model_path=self.model_path, n_ctx=self.n_ctx, n_threads=self.n_threads, seed=0, verbose=False
                )
            return _LLAMA_CACHE[key]

    reuse_prefix: bool = False  # see _load_prefix

    def complete(self, messages, json_schema, temperature, seed, max_tokens) -> RawReply:
        llm = self._llama()
        kwargs = dict(messages=messages, temperature=temperature, max_tokens=max_tokens, seed=seed)
        if json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        with self.lock:
            try:
                # never llama.cpp's implicit KV prefix reuse: it makes the logits (and so a greedy reply) depend on
                # which prompt came before, which would break determinism. An explicit, fixed prefix is fine.
                llm.reset()
                if self.reuse_prefix:
                    self._load_prefix(llm, messages)
                llm.set_seed(seed)
                out = llm.create_chat_completion(**kwargs)
            except ValueError as e:  # e.g. prompt longer than the context window: retrying won't help
                raise ProviderError(f"llama.cpp rejected the request: {e}", retryable=False) from e
        usage = out.get("usage") or {}
        return RawReply(
            text=out["choices"][0]["message"].get("content") or "",
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            model=self.model_name,
        )


    def _formatter_for(self, llm, generation_prompt: bool):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        key = "_fmt_gen" if generation_prompt else "_fmt_prefix"
        if getattr(self, key, None) is None:
            template = llm.metadata.get("tokenizer.chat_template") or BASE_MODEL_TEMPLATE  # a base model: plain text
            eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", "replace")
            bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", "replace") if llm.token_bos() >= 0 else ""
            setattr(self, key, Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos, add_generation_prompt=generation_prompt))
        return getattr(self, key)

    def _load_prefix(self, llm, messages) -> None:
        """Start from the saved KV state of every message but the last (a template's system prompt and few-shot
        examples), evaluated once, alone, from scratch. The split is a function of the prompt only (always at the
        last message), so a reply does not depend on what was asked before: deterministic, and a few-shot prompt
        costs only its last message (3-4x faster for the generator's templates). No prefix (a one-message
        prompt, or a template whose tokens do not split there): evaluated from scratch as usual."""
        if len(messages) < 2:
            return
        states = _PREFIX_STATES.setdefault((self.model_path, self.n_ctx, self.n_threads), {})
        key = json.dumps(messages[:-1], sort_keys=True)
        if key not in states:
            prefix = self._formatter_for(llm, False)(messages=messages[:-1])
            whole = self._formatter_for(llm, True)(messages=messages)
            p_tok = llm.tokenize(prefix.prompt.encode("utf-8"), add_bos=not prefix.added_special, special=True)
            w_tok = llm.tokenize(whole.prompt.encode("utf-8"), add_bos=not whole.added_special, special=True)
            if len(p_tok) < 32 or w_tok[: len(p_tok)] != p_tok or len(w_tok) <= len(p_tok) + 1:
                states[key] = None
            else:
                llm.eval(p_tok)
                states[key] = llm.save_state()
                llm.reset()
            if len(states) > 64:  # a bounded cache: the oldest prefix goes first
                states.pop(next(iter(states)))
        if states.get(key) is not None:
            llm.load_state(states[key])

    def option_logprobs(self, messages, options) -> list[dict]:
        """Log-likelihood of each option as the assistant's reply to ``messages`` (chat template of the GGUF).

        Per option: ``logprob`` (sum over its tokens), ``n_tokens``, ``n_chars``. The prompt is evaluated
        once from scratch (reset, as ``complete``); each option is scored token by token from the prompt's
        KV state, reading the last-token logits through the public ``llama_get_logits`` binding."""
        import llama_cpp
        import numpy as np

        llm = self._llama()
        prompt = self._formatter_for(llm, True)(messages=messages).prompt
        n_vocab = llm.n_vocab()

        def last_logprobs() -> np.ndarray:
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(n_vocab,)).astype(np.float64)
            m = logits.max()
            return logits - (m + np.log(np.exp(logits - m).sum()))

        with self.lock:
            llm.reset()
            tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            if len(tokens) + 64 > self.n_ctx:
                raise ProviderError(f"prompt of {len(tokens)} tokens does not fit n_ctx={self.n_ctx}", retryable=False)
            llm.eval(tokens)
            base, first = llm.n_tokens, last_logprobs()
            out = []
            for option in options:
                toks = llm.tokenize(str(option).encode("utf-8"), add_bos=False, special=False)
                if not toks:
                    out.append({"logprob": float("-inf"), "n_tokens": 0, "n_chars": 0})
                    continue
                llm.n_tokens = base  # the next eval drops the KV cache after the prompt
                total = float(first[toks[0]])
                for prev, tok in zip(toks, toks[1:]):
                    llm.eval([prev])
                    total += float(last_logprobs()[tok])
                out.append({"logprob": total, "n_tokens": len(toks), "n_chars": len(str(option))})
            llm.reset()
        return out


class OpenAIBackend:
    """Official OpenAI SDK; any OpenAI-compatible server via ``base_url`` (llama.cpp's server included)."""

    def __init__(self, model: str, api_key_env: str, base_url: str | None, timeout: float, json_mode: str):
        import openai

        key = os.environ.get(api_key_env) or ("sk-local" if base_url else None)
        if not key:
            raise ProviderError(f"OpenAI provider needs an API key in ${api_key_env}", retryable=False)
        self.openai = openai
        self.client = openai.OpenAI(api_key=key, base_url=base_url or None, timeout=timeout, max_retries=0)
        self.model, self.json_mode = model, json_mode

    def complete(self, messages, json_schema, temperature, seed, max_tokens) -> RawReply:
        kwargs = dict(model=self.model, messages=messages, temperature=temperature, seed=seed, max_tokens=max_tokens)
        if json_schema is not None:
            if self.json_mode == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": json_schema},
                }
            else:
                kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        try:
            out = self.client.chat.completions.create(**kwargs)
        except (self.openai.RateLimitError, self.openai.APITimeoutError, self.openai.APIConnectionError) as e:
            raise ProviderError(f"openai: {type(e).__name__}: {e}") from e
        except self.openai.APIStatusError as e:
            raise ProviderError(f"openai: HTTP {e.status_code}: {e.message}", retryable=e.status_code >= 500) from e
        usage = out.usage
        return RawReply(
            text=out.choices[0].message.content or "",
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            model=out.model or self.model,
        )


class AnthropicBackend:
    """Official Anthropic SDK; JSON output is asked for in the system prompt and validated."""

    def __init__(self, model: str, api_key_env: str, base_url: str | None, timeout: float):
        import anthropic

        key = os.environ.get(api_key_env)
        if not key:
            raise ProviderError(f"Anthropic provider needs an API key in ${api_key_env}", retryable=False)
        self.anthropic = anthropic
        self.client = anthropic.Anthropic(api_key=key, base_url=base_url or None, timeout=timeout, max_retries=0)
        self.model = model

    def complete(self, messages, json_schema, temperature, seed, max_tokens) -> RawReply:
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        chat = [m for m in messages if m["role"] != "system"]
        if json_schema is not None:
            system += "\nReply with one JSON object only, matching this JSON schema:\n" + json.dumps(json_schema)
        kwargs = dict(model=self.model, messages=chat, max_tokens=max_tokens)
        if system.strip():
            kwargs["system"] = system.strip()
        # newer SDKs dropped the temperature keyword; the API still takes it in the body
        if "temperature" in inspect.signature(self.client.messages.create).parameters:
            kwargs["temperature"] = temperature
        else:
            kwargs["extra_body"] = {"temperature": temperature}
        try:
            out = self.client.messages.create(**kwargs)
        except (self.anthropic.RateLimitError, self.anthropic.APITimeoutError, self.anthropic.APIConnectionError) as e:
            raise ProviderError(f"anthropic: {type(e).__name__}: {e}") from e
        except self.anthropic.APIStatusError as e:
            raise ProviderError(f"anthropic: HTTP {e.status_code}: {e.message}", retryable=e.status_code >= 500) from e
        text = "".join(getattr(b, "text", "") for b in out.content)
        return RawReply(text=text, input_tokens=out.usage.input_tokens, output_tokens=out.usage.output_tokens, model=out.model)
