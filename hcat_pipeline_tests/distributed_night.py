"""A whole campaign night on the distributed profile, for real: a private Postgres, Redis, ``dagster-celery`` workers,
the bank corpus ingested by ``ingest_job``, a golden set of bank questions frozen without an LLM, and ``hcat campaign``
with two systems — ``bm25`` on an OpenAI-compatible stub and the user's own RAG service over HTTP, both on loopback.
Used by ``test_ops_distributed.py`` (two workers) and ``benchmarks/distributed_workers.py`` (one vs two)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import dagster as dg
import polars as pl

from hcat_pipeline_tests.ops_servers import ROOT, VENV_BIN, celery_workers, openai_stub, postgres_cluster, redis_server

CAMPAIGN = """name: distributed-night
golden_set_version: {version}
judge: {{enabled: "off"}}
systems:
  - system_id: bm25
    retriever: bm25
    max_tokens: 48
  - system_id: their_rag
    http:
      url: {url}
      request_template: '{{"question": "{{{{query}}}}"}}'
      answer_path: result.answer.text
      contexts_path: result.sources
      context_text_field: content
      context_id_field: id
      auth_header: X-Api-Key
      auth_env_var: DIST_RAG_KEY
      auth_scheme: ""
"""
QUESTIONS = [  # (question, reference, a phrase of its source chunk) over hcat_pipeline_tests.bank_corpus
    ("What does an arranged overdraft cost a year?", "19.9 percent a year on the amount overdrawn.", "arranged overdraft at"),
    ("What is the daily fee for an unarranged overdraft?", "A flat fee of 6 pounds a day, at most 60 pounds a month.", "flat fee of 6 pounds"),
    ("Which number do I call to report a lost debit card?", "0800 123 456, open every day of the year.", "0800 123 456"),
    ("How long does a replacement debit card take to arrive?", "Within five working days.", "five working days"),
    ("How much of a fixed-rate mortgage can be overpaid each year without a charge?", "Up to 10 percent of the balance.", "10 percent of the balance"),
    ("How long is a redemption statement valid?", "Thirty days.", "valid for thirty days"),
]
ASKING = ("{q}", "Please tell me: {q}", "A customer asks: {q}", "Quick question. {q}", "I would like to know. {q}")


def sh(env: dict, cmd: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """A command in the project's environment (scripts/env.sh picks the instance config of HCAT_DEPLOYMENT)."""
    return subprocess.run(["bash", "-c", f"source '{ROOT}/scripts/env.sh' && {cmd}"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


def sql(url: str, query: str, args=()) -> list[tuple]:
    import psycopg2

    with psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://")) as conn, conn.cursor() as cur:
        cur.execute(query, args)
        return cur.fetchall()


def steps_on_workers(events) -> dict[str, str]:
    """step key → the Celery worker (its name, without ``@host``) that executed it, from the engine event the worker
    itself writes ("Executing steps … in celery worker")."""
    on_worker = {}
    for e in events:
        if e.dagster_event and e.dagster_event.event_type_value == "ENGINE_EVENT":
            meta = e.dagster_event.engine_event_data.metadata
            if "Celery worker" in meta:
                on_worker[e.step_key] = str(meta["Celery worker"].value).split("@")[0]
    return on_worker


def freeze_bank_cases(wh: Path, golden_dir: Path, version: str, copies: int = 1) -> int:
    """The bank questions (asked ``copies`` ways each, at most 5) and one out-of-scope case over the ingested corpus,
    frozen as ``version`` (no LLM); the number of cases."""
    from hcat_pipeline.golden.cases import cases_frame, freeze_version, new_case

    chunks = pl.read_parquet(wh / "chunks.parquet")
    cases = []
    for asking in ASKING[:copies]:
        for q, ref, phrase in QUESTIONS:
            cid = chunks.filter(pl.col("text").str.contains(phrase, literal=True))["chunk_id"][0]
            cases.append(new_case(category="happy_path", query_type="simple", query=asking.format(q=q), reference_answer=ref,
                                  expected_behavior="answer", source_chunk_ids=[cid], tags=["answerability:answerable"]))  # fmt: skip
    cases.append(new_case(category="out_of_scope", query="Who won the football world cup in 1998?", expected_behavior="abstain",
                          constraints=["must abstain"], tags=["answerability:unanswerable"]))  # fmt: skip
    freeze_version(cases_frame(cases), version, golden_dir)
    return len(cases)


def run_distributed_night(tmp: Path, workers: list[str], copies: int = 1, night: str = "2026-11-21", version: str = "v-dist",
                          planted_key: str = "sk-planted-night-0123456789") -> dict:
    """Ingest, freeze and ``hcat campaign --night`` on Postgres + Redis + ``workers``; what happened (the campaign
    process, the campaign run's events, the LLM stub's calls, the night's wall time)."""
    from hcat_pipeline_tests.bank_corpus import DOCS
    from hcat_pipeline_tests.servers import UserRag, user_rag_server

    logs, data, corpus = tmp / "logs", tmp / "data", tmp / "corpus"
    for d in (logs, corpus):
        d.mkdir(parents=True)
    for name, text in DOCS.items():
        (corpus / name).write_text(text)
    with postgres_cluster() as pg_url, redis_server(logs) as redis_url, openai_stub() as llm, \
            user_rag_server(UserRag(DOCS, "dist-secret")) as rag_url:  # fmt: skip
        (tmp / "campaign.yaml").write_text(CAMPAIGN.format(url=rag_url, version=version))
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("HCAT_", "DAGSTER_"))},
            "PATH": f"{VENV_BIN}:{os.environ['PATH']}", "DAGSTER_HOME": str(tmp / "home"), "HCAT_DEPLOYMENT": "distributed",
            "HCAT_POSTGRES_URL": pg_url, "HCAT_CELERY_BROKER": f"{redis_url}/0", "HCAT_CELERY_BACKEND": f"{redis_url}/1",
            "HCAT_DATA_DIR": str(data), "HCAT_CAMPAIGN_FILE": str(tmp / "campaign.yaml"), "HCAT_LLM_PROVIDER": "openai",
            "HCAT_LLM_MODEL": "stub-model", "HCAT_LLM_BASE_URL": llm.base_url, "OPENAI_API_KEY": planted_key, "DIST_RAG_KEY": "dist-secret",
        }  # fmt: skip
        (tmp / "ingest.json").write_text(json.dumps({"ops": {"corpus": {"config": {"paths": [str(corpus)], "include_embedded": False}}}}))
        with celery_workers(workers, env, logs, timeout_s=300) as wait_ready:
            wait_ready()
            done = sh(env, f"dagster job execute -m hcat_pipeline.definitions -j ingest_job -c '{tmp / 'ingest.json'}'", timeout=600)
            if done.returncode != 0:
                raise RuntimeError(f"ingest_job failed: {(done.stdout + done.stderr)[-4000:]}")
            cases = freeze_bank_cases(data / "warehouse", data / "golden_sets", version, copies)
            t0 = time.perf_counter()
            campaign = sh(env, f"python -m hcat_pipeline.cli campaign --night {night}", timeout=1800)
            night_s = time.perf_counter() - t0
        runs = {job: run_id for run_id, job in sql(pg_url, "SELECT run_id, pipeline_name FROM runs")}
        events = [dg.deserialize_value(r[0], dg.EventLogEntry)
                  for r in sql(pg_url, "SELECT event FROM event_logs WHERE run_id = %s", (runs.get("campaign_run_job"),))]  # fmt: skip
    return {"campaign": campaign, "events": events, "llm_calls": llm.calls, "night_s": night_s, "data": data, "night": night,
            "version": version, "cases": cases}  # fmt: skip
