"""A content-addressed cache of the judge's replies (issue 66 item 4): the same judge (its config hash names the model,
the prompts, the dimensions and the sampling) asked the same messages gives the same reply, so a later night re-judges
only the answers that changed — a system whose answers are unchanged costs no judge call.

The key is the SHA-256 of the judge config hash, the rendered messages, the call's sampling arguments and
``metrics.score_cache.code_fingerprint()`` (the resources' code and the computing libraries, llama-cpp-python among
them). Only schema-valid replies are stored (a failed call is asked again next night). An entry is one JSON file
written to a temporary name and renamed. A reused row says so: ``attempts`` 0, no latency, no tokens, no cost tonight."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from hcat_pipeline.metrics.score_cache import code_fingerprint


class ReplyCache:
    def __init__(self, root: str | Path):
        self.root = Path(root) / "judge"
        self.hits = self.misses = 0

    def key(self, cfg_hash: str, messages: list[dict], **call) -> str:
        payload = json.dumps({"cfg": cfg_hash, "messages": messages, "call": call, "code": code_fingerprint()}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        p = self._path(key)
        if not p.is_file():
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(p.read_text(encoding="utf-8"))

    def put(self, key: str, data: dict) -> None:
        p = self._path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        tmp.replace(p)
