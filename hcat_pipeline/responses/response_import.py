"""Import responses produced elsewhere (JSONL or Parquet) for a golden-set version.

One record per case: ``case_id`` (required), ``answer`` (string; may be null only with an ``error``),
``contexts`` (optional: a list of strings, or of objects ``{"text": …, "chunk_id": …}``),
``context_chunk_ids`` (optional list of strings, same length as contexts), and optionally
``latency_s``, ``input_tokens``, ``output_tokens``, ``cost_usd``, ``error``, ``system_id``, ``tool_calls`` (a list of
``{name, arguments, result}`` objects: judged by ``tool_use_correctness``).

Every bad row is reported with its line number (JSONL: the file line; Parquet: the 1-based row)
and the reason; the good rows are returned as a RAG_RESPONSES frame.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import polars as pl

from hcat_pipeline.common.tool_calls import tool_calls_json
from hcat_pipeline.responses.rag import config_hash, responses_frame
from hcat_pipeline.schemas import RESPONSE_IMPORT_ERRORS as IMPORT_ERRORS


def _iter_rows(path: Path) -> Iterator[tuple[int, object]]:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        with path.open("r", encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    yield n, json.loads(line)
                except json.JSONDecodeError as e:
                    yield n, ValueError(f"invalid JSON: {e.msg} at column {e.colno}")
    elif suffix == ".parquet":
        for n, row in enumerate(pl.read_parquet(path).iter_rows(named=True), start=1):
            yield n, row
    else:
        raise ValueError(f"{path}: unsupported file type {suffix!r} (expected .jsonl or .parquet)")


def _num(row: dict, key: str, kind: type) -> object:
    v = row.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and float(v) != int(v)) or v < 0:
        raise ValueError(f"{key} must be a non-negative {kind.__name__}, got {v!r}")
    return kind(v)


def _validate(row: object, system_id: str, cfg_hash: str, known: set[str] | None, seen: set[str]) -> dict:
    if isinstance(row, Exception):
        raise row
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    cid = row.get("case_id")
    if not isinstance(cid, str) or not cid.strip():
        raise ValueError("case_id is missing or not a string")
    if known is not None and cid not in known:
        raise ValueError(f"case_id {cid!r} is not in this golden-set version")
    if cid in seen:
        raise ValueError(f"duplicate case_id {cid!r}")
    if row.get("system_id") not in (None, system_id):
        raise ValueError(f"system_id {row.get('system_id')!r} differs from the import's system id {system_id!r}")
    answer, error = row.get("answer"), row.get("error")
    if error is not None and not isinstance(error, str):
        raise ValueError("error must be a string")
    if answer is None and error is None:
        raise ValueError("answer is missing (give an answer, or an error for a failed call)")
    if answer is not None and not isinstance(answer, str):
        raise ValueError(f"answer must be a string, got {type(answer).__name__}")
    raw_ctx = row.get("contexts") or []
    if not isinstance(raw_ctx, list):
        raise ValueError("contexts must be a list")
    texts, ids = [], []
    for i, c in enumerate(raw_ctx):
        if isinstance(c, str):
            texts.append(c)
            ids.append(None)
        elif isinstance(c, dict) and isinstance(c.get("text"), str):
            texts.append(c["text"])
            ids.append(str(c["chunk_id"]) if c.get("chunk_id") is not None else None)
        else:
            raise ValueError(f"contexts[{i}] must be a string or an object with a 'text' string")
    given_ids = row.get("context_chunk_ids")
    if given_ids is not None:
        if not isinstance(given_ids, list) or len(given_ids) != len(texts) or not all(isinstance(x, str) for x in given_ids):
            raise ValueError("context_chunk_ids must be a list of strings as long as contexts")
        ids = list(given_ids)
    ids = [x if x is not None else f"external:{i + 1}" for i, x in enumerate(ids)]
    rec = {
        "case_id": cid, "system_id": system_id, "config_hash": cfg_hash, "query": row.get("query"),
        "answer": answer, "contexts": texts, "context_chunk_ids": ids, "context_ranks": list(range(1, len(texts) + 1)),
        "latency_s": _num(row, "latency_s", float), "input_tokens": _num(row, "input_tokens", int),
        "output_tokens": _num(row, "output_tokens", int), "cost_usd": _num(row, "cost_usd", float), "error": error,
        "tool_calls": tool_calls_json(row.get("tool_calls")),  # a bad list is this row's error, with its reason
    }
    seen.add(cid)
    return rec


def file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_imported_responses(path: str | Path, system_id: str, known_case_ids: Iterable[str] | None = None,
                            queries: dict[str, str] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(valid responses as a RAG_RESPONSES frame, errors: file, line, reason)."""
    path = Path(path)
    known = set(known_case_ids) if known_case_ids is not None else None
    cfg_hash = config_hash({"system_id": system_id, "import_sha256": file_sha(path)})
    seen: set[str] = set()
    good, bad = [], []
    for line, row in _iter_rows(path):
        try:
            rec = _validate(row, system_id, cfg_hash, known, seen)
        except ValueError as e:
            bad.append({"file": str(path), "line": line, "reason": str(e)})
            continue
        if queries and rec["query"] is None:
            rec["query"] = queries.get(rec["case_id"])
        good.append(rec)
    return responses_frame(good), pl.DataFrame(bad, schema=IMPORT_ERRORS)
