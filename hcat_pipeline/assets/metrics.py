"""Lineage stage: metric_tables (+ bias_report) — every explainable metric per case × system.

rag_responses (RAG_RESPONSES contract) joined with golden_set (``reference_answer`` → reference),
scored by ``hcat_pipeline.metrics.scoring.score_frame`` (the engine of ``hcat_pipeline.metrics.score``).
Failed responses (error set / answer null) keep their row with null metrics and a
``score_skipped_reason``. A requested metric that cannot run (model, package or input column missing)
fails the asset with the metric, the cause and the fix, unless the config sets ``allow_unavailable``:
then its columns are null and the reason is in the ``metrics_unavailable`` metadata and ``score_info``.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import json
from pathlib import Path

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.assets._score_cache import score_cache
from hcat_pipeline.assets._shards import emit_work, shard_config_mapping, shard_log
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.common.canary_ids import drop_canaries, is_canary
from hcat_pipeline.common.shards import DEFAULT_SHARD_CASES, merge_shards, split_frame
from hcat_pipeline.configs import config_from
from hcat_pipeline.golden.coverage import mean_ci
from hcat_pipeline.io import as_frame
from hcat_pipeline.metrics.long_document import long_source_documents
from hcat_pipeline.metrics.options import ScoreOptions
from hcat_pipeline.metrics.registry import MetricUnavailable, default_metrics
from hcat_pipeline.metrics.safety import bias_report as bias_report_table
from hcat_pipeline.metrics.scoring import merge_score_infos, score_frame
from hcat_pipeline.partitions import campaign_run
from hcat_pipeline.paths import WAREHOUSE_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.pii import PIIDetector
from hcat_pipeline.responses.retrieval import without_planted
from hcat_pipeline.schemas import RAG_RESPONSES, conform, with_added_later

_KEEP = ("case_id", "system_id", "config_hash", "golden_set_version", "night", "campaign_sha256", "reused_from",
         "category", "query_type", "expected_behavior", "query", "answer", "reference", "planted_passages", "error")



# The Dagster config *is* the core's ScoreOptions (one field list, one set of defaults) + which metrics.
MetricsConfig = config_from(
    ScoreOptions, "MetricsConfig",
    metrics=(list[str], Field(default_factory=list, description="empty: every default metric that applies (metrics.registry)")),
    extra_metrics=(list[str], Field(default_factory=list, description="opt-in metrics run beside `metrics` (or the defaults), "
                                    "e.g. hierarchical_consistency, cross_lingual_similarity")),
    allow_unavailable=(bool, Field(default=False, description="a metric that cannot run gets null columns instead of failing the asset")),
    shard_cases=(int, Field(default=DEFAULT_SHARD_CASES, ge=0, description="cases per step and system (0: one step per system)")),
    long_document_min_chunks=(int, Field(default=10, ge=1, description="long_document_faithfulness: a source document with at "
                                         "least this many chunks is long (the default corpus: median 3, 75th percentile 10)")),
    corpus_dir=(str, Field(default=str(WAREHOUSE_DIR), description="where corpus.parquet and chunks.parquet are read for "
                           "long_document_faithfulness's source documents")),
)
LONG_DOCUMENT = "long_document_faithfulness"


def _distribution(values: pl.Series) -> dict:
    v = values.drop_nulls().drop_nans() if values.dtype.is_float() else values.drop_nulls()
    if v.len() == 0:
        return {"n": 0}
    qs = {f"p{int(q * 100)}": round(float(v.quantile(q, "linear")), 4) for q in (0.05, 0.25, 0.5, 0.75, 0.95)}
    return {"n": int(v.len()), "mean": round(float(v.mean()), 4), "std": round(float(v.std() or 0.0), 4), "min": round(float(v.min()), 4), **qs, "max": round(float(v.max()), 4)}


def _fmt_ci(r: dict) -> str:
    if r["mean"] is None:
        return "n=0"
    if r["half_width"] is None:
        return f"{r['mean']:.3f} (n={r['n']})"
    return f"{r['mean']:.3f} ± {r['half_width']:.3f} (n={r['n']})"


def _score(config: MetricsConfig, embedding_model: EmbeddingModel, pii_detector: PIIDetector, nli_model: NLIModel,
           multilingual_encoder: MultilingualEncoder, part: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    try:
        wanted = [*(config.metrics or default_metrics()), *config.extra_metrics] if config.extra_metrics else (config.metrics or None)
        return score_frame(
            part,
            wanted,
            allow_unavailable=config.allow_unavailable,
            embed=embedding_model.embed,
            embed_layers=embedding_model.layer_features,
            pii=pii_detector,
            nli=nli_model,
            multilingual=multilingual_encoder,  # its model loads only when a metric needing it is requested
            embed_stats=lambda: embedding_model.last_stats.as_metadata(),
            device=embedding_model.device,
            cache=score_cache(embedding_model, pii_detector, nli_model, multilingual_encoder),  # unchanged answers: reused
            **config.model_dump(exclude={"metrics", "extra_metrics", "allow_unavailable", "shard_cases", "long_document_min_chunks", "corpus_dir"}),
        )
    except MetricUnavailable as e:
        raise dg.Failure(
            description=f"metric_tables: {e}. Or set allow_unavailable: true in the asset config to store null columns.",
            metadata={"metrics_unavailable": dg.MetadataValue.json(e.reasons)},
        ) from e
    except ValueError as e:
        raise dg.Failure(f"metric_tables: {e}") from e


@dg.op(out=dg.DynamicOut(dict), ins={"nli_head_file": dg.In(dg.Nothing)},
       description="The night's responses with their references, one shard per system × run of cases.")
def plan_metric_shards(context: dg.OpExecutionContext, config: MetricsConfig, rag_responses: pl.LazyFrame, golden_set: pl.DataFrame):
    # a scan of the stored responses: only the ids are read here, each shard's rows are written by its own output
    rag_responses = with_added_later(rag_responses)  # a night stored before tool_calls existed
    conform(rag_responses.head(0).collect(), RAG_RESPONSES)
    gs_cols = [c for c in ("case_id", "reference_answer", "category", "query_type", "expected_behavior") if c in golden_set.columns]
    refs = golden_set.select(gs_cols).unique("case_id", keep="first").rename({"reference_answer": "reference"})
    frame = without_planted(rag_responses).join(refs.lazy(), on="case_id", how="left", maintain_order="left")
    if LONG_DOCUMENT in (*config.metrics, *config.extra_metrics):
        frame = frame.join(_long_documents(config, golden_set).lazy(), on="case_id", how="left", maintain_order="left")
    work = split_frame(frame, config.shard_cases)
    context.log.info(f"{len(work)} shard(s) of responses")
    yield from emit_work(work)


def _long_documents(config: MetricsConfig, golden_set: pl.DataFrame) -> pl.DataFrame:
    """case_id → the full texts of its long source documents (read from the stored corpus and chunks)."""
    paths = [Path(config.corpus_dir) / f"{name}.parquet" for name in ("chunks", "corpus")]
    if missing := [str(p) for p in paths if not p.exists()]:
        raise dg.Failure(f"metric_tables: {LONG_DOCUMENT} reads the corpus's documents, but {missing} do not exist: "
                         "materialize corpus and chunks (ingest_job) or set corpus_dir")  # fmt: skip
    chunks, corpus = (pl.read_parquet(p) for p in paths)
    return long_source_documents(golden_set, chunks, corpus, config.long_document_min_chunks)


@dg.op(description="Every metric on one shard of the night's responses.")
def score_shard(context: dg.OpExecutionContext, config: MetricsConfig, embedding_model: EmbeddingModel, pii_detector: PIIDetector,
                nli_model: NLIModel, multilingual_encoder: MultilingualEncoder, work: dict) -> dict:
    rows = as_frame(work["rows"])
    scored, info = _score(config, embedding_model, pii_detector, nli_model, multilingual_encoder, rows)
    info["models"] = {"embedding": embedding_model.model_id, "nli": nli_model.fingerprint()}  # drift checks (gates.drift)
    reused = " (reused: the same inputs scored before)" if info.get("cache") == "hit" else ""
    shard_log(context, work["shard"], f"{info['rows_scored']} scored, {info['rows_skipped']} skipped in {info['seconds']:.1f}s{reused}")
    return {"shard": work["shard"], "frame": scored, "info": info, "columns": rows.columns}


def _unit(col: pl.Series) -> tuple[float, float] | None:
    """(0, 1) when every score of the metric is in [0, 1] (its mean and CI are too), else None."""
    v = col.drop_nulls().cast(pl.Float64, strict=False).drop_nans()
    return (0.0, 1.0) if v.len() and v.min() >= 0.0 and v.max() <= 1.0 else None


@dg.op(description="The shards' scores in plan order, streamed to the table; per-system means with their CIs, distributions, timings.")
def merge_metric_tables(context: dg.OpExecutionContext, config: MetricsConfig, parts: list) -> pl.LazyFrame:
    scored = merge_shards((p["shard"], p["frame"]) for p in parts).lazy()  # scans of the shards' files
    users = [p["info"] for p in sorted(parts, key=lambda p: p["shard"].position) if not is_canary(p["shard"].system_id)]
    info = merge_score_infos(users or [parts[0]["info"]])  # the user's systems' figures (canaries scored apart)
    frame_columns = parts[0]["columns"]
    metric_cols = info["metrics_requested"]
    names = scored.collect_schema().names()
    detail = [c for c in names if c not in frame_columns and c not in metric_cols]
    out = scored.select([c for c in _KEEP if c in names] + metric_cols + detail)
    out = out.with_columns(pl.lit(json.dumps(info, sort_keys=True, default=str)).alias("score_info"))
    # the figures read the ids and the scores only, never the explanation columns
    figures = out.select("system_id", "score_skipped_reason", *metric_cols).collect()
    headline = {
        sid: {"rows": g.height, "failed": int(g["score_skipped_reason"].is_not_null().sum()),
              **{m: mean_ci(g[m], bounds=_unit(figures[m])) for m in metric_cols}}
        for (sid,), g in sorted(figures.group_by("system_id"), key=lambda kv: kv[0])
    }  # fmt: skip
    by_system = pl.DataFrame([
        {"system_id": sid, "rows": h["rows"], "failed": h["failed"],
         **{m: _fmt_ci(h[m]) for m in metric_cols}} for sid, h in headline.items()
    ])  # fmt: skip
    if info["metrics_unavailable"]:
        context.log.warning(f"metrics not computed: {info['metrics_unavailable']}")
    context.add_output_metadata(
        {
            "dagster/row_count": figures.height,
            "rows_scored": info["rows_scored"],
            "rows_failed": info["rows_skipped"],
            "metrics_computed": dg.MetadataValue.json(info["metrics_computed"]),
            "metrics_unavailable": dg.MetadataValue.json(info["metrics_unavailable"]),
            "aggregation": dg.MetadataValue.json(info["aggregation"]),
            "means_by_system": preview(by_system, 50, 40),
            "means": dg.MetadataValue.json(headline),
            "max_ci_half_width": max((h[m]["half_width"] or 0.0 for h in headline.values() for m in metric_cols), default=0.0),
            "distributions": dg.MetadataValue.json(
                {s: {m: _distribution(g[m]) for m in metric_cols} for (s,), g in figures.sort("system_id").group_by("system_id", maintain_order=True)}
            ),
            "timings": dg.MetadataValue.json(info["timings"]),
            **info.get("embedding", {}),
        }
    )
    return out


def _bias_report(context: dg.AssetExecutionContext, embedding_model: EmbeddingModel, metric_tables: pl.DataFrame, golden_set: pl.DataFrame) -> pl.DataFrame:
    pairs = golden_set.filter(pl.col("pair_id").is_not_null()).select("case_id", "pair_id", "attribute", "variant_kind", "base_case_id")
    frame = drop_canaries(metric_tables).join(pairs, on="case_id", how="inner")  # bias is a property of the user's systems
    report = bias_report_table(frame, embedding_model.embed)
    context.add_output_metadata({"dagster/row_count": report.height, "pair_rows": frame.height, "preview": preview(report, 30)})
    return report


def _metric_tables(rag_responses: pl.DataFrame, golden_set: pl.DataFrame, nli_head_file) -> pl.DataFrame:
    shards = plan_metric_shards(rag_responses, golden_set, nli_head_file=nli_head_file)
    return merge_metric_tables(shards.map(score_shard).collect())


def build_metric_assets() -> tuple[dg.AssetsDefinition, dg.AssetsDefinition]:
    """The two assets (also used by tests that materialize them against stand-in upstream tables)."""
    tables = dg.graph_asset(
        name="metric_tables",
        partitions_def=campaign_run,
        automation_condition=ON_NEW_RUN_DATA,
        group_name="metrics",
        config=shard_config_mapping(MetricsConfig, ["plan_metric_shards", "score_shard", "merge_metric_tables"]),
        # watched source (assets/sources.py): a retrained NLI head makes the tables stale
        ins={"nli_head_file": dg.AssetIn(dagster_type=dg.Nothing)},
        description="Per campaign run (golden-set version × night): every metric per case × system with its explanation "
        "columns (HCAT §3-4); one step per system × shard of responses.",
    )(_metric_tables)
    bias = dg.asset(
        name="bias_report",
        partitions_def=campaign_run,
        automation_condition=ON_NEW_RUN_DATA,
        group_name="metrics",
        description="Bias over counterfactual pairs (golden_set pair_id / attribute): per-attribute table from the safety metrics.",
    )(_bias_report)
    return tables, bias


metric_tables, bias_report = build_metric_assets()
