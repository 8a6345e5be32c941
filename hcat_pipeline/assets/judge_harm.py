"""The harm category of answers (golden-eval §3.2.6), tiered (§5.5): ``harm_judgements`` per campaign run. Core:
``judge/harm.py`` (the design and the stratified rates), ``metrics/safety.harm_judge`` (the judge's call).

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import time

import dagster as dg
import polars as pl

from hcat_pipeline.assets._llms import named_llm
from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.campaign_spec import HarmJudgeSpec
from hcat_pipeline.common.canary_ids import drop_canaries
from hcat_pipeline.configs import to_core
from hcat_pipeline.judge.harm import HarmSurveyParams, flagged_answers, harm_rates, survey_design
from hcat_pipeline.metrics.safety import AILUMINATE_CATEGORIES, harm_judge
from hcat_pipeline.partitions import campaign_run
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.resources.sets import llm_pool
from hcat_pipeline.schemas import HARM_JUDGEMENTS, RUN_COLUMNS


@dg.asset(automation_condition=ON_NEW_RUN_DATA, partitions_def=campaign_run, group_name="judge", pool=llm_pool(),
          description="Per campaign run: the AILuminate harm category of answers (golden-eval §3.2.6) by the LLM harm judge, "
          "tiered — every answer the rules flag (an attack served or undecided, toxicity over the threshold; a seeded sample "
          "beyond flagged_per_system) and a seeded sample of the rest; each answer with its stratum and inclusion probability, "
          "so the rate per category over all answers is estimated with its interval (judge.harm). Off by default.")
def harm_judgements(context: dg.AssetExecutionContext, config: HarmJudgeSpec, llm: LLM, rag_responses: pl.DataFrame,
                    behaviour_checks: pl.DataFrame, metric_tables: pl.DataFrame) -> pl.DataFrame:
    params = to_core(HarmSurveyParams, config)
    if params.enabled == "off":
        context.add_output_metadata({"skipped": "harm_judge.enabled is off (the campaign file's harm_judge block)", "dagster/row_count": 0})
        return pl.DataFrame(schema=HARM_JUDGEMENTS)
    judge = named_llm(llm, config.llm, "harm_judgements (harm_judge.llm)")
    answered = drop_canaries(rag_responses).filter(pl.col("answer").is_not_null() & (pl.col("answer").str.strip_chars() != ""))
    flagged = flagged_answers(drop_canaries(behaviour_checks), drop_canaries(metric_tables), params.toxicity_threshold)
    design = survey_design(answered, flagged.join(answered, on=["case_id", "system_id"], how="semi"), params)
    drawn = design.filter(pl.col("drawn")).join(answered.select("case_id", "system_id", "answer"), on=["case_id", "system_id"])
    t0 = time.perf_counter()
    verdicts = harm_judge(drawn["answer"].to_list(), judge, seed=0)
    wall = time.perf_counter() - t0
    judged = drawn.drop("answer").with_columns(
        *[pl.Series(c, [v[c] for v in verdicts], dtype=pl.Int64) for c in (*AILUMINATE_CATEGORIES, "harm_any")],
        pl.Series("harm_categories", [",".join(v["harm_categories"]) for v in verdicts], dtype=pl.String),
        pl.Series("harm_error", [v["harm_error"] for v in verdicts], dtype=pl.String),
        pl.Series("harm_prompt_hash", [v["harm_prompt_hash"] for v in verdicts], dtype=pl.String),
        pl.lit(judge.fingerprint()).alias("judge_model"))  # fmt: skip
    run = {c: (rag_responses[c][0] if c in rag_responses.columns and rag_responses.height else None) for c in RUN_COLUMNS}
    out = pl.concat([judged, design.filter(~pl.col("drawn"))], how="diagonal_relaxed").with_columns(
        [pl.lit(v).alias(c) for c, v in run.items()])
    out = out.select([pl.col(c).cast(t) if c in out.columns else pl.lit(None, t).alias(c) for c, t in HARM_JUDGEMENTS.items()])
    rates = harm_rates(out)
    context.add_output_metadata({
        "dagster/row_count": out.height, "judge_model": judge.fingerprint(), "drawn": drawn.height, "flagged": flagged.height,
        "errors": int(judged["harm_error"].is_not_null().sum()), "wall_seconds": round(wall, 1),
        "seconds_per_answer": round(wall / max(1, drawn.height), 1),
        "rates": preview(rates.filter(pl.col("flagged_harmful") + pl.col("rest_harmful") > 0) if rates.height else rates, 60, 40),
        "validated": "no: no human harm-category labels here — the rates are shown, they decide no gate",
    })  # fmt: skip
    return out.sort("system_id", "case_id")
