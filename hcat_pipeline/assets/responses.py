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

from hcat_pipeline.assets._llms import system_llms
from hcat_pipeline.assets._metadata import frame_metadata, preview
from hcat_pipeline.assets._shards import emit_shards, shard_config_mapping, shard_log
from hcat_pipeline.assets.golden_set import coverage_metadata
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.behaviour.checks import judge_behaviour, nli_support
from hcat_pipeline.behaviour.stochasticity import (
    FLIP_SCHEMA,
    STOCHASTIC_RULE,
    StochasticityParams,
    flip_table,
    reasked_verdicts,
    stochasticity_cases,
)
from hcat_pipeline.campaign_spec import DEFAULT_CAMPAIGN_FILE, CampaignFileError, CampaignSpec, campaign_sha256, load_campaign
from hcat_pipeline.common.canary_ids import apart, drop_canaries
from hcat_pipeline.common.shards import DEFAULT_SHARD_CASES, Shard, merge_shards, plan_shards
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.console import progress_message
from hcat_pipeline.gates.canaries import plant as plant_canaries
from hcat_pipeline.io import as_frame
from hcat_pipeline.metrics.refusal import DEFAULT_REFUSAL_MODE, DEFAULT_REFUSAL_THRESHOLD, EMBEDDING_MODES, RefusalMode
from hcat_pipeline.partitions import campaign_run, split_run_key
from hcat_pipeline.paths import DATA_DIR, WAREHOUSE_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.http_system import HttpRagSystem
from hcat_pipeline.resources.llm import LLM, is_transient_error
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.sets import llm_pool
from hcat_pipeline.responses.campaign_run import (
    CheckpointHistory,
    answer_cases,
    build_systems,
    finish_frame,
    merge_imports,
    merge_stats,
    over_failure_budget,
    run_summary,
)
from hcat_pipeline.responses.rag import responses_frame, select_cases
from hcat_pipeline.responses.retrieval_metrics import per_case_retrieval, retrieval_metrics_table

CHECKPOINT_DIR = WAREHOUSE_DIR / "_checkpoints" / "rag_responses"
IMPORT_DIR = DATA_DIR / "imports" / "rag_responses"


class CampaignRunConfig(dg.Config):
    """Which campaign this run evaluates: the campaign file, or the same schema given inline."""

    campaign_file: str = Field(default=str(DEFAULT_CAMPAIGN_FILE), description="campaign YAML (schema: CampaignSpec)")
    campaign: Optional[CampaignSpec] = Field(default=None, description="inline campaign; wins over campaign_file")
    checkpoint_dir: str = str(CHECKPOINT_DIR)  # <dir>/<version>/<night>/responses.jsonl
    import_dir: str = str(IMPORT_DIR)  # <import_dir>/<version>/<system_id>.{parquet,jsonl}
    strata_path: str = str(WAREHOUSE_DIR / "topic_strata.parquet")  # for the coverage table
    shard_cases: int = Field(default=DEFAULT_SHARD_CASES, ge=0, description="cases per step and system (0: one step per system); "
                             "an execution detail: the responses are the same for any value")

    def resolve(self) -> CampaignSpec:
        if self.campaign is not None:
            return self.campaign
        try:
            return load_campaign(self.campaign_file)
        except CampaignFileError as e:
            raise dg.Failure(str(e)) from None


def _cases_by_id(golden_set: pl.DataFrame, case_ids) -> list[dict]:
    wanted = set(case_ids)
    by_id = {r["case_id"]: r for r in golden_set.filter(pl.col("case_id").is_in(list(wanted))).to_dicts()}
    return [by_id[c] for c in case_ids]


@dg.op(out=dg.DynamicOut(Shard), description="The night's cases (select_cases) cut into one shard per system × run of cases.")
def plan_response_shards(context: dg.OpExecutionContext, config: CampaignRunConfig, golden_set: pl.DataFrame):
    spec = config.resolve()
    cases = select_cases(golden_set, spec.max_cases, spec.case_seed, floors=_gate_floors(context, spec.certify_below))["case_id"].to_list()
    plan = plan_shards([s.system_id for s in spec.systems], cases, config.shard_cases)
    context.log.info(f"{len(cases)} case(s) × {len(spec.systems)} system(s) in {len(plan)} shard(s) of ≤ ~{config.shard_cases or len(cases)} case(s)")
    yield from emit_shards(plan)


