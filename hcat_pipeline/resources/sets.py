"""Deployment profiles, chosen by one env var ``HCAT_DEPLOYMENT`` (local | api | distributed | k8s).

* local (default): packaged MiniLM embeddings, local llama.cpp on the packaged Qwen GGUF
  (``HCAT_LLM_THREADS``, default 2), Parquet warehouse under data/warehouse, SQLite instance
  (``dagster.yaml``), Dagster's default in-process / multiprocess executor — all offline.
* api: same embeddings and warehouse, the LLM from ``HCAT_LLM_PROVIDER`` (openai | anthropic) with
  ``HCAT_LLM_MODEL`` / ``HCAT_LLM_BASE_URL`` and the provider's API key env var.
* distributed: the api resources (default provider ``openai``: a hosted API, or a shared llama.cpp
  OpenAI-compatible server via ``HCAT_LLM_BASE_URL``), Postgres instance storage
  (``deploy/dagster.distributed.yaml``, URL in ``HCAT_POSTGRES_URL``) and ``dagster-celery``'s
  executor: every step is a Celery task on the broker ``HCAT_CELERY_BROKER`` (Redis), executed by
  ``dagster-celery worker`` processes on as many machines as needed (``scripts/worker.sh``).
* k8s: the distributed resources; the Dagster Helm chart (``deploy/k8s/values.yaml``) sets the
  instance (Postgres, ``K8sRunLauncher``: one Kubernetes Job per run) and ``dagster-k8s``'s
  ``k8s_job_executor`` runs every step as its own Job (namespace ``HCAT_K8S_JOB_NAMESPACE``, at most
  ``HCAT_K8S_MAX_STEPS`` steps of a run at once).

``scripts/env.sh`` copies the instance config of the profile into ``DAGSTER_HOME``; ``definitions.py``
takes the resources from ``resources_for()`` and the executor from ``executor_for()``.

LLM concurrency, per provider: every LLM-calling asset runs in the Dagster pool ``llm_<provider>``
(``pool=llm_pool()``: ``llm_local``, ``llm_openai``, ``llm_anthropic``), so the limit holds across
processes, runs and Celery workers. Limits: ``HCAT_LLM_POOL_LIMITS`` (``llm_openai=8,llm_local=1``),
else 1 for local llama.cpp on 2 cores and ``HCAT_LLM_CONCURRENCY`` (default 4) for an API provider;
``apply_pool_limits`` writes them into the instance (``hcat campaign`` does it before its runs; or
``dagster instance concurrency set llm_openai 8``); an unset pool falls back to the instance's
``pools.default_limit`` (1). Within a step the ``LLM`` resource keeps at most ``max_concurrency`` calls
in flight.
"""

from __future__ import annotations

import os
from typing import Literal, get_args

import dagster as dg

from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.resources.alerts import AlertWebhook
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.pii import PIIDetector

Deployment = Literal["local", "api", "distributed", "k8s"]
DEPLOYMENTS: tuple[str, ...] = get_args(Deployment)
# Celery: one broker URL for the run coordinator and the workers (deploy/celery.yaml reads the same vars)
CELERY_BROKER_ENV, CELERY_BACKEND_ENV = "HCAT_CELERY_BROKER", "HCAT_CELERY_BACKEND"


WORKER_PROFILES = ("distributed", "k8s")  # the profiles whose runs execute their steps on workers, not in the launching process


def deployment(value: str | None = None) -> str:
    value = value or os.environ.get("HCAT_DEPLOYMENT", "local")
    if value not in DEPLOYMENTS:
        raise ValueError(f"HCAT_DEPLOYMENT={value!r}: expected one of {', '.join(DEPLOYMENTS)}")
    return value


