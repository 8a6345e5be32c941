import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hcat_pipeline.models import qwen_gguf_path
from hcat_pipeline.resources.llm import LLM, LLMCallFailed, extract_json

from .servers import llama_openai_server

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}, "reason": {"type": "string"}},
    "required": ["answer", "reason"],
}
PROMPT = "Context: Python lists are mutable; tuples are immutable.\nQuestion: Are Python tuples mutable? Reply in JSON."


def test_extract_json_tolerates_fences_and_prose():
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('Sure! {"a": [1, 2]} hope this helps') == {"a": [1, 2]}
    with pytest.raises(ValueError):
        extract_json("no json here")


def test_local_provider_structured_and_deterministic(local_llm):
    r1 = local_llm.generate(PROMPT, json_schema=SCHEMA, seed=7)
    r2 = local_llm.generate(PROMPT, json_schema=SCHEMA, seed=7)
    assert r1.data["answer"] in ("yes", "no") and r1.data["reason"]
    assert r1.text == r2.text, "temperature 0 + fixed seed is deterministic"
    assert r1.input_tokens > 20 and r1.output_tokens > 0
    assert r1.cost_usd == 0.0 and r1.latency_s > 0 and r1.provider == "local"


def test_local_provider_reply_does_not_depend_on_call_order(local_llm):
    """llama.cpp reuses the KV cache of a shared prompt prefix unless reset; the provider resets it."""
    shared = "You write one short test question about the passage.\nPassage: " + "Python tuples are immutable sequences. " * 20
    a, b = shared + "\nQuestion type: yes/no.", shared + "\nQuestion type: what-question."
    first = local_llm.generate(a, max_tokens=40, seed=1).text
    local_llm.generate(b, max_tokens=40, seed=1)
    assert local_llm.generate(a, max_tokens=40, seed=1).text == first


def test_reused_prompt_prefix_is_deterministic_and_used():
    """reuse_prompt_prefix: every message but the last is evaluated once and its state reused — the same reply whatever
    was asked before (the split is always at the last message), and the saved state is what the call started from."""
    from hcat_pipeline.resources import llm_providers

    shots = [{"role": "system", "content": "You write one short test question about a passage. " * 8},
             {"role": "user", "content": "Passage: Lists are mutable sequences."}, {"role": "assistant", "content": "Can a list be changed?"}]
    a = [*shots, {"role": "user", "content": "Passage: Tuples are immutable sequences of objects."}]
    b = [*shots, {"role": "user", "content": "Passage: Strings are immutable sequences of code points."}]
    llm = LLM(provider="local", reuse_prompt_prefix=True)
    first = llm.generate(a, max_tokens=24, seed=1).text
    llm.generate(b, max_tokens=24, seed=1)
    assert llm.generate(a, max_tokens=24, seed=1).text == first
    states = next(v for k, v in llm_providers._PREFIX_STATES.items() if k[0] == str(qwen_gguf_path()))
    assert any(state is not None for state in states.values())  # the prefix was evaluated once and saved


def test_local_provider_context_overflow_is_a_typed_failure():
    llm = LLM(provider="local", n_ctx=256)
    with pytest.raises(LLMCallFailed) as e:
        llm.generate("word " * 2000)
    assert e.value.kind == "provider"


@pytest.mark.slow
def test_openai_provider_against_real_llama_cpp_server():
    with llama_openai_server(str(qwen_gguf_path())) as base:
        llm = LLM(provider="openai", model="local-qwen", base_url=base, openai_json_mode="json_object",
                  prices={"local-qwen": [1.0, 2.0]})
        r = llm.generate(PROMPT, json_schema=SCHEMA, seed=3)
        assert r.data["answer"] in ("yes", "no")
        assert r.provider == "openai" and r.input_tokens > 20 and r.output_tokens > 0
        assert r.cost_usd == pytest.approx((r.input_tokens * 1.0 + r.output_tokens * 2.0) / 1e6)
        plain = llm.generate("Say hello in one word.", max_tokens=8)
        assert plain.text.strip() and plain.data is None


class _Stub(BaseHTTPRequestHandler):
    """A loopback HTTP server speaking the providers' wire formats with scripted replies."""

    script: list = []
    seen: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.path, body))
        status, payload = type(self).script.pop(0)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture
def stub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    _Stub.script, _Stub.seen = [], []
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{server.server_port}", _Stub
    server.shutdown()


def _openai_reply(content):
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def test_rate_limits_retried_then_invalid_json_repaired(stub):
    url, s = stub
    s.script = [(429, {"error": {"message": "slow down"}}), (503, {"error": {"message": "busy"}}),
                (200, _openai_reply("not json at all")), (200, _openai_reply('{"answer": "no", "reason": "immutable"}'))]
    llm = LLM(provider="openai", model="m", base_url=url + "/v1", backoff_s=0.01)
    r = llm.generate(PROMPT, json_schema=SCHEMA)
    assert r.data == {"answer": "no", "reason": "immutable"}
    assert r.attempts == 4 and r.input_tokens == 20, "tokens of every billed attempt are counted"
    repair = s.seen[-1][1]["messages"][-1]["content"]
    assert "invalid" in repair


def test_schema_violation_after_bounded_retries_raises(stub):
    url, s = stub
    s.script = [(200, _openai_reply('{"answer": "maybe", "reason": "?"}'))] * 3
    llm = LLM(provider="openai", model="m", base_url=url + "/v1", json_retries=2)
    with pytest.raises(LLMCallFailed) as e:
        llm.generate(PROMPT, json_schema=SCHEMA)
    assert e.value.kind == "schema" and e.value.attempts == 3 and "maybe" in e.value.last_text


def test_anthropic_provider_wire_format(stub, monkeypatch):
    url, s = stub
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    s.script = [(200, {"id": "m1", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "end_turn",
                       "content": [{"type": "text", "text": '{"answer": "yes", "reason": "r"}'}],
                       "usage": {"input_tokens": 100, "output_tokens": 10}})]
    llm = LLM(provider="anthropic", model="claude-x", base_url=url, prices={"claude-x": [3.0, 15.0]})
    r = llm.generate(PROMPT, json_schema=SCHEMA, system="Be brief.")
    assert r.data["answer"] == "yes"
    assert r.cost_usd == pytest.approx((100 * 3 + 10 * 15) / 1e6)
    path, body = s.seen[0]
    assert path == "/v1/messages" and "Be brief." in body["system"] and "JSON schema" in body["system"]


def test_missing_api_key_is_a_clear_typed_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMCallFailed, match="OPENAI_API_KEY"):
        LLM(provider="openai").generate("hi")
