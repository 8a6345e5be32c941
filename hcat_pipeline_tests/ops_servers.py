"""Real services the operations tests start on loopback: a private Postgres cluster (password auth, via
``scripts/postgres.sh``), Redis, ``dagster-celery`` workers, and a counting OpenAI-compatible stub."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from hcat_pipeline_tests.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = ROOT / ".venv" / "bin"


def write_campaign_fixture(wh: Path) -> None:
    """The upstream tables of one campaign run (golden set ``v-test``, 4 chunks and their embeddings), stored
    where the IO manager keeps them, so a test materializes rag_responses without generating anything."""
    import numpy as np
    import polars as pl

    from hcat_pipeline_tests.stubs import CHUNKS, VERSION, golden_frame

    (wh / "golden_set").mkdir(parents=True, exist_ok=True)
    golden_frame().write_parquet(wh / "golden_set" / f"{VERSION}.parquet")
    pl.DataFrame({"chunk_id": list(CHUNKS), "doc_id": ["d"] * len(CHUNKS), "text": list(CHUNKS.values())}).write_parquet(
        wh / "chunks.parquet"
    )
    v = np.random.default_rng(0).normal(size=(len(CHUNKS), 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    pl.DataFrame({"chunk_id": list(CHUNKS), "embedding": pl.Series(v, dtype=pl.Array(pl.Float32, 384))}).write_parquet(
        wh / "chunk_embeddings.parquet"
    )


def have_postgres() -> bool:
    return any(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


def have_redis() -> bool:
    return shutil.which("redis-server") is not None


def _wait(predicate, timeout_s: float, what: str, proc: subprocess.Popen | None = None, log: Path | None = None):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            raise RuntimeError(f"{what} exited with {proc.returncode}: {tail}")
        if predicate():
            return
        time.sleep(0.3)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    raise RuntimeError(f"{what} not ready after {timeout_s:.0f}s: {tail}")


def stop_group(proc: subprocess.Popen, timeout_s: float = 15.0) -> None:
    """SIGTERM the process group a Popen(start_new_session=True) leads, then SIGKILL what is left."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # children (e.g. the celery process under dagster-celery) too
    except ProcessLookupError:
        pass
    proc.wait(5)


@contextmanager
def postgres_cluster():
    """A private cluster on a free loopback port (scram-sha-256 passwords, no trust); yields its Dagster URL."""
    port = free_port()
    root = Path(tempfile.mkdtemp(prefix="hcat-pg-"))  # outside pytest's 0700 tmp tree: user postgres must reach it
    os.chmod(root, 0o755)
    env = {**os.environ, "PGPORT": str(port), "HCAT_PGDATA": str(root / "data")}
    try:
        start = subprocess.run(["bash", str(ROOT / "scripts/postgres.sh"), "start"], env=env, capture_output=True, text=True,
                               timeout=600)  # fmt: skip
        if start.returncode != 0:
            raise RuntimeError(f"postgres.sh start failed: {start.stderr[-2000:]}")
        url = start.stdout.split("HCAT_POSTGRES_URL=")[1].split()[0]
        yield url
    finally:
        subprocess.run(["bash", str(ROOT / "scripts/postgres.sh"), "stop"], env=env, capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def redis_server(log_dir: Path):
    """``redis-server`` on a free loopback port with a password and no persistence; yields its URL (db 0)."""
    port, password = free_port(), secrets.token_hex(12)
    log = log_dir / "redis.log"
    proc = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--requirepass", password, "--save", "",
         "--appendonly", "no", "--dir", str(log_dir), "--logfile", str(log)],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        import redis

        client = redis.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=1)

        def ping():
            try:
                return client.ping()
            except redis.RedisError:
                return False

        _wait(ping, 120, "redis-server", proc, log)
        yield f"redis://:{password}@127.0.0.1:{port}"
    finally:
        stop_group(proc)


@contextmanager
def celery_workers(names: list[str], env: dict, log_dir: Path, timeout_s: float = 120.0):
    """``scripts/worker.sh`` workers (dagster-celery, one task at a time each) on the broker in ``env``; yields a
    ``wait_ready()`` callable (returns once every worker answers a ping), so other set-up can overlap their
    start. Stopped (whole process groups) on exit."""
    procs = []
    try:
        for name in names:
            log = log_dir / f"{name}.log"
            procs.append((subprocess.Popen(
                ["bash", str(ROOT / "scripts/worker.sh")], env={**env, "HCAT_WORKER_NAME": name, "HCAT_WORKER_POOL": "solo"},
                cwd=ROOT, stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
            ), log))  # fmt: skip
        from celery import Celery

        app = Celery(broker=env["HCAT_CELERY_BROKER"], backend=env["HCAT_CELERY_BACKEND"])

        def all_up():
            for proc, log in procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"celery worker exited with {proc.returncode}: {log.read_text(errors='replace')[-3000:]}")
            replies = app.control.ping(timeout=1.0) or []
            seen = {host.split("@")[0] for r in replies for host in r}
            return set(names) <= seen

        yield lambda: _wait(all_up, timeout_s, f"celery workers {names}")
    finally:
        for proc, _ in procs:
            stop_group(proc)


class _OpenAIStub(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions``: counts calls; ``server.mode`` ok | down (HTTP 503) | hang (never answers
    within the client's timeout); the first ``server.fail_first`` calls get HTTP 503 whatever the mode."""

    def log_message(self, *a):
        pass

    def do_GET(self):
        self._send(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        with self.server.lock:
            self.server.calls += 1
            self.server.auth.add(self.headers.get("Authorization", ""))
            down = self.server.mode == "down" or self.server.calls <= self.server.fail_first
        if down:
            return self._send(503, {"error": {"message": "service unavailable", "type": "server_error"}})
        if self.server.mode == "hang":
            time.sleep(self.server.hang_s)
            return self._send(504, {"error": {"message": "late", "type": "server_error"}})
        question = body["messages"][-1]["content"]
        text = "I don't know based on the provided context." if "world cup" in question else "Tuples are immutable."
        self._send(200, {
            "id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": body.get("model", "stub-model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 6, "total_tokens": 46},
        })  # fmt: skip

    def _send(self, status: int, payload: dict):
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


@contextmanager
def openai_stub(mode: str = "ok", hang_s: float = 30.0, fail_first: int = 0):
    """An OpenAI-compatible chat server on loopback; yields the server (``.base_url``, ``.calls``, ``.mode``)."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAIStub)
    srv.daemon_threads, srv.lock, srv.calls, srv.mode, srv.hang_s, srv.auth = True, threading.Lock(), 0, mode, hang_s, set()
    srv.fail_first = fail_first
    srv.base_url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