def _api_llm(default_provider: str) -> LLM:
    return LLM(
        provider=os.environ.get("HCAT_LLM_PROVIDER", default_provider),
        model=os.environ.get("HCAT_LLM_MODEL", ""),
        base_url=os.environ.get("HCAT_LLM_BASE_URL", ""),
        max_concurrency=int(os.environ.get("HCAT_LLM_CONCURRENCY", "4")),
        timeout_s=float(os.environ.get("HCAT_LLM_TIMEOUT_S", "120")),
    )


def resources_for(profile: str | None = None) -> dict:
    profile = deployment(profile)
    common = {
        "io_manager": PolarsParquetIOManager(),
        "embedding_model": EmbeddingModel(),
        "pii_detector": PIIDetector(),
        "alert_webhook": AlertWebhook(),  # production anomalies to a person (URL from HCAT_ALERT_WEBHOOK_URL)
        "nli_model": NLIModel(),
        "multilingual_encoder": MultilingualEncoder(),  # USE-M3: dense_use, cross-lingual metrics, the toxicity head, rule similarity
    }
    if profile == "local":
        return {**common, "llm": LLM(provider="local", n_threads=int(os.environ.get("HCAT_LLM_THREADS", "2")))}
    return {**common, "llm": _api_llm("openai")}


def executor_for(profile: str | None = None) -> dg.ExecutorDefinition | None:
    """None (Dagster's default multiprocess / in-process executor) for local / api; distributed:
    dagster-celery's executor on the broker from ``HCAT_CELERY_BROKER`` (read when a run starts); k8s:
    dagster-k8s's ``k8s_job_executor`` (one Kubernetes Job per step)."""
    profile = deployment(profile)
    if profile == "k8s":
        from dagster_k8s import k8s_job_executor

        return k8s_job_executor.configured(
            {
                "job_namespace": {"env": "HCAT_K8S_JOB_NAMESPACE"},
                "max_concurrent": int(os.environ.get("HCAT_K8S_MAX_STEPS", "4")),
                "step_k8s_config": {"container_config": {"resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}},
            },
            name="k8s",
        )
    if profile != "distributed":
        return None
    from dagster_celery import celery_executor

    return celery_executor.configured(
        {
            "broker": {"env": CELERY_BROKER_ENV},
            "backend": {"env": CELERY_BACKEND_ENV},
            "include": ["hcat_pipeline.definitions"],
        },
        name="celery",
    )


def llm_provider(profile: str | None = None) -> str:
    return "local" if deployment(profile) == "local" else os.environ.get("HCAT_LLM_PROVIDER", "openai")


def llm_pool(profile: str | None = None) -> str:
    """The Dagster pool of LLM-calling steps: one per provider (``llm_local``, ``llm_openai``, …)."""
    return f"llm_{llm_provider(profile)}"


def pool_limits(profile: str | None = None) -> dict[str, int]:
    """{pool: slot limit}: ``HCAT_LLM_POOL_LIMITS`` ("llm_openai=8,llm_anthropic=4") over the profile's default
    for its own provider (local: 1; an API: ``HCAT_LLM_CONCURRENCY``, default 4)."""
    own = llm_pool(profile)
    limits = {own: 1 if deployment(profile) == "local" else int(os.environ.get("HCAT_LLM_CONCURRENCY", "4"))}
    for item in filter(None, (x.strip() for x in os.environ.get("HCAT_LLM_POOL_LIMITS", "").split(","))):
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit() or int(value) < 1 or not name.strip().startswith("llm_"):
            raise ValueError(f"HCAT_LLM_POOL_LIMITS: {item!r} is not <llm_provider>=<limit ≥ 1> (e.g. llm_openai=8)")
        limits[name.strip()] = int(value)
    return limits


def apply_pool_limits(instance: dg.DagsterInstance, profile: str | None = None) -> dict[str, int]:
    """Write the LLM pools' slot limits into the instance (idempotent); returns {pool: limit}."""
    limits = pool_limits(profile)
    for pool, limit in limits.items():
        instance.event_log_storage.set_concurrency_slots(pool, limit)
    return limits
