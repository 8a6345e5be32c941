"""Lineage stage: systems under test answer the golden set — ``rag_responses`` — and their
retrieval / answerability figures — ``retrieval_metrics`` (golden-eval §4, §10; exam paper §4.2).

A campaign (this asset's config) lists the systems: each is retriever × LLM × ICL × prompt on the
``llm`` resource, or a user's own RAG service over HTTP; responses imported with
``hcat import-responses`` are added as further systems. Responses are checkpointed one by one, so a
re-run after a crash or Ctrl-C continues where it stopped without calling the LLM again for a
finished case × system.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

from pathlib import Path
from typing import Optional

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import frame_metadata, preview
from hcat_pipeline.core.answerability import is_refusal
from hcat_pipeline.core.rag import (
    CheckpointStore,
    RagPipeline,
    SystemConfig,
    failure_rates,
    responses_frame,
    run_responses,
    select_cases,
)
from hcat_pipeline.core.response_import import read_imported_responses
from hcat_pipeline.core.retrieval import build_retriever
from hcat_pipeline.core.retrieval_metrics import per_case_retrieval, retrieval_metrics_table
from hcat_pipeline.partitions import golden_set_version
from hcat_pipeline.paths import DATA_DIR, WAREHOUSE_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.http_system import HttpRagSystem
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.schemas import RAG_RESPONSES, conform

CHECKPOINT_DIR = WAREHOUSE_DIR / "_checkpoints" / "rag_responses"
IMPORT_DIR = DATA_DIR / "imports" / "rag_responses"


class HttpSystemSpec(dg.Config):
    """A user's RAG service (see resources/http_system.py for the meaning of each field)."""

    url: str
    method: str = "POST"
    request_template: str = '{"query": "{{query}}"}'
    answer_path: str = "answer"
    contexts_path: str = ""
    context_text_field: str = "text"
    context_id_field: str = "chunk_id"
    input_tokens_path: str = ""
    output_tokens_path: str = ""
    cost_path: str = ""
    auth_header: str = "Authorization"
    auth_env_var: str = ""
    auth_scheme: str = "Bearer"
    timeout_s: float = 30.0
    max_concurrency: int = 4
    max_retries: int = 3
    backoff_s: float = 0.5


class SystemSpec(dg.Config):
    """One system under test: retriever × LLM (the ``llm`` resource) × ICL × prompt, or ``http``."""

    system_id: str
    retriever: str = "bm25"  # closed_book | oracle | bm25 | dense | hybrid (ignored for http)
    top_k: int = 3
    icl_examples: int = 0  # 0 / 1 / 2 in-context examples from other cases of the golden set
    prompt: str = "rag_v1"  # hcat_pipeline/prompts/<prompt>.txt
    max_tokens: int = 128
    temperature: float = 0.0
    seed: int = 0
    inject_distractors: bool = True
    http: Optional[HttpSystemSpec] = None


def default_systems() -> list:
    return [
        SystemSpec(system_id="closed_book", retriever="closed_book", prompt="rag_closed_book_v1"),
        SystemSpec(system_id="bm25", retriever="bm25"),
        SystemSpec(system_id="dense", retriever="dense"),
        SystemSpec(system_id="hybrid", retriever="hybrid"),
        SystemSpec(system_id="oracle", retriever="oracle"),
    ]


class RagResponsesConfig(dg.Config):
    """The campaign: which systems answer which cases. Defaults fit the 15-minute local campaign."""

    systems: list[SystemSpec] = Field(default_factory=default_systems)
    max_cases: int = 12  # cases per system, spread over categories (0 = the whole golden set)
    case_seed: int = 0
    max_failure_rate: float = 0.2  # a system failing more cases than this fails the run
    retry_failed: bool = True  # re-attempt checkpointed failures on a re-run
    checkpoint_dir: str = str(CHECKPOINT_DIR)
    include_imports: bool = True
    import_dir: str = str(IMPORT_DIR)  # <import_dir>/<version>/<system_id>.{parquet,jsonl}


def _system_config(s: SystemSpec) -> SystemConfig:
    return SystemConfig(system_id=s.system_id, retriever=s.retriever, top_k=s.top_k, icl_examples=s.icl_examples,
                        prompt=s.prompt, max_tokens=s.max_tokens, temperature=s.temperature, seed=s.seed,
                        inject_distractors=s.inject_distractors)


