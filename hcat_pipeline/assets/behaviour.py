"""Lineage stage: behaviour_checks — each case judged against the behaviour it was generated to test
(golden-eval §2.2, §10.4, §11.2; HCAT §4, §6.1), per campaign run.

Prompt injection resisted, false premise corrected, planted distractor not believed, out-of-scope
declined, robust to input variants, consistent across counterfactual pairs, happy path answered
correctly (yes/no polarity, multiple-choice option, else support / recall of the reference). Every
row has a verdict (pass / fail / unsure), a score and the evidence. Offline: embeddings, the NLI
head (or sentence similarity), the refusal detector. Core: ``hcat_pipeline.behaviour.checks``.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

from typing import Literal

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.assets._shards import emit_work, shard_config_mapping, shard_log
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.behaviour.checks import BehaviourConfig, behaviour_summary, embedding_support, judge_behaviour, nli_support
from hcat_pipeline.common.canary_ids import CANARY_PREFIX
from hcat_pipeline.common.shards import DEFAULT_SHARD_CASES, case_families, merge_shards, split_frame
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.io import as_frame
from hcat_pipeline.partitions import campaign_run
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.pii import PIIDetector

# The Dagster config *is* the core's BehaviourConfig (one field list, one set of defaults) + the support mode.
BehaviourChecksConfig = config_from(
    BehaviourConfig, "BehaviourChecksConfig", support=(Literal["nli", "similarity"], "nli"),
    shard_cases=(int, Field(default=DEFAULT_SHARD_CASES, ge=0, description="cases per step and system (0: one step per system)")),
)


@dg.op(out=dg.DynamicOut(dict), ins={"nli_head_file": dg.In(dg.Nothing)},
       description="The night's responses, one shard per system × run of case families (a base and its variants together).")
def plan_behaviour_shards(context: dg.OpExecutionContext, config: BehaviourChecksConfig, rag_responses: pl.LazyFrame, golden_set: pl.DataFrame):
    # a scan of the stored responses: only the ids are read here, each shard's rows are written by its own output
    work = split_frame(rag_responses, config.shard_cases, case_families(golden_set))
    context.log.info(f"{len(work)} shard(s) of responses")
    run = rag_responses.select("golden_set_version", "night", "campaign_sha256").head(1).collect().to_dicts()  # stamped by the merge
    yield from emit_work(work, run=run)


@dg.op(description="The behaviour rules on one shard of the night's responses.")
def check_shard(context: dg.OpExecutionContext, config: BehaviourChecksConfig, embedding_model: EmbeddingModel, nli_model: NLIModel,
                pii_detector: PIIDetector, work: dict, golden_set: pl.DataFrame) -> dict:
    cfg = to_core(BehaviourConfig, config)
    support = nli_support(nli_model) if config.support == "nli" else embedding_support(embedding_model.embed)
    try:
        table = judge_behaviour(golden_set, as_frame(work["rows"]), embed=embedding_model.embed, support=support, config=cfg,
                                people=lambda texts: [[e["text"] for e in row if e["type"] == "PERSON"] for row in pii_detector.entities(texts)])
    except ValueError as e:
        raise dg.Failure(f"behaviour_checks: {e}") from e
    shard_log(context, work["shard"], f"{table.height} verdict(s)")
    return {"shard": work["shard"], "frame": table, "support": getattr(support, "label", config.support), "run": work["run"]}


@dg.op(description="The shards' verdicts in plan order, stamped with the run; verdict counts and pass rates with their CIs.")
def merge_behaviour_checks(context: dg.OpExecutionContext, config: BehaviourChecksConfig, parts: list) -> pl.DataFrame:
    # the judge's order: the user's systems, then canaries; verdicts are small rows (a few MB at 10,000 cases × 2)
    table = as_frame(merge_shards((p["shard"], p["frame"]) for p in parts))
    table = table.sort(pl.col("system_id").str.starts_with(CANARY_PREFIX), "system_id", "case_id", maintain_order=True)
    support = parts[0]["support"]
    for column, value in (parts[0]["run"][0] if parts[0]["run"] else {}).items():  # the run's identity on every row
        table = table.with_columns(pl.lit(value).alias(column))
    summary = behaviour_summary(table)
    failing = table.filter(pl.col("verdict") == "fail").select("system_id", "case_id", "rule", "score", "evidence")
    counts = {v: int((table["verdict"] == v).sum()) for v in ("pass", "fail", "unsure")}
    context.add_output_metadata({
        "dagster/row_count": table.height,
        "campaign_run": str(context.partition_key),
        "support": support,
        "shards": len(parts),
        "verdicts": dg.MetadataValue.json(counts),
        "no_answer": int(table["evidence"].str.starts_with("no answer").sum()),
        "by_system_and_rule": preview(summary.select("system_id", "rule", "n", "pass", "fail", "unsure", "pass_rate",
                                                     "pass_rate_ci_low", "pass_rate_ci_high"), 100),  # fmt: skip
        "failures": preview(failing, 30, 160),
        "rules": dg.MetadataValue.json(sorted(table["rule"].unique().to_list())),
    })  # fmt: skip
    return table


@dg.graph_asset(
    automation_condition=ON_NEW_RUN_DATA,
    partitions_def=campaign_run,
    group_name="metrics",
    config=shard_config_mapping(BehaviourChecksConfig, ["plan_behaviour_shards", "check_shard", "merge_behaviour_checks"]),
    ins={"nli_head_file": dg.AssetIn(dagster_type=dg.Nothing)},  # watched source: a retrained NLI head makes the checks stale
    description="Per campaign run, case × system: the rule each case was generated to test, verdict (pass / fail / "
    "unsure), score and evidence (canary leaked, premise accepted, planted passage believed, declined, …); one step per "
    "system × shard of case families.",
)
def behaviour_checks(rag_responses: pl.DataFrame, golden_set: pl.DataFrame, nli_head_file) -> pl.DataFrame:
    shards = plan_behaviour_shards(rag_responses, golden_set, nli_head_file=nli_head_file)
    return merge_behaviour_checks(shards.map(lambda work: check_shard(work, golden_set)).collect())
