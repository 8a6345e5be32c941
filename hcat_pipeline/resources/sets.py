"""Resource sets per deployment, chosen by one env var ``HCAT_DEPLOYMENT`` (local | api).

* local (default): packaged MiniLM embeddings, local llama.cpp on the packaged Qwen GGUF
  (``HCAT_LLM_THREADS``, default 2), Parquet warehouse under data/warehouse — all offline.
* api: same embeddings and warehouse, the LLM from ``HCAT_LLM_PROVIDER`` (openai | anthropic) with
  ``HCAT_LLM_MODEL`` / ``HCAT_LLM_BASE_URL`` and the provider's API key env var.
"""

from __future__ import annotations

import os

from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.pii import PIIDetector


def resources_for(deployment: str | None = None) -> dict:
    deployment = deployment or os.environ.get("HCAT_DEPLOYMENT", "local")
    common = {
        "io_manager": PolarsParquetIOManager(),
        "embedding_model": EmbeddingModel(),
        "pii_detector": PIIDetector(),
        "nli_model": NLIModel(),
    }
    if deployment == "local":
        return {**common, "llm": LLM(provider="local", n_threads=int(os.environ.get("HCAT_LLM_THREADS", "2")))}
    if deployment == "api":
        return {
            **common,
            "llm": LLM(
                provider=os.environ.get("HCAT_LLM_PROVIDER", "openai"),
                model=os.environ.get("HCAT_LLM_MODEL", ""),
                max_concurrency=int(os.environ.get("HCAT_LLM_CONCURRENCY", "4")),
            ),
        }
    raise ValueError(f"HCAT_DEPLOYMENT={deployment!r}: expected 'local' or 'api'")