PROGRESS_LINES = 50  # progress lines a shard logs at most (the console's bar reads them)


@dg.op(pool=llm_pool(), description="One system answers one shard of the night's cases (checkpointed per response; resumes).")
def answer_shard(context: dg.OpExecutionContext, config: CampaignRunConfig, llm: LLM, embedding_model: EmbeddingModel,
                 multilingual_encoder: MultilingualEncoder, shard: Shard, golden_set: pl.DataFrame, chunks: pl.DataFrame, chunk_embeddings: pl.DataFrame) -> dict:
    version, night = split_run_key(context)
    spec = config.resolve()
    one = spec.model_copy(update={"systems": [s for s in spec.systems if s.system_id == shard.system_id]})
    cases = _cases_by_id(golden_set, shard.case_ids)
    index = chunks.select("chunk_id", "text").join(chunk_embeddings, on="chunk_id", how="inner")
    built = build_systems([s.model_dump() for s in one.systems], system_llms(one, llm), index, embedding_model.embed, embedding_model.model_id,
                          golden_set.to_dicts(), lambda kw: HttpRagSystem(**kw), spec.reuse, multilingual_encoder.dense_index)  # fmt: skip
    history = CheckpointHistory(config.checkpoint_dir, version, night)
    marks, done = {c["case_id"] for c in cases[:: max(1, len(cases) // 4)]}, iter(range(1, len(cases) + 1))
    every = max(1, len(cases) // PROGRESS_LINES)  # a log line is an event-log write: not one per answer

    def on_record(rec):
        n = next(done, len(cases))
        if n % every == 0 or n == len(cases):
            context.log.debug(progress_message(n, len(cases), rec["system_id"], n, len(cases)))
        if rec["case_id"] in marks:
            context.log.info(f"{rec['system_id']}: {rec['case_id']} done" + (f" (error: {rec['error']})" if rec["error"] else ""))

    frame, stats = answer_cases(built, cases, history, spec.retry_failed, on_record)
    shard_log(context, shard, f"{stats.called} asked, {stats.resumed} resumed, {stats.reused} reused, {stats.failed} failed")
    rates = run_summary(frame)["failure_rates"] if frame.height else {}
    if over_failure_budget(rates, spec.max_failure_rate) and context.retry_number < spec.provider_retries:
        errors = frame.filter(pl.col("error").is_not_null())["error"]
        if errors.map_elements(is_transient_error, return_dtype=pl.Boolean).all():  # a retry resumes the checkpoint
            wait = spec.provider_retry_delay_s * 2**context.retry_number
            context.log.warning(f"only transient provider errors: retry {context.retry_number + 1}/{spec.provider_retries} in {wait:.0f}s")
            raise dg.RetryRequested(max_retries=spec.provider_retries, seconds_to_wait=wait)
    return {"shard": shard, "frame": frame, "stats": stats.per_system, "checkpoint": str(history.current.path)}


@dg.op(description="The shards' responses in plan order + canaries + imported responses; the failure budget; metadata.")
def merge_responses(context: dg.OpExecutionContext, config: CampaignRunConfig, parts: list, golden_set: pl.DataFrame) -> pl.DataFrame:
    version, night = split_run_key(context)
    spec = config.resolve()
    spec_sha = campaign_sha256(spec)
    frame = as_frame(merge_shards((p["shard"], p["frame"]) for p in parts))  # canaries copy rows: the night in memory
    cases = {c for p in parts for c in p["shard"].case_ids}
    run_meta = merge_stats([p["stats"] for p in sorted(parts, key=lambda p: p["shard"].position)])
    for sid, fig in run_meta.items():
        context.log.info(f"{sid}: {fig}")
    canaries = plant_canaries(frame.to_dicts(), spec.canary_plans(), {c["case_id"]: c for c in golden_set.to_dicts()})
    frames = [frame, *([pl.DataFrame(canaries, schema=frame.schema)] if canaries else [])]
    imports = merge_imports(Path(config.import_dir) / version, golden_set, set(run_meta)) if spec.include_imports else ([], {}, None)
    frames += imports[0]
    run_meta.update(imports[1])
    out = finish_frame(frames, version, night, spec_sha)
    summary = run_summary(drop_canaries(out))  # the systems asked; canaries copy their parents' failures (listed apart)
    meta = {
        **frame_metadata(out.select("case_id", "system_id", "answer", "error", "reused_from")),
        "golden_set_version": version,
        "night": night,
        "campaign": spec.name,
        "campaign_sha256": spec_sha,
        "campaign_file": "(inline)" if config.campaign is not None else config.campaign_file,
        "cases": len(cases),
        "cases_in_version": golden_set.height,
        "systems": len(run_meta),
        "shards": len(parts),
        "canaries": dg.MetadataValue.json(sorted({r["system_id"] for r in canaries})),
        "llm_calls_this_run": sum(f.get("called", 0) for f in run_meta.values()),
        "responses_resumed_from_checkpoint": sum(f.get("resumed", 0) for f in run_meta.values()),
        "responses_reused_from_earlier_nights": sum(f.get("reused", 0) for f in run_meta.values()),
        "failed_responses": summary["failed_total"],
        "failure_rate_by_system": dg.MetadataValue.json(summary["failure_rates"]),
        "by_system": preview(summary["by_system"], 50),
        "systems_run": dg.MetadataValue.json(run_meta),
        "checkpoint": parts[0]["checkpoint"] if parts else "",
        **coverage_metadata(config.strata_path, golden_set, out),
    }
    if imports[2] is not None and imports[2].height:
        meta["import_errors"] = preview(imports[2], 30, 160)
        context.log.warning(f"{imports[2].height} imported row(s) skipped, e.g. {imports[2].row(0)}")
    over = over_failure_budget(summary["failure_rates"], spec.max_failure_rate)
    if over:
        failed = out.filter(pl.col("error").is_not_null() & pl.col("system_id").is_in(list(over)))
        why = {s: failed.filter(pl.col("system_id") == s)["error"][0] for s in over}
        raise dg.Failure(
            description=f"rag_responses[{version}|{night}]: failure rate above max_failure_rate={spec.max_failure_rate} for "
            + ", ".join(f"{s} ({r:.0%}, {failed.filter(pl.col('system_id') == s).height} failed; e.g. {why[s][:300]})"
                        for s, r in over.items())
            + f". Finished responses are checkpointed in {meta['checkpoint']}; fix the cause and re-run to resume.",
            metadata={**meta, "failures": preview(failed.select("system_id", "case_id", "error").head(10), 10, 200)},
        )  # fmt: skip
    context.add_output_metadata(meta)
    return out


@dg.graph_asset(
    partitions_def=campaign_run,
    group_name="responses",
    config=shard_config_mapping(CampaignRunConfig, ["plan_response_shards", "answer_shard", "merge_responses"]),
    description="One response per golden-set case × system of the campaign, on one night: contexts (chunk ids, ranks), "
    "answer, latency, tokens, cost, error, config hash, reused_from. One step per system × shard of cases (workers share "
    "a night); checkpointed per response; a re-run of the night resumes; http / API systems are asked every night.",
)
def rag_responses(golden_set: pl.DataFrame, chunks: pl.DataFrame, chunk_embeddings: pl.DataFrame) -> pl.DataFrame:
    parts = plan_response_shards(golden_set).map(lambda shard: answer_shard(shard, golden_set, chunks, chunk_embeddings))
    return merge_responses(parts.collect(), golden_set)


class RetrievalMetricsConfig(dg.Config):
    """Refusal detection for the abstention / false-refusal rates: the project's one detector
    (metrics.refusal.refusal_probability), with the same defaults as metric_tables' ``refusal``."""

    refusal_mode: RefusalMode = Field(default=DEFAULT_REFUSAL_MODE, description="rules | classifier | classifier+embedding | ensemble")
    refusal_threshold: float = Field(default=DEFAULT_REFUSAL_THRESHOLD, description="refused = refusal probability ≥ this")


@dg.asset(automation_condition=ON_NEW_RUN_DATA, 
    partitions_def=campaign_run,
    group_name="responses",
    description="Per system: recall@k, precision@k and MRR against the cases' source chunks; abstention rate on "
    "out-of-scope cases and false-refusal rate on answerable ones (golden-eval §10.2, §10.4).",
)
def retrieval_metrics(context: dg.AssetExecutionContext, config: RetrievalMetricsConfig, embedding_model: EmbeddingModel,
                      rag_responses: pl.DataFrame, golden_set: pl.DataFrame, chunks: pl.DataFrame) -> pl.DataFrame:
    k_by_system = {}
    no_retrieval = []
    if "top_k" in rag_responses.columns:
        for sid, k, retr in rag_responses.select("system_id", "top_k", "retriever").unique("system_id").iter_rows():
            if k is not None:
                k_by_system[sid] = int(k)
            if retr == "closed_book":
                no_retrieval.append(sid)
    embed = embedding_model.embed if config.refusal_mode in EMBEDDING_MODES else None
    texts = dict(chunks.select("chunk_id", "text").iter_rows())
    per_case = apart(lambda f: per_case_retrieval(f, golden_set, k_by_system, refusal_mode=config.refusal_mode,
                                                  refusal_threshold=config.refusal_threshold, embed=embed, chunk_texts=texts),
                     rag_responses)  # fmt: skip
    table = retrieval_metrics_table(per_case, no_retrieval)
    context.add_output_metadata({
        **frame_metadata(table, 50),
        "campaign_run": str(context.partition_key),
        "systems": table.height,
        "refusal_mode": config.refusal_mode,
        "refusal_threshold": config.refusal_threshold,
    })
    return table


def _gate_floors(context, certify_below: float | None = None) -> dict[str, int]:
    """Cases per behaviour rule the release gates need in scope (at the campaign's certification level); none (and said
    so) when the gates file cannot be read."""
    from hcat_pipeline.gates.spec import GatesFileError, load_gates, rule_floors

    try:
        return rule_floors(load_gates(), certify_below)
    except (GatesFileError, FileNotFoundError) as e:
        context.log.warning(f"case selection without gate floors: {e}")
        return {}


# golden-eval §6.6 model stochasticity: the config is the core's StochasticityParams plus the campaign (which systems)
StochasticityConfig = config_from(StochasticityParams, "StochasticityConfig", base=CampaignRunConfig)


@dg.asset(automation_condition=ON_NEW_RUN_DATA, partitions_def=campaign_run, group_name="metrics", pool=llm_pool(),
          description="Per campaign run: model stochasticity (golden-eval §6.6) — a seeded subset of the night's happy-path cases "
          "re-asked with new sampling seeds, judged by the same rule; per system the share of verdicts that flipped (Wilson "
          "95 % CI, n) and how many answers changed. Read by the report's uncertainty table.")
def verdict_stochasticity(context: dg.AssetExecutionContext, config: StochasticityConfig, llm: LLM, embedding_model: EmbeddingModel,
                          nli_model: NLIModel, multilingual_encoder: MultilingualEncoder, golden_set: pl.DataFrame, chunks: pl.DataFrame,
                          chunk_embeddings: pl.DataFrame, rag_responses: pl.DataFrame, behaviour_checks: pl.DataFrame) -> pl.DataFrame:
    spec, params = config.resolve(), to_core(StochasticityParams, config)
    ids = stochasticity_cases(behaviour_checks, params.n_cases, params.seed)
    answered = set(drop_canaries(behaviour_checks)["system_id"].to_list())
    systems = [s for s in spec.systems if s.system_id in answered and (s.http is None or params.ask_http)]  # a user's service: opt-in
    cases = _cases_by_id(golden_set, ids)
    index = chunks.select("chunk_id", "text").join(chunk_embeddings, on="chunk_id", how="inner")
    records = []
    for r in range(1, params.repeats + 1):  # each repeat with the next sampling seed; never reused, never checkpointed
        specs = [{**s.model_dump(), "seed": s.seed + r} for s in systems]
        built = build_systems(specs, system_llms(spec, llm), index, embedding_model.embed, embedding_model.model_id, golden_set.to_dicts(),
                              lambda kw: HttpRagSystem(**kw), "never", multilingual_encoder.dense_index)  # fmt: skip
        records += [{**b.system.respond(c), "repeat": r} for b in built for c in cases]
    if not records:
        context.add_output_metadata({"re_asked": 0, "why": "no case with a decided verdict for every system, or n_cases 0"})
        return pl.DataFrame(schema=FLIP_SCHEMA)
    support = nli_support(nli_model)
    reasked = reasked_verdicts(records, lambda recs: judge_behaviour(golden_set, responses_frame(recs), embed=embedding_model.embed,
                                                                     support=support))  # fmt: skip
    night = behaviour_checks.filter(pl.col("rule") == STOCHASTIC_RULE).join(
        rag_responses.select("case_id", "system_id", "answer"), on=["case_id", "system_id"], how="left")
    table = flip_table(night, reasked, {s.system_id: s.temperature for s in systems if s.http is None})
    context.add_output_metadata({"re_asked": len(records), "cases": len(ids), "flips": preview(table)})
    return table
