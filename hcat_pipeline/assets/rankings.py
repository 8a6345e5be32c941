"""Lineage stage: system_rankings, pareto_frontier, case_contamination, grader_gaming — per campaign run
(golden-eval §3.5, §3.6, §7.5, §8). Thin: load, call ``hcat_pipeline.gates``, record metadata.

* ``case_contamination`` — per golden case: contamination risk against the reference corpora in
  ``data/contamination/`` (exact hash, shingle Jaccard / containment, embedding cosine) and, when
  ``memorisation_probe`` is on, the memorisation probe of the ``llm`` resource on the case text.
  High-risk cases are left out of the headline rankings and Pareto numbers below (reported apart).
* ``grader_gaming`` — per case × system: empty, format-only, context-copy, canned, refusal flags; per
  system rates with CIs and ``refuses_everything`` in the metadata.
* ``system_rankings`` — Elo / Bradley-Terry / TrueSkill on per-case outcomes of each configured metric,
  with bootstrap CIs and rank distributions (``RANKINGS`` + ``excluded_cases``).
* ``pareto_frontier`` — quality × USD per case × latency p50 / p95, frontier and dominators.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import dataclasses
import typing

import dagster as dg
import polars as pl
from pydantic import Field, create_model

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.common.canary_ids import drop_canaries
from hcat_pipeline.gates.contamination import (
    EXCLUDED_RISKS,
    case_risk,
    contamination_risk,
    memorisation_probe,
    read_reference_corpora,
    split_headline,
)
from hcat_pipeline.gates.gaming import gaming_flags, gaming_summary, ungamed
from hcat_pipeline.gates.pareto import QUALITY_METRIC, RANKING_METRICS, system_axes
from hcat_pipeline.gates.pareto import pareto_frontier as frontier_of
from hcat_pipeline.gates.rankings import METHODS, RANKINGS, RankingConfig, pairwise_matches, pairwise_table, rank_systems
from hcat_pipeline.io import read_columns
from hcat_pipeline.partitions import campaign_run, split_run_key
from hcat_pipeline.paths import DATA_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.resources.sets import llm_pool

# The Dagster config of the rankers *is* the core's RankingConfig (one field list, one set of defaults).
RankingsConfig = create_model(
    "RankingsConfig",
    __base__=dg.Config,
    metrics=(list[str], list(RANKING_METRICS)),
    methods=(list[str], list(METHODS)),  # elo | bradley_terry | trueskill (Dagster config has no list of literals)
    exclude_risk=(list[str], list(EXCLUDED_RISKS)),  # high | medium: contamination risks left out of the headline
    **{f.name: (typing.get_type_hints(RankingConfig)[f.name], f.default) for f in dataclasses.fields(RankingConfig)},
)


def _check_lists(methods: list[str], risks: list[str]) -> None:
    bad = [m for m in methods if m not in METHODS] + [r for r in risks if r not in ("high", "medium")]
    if bad:
        raise dg.Failure(f"invalid config values {bad}: methods are {list(METHODS)}, exclude_risk values are high | medium")


def _stamp(frame: pl.DataFrame, context) -> pl.DataFrame:
    version, night = split_run_key(context)
    return frame.with_columns(pl.lit(version).alias("golden_set_version"), pl.lit(night).alias("night"))


class ContaminationConfig(dg.Config):
    contamination_dir: str = Field(default="", description="reference corpora; empty: data/contamination")
    use_embeddings: bool = True
    memorisation_probe: bool = Field(default=False, description="ask the llm resource to continue each case (slow: one call per case)")
    probe_max_cases: int = Field(default=20, ge=1)
    probe_max_tokens: int = Field(default=64, ge=8)


@dg.asset(automation_condition=ON_NEW_RUN_DATA, partitions_def=campaign_run, group_name="integrity", pool=llm_pool(),
          deps=["rag_responses"],  # per run, after the answers: so campaign_run_job (rag_responses → downstream) includes it
          description="Per campaign run, per golden case: contamination risk vs data/contamination/ corpora (exact, near-duplicate, "
          "embedding) with evidence, and optionally the memorisation probe of the llm resource.")  # fmt: skip
def case_contamination(context: dg.AssetExecutionContext, config: ContaminationConfig, embedding_model: EmbeddingModel, llm: LLM,
                       golden_set: pl.DataFrame) -> pl.DataFrame:  # fmt: skip
    directory = config.contamination_dir or DATA_DIR / "contamination"
    docs, errors = read_reference_corpora(directory)
    per_field = contamination_risk(golden_set, docs, embed=embedding_model.embed if config.use_embeddings and docs else None)
    table = case_risk(per_field)
    probed = 0
    if config.memorisation_probe:
        items = [(r["case_id"], " ".join(t for t in (r["query"], r.get("reference_answer")) if t))
                 for r in golden_set.head(config.probe_max_cases).to_dicts()]  # fmt: skip
        probe = memorisation_probe(items, llm, max_tokens=config.probe_max_tokens)
        probed = int(probe["error"].is_null().sum())
        table = table.join(probe.rename({"recall": "probe_recall", "run": "probe_run", "error": "probe_error"}), on="case_id", how="left")
        table = table.with_columns(pl.when(pl.col("memorised").fill_null(False)).then(pl.lit("high")).otherwise(pl.col("risk")).alias("risk"))
    table = _stamp(table, context)
    counts = {k: int((table["risk"] == k).sum()) for k in ("high", "medium", "low")}
    context.add_output_metadata({
        "dagster/row_count": table.height, "reference_documents": len(docs), "contamination_dir": str(directory),
        "risk": dg.MetadataValue.json(counts), "file_errors": len(errors),
        "file_error_rows": preview(pl.DataFrame(errors, schema={"file": pl.String, "line": pl.Int64, "error": pl.String}), 30, 160),
        "memorisation_probed": probed,
        "flagged": preview(table.filter(pl.col("risk") != "low").select("case_id", "risk", "evidence"), 30, 160),
    })  # fmt: skip
    return table


class GraderGamingConfig(dg.Config):
    allowed_hosts: list[str] = Field(default_factory=list, description="hosts a system's tool calls may reach (the campaign "
                                     "file's trace_allowed_hosts); any other URL in a call is outbound network access (§7.5)")
    allowed_tools: list[str] = Field(default_factory=list, description="tools of the task that are shells or interpreters by name "
                                     "(the campaign file's trace_allowed_tools): not flagged as shell calls")


@dg.asset(automation_condition=ON_NEW_RUN_DATA, partitions_def=campaign_run, group_name="integrity",
          description="Per campaign run, case × system: grader-gaming flags (empty, format-only, whole-context copy, canned, refusal) "
          "and cheating read from the tool-call trace (network, the evaluation's files, shell, uncited sources); "
          "per-system rates with CIs and refuses_everything in the metadata.")  # fmt: skip
def grader_gaming(context: dg.AssetExecutionContext, config: GraderGamingConfig, rag_responses: pl.DataFrame,
                  golden_set: pl.DataFrame) -> pl.DataFrame:  # fmt: skip
    flags = _stamp(gaming_flags(rag_responses, golden_set, tuple(config.allowed_hosts), tuple(config.allowed_tools)), context)
    summary = gaming_summary(flags)
    cols = ["system_id", "n", "failed", *[f"{f}_rate" for f in ("empty", "format_only", "context_copy", "canned", "question_echo", "refusal",
                                                                "trace_cheating", "gamed")],
            "gamed_ci_low", "gamed_ci_high", "refusal_on_answerable", "refuses_everything"]  # fmt: skip
    context.add_output_metadata({"dagster/row_count": flags.height, "by_system": preview(summary.select(cols), 50),
                                 "flagged": preview(flags.filter(pl.col("gamed")).select("system_id", "case_id", "evidence"), 30, 160)})  # fmt: skip
    return flags


@dg.asset(automation_condition=ON_NEW_RUN_DATA, partitions_def=campaign_run, group_name="integrity",
          description="Per campaign run: Elo, Bradley-Terry and TrueSkill ratings of the systems from per-case outcomes of each "
          "configured metric, with bootstrap CIs and rank distributions; high-risk (contaminated) cases excluded.")  # fmt: skip
def system_rankings(context: dg.AssetExecutionContext, config: RankingsConfig, metric_tables: pl.LazyFrame,
                    case_contamination: pl.DataFrame, grader_gaming: pl.DataFrame) -> pl.DataFrame:  # fmt: skip
    _check_lists(config.methods, config.exclude_risk)
    metric_tables = read_columns(metric_tables, ["case_id", "system_id", *config.metrics])  # a scan: the ranked columns only
    cfg = RankingConfig(**{f.name: getattr(config, f.name) for f in dataclasses.fields(RankingConfig)})
    scored = ungamed(drop_canaries(metric_tables), grader_gaming, config.metrics)  # a gamed answer never wins a match
    headline, apart = split_headline(scored, case_contamination, config.exclude_risk)
    frames, skipped, pairs = [], {}, []
    for metric in config.metrics:
        if metric not in headline.columns:
            skipped[metric] = "not a column of metric_tables"
            continue
        try:
            frames.append(rank_systems(headline, metric, tuple(config.methods), cfg))
            pairs.append(pairwise_table(pairwise_matches(headline, metric, tie_margin=cfg.tie_margin)).with_columns(pl.lit(metric).alias("metric")))
        except ValueError as e:
            skipped[metric] = str(e)
    systems = headline["system_id"].n_unique() if "system_id" in headline.columns else 0
    if not frames and systems >= 2:
        raise dg.Failure(f"system_rankings: no metric could be ranked: {skipped}")
    if not frames:  # a campaign of one system: nothing to rank against, said in the metadata (not a failed stage)
        frames, pairs = [pl.DataFrame(schema=RANKINGS)], [pl.DataFrame()]
        skipped["*"] = f"a ranking needs at least 2 systems; this run has {systems}"
    table = _stamp(pl.concat(frames), context).with_columns(pl.lit(apart["case_id"].n_unique()).alias("excluded_cases"))
    context.add_output_metadata({
        "dagster/row_count": table.height, "skipped_metrics": dg.MetadataValue.json(skipped),
        "excluded_cases": apart["case_id"].n_unique(),
        "rankings": preview(table.select("metric", "method", "system_id", "rating", "ci_low", "ci_high", "rank", "p_best", "n_cases"), 60),
        "pairwise": preview(pl.concat(pairs), 60),
    })  # fmt: skip
    return table


class ParetoConfig(dg.Config):
    quality_metric: str = Field(default=QUALITY_METRIC, description="the quality axis: a metric_tables column (the validated "
                                "groundedness by default); a system without any finite value is not placed, with the reason")
    tolerance: float = Field(default=0.0, ge=0.0, description="relative differences within this count as equal (on top of the "
                             "CIs having to be apart)")
    exclude_risk: list[str] = Field(default=list(EXCLUDED_RISKS), description="high | medium: contamination risks left out of the headline")


@dg.asset(automation_condition=ON_NEW_RUN_DATA, partitions_def=campaign_run, group_name="integrity",
          description="Per campaign run: quality × USD per case × latency p50 / p95 per system (with CIs), the Pareto frontier, "
          "and for each dominated system who dominates it on which axes (golden-eval §8).")  # fmt: skip
def pareto_frontier(context: dg.AssetExecutionContext, config: ParetoConfig, rag_responses: pl.LazyFrame, metric_tables: pl.LazyFrame,
                  case_contamination: pl.DataFrame, grader_gaming: pl.DataFrame) -> pl.DataFrame:  # fmt: skip
    _check_lists([], config.exclude_risk)
    # scans: the quality axis and the cost / latency columns only
    metric_tables = read_columns(metric_tables, ["case_id", "system_id", config.quality_metric])
    rag_responses = read_columns(rag_responses, ["case_id", "system_id", "latency_s", "cost_usd"])
    if config.quality_metric not in metric_tables.columns:
        raise dg.Failure(f"pareto_frontier: quality_metric {config.quality_metric!r} is not a column of metric_tables")
    metrics, _ = split_headline(ungamed(drop_canaries(metric_tables), grader_gaming, [config.quality_metric]), case_contamination,
                                config.exclude_risk)  # fmt: skip
    responses, _ = split_headline(drop_canaries(rag_responses), case_contamination, config.exclude_risk)
    table = _stamp(frontier_of(system_axes(responses, metrics, config.quality_metric), tolerance=config.tolerance), context)
    context.add_output_metadata({
        "dagster/row_count": table.height,
        "frontier": dg.MetadataValue.json(table.filter(pl.col("on_frontier"))["system_id"].to_list()),
        "not_placed": dg.MetadataValue.json({r["system_id"]: r["excluded_reason"] for r in table.filter(pl.col("excluded_reason").is_not_null()).to_dicts()}),
        "pareto": preview(table.select("system_id", "quality", "quality_ci_low", "quality_ci_high", "cost_usd_per_case", "latency_p50_s",
                                       "latency_p95_s", "n", "on_frontier", "explanation"), 50, 200),
    })  # fmt: skip
    return table
