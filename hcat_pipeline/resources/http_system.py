"""HttpRagSystem: a user's own RAG service as a system under test, over HTTP.

Configurable URL, JSON request template (``{{query}}``, ``{{case_id}}``, ``{{options}}``, ``{{history}}`` — a multi-turn
case's earlier turns — and ``{{messages}}`` — those turns plus the query as the last user message — slots,
filled without breaking JSON escaping), JSON paths for the answer and the returned contexts, an
auth header whose secret is read from an environment variable (never stored in config), a timeout,
a concurrency limit (a semaphore shared by every caller of this resource), an optional rate limit
(``rate_limit_rps``: requests evenly spaced, retries included, shared by every caller) and retries with
exponential backoff and jitter (each wait drawn between half and all of ``backoff_s · 2^(n−1)``, capped, so
callers that failed together do not retry together) on 429 / 5xx / timeouts / connection errors
(``Retry-After`` honoured as given, capped). How fast the service is asked is not part of the system's
identity: ``rate_limit_rps`` stays out of ``config_hash``.
A call that still fails becomes an ``error`` value on the response record; nothing is raised.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import dagster as dg
import httpx
from pydantic import PrivateAttr, create_model

from hcat_pipeline.campaign_systems import HttpSystemSpec
from hcat_pipeline.common.jsonpath import get_path
from hcat_pipeline.common.tool_calls import tool_calls_json
from hcat_pipeline.responses.rag import config_hash

RETRYABLE_STATUS = {408, 425, 429, 500, 502, 503, 504}
NOT_IDENTITY = ("rate_limit_rps",)  # pacing, not what the system answers: responses stored under the same hash stay valid
# fields added after responses were stored: at their empty default they leave the hash as it was
IDENTITY_WHEN_SET = ("tool_calls_path",)


class RateLimiter:
    """At most ``rps`` acquisitions per second, evenly spaced, across threads (each caller sleeps until its slot)."""

    def __init__(self, rps: float):
        self.interval, self._next, self._lock = 1.0 / rps, 0.0, threading.Lock()

    def acquire(self) -> float:
        """Wait for the next slot; returns the seconds waited."""
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next)
            self._next = slot + self.interval
        wait = slot - now
        if wait > 0:
            time.sleep(wait)
        return wait


class HttpCallFailed(RuntimeError):
    def __init__(self, kind: str, message: str, attempts: int):
        super().__init__(f"{message} (after {attempts} attempt(s))")
        self.kind, self.attempts = kind, attempts


def fill_template(template, values: dict):
    """Fill ``{{slot}}`` in every string of a parsed JSON template; a string that is exactly one slot
    takes the value as is (so ``"{{options}}"`` becomes a JSON list)."""
    if isinstance(template, dict):
        return {k: fill_template(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_template(v, values) for v in template]
    if isinstance(template, str):
        s = template.strip()
        if s.startswith("{{") and s.endswith("}}") and s[2:-2].strip() in values and s.count("{{") == 1:
            return values[s[2:-2].strip()]
        out = template
        for k, v in values.items():
            out = out.replace("{{" + k + "}}", v if isinstance(v, str) else json.dumps(v))
        return out
    return template


# the resource's fields are the campaign file's http system fields (one field list) + its system id
_HttpFields = create_model(
    "_HttpFields",
    __base__=dg.ConfigurableResource,
    system_id=(str, "http_service"),
    **{name: (f.annotation, f) for name, f in HttpSystemSpec.model_fields.items()},
)


class HttpRagSystem(_HttpFields):
    """A RAG service reached over HTTP; ``respond(case)`` gives a rag_responses record."""

    _client: httpx.Client | None = PrivateAttr(default=None)
    _sem: threading.Semaphore | None = PrivateAttr(default=None)
    _init_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _in_flight: int = PrivateAttr(default=0)
    _max_in_flight: int = PrivateAttr(default=0)
    _limiter: RateLimiter | None = PrivateAttr(default=None)
    _rng: random.Random = PrivateAttr(default_factory=random.Random)  # backoff jitter only: timing, never content

    # ---- identity
    @property
    def config_hash(self) -> str:
        cfg = self.model_dump() if hasattr(self, "model_dump") else dict(self.__dict__)
        cfg = {k: v for k, v in cfg.items() if not k.startswith("_") and k not in NOT_IDENTITY and (v or k not in IDENTITY_WHEN_SET)}
        return config_hash({"kind": "http", **cfg})

    @property
    def max_in_flight(self) -> int:
        """Most requests seen in flight at once (to check the concurrency limit)."""
        return self._max_in_flight

    # ---- plumbing
    def _setup(self) -> tuple[httpx.Client, threading.Semaphore]:
        with self._init_lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self.timeout_s)
                self._sem = threading.Semaphore(max(1, self.max_concurrency))
                self._limiter = RateLimiter(self.rate_limit_rps) if self.rate_limit_rps else None
        return self._client, self._sem

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", **self.extra_headers}
        if self.auth_env_var:
            secret = os.environ.get(self.auth_env_var)
            if not secret:
                raise HttpCallFailed("auth", f"environment variable {self.auth_env_var} is not set", 0)
            h[self.auth_header] = f"{self.auth_scheme} {secret}".strip() if self.auth_scheme else secret
        return h

    def request_body(self, case: dict):
        template = json.loads(self.request_template)
        history = [{"role": t["role"], "content": t["content"]} for t in case.get("history") or []]
        values = {"query": case["query"], "case_id": case["case_id"], "options": list(case.get("options") or []),
                  "history": history, "messages": [*history, {"role": "user", "content": case["query"]}]}
        return fill_template(template, values)

    def retry_delay(self, attempt: int, response: httpx.Response | None) -> float:
        """Seconds to wait before attempt ``attempt`` + 1: ``Retry-After`` when the reply gives one, else the jittered backoff."""
        if response is not None and (ra := response.headers.get("Retry-After")):
            try:
                return min(float(ra), self.max_backoff_s)
            except ValueError:
                pass
        ceiling = min(self.backoff_s * 2 ** (attempt - 1), self.max_backoff_s)
        return ceiling * (0.5 + 0.5 * self._rng.random())  # "equal jitter": at least half the exponential wait

    def call(self, case: dict) -> tuple[dict, int]:
        """POST one case; returns (parsed JSON reply, attempts) or raises HttpCallFailed."""
        client, sem = self._setup()
        body, headers = self.request_body(case), self._headers()
        attempts = 0
        while True:
            attempts += 1
            resp, err = None, None
            with sem:
                if self._limiter is not None:
                    self._limiter.acquire()
                with self._init_lock:
                    self._in_flight += 1
                    self._max_in_flight = max(self._max_in_flight, self._in_flight)
                try:
                    resp = client.request(self.method, self.url, json=body, headers=headers)
                except httpx.TimeoutException as e:
                    err = ("timeout", f"timed out after {self.timeout_s}s: {type(e).__name__}")
                except httpx.TransportError as e:
                    err = ("connection", f"{type(e).__name__}: {e}")
                finally:
                    with self._init_lock:
                        self._in_flight -= 1
            if resp is not None:
                if resp.status_code < 400:
                    try:
                        return resp.json(), attempts
                    except ValueError:
                        raise HttpCallFailed("invalid_json", f"HTTP {resp.status_code} reply is not JSON: {resp.text[:200]!r}", attempts) from None
                err = (f"http_{resp.status_code}", f"HTTP {resp.status_code}: {resp.text[:200]}")
                if resp.status_code not in RETRYABLE_STATUS:
                    raise HttpCallFailed(err[0], err[1], attempts)
            if attempts > self.max_retries:
                raise HttpCallFailed(err[0], err[1], attempts)
            time.sleep(self.retry_delay(attempts, resp))

    def parse_reply(self, reply) -> dict:
        answer = get_path(reply, self.answer_path)
        if answer is not None and not isinstance(answer, str):
            answer = json.dumps(answer)
        texts, ids = [], []
        if self.contexts_path:
            ctx = get_path(reply, self.contexts_path) or []
            for i, c in enumerate(ctx if isinstance(ctx, list) else [ctx]):
                if isinstance(c, dict):
                    texts.append(str(c.get(self.context_text_field, "")))
                    cid = c.get(self.context_id_field)
                    ids.append(str(cid) if cid is not None else f"external:{i + 1}")
                else:
                    texts.append(str(c))
                    ids.append(f"external:{i + 1}")
        out = {"answer": answer, "contexts": texts, "context_chunk_ids": ids, "context_ranks": list(range(1, len(texts) + 1)),
               "cost_usd": self.cost_per_call_usd, "tool_calls": self._tool_calls(reply)}
        for key, path in (("input_tokens", self.input_tokens_path), ("output_tokens", self.output_tokens_path), ("cost_usd", self.cost_path)):
            if path:
                try:
                    v = get_path(reply, path)
                    got = (float(v) if key == "cost_usd" else int(v)) if v is not None else None
                except (KeyError, TypeError, ValueError):
                    got = None
                out[key] = self.cost_per_call_usd if key == "cost_usd" and got is None else got
        return out

    def _tool_calls(self, reply) -> str | None:
        """The reply's tool calls (``tool_calls_path``) as stored JSON; a reply without the key made none."""
        if not self.tool_calls_path:
            return None
        try:
            found = get_path(reply, self.tool_calls_path)
        except (KeyError, IndexError, TypeError):
            return None
        return tool_calls_json(found)

    def respond(self, case: dict) -> dict:
        rec = {
            "case_id": case["case_id"], "system_id": self.system_id, "config_hash": self.config_hash, "query": case["query"],
            "answer": None, "contexts": [], "context_chunk_ids": [], "context_ranks": [], "latency_s": None,
            "input_tokens": None, "output_tokens": None, "cost_usd": None, "error": None, "tool_calls": None,
        }
        t0 = time.perf_counter()
        try:
            reply, _ = self.call(case)
            rec.update(self.parse_reply(reply))
        except HttpCallFailed as e:
            rec["error"] = f"{e.kind}: {e}"
        except (KeyError, ValueError) as e:
            rec["error"] = f"bad_reply: {e}"
        rec["latency_s"] = time.perf_counter() - t0
        return rec

    def respond_many(self, cases: Sequence[dict]) -> list[dict]:
        """Respond to many cases in parallel (at most ``max_concurrency`` requests in flight)."""
        with ThreadPoolExecutor(max_workers=max(1, self.max_concurrency)) as pool:
            return list(pool.map(self.respond, cases))
