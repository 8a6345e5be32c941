"""Real servers the tests start on loopback (llama.cpp's OpenAI-compatible server, small stubs)."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def llama_openai_server(model_path: str, timeout_s: float = 120.0):
    """``python -m llama_cpp.server`` on the packaged GGUF, bound to 127.0.0.1; yields its base URL."""
    port = free_port()
    log = tempfile.TemporaryFile()  # llama.cpp logs a lot on stderr: a pipe would fill and block it
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", model_path, "--host", "127.0.0.1", "--port", str(port),
         "--n_threads", "2", "--n_ctx", "2048", "--model_alias", "local-qwen"],
        stdout=subprocess.DEVNULL, stderr=log,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"llama_cpp.server exited: {log.read().decode(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            raise RuntimeError("llama_cpp.server did not start in time")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
