"""Real servers the tests start on loopback (llama.cpp's OpenAI-compatible server, small stubs)."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _process_server(cmd: list[str], ready_url: str, name: str, timeout_s: float, ok=lambda r: True):
    """Start ``cmd``, wait until ``ready_url`` answers (``ok(response)``), stop it afterwards; its log goes to a temporary
    file (a pipe would fill and block a chatty server) and is shown when it exits early."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{name} exited: {log.read().decode(errors='replace')[-2000:]}")
            try:
                if ok(httpx.get(ready_url, timeout=2)):
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        else:
            raise RuntimeError(f"{name} did not start in time")
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@contextmanager
def llama_openai_server(model_path: str, timeout_s: float = 600.0):
    """``python -m llama_cpp.server`` on the packaged GGUF, bound to 127.0.0.1; yields its base URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", model_path, "--host", "127.0.0.1", "--port", str(port),
           "--n_threads", "2", "--n_ctx", "2048", "--model_alias", "local-qwen"]  # fmt: skip
    with _process_server(cmd, f"{base}/models", "llama_cpp.server", timeout_s, ok=lambda r: r.status_code == 200):
        yield base


class UserRag:
    """A user's own RAG service on loopback, as a campaign's ``http`` system meets it: ``POST /v1/ask`` with
    ``{"question": …}`` and the secret in ``X-Api-Key`` (401 without it); the reply nests the answer
    (``result.answer.text``) and gives its contexts as objects (``result.sources[*].{id, content}``).
    It retrieves the paragraph sharing most words with the question and answers with its best sentence.

    ``latency_s``: every answer takes that long (a service's own time per request).
    ``faults`` (a set, changeable while it runs): ``"malformed"`` (the first question asked while set gets a
    reply that is not JSON), ``"timeout"`` (the second: answered after ``slow_s``), ``"down"`` (the third: 503).
    ``asked`` counts every request by question."""

    def __init__(self, documents: dict[str, str], secret: str, slow_s: float = 60.0, latency_s: float = 0.0):
        import re

        self.paragraphs = [(f"{name}#{i}", p.strip()) for name, text in documents.items()
                           for i, p in enumerate(text.split("\n\n")) if len(p.split()) > 3]  # fmt: skip
        self.secret, self.slow_s, self.faults, self.faulted = secret, slow_s, set(), {}
        self.latency_s = latency_s  # every answer takes this long (a real service's time per request)
        self.asked: dict[str, int] = {}
        self.lock = threading.Lock()
        self._words = lambda s: set(re.findall(r"[a-z0-9]+", s.lower()))

    def answer(self, question: str) -> dict:
        q = self._words(question)
        ranked = sorted(self.paragraphs, key=lambda p: (-len(q & self._words(p[1])), p[0]))[:2]
        sentences = [s for s in ranked[0][1].replace("\n", " ").split(". ") if s]
        best = max(sentences, key=lambda s: len(q & self._words(s)))
        return {"result": {"answer": {"text": best.rstrip(".") + "."},
                           "sources": [{"id": pid, "content": text, "score": len(q & self._words(text))} for pid, text in ranked]}}  # fmt: skip

    def fault_for(self, question: str) -> str | None:
        with self.lock:
            self.asked[question] = self.asked.get(question, 0) + 1
            if question in self.faulted:
                return self.faulted[question]
            for kind in ("malformed", "timeout", "down"):
                if kind in self.faults and kind not in self.faulted.values():
                    self.faulted[question] = kind
                    return kind
        return None


@contextmanager
def user_rag_server(rag: UserRag):
    """Serve ``rag`` on 127.0.0.1; yields the ``/v1/ask`` URL."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except BrokenPipeError:  # the client gave up (its timeout): what a slow service meets
                pass

        def do_POST(self):
            import json

            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.headers.get("X-Api-Key") != rag.secret:
                return self._send(401, b'{"error": "missing or wrong X-Api-Key"}')
            question = body.get("question", "")
            kind = rag.fault_for(question) if rag.faults else None
            if kind == "malformed":
                return self._send(200, b'{"result": {"answer": ')
            if kind == "down":
                return self._send(503, b'{"error": "service unavailable"}')
            if kind == "timeout":
                time.sleep(rag.slow_s)
            if not kind:
                with rag.lock:
                    rag.asked[question] = rag.asked.get(question, 0) + 1
            if rag.latency_s:
                time.sleep(rag.latency_s)
            self._send(200, json.dumps(rag.answer(question)).encode())

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/ask"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def review_server(args: list[str], timeout_s: float = 300.0):
    """``hcat review`` (the real command, a subprocess) on a free loopback port; yields its base URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with _process_server([sys.executable, "-m", "hcat_pipeline.cli", "review", "--port", str(port), *args], f"{base}/favicon.ico",
                         "hcat review", timeout_s):  # fmt: skip
        yield base


@contextmanager
def serve_app(app):
    """The review app on a free loopback port in this process (uvicorn in a thread), until the block ends."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:  # readiness, not a timing guess: fails loudly if the server dies or never starts
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the review app did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(60)