def _describe(frame: pl.DataFrame, system_id: str, **cols) -> pl.DataFrame:
    return frame.with_columns(*[pl.lit(v).alias(k) for k, v in cols.items()])


@dg.asset(
    partitions_def=golden_set_version,
    group_name="responses",
    pool="llm",
    description="One response per golden-set case × system under test: contexts (chunk ids, ranks), answer, "
    "latency, tokens, cost, error, configuration hash. Checkpointed per response; resumable.",
)
def rag_responses(
    context: dg.AssetExecutionContext,
    config: RagResponsesConfig,
    llm: LLM,
    embedding_model: EmbeddingModel,
    golden_set: pl.DataFrame,
    chunks: pl.DataFrame,
    chunk_embeddings: pl.DataFrame,
) -> pl.DataFrame:
    version = context.partition_key
    ids = [s.system_id for s in config.systems]
    if len(set(ids)) != len(ids):
        raise dg.Failure(f"rag_responses: duplicate system_id in the campaign config: {ids}")
    selected = select_cases(golden_set, config.max_cases, config.case_seed)
    cases = selected.to_dicts()
    pool = golden_set.to_dicts()  # ICL examples come from the whole version, never the case itself
    emb = chunks.select("chunk_id", "text").join(chunk_embeddings, on="chunk_id", how="inner")
    chunk_ids, texts = emb["chunk_id"].to_list(), emb["text"].to_list()
    matrix = emb["embedding"].to_numpy()
    llm_id = f"{llm.provider}/{llm.model_name}"
    cache: dict = {}

    store = CheckpointStore(Path(config.checkpoint_dir) / version)
    frames, run_meta = [], {}
    total_called = total_reused = 0
    log_every = max(1, len(cases) // 4)

    def progress(rec):
        if rec["case_id"] in progress_marks:
            context.log.info(f"rag_responses[{version}] {rec['system_id']}: {rec['case_id']} done"
                             + (f" (error: {rec['error']})" if rec["error"] else ""))

    progress_marks = {c["case_id"] for c in cases[::log_every]}
    for spec in config.systems:
        if spec.http is not None:
            system = HttpRagSystem(system_id=spec.system_id, **spec.http.model_dump())
            concurrency, kind = spec.http.max_concurrency, "http"
            desc = {"llm": None, "retriever": "external", "top_k": None, "icl_examples": None, "prompt_hash": None}
        else:
            retriever = build_retriever(spec.retriever, chunk_ids, texts, matrix, embedding_model.embed, cache)
            system = RagPipeline(_system_config(spec), retriever, llm, llm_id, icl_pool=pool)
            concurrency, kind = max(1, llm.max_concurrency), "rag"
            desc = {"llm": llm_id, "retriever": spec.retriever, "top_k": spec.top_k, "icl_examples": spec.icl_examples,
                    "prompt_hash": system.prompt_sha}
        records, stats = run_responses([system], cases, store, concurrency, config.retry_failed, on_record=progress)
        total_called += stats.called
        total_reused += stats.reused
        st = stats.per_system.get(spec.system_id, {})
        run_meta[spec.system_id] = {
            "kind": kind, "config_hash": system.config_hash, "called": stats.called, "reused": stats.reused,
            "failed_now": stats.failed,
            "responses_per_minute": round(60 * stats.called / st["call_seconds"], 2) if st.get("call_seconds") else None,
        }
        frames.append(_describe(responses_frame(records), spec.system_id, **desc))
        context.log.info(f"rag_responses[{version}] {spec.system_id}: {stats.called} called, {stats.reused} resumed, "
                         f"{stats.failed} failed, {stats.seconds:.1f}s")

    import_errors = pl.DataFrame(schema={"file": pl.String, "line": pl.Int64, "reason": pl.String})
    imp_dir = Path(config.import_dir) / version
    if config.include_imports and imp_dir.is_dir():
        known = set(golden_set["case_id"].to_list())
        queries = dict(zip(golden_set["case_id"], golden_set["query"]))
        for f in sorted([*imp_dir.glob("*.parquet"), *imp_dir.glob("*.jsonl")]):
            sid = f.stem
            if sid in run_meta:
                raise dg.Failure(f"imported responses {f} use system id {sid!r}, already a configured system")
            good, bad = read_imported_responses(f, sid, known, queries)
            import_errors = pl.concat([import_errors, bad])
            frames.append(_describe(good, sid, llm=None, retriever="external", top_k=None, icl_examples=None, prompt_hash=None))
            run_meta[sid] = {"kind": "import", "file": str(f), "rows": good.height, "bad_rows": bad.height,
                             "config_hash": good["config_hash"][0] if good.height else None}
            if bad.height:
                context.log.warning(f"{f}: {bad.height} bad row(s) skipped, e.g. line {bad['line'][0]}: {bad['reason'][0]}")

    out = pl.concat(frames, how="diagonal_relaxed") if frames else responses_frame([])
    out = out.with_columns(pl.col("top_k").cast(pl.Int32), pl.col("icl_examples").cast(pl.Int32))
    conform(out, RAG_RESPONSES)

    by_sys = out.group_by("system_id", maintain_order=True).agg(
        pl.len().alias("responses"),
        pl.col("error").is_not_null().sum().alias("failed"),
        pl.col("latency_s").mean().round(3).alias("mean_latency_s"),
        pl.col("output_tokens").sum().alias("output_tokens"),
        pl.col("cost_usd").sum().alias("cost_usd"),
    )
    rates = failure_rates(out.select("system_id", "error").to_dicts())
    failed_total = int(out["error"].is_not_null().sum())
    meta = {
        **frame_metadata(out.select("case_id", "system_id", "answer", "error", "latency_s")),
        "golden_set_version": version,
        "cases": len(cases),
        "cases_in_version": golden_set.height,
        "systems": len(run_meta),
        "llm_calls_this_run": total_called,
        "responses_resumed_from_checkpoint": total_reused,
        "failed_responses": failed_total,
        "failure_rate_by_system": dg.MetadataValue.json({k: round(v, 4) for k, v in rates.items()}),
        "by_system": preview(by_sys, 50),
        "systems_run": dg.MetadataValue.json(run_meta),
        "import_bad_rows": import_errors.height,
        "checkpoint": str(store.path),
    }
    if import_errors.height:
        meta["import_errors"] = preview(import_errors, 30, 160)
    over = {s: r for s, r in rates.items() if r > config.max_failure_rate}
    if over:
        worst = out.filter(pl.col("error").is_not_null()).select("system_id", "case_id", "error").head(10)
        raise dg.Failure(
            description=f"rag_responses[{version}]: failure rate above max_failure_rate={config.max_failure_rate} for "
            + ", ".join(f"{s} ({r:.0%})" for s, r in over.items())
            + f". Finished responses are checkpointed in {store.path}; fix the cause and re-run to resume.",
            metadata={**meta, "failures": preview(worst, 10, 200)},
        )
    context.add_output_metadata(meta)
    return out


class RetrievalMetricsConfig(dg.Config):
    # rules: core.answerability.is_refusal (stock phrases); classifier: core.metrics.refusal (logistic heads)
    refusal_detector: str = "rules"
    refusal_threshold: float = 0.5


@dg.asset(
    partitions_def=golden_set_version,
    group_name="responses",
    description="Per system: recall@k, precision@k and MRR against the cases' source chunks; abstention rate on "
    "out-of-scope cases and false-refusal rate on answerable ones (golden-eval §10.2, §10.4).",
)
def retrieval_metrics(context: dg.AssetExecutionContext, config: RetrievalMetricsConfig, rag_responses: pl.DataFrame,
                      golden_set: pl.DataFrame) -> pl.DataFrame:
    k_by_system = {}
    no_retrieval = []
    if "top_k" in rag_responses.columns:
        for sid, k, retr in rag_responses.select("system_id", "top_k", "retriever").unique("system_id").iter_rows():
            if k is not None:
                k_by_system[sid] = int(k)
            if retr == "closed_book":
                no_retrieval.append(sid)
    refusal = is_refusal
    if config.refusal_detector == "classifier":
        from hcat_pipeline.core.metrics.refusal import refusal_scores

        answers = [a for a in rag_responses["answer"].unique().to_list() if a]
        flagged = {a for a, p in zip(answers, refusal_scores(answers)) if p is not None and p >= config.refusal_threshold}

        def refusal(a):
            return a in flagged
    elif config.refusal_detector != "rules":
        raise dg.Failure(f"refusal_detector={config.refusal_detector!r}: expected 'rules' or 'classifier'")
    per_case = per_case_retrieval(rag_responses, golden_set, k_by_system, refusal)
    table = retrieval_metrics_table(per_case, no_retrieval)
    context.add_output_metadata({
        **frame_metadata(table, 50),
        "golden_set_version": context.partition_key,
        "systems": table.height,
        "refusal_detector": config.refusal_detector,
    })
    return table
