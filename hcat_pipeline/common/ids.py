"""Short content hashes: the one place ids, fingerprints and prompt hashes are made.

Every id in the project is the first ``n`` hex digits of a SHA-256 (ids of documents, chunks, cases,
pairs, queries, configurations, prompt templates). These helpers only spell that once; the values
are the ones the project has always produced, so stored golden-set versions and config hashes keep
their keys (``test_core_ids.py`` pins them).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def sha256_hex(data: str | bytes) -> str:
    """Full SHA-256 hex digest of ``data`` (str is UTF-8 encoded)."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def short_hash(*parts: str, n: int = 16, sep: str = "|") -> str:
    """First ``n`` hex digits of SHA-256 over ``parts`` joined by ``sep`` (one part: the part itself)."""
    if n < 1 or n > 64:
        raise ValueError(f"short_hash: n={n} outside 1..64")
    return sha256_hex(sep.join(parts))[:n]


def canonical_json(value: Any, compact: bool = False, ascii_only: bool = True) -> str:
    """Deterministic JSON (sorted keys, ``default=str``); ``compact`` drops the spaces after separators."""
    return json.dumps(
        value, sort_keys=True, default=str, ensure_ascii=ascii_only, separators=(",", ":") if compact else None
    )


def json_hash(value: Any, n: int = 16, compact: bool = False, ascii_only: bool = True) -> str:
    """Short hash of the canonical JSON of ``value`` (configuration hashes, case ids)."""
    return short_hash(canonical_json(value, compact, ascii_only), n=n)
