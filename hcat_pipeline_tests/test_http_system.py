"""HttpRagSystem against a real HTTP server started by the test on 127.0.0.1."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hcat_pipeline.common.jsonpath import get_path
from hcat_pipeline.resources.http_system import HttpRagSystem, RateLimiter
from hcat_pipeline.responses.rag import CheckpointStore, run_responses


class Handler(BaseHTTPRequestHandler):
    """Scripted replies: ``server.script`` is a list of (status, body | None, delay_s, headers) popped per request;
    once empty, a normal 200 answer. Requests are recorded in ``server.seen``."""

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(n) or b"{}")
        srv = self.server
        with srv.lock:
            srv.seen.append({"path": self.path, "body": body, "auth": self.headers.get("X-Api-Key"), "t": time.perf_counter()})
            step = srv.script.pop(0) if srv.script else (200, None, srv.default_delay, {})
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
        status, payload, delay, headers = step
        time.sleep(delay)
        if srv.barrier is not None:  # every request of the batch in flight at once, or the barrier breaks (its timeout)
            srv.barrier.wait()
        with srv.lock:  # before replying: the client may send its next request as soon as it reads this one
            srv.in_flight -= 1
        try:
            if payload is None:
                payload = {"result": {"text": f"answer to {body.get('question')}"},
                           "sources": [{"content": "Tuples are immutable.", "id": "c1"}, {"content": "Lists are mutable.", "id": "c2"}],
                           "usage": {"in": 12, "out": 4}}
            data = json.dumps(payload).encode()
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.script, srv.seen, srv.lock = [], [], threading.Lock()
    srv.in_flight = srv.max_in_flight = 0
    srv.default_delay, srv.barrier = 0.0, None
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def system(srv, **kw):
    base = dict(
        system_id="my_rag", url=f"http://127.0.0.1:{srv.server_address[1]}/ask",
        request_template='{"question": "{{query}}", "id": "{{case_id}}", "choices": "{{options}}", "top_k": 2}',
        answer_path="result.text", contexts_path="sources", context_text_field="content", context_id_field="id",
        input_tokens_path="usage.in", output_tokens_path="usage.out", auth_header="X-Api-Key", auth_env_var="MY_RAG_KEY",
        auth_scheme="", timeout_s=30.0, max_retries=3, backoff_s=0.01,
    )
    return HttpRagSystem(**{**base, **kw})


CASE = {"case_id": "k1", "query": 'are "tuples" mutable?', "options": ["yes", "no"]}


def test_json_paths_request_template_and_auth_header(server, monkeypatch):
    monkeypatch.setenv("MY_RAG_KEY", "s3cret")
    rec = system(server).respond(CASE)
    assert rec["error"] is None and rec["answer"] == 'answer to are "tuples" mutable?'
    assert rec["contexts"] == ["Tuples are immutable.", "Lists are mutable."]
    assert rec["context_chunk_ids"] == ["c1", "c2"] and rec["context_ranks"] == [1, 2]
    assert rec["input_tokens"] == 12 and rec["output_tokens"] == 4 and rec["latency_s"] > 0
    seen = server.seen[0]
    assert seen["path"] == "/ask" and seen["auth"] == "s3cret"
    assert seen["body"] == {"question": 'are "tuples" mutable?', "id": "k1", "choices": ["yes", "no"], "top_k": 2}
    assert "s3cret" not in json.dumps(system(server).model_dump())  # the secret is never in config


def test_missing_auth_env_is_an_error_value(server, monkeypatch):
    monkeypatch.delenv("MY_RAG_KEY", raising=False)
    rec = system(server).respond(CASE)
    assert rec["answer"] is None and rec["error"].startswith("auth:") and server.seen == []


def test_429_then_success_retries_with_backoff(server, monkeypatch):
    monkeypatch.setenv("MY_RAG_KEY", "k")
    server.script = [(429, {"error": "slow down"}, 0, {"Retry-After": "0.2"}), (429, {"error": "slow down"}, 0, {})]
    t0 = time.perf_counter()
    rec = system(server).respond(CASE)
    assert rec["error"] is None and rec["answer"].startswith("answer to")
    assert len(server.seen) == 3 and time.perf_counter() - t0 >= 0.2  # Retry-After honoured


def test_500_retries_then_records_the_failure(server, monkeypatch):
    monkeypatch.setenv("MY_RAG_KEY", "k")
    server.script = [(500, {"error": "boom"}, 0, {})] * 10
    rec = system(server, max_retries=2).respond(CASE)
    assert rec["answer"] is None and rec["error"].startswith("http_500:") and "3 attempt" in rec["error"]
    assert len(server.seen) == 3


def test_400_is_not_retried(server, monkeypatch):
    monkeypatch.setenv("MY_RAG_KEY", "k")
    server.script = [(400, {"error": "bad request"}, 0, {})]
    rec = system(server).respond(CASE)
    assert rec["error"].startswith("http_400:") and len(server.seen) == 1


def test_timeout_is_retried_then_recorded(server, monkeypatch):
    monkeypatch.setenv("MY_RAG_KEY", "k")
    server.script = [(200, None, 60.0, {})] * 3  # replies far past any timeout (daemon threads: nobody waits for them)
    rec = system(server, timeout_s=0.3, max_retries=1).respond(CASE)
    assert rec["error"].startswith("timeout:") and "after 2 attempt(s)" in rec["error"]
    # the server thread may record the second request after the client has already given up on it (loaded cores)
    deadline = time.perf_counter() + 60.0  # a stall guard: the loop ends as soon as the request is recorded
    while len(server.seen) < 2 and time.perf_counter() < deadline:
        time.sleep(0.05)
    assert len(server.seen) == 2
    server.script = [(200, None, 60.0, {})]
    # timeout, then success: the retry's prompt reply has 3 s to arrive, ample on a loaded machine
    assert system(server, timeout_s=3.0, max_retries=1).respond(CASE)["error"] is None


def test_bad_reply_path_is_an_error_value(server, monkeypatch):
    monkeypatch.setenv("MY_RAG_KEY", "k")
    rec = system(server, answer_path="result.missing").respond(CASE)
    assert rec["error"].startswith("bad_reply:") and "result.missing" in rec["error"]


def test_concurrency_limit_and_checkpointed_run(server, monkeypatch, tmp_path):
    monkeypatch.setenv("MY_RAG_KEY", "k")
    server.default_delay = 0.15
    s = system(server, max_concurrency=2)
    cases = [{"case_id": f"k{i}", "query": f"q{i}", "options": []} for i in range(8)]
    recs, stats = run_responses([s], cases, CheckpointStore(tmp_path), concurrency=6)  # more workers than allowed
    assert stats.called == 8 and all(r["error"] is None for r in recs)
    assert server.max_in_flight == 2 and s.max_in_flight == 2
    recs2, stats2 = run_responses([system(server, max_concurrency=2)], cases, CheckpointStore(tmp_path))
    assert stats2.called == 0 and len(server.seen) == 8  # resumed: no request repeated


def test_respond_many_runs_in_parallel(server, monkeypatch):
    monkeypatch.setenv("MY_RAG_KEY", "k")
    # no reply until all four requests are in flight together: sequential calls would break the barrier (its timeout)
    server.barrier = threading.Barrier(4, timeout=120)
    out = system(server, max_concurrency=4, timeout_s=300).respond_many([{"case_id": f"k{i}", "query": "q"} for i in range(4)])
    assert [r["case_id"] for r in out] == ["k0", "k1", "k2", "k3"] and all(r["error"] is None for r in out)
    assert server.max_in_flight == 4 and not server.barrier.broken


def test_get_path():
    doc = {"a": {"b": [{"c": 1}, {"c": 2}]}, "x": "y"}
    assert get_path(doc, "a.b[1].c") == 2 and get_path(doc, "$.x") == "y" and get_path(doc, "a.b[*].c") == [1, 2]
    assert get_path(doc, "a.b[-1].c") == 2
    with pytest.raises(KeyError, match="no such key"):
        get_path(doc, "a.z")


def test_rate_limit_spaces_every_request_retries_included(server, monkeypatch):
    monkeypatch.setenv("MY_RAG_KEY", "k")
    server.script = [(503, {"error": "busy"}, 0, {})] * 2  # two of the requests are retried: 12 requests in all
    acquired = []
    real = RateLimiter.acquire
    monkeypatch.setattr(RateLimiter, "acquire", lambda self: acquired.append(1) or real(self))
    s = system(server, max_concurrency=8, rate_limit_rps=20.0)
    t0 = time.perf_counter()
    out = s.respond_many([{"case_id": f"k{i}", "query": "q"} for i in range(10)])
    took = time.perf_counter() - t0
    assert all(r["error"] is None for r in out) and len(server.seen) == 12
    assert len(acquired) == 12  # every request took a slot of the one shared limiter, the retries too
    assert took >= 11 / 20  # 12 requests at most 20 per second, evenly spaced: the last starts ≥ 0.55 s after the first


def test_rate_limiter_slots_are_evenly_spaced_whatever_the_callers_timing(monkeypatch):
    """Never a burst, shown on the limiter's own slots with a frozen clock (the server's receive times carry the
    threads' scheduling delays, which a loaded machine makes arbitrary)."""
    from types import SimpleNamespace

    import hcat_pipeline.resources.http_system as http_system

    monkeypatch.setattr(http_system, "time", SimpleNamespace(monotonic=lambda: 100.0, sleep=lambda s: None))  # this module's clock only
    limiter = RateLimiter(20.0)
    waits = []
    threads = [threading.Thread(target=lambda: waits.append(limiter.acquire())) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(waits) == pytest.approx([i / 20 for i in range(12)])  # one slot each, 0.05 s apart, none shared


def test_backoff_waits_are_jittered_between_half_and_all_of_the_exponential_wait(server):
    s = system(server, backoff_s=1.0, max_backoff_s=3.0)
    for attempt, ceiling in ((1, 1.0), (2, 2.0), (3, 3.0), (6, 3.0)):
        waits = [s.retry_delay(attempt, None) for _ in range(200)]
        assert ceiling / 2 <= min(waits) < max(waits) <= ceiling and max(waits) - min(waits) > ceiling / 4


def test_the_rate_limit_is_not_part_of_the_systems_identity(server):
    assert system(server).config_hash == system(server, rate_limit_rps=5.0).config_hash  # stored responses stay valid
    assert system(server).config_hash != system(server, answer_path="result.answer").config_hash
