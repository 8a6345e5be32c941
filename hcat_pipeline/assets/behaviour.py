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

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.behaviour.checks import BehaviourConfig, behaviour_summary, embedding_support, judge_behaviour, nli_support
from hcat_pipeline.common.canary_ids import apart
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.partitions import campaign_run
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.nli import NLIModel

# The Dagster config *is* the core's BehaviourConfig (one field list, one set of defaults) + the support mode.
BehaviourChecksConfig = config_from(BehaviourConfig, "BehaviourChecksConfig", support=(Literal["nli", "similarity"], "nli"))


@dg.asset(automation_condition=ON_NEW_RUN_DATA, 
    partitions_def=campaign_run,
    group_name="metrics",
    deps=["nli_head_file"],  # watched source (assets/sources.py): a retrained NLI head makes the checks stale
    description="Per campaign run, case × system: the rule each case was generated to test, verdict (pass / fail / "
    "unsure), score and evidence (canary leaked, premise accepted, planted passage believed, declined, …).",
)
def behaviour_checks(
    context: dg.AssetExecutionContext,
    config: BehaviourChecksConfig,
    embedding_model: EmbeddingModel,
    nli_model: NLIModel,
    rag_responses: pl.DataFrame,
    golden_set: pl.DataFrame,
) -> pl.DataFrame:
    cfg = to_core(BehaviourConfig, config)
    support = nli_support(nli_model) if config.support == "nli" else embedding_support(embedding_model.embed)
    try:
        table = apart(lambda f: judge_behaviour(golden_set, f, embed=embedding_model.embed, support=support, config=cfg), rag_responses)
    except ValueError as e:
        raise dg.Failure(f"behaviour_checks: {e}") from e
    run = rag_responses.select("golden_set_version", "night", "campaign_sha256").head(1)
    if run.height:
        table = table.with_columns(*[pl.lit(run[c][0]).alias(c) for c in run.columns])
    summary = behaviour_summary(table)
    failing = table.filter(pl.col("verdict") == "fail").select("system_id", "case_id", "rule", "score", "evidence")
    counts = {v: int((table["verdict"] == v).sum()) for v in ("pass", "fail", "unsure")}
    context.add_output_metadata({
        "dagster/row_count": table.height,
        "campaign_run": str(context.partition_key),
        "support": getattr(support, "label", config.support),
        "verdicts": dg.MetadataValue.json(counts),
        "no_answer": int(table["evidence"].str.starts_with("no answer").sum()),
        "by_system_and_rule": preview(summary.select("system_id", "rule", "n", "pass", "fail", "unsure", "pass_rate",
                                                     "pass_rate_ci_low", "pass_rate_ci_high"), 100),  # fmt: skip
        "failures": preview(failing, 30, 160),
        "rules": dg.MetadataValue.json(sorted(table["rule"].unique().to_list())),
    })  # fmt: skip
    return table
