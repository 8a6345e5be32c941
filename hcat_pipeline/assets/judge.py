"""Lineage stage: LLM-as-judge — ``llm_judge_scores`` per campaign run, ``judge_validation`` on demand
(golden-eval §5.4-5.6; concept-level chapter §14.4). Core: ``judge/scoring.py`` (scoring),
``judge/validation.py`` + ``judge/audit.py`` (κ vs humans, bias audits), ``judge/plots.py``.

* ``judge_validation`` (unpartitioned, on demand): the judge on held-out human-labelled items
  (FaithDial audit → groundedness, ToxiGen demonstrations → safety; ``judge/data.py``; the campaign's own
  labels tied to their stored answers, ``judge/campaign_labels.py``), Cohen's κ
  with its CI per dimension, ``validated`` (κ ≥ floor), and the position / length / self-preference
  audits with their figures. Keyed by ``judge_config_hash``.
* ``llm_judge_scores`` (per campaign run): one row per case × system × rubric dimension with the
  judge config hash and ``validated`` looked up from ``judge_validation`` for the same hash (False
  when that judge was never validated). Rows with ``validated=False`` must never decide a gate.
  ``enabled: auto`` (default) runs only when estimated calls × seconds per call fit ``time_budget_s``
  (the local 0.5B model on 2 cores does not for a whole campaign; an API model does), and says why
  in metadata when it skips.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import dataclasses
import datetime as dt
import time
import typing
from pathlib import Path
from typing import Optional

import dagster as dg
import polars as pl
from pydantic import Field, create_model

from hcat_pipeline.assets._llms import named_llm
from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.calibration.agreement import consensus_labels
from hcat_pipeline.campaign_spec import JudgeSpec, LLMSpec
from hcat_pipeline.common.canary_ids import drop_canaries
from hcat_pipeline.common.images import png_markdown
from hcat_pipeline.configs import config_from
from hcat_pipeline.io import OPTIONAL
from hcat_pipeline.judge.audit import wilson
from hcat_pipeline.judge.campaign_labels import campaign_label_items, held_out, stored_answers, stored_claims
from hcat_pipeline.judge.data import DEFAULT_VALIDATION_DIR, faithdial_items, faithdial_pairs, sample_items, toxigen_items
from hcat_pipeline.judge.ensemble import ENSEMBLE, agreement_table, choose_scorer, ensemble_rows
from hcat_pipeline.judge.items import judge_items
from hcat_pipeline.judge.plots import validation_figures
from hcat_pipeline.judge.recheck import MAX_AGE_DAYS, stale_reason, validation_note
from hcat_pipeline.judge.reply_cache import ReplyCache
from hcat_pipeline.judge.scoring import JudgeConfig, judge_config_hash, llm_judge, model_family
from hcat_pipeline.judge.tiering import API_SECONDS_PER_CALL, LOCAL_SECONDS_PER_CALL, flag_for_judge, select_tier
from hcat_pipeline.judge.validation import VALIDATION_SCHEMA, AuditThresholds, validate_judge
from hcat_pipeline.partitions import campaign_run
from hcat_pipeline.paths import SCORE_CACHE_DIR, WAREHOUSE_DIR
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.resources.sets import llm_pool
from hcat_pipeline.responses.retrieval import without_planted
from hcat_pipeline.schemas import ENSEMBLE_CHOICE, RUN_COLUMNS
from hcat_pipeline.schemas import JUDGE_ENSEMBLE as ENSEMBLE_SCHEMA
from hcat_pipeline.schemas import LLM_JUDGE_SCORES as SCORE_COLUMNS


def _judge_fields() -> dict:
    """The core's JudgeConfig as Dagster config fields (one field list, one set of defaults); tuples → lists."""
    out = {}
    hints = typing.get_type_hints(JudgeConfig)
    for f in dataclasses.fields(JudgeConfig):
        default = f.default
        if isinstance(default, tuple):
            out[f.name] = (list[str], Field(default_factory=lambda d=default: list(d)))
        else:
            out[f.name] = (hints[f.name], default)
    return out


def _core_config(config) -> JudgeConfig:
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(JudgeConfig)}
    values["dimensions"] = tuple(values["dimensions"])
    try:
        return JudgeConfig(**values)
    except ValueError as e:
        raise dg.Failure(str(e)) from e


# the campaign file's ``judge:`` block (llm, enabled, time_budget_s) + the core's JudgeConfig + estimates
JudgeScoresConfig = create_model(
    "JudgeScoresConfig",
    __base__=JudgeSpec,
    local_seconds_per_call=(float, Field(default=LOCAL_SECONDS_PER_CALL, gt=0, description="estimate for the local llama.cpp model on 2 cores")),
    api_seconds_per_call=(float, Field(default=API_SECONDS_PER_CALL, gt=0, description="estimate per call for an API model (divided by its concurrency)")),
    validation_table=(str, Field(default=str(WAREHOUSE_DIR / "judge_validation.parquet"), description="judge_validation's table")),
    max_validation_age_days=(float, Field(default=MAX_AGE_DAYS, gt=0, description="a validation older than this no longer "
                                          "validates: the judge's rows stop deciding gates until judge_validation runs again")),
    **_judge_fields(),
)

JudgeValidationConfig = config_from(
    AuditThresholds, "JudgeValidationConfig",  # the floors and bias thresholds are the core's (one field list)
    validation_dir=(str, Field(default=str(DEFAULT_VALIDATION_DIR), description="../shared/validation (FaithDial audit, ToxiGen)")),
    n_per_label=(int, Field(default=10, ge=1, description="held-out test items per human label and dimension")),
    n_pairs=(int, Field(default=5, ge=0, description="position-bias pairs, each asked in both orders")),
    sample_seed=(int, 0),
    llm=(Optional[LLMSpec], Field(default=None, description="the judge LLM to validate; absent: the llm resource")),
    ensemble=(list[LLMSpec], Field(default_factory=list, description="the campaign's judge.ensemble: each member judges the same "
                                   "items; per dimension the ensemble is chosen where it beats each judge (judge.ensemble)")),
    campaign_labels=(bool, Field(default=True, description="also the campaign's own human labels (human_labels: the review page, "
                                 "data/labels) of the judge's dimensions, on the answers they were given to")),
    max_campaign_items=(int, Field(default=200, ge=0, description="held-out campaign-labelled items judged at most per dimension")),
    warehouse_dir=(str, Field(default="", description="where the stored answers are read (empty: the project warehouse)")),
    **_judge_fields(),
)



def estimate_seconds(llm: LLM, calls: int, config) -> tuple[float, float]:
    """(seconds per call, total) for ``calls`` judge calls on this LLM resource."""
    per = config.local_seconds_per_call if llm.provider == "local" else config.api_seconds_per_call / max(1, llm.max_concurrency)
    return per, per * calls


def _validation_lookup(path: str, cfg_hash: str, max_age_days: float = MAX_AGE_DAYS) -> dict[str, dict]:
    """Per dimension the judge's validation; one measured too long ago no longer validates (``judge.recheck``), and a
    validated one says κ, n and when."""
    p = Path(path)
    if not p.is_file():
        return {}
    v = pl.read_parquet(p).filter(pl.col("judge_config_hash") == cfg_hash)
    now, out = dt.datetime.now(dt.UTC), {}
    for r in v.iter_rows(named=True):
        stale = stale_reason(r.get("validated_at"), now, max_age_days) if r["validated"] else None
        out[r["dimension"]] = {**r, "validated": bool(r["validated"]) and stale is None,
                               "reason": stale or (validation_note(r) if r["validated"] else r["reason"])}  # fmt: skip
    return out


@dg.asset(automation_condition=ON_NEW_RUN_DATA, 
    partitions_def=campaign_run,
    group_name="judge",
    pool=llm_pool(),
    deps=["judge_validation"],
    description="Per campaign run: LLM-judge score (1-5) per case × system × rubric dimension (groundedness, answer relevancy, "
    "completeness, correctness, safety), judge config hash, error rows, and `validated` from judge_validation. "
    "enabled=auto judges everything when it fits the time budget, else the tier the metrics flag (golden-eval §5.5) as far "
    "as the budget goes, saying so; nothing fits: skipped, saying why.",
)
def llm_judge_scores(
    context: dg.AssetExecutionContext,
    config: JudgeScoresConfig,
    llm: LLM,
    rag_responses: pl.DataFrame,
    golden_set: pl.DataFrame,
    metric_tables: pl.DataFrame,
) -> pl.DataFrame:
    cfg = _core_config(config)
    llm = named_llm(llm, config.llm, "llm_judge_scores (judge.llm)")
    fingerprint = llm.fingerprint()
    cfg_hash = judge_config_hash(cfg, fingerprint)
    answered = drop_canaries(rag_responses).filter(pl.col("answer").is_not_null() & (pl.col("answer").str.strip_chars() != ""))
    calls = answered.height * len(cfg.dimensions)
    per_call, estimate = estimate_seconds(llm, calls, config)
    meta = {"judge_config_hash": cfg_hash, "judge_model": fingerprint, "dimensions": dg.MetadataValue.json(list(cfg.dimensions)),
            "estimated_calls": calls, "estimated_seconds": round(estimate, 1), "seconds_per_call_estimate": per_call,
            "time_budget_s": config.time_budget_s, "enabled": config.enabled}  # fmt: skip
    skip, tier = None, None
    if config.enabled == "off":
        skip = "enabled=off"
    elif config.enabled == "auto" and estimate > config.time_budget_s:
        fits = int(config.time_budget_s // (per_call * len(cfg.dimensions)))
        flags = flag_for_judge(drop_canaries(metric_tables))
        tier = select_tier(flags, fits)
        over = (f"judging all {answered.height} answers ({calls} calls × {per_call:.1f} s, {llm.provider}) ≈ {estimate / 60:.0f} min "
                f"> budget {config.time_budget_s / 60:.1f} min")  # fmt: skip
        if tier.height == 0:
            skip = (f"enabled=auto: {over}, and " + ("the metrics flag no answer" if fits else "not one answer fits the budget")
                    + "; set enabled=on, raise time_budget_s, or use an API model")  # fmt: skip
        else:
            meta["tier"] = (f"tiered (golden-eval §5.5): {over}; judged the {tier.height} of {flags.height} answers the metrics flag "
                            f"(highest priority first; raise time_budget_s for more)")  # fmt: skip
            context.log.info(meta["tier"])
    if skip:
        context.log.info(f"llm_judge_scores skipped: {skip}")
        context.add_output_metadata({**meta, "skipped": skip, "dagster/row_count": 0})
        return pl.DataFrame(schema=SCORE_COLUMNS)

    refs = golden_set.select("case_id", "reference_answer").unique("case_id", keep="first")
    frame = without_planted(drop_canaries(rag_responses)).join(refs, on="case_id", how="left")
    if tier is not None:
        frame = frame.join(tier.select("case_id", "system_id"), on=["case_id", "system_id"], how="semi")
    items = judge_items(frame, golden_set, cfg.dimensions)  # + the claims / languages the §14.4 dimensions need
    t0 = time.perf_counter()
    cache = ReplyCache(SCORE_CACHE_DIR) if SCORE_CACHE_DIR else None  # a later night re-judges only what changed
    rows = llm_judge(items, llm, cfg, model_fingerprint=fingerprint, cache=cache,
                     progress=lambda d, t: context.log.info(f"judge {d}/{t}") if d % 25 == 0 else None)  # fmt: skip
    meta["reused_judge_calls"] = f"{cache.hits} of {cache.hits + cache.misses} (same judge, same messages)" if cache else "cache off"
    wall = time.perf_counter() - t0
    validation = _validation_lookup(config.validation_table, cfg_hash, config.max_validation_age_days)
    judge_fam = model_family(fingerprint)
    sys_llm = ({s: m for s, m in zip(frame["system_id"].to_list(), frame["llm"].to_list(), strict=True) if m}
               if "llm" in frame.columns else {})  # a failed response may have no llm value: take the system's others
    run = {c: (frame[c][0] if c in frame.columns and frame.height else None) for c in RUN_COLUMNS}
    for r in rows:
        case_id, system_id = r.pop("item_id").split("|", 1)
        v = validation.get(r["dimension"])
        fam = model_family(sys_llm.get(system_id))
        r.update(run, case_id=case_id, system_id=system_id, system_family=fam, judge_family=judge_fam,
                 same_family=None if fam is None or judge_fam is None else fam == judge_fam,
                 validated=bool(v and v["validated"]), validation_kappa=v["kappa"] if v else None,
                 validation_reason=(v["reason"] if v else f"no judge_validation for judge config {cfg_hash}"))  # fmt: skip
    out = pl.DataFrame(rows, schema=SCORE_COLUMNS) if rows else pl.DataFrame(schema=SCORE_COLUMNS)
    scored = out.filter(pl.col("score").is_not_null())
    summary = []
    for (sid, dim), g in sorted(out.group_by("system_id", "dimension"), key=lambda kv: kv[0]):
        s = g.filter(pl.col("score").is_not_null())
        k = int(s["passed"].sum())
        lo, hi = wilson(k, s.height)
        summary.append({"system_id": sid, "dimension": dim, "n": s.height, "errors": int(g["error"].is_not_null().sum()),
                        "skipped": int(g["skipped_reason"].is_not_null().sum()),
                        "mean_score": round(float(s["score"].mean()), 3) if s.height else None,
                        "pass_rate": round(k / s.height, 3) if s.height else None, "pass_ci_low": lo, "pass_ci_high": hi,
                        "validated": bool(g["validated"].all())})  # fmt: skip
    errors = out.filter(pl.col("error").is_not_null())
    context.add_output_metadata({
        **meta, "dagster/row_count": out.height, "calls_made": int((out["attempts"].fill_null(0) > 0).sum()), "wall_seconds": round(wall, 1),
        "seconds_per_call_measured": round(wall / max(1, int(out["attempts"].is_not_null().sum())), 2), "scored": scored.height, "errors": errors.height,
        "skipped_rows": int(out["skipped_reason"].is_not_null().sum()),
        "error_kinds": dg.MetadataValue.json(dict(errors.group_by("error_kind").len().sort("error_kind").iter_rows()) if errors.height else {}),
        "validated_dimensions": dg.MetadataValue.json({d: bool(v["validated"]) for d, v in validation.items()}),
        "not_validated_warning": "" if all(v["validated"] for v in validation.values()) and validation else
        "some dimensions of this judge are not validated against human labels: never use them for gates",
        "by_system_and_dimension": preview(pl.DataFrame(summary), 100, 40) if summary else "",
        "errors_preview": preview(errors.select("case_id", "system_id", "dimension", "error_kind", "error"), 20, 120),
        "cost_usd": round(float(out["cost_usd"].sum() or 0.0), 6),
    })  # fmt: skip
    return out


@dg.asset(automation_condition=ON_NEW_RUN_DATA, partitions_def=campaign_run, group_name="judge", pool=llm_pool(),
          description="Per campaign run: ensemble judging (golden-eval §5.5) — each judge.ensemble member scores the answers "
          "llm_judge_scores scored; one row per case × system × dimension × judge plus the ensemble's mean (judge_model "
          "'ensemble'), whether the judges agree, and whether the ensemble decides the dimension (it beat each judge on held-out "
          "human labels in judge_validation). Pairwise agreement per dimension in metadata and the report; a disagreement "
          "raises the item in the review queue. Empty without an ensemble.")
def judge_ensemble(context: dg.AssetExecutionContext, config: JudgeScoresConfig, llm: LLM, llm_judge_scores: pl.DataFrame,
                   rag_responses: pl.DataFrame, golden_set: pl.DataFrame) -> pl.DataFrame:
    cfg = _core_config(config)
    primary = named_llm(llm, config.llm, "judge_ensemble (judge.llm)")
    scored = llm_judge_scores.filter(pl.col("score").is_not_null())
    if not config.ensemble or scored.height == 0:
        why = "no ensemble configured (judge.ensemble)" if not config.ensemble else "the judge scored no answer this night"
        context.add_output_metadata({"skipped": why, "dagster/row_count": 0})
        return pl.DataFrame(schema=ENSEMBLE_SCHEMA)
    members, left_out = _members(llm, config.ensemble, primary.fingerprint())
    if not members:
        context.add_output_metadata({"skipped": "no ensemble member can judge: " + "; ".join(left_out), "dagster/row_count": 0})
        return pl.DataFrame(schema=ENSEMBLE_SCHEMA)
    refs = golden_set.select("case_id", "reference_answer").unique("case_id", keep="first")
    frame = without_planted(drop_canaries(rag_responses)).join(refs, on="case_id", how="left").join(  # what the judge read
        scored.select("case_id", "system_id").unique(), on=["case_id", "system_id"], how="semi")
    items, dims = judge_items(frame, golden_set, cfg.dimensions), sorted(scored["dimension"].unique().to_list())
    keys = ["case_id", "system_id", "dimension"]
    per_judge = [scored.select(*keys, pl.col("score").cast(pl.Float64), pl.lit(primary.fingerprint()).alias("judge_model"))]
    errors = 0
    for member in members:
        rows = llm_judge(items, member, cfg, model_fingerprint=member.fingerprint(), dimensions=dims)
        errors += sum(r["error"] is not None for r in rows)
        per_judge.append(pl.DataFrame([{"case_id": r["item_id"].split("|", 1)[0], "system_id": r["item_id"].split("|", 1)[1],
                                        "dimension": r["dimension"], "score": r["score"], "judge_model": member.fingerprint()} for r in rows],
                                      schema={**{k: pl.String for k in keys}, "score": pl.Float64, "judge_model": pl.String}))  # fmt: skip
    judged = pl.concat(per_judge)
    names = ",".join(sorted(judged["judge_model"].unique().to_list()))
    choice = _ensemble_lookup(config.validation_table, judge_config_hash(cfg, primary.fingerprint()), names)
    ens = ensemble_rows(judged, cfg.pass_threshold).with_columns(pl.lit(ENSEMBLE).alias("judge_model"))
    decided = pl.DataFrame([{"dimension": d, "used": bool(c.get("ensemble_used")), "validated": bool(c.get("ensemble_validated")),
                             "validation_kappa": c.get("ensemble_kappa"), "validation_reason": c.get("ensemble_reason") or
                             f"judge_validation has not judged this ensemble ({names}): the judge decides"}
                            for d in dims for c in [choice.get(d, {})]],
                           schema={k: ENSEMBLE_SCHEMA[k] for k in ("dimension", "used", "validated", "validation_kappa", "validation_reason")})  # fmt: skip
    ens = ens.join(decided, on="dimension", how="left")
    run = {c: (llm_judge_scores[c][0] if llm_judge_scores.height else None) for c in RUN_COLUMNS}
    members_rows = judged.with_columns((pl.col("score") >= cfg.pass_threshold).alias("passed"))
    out = pl.concat([members_rows, ens], how="diagonal_relaxed").with_columns([pl.lit(v).alias(c) for c, v in run.items()])
    out = out.select([pl.col(c).cast(t) if c in out.columns else pl.lit(None, t).alias(c) for c, t in ENSEMBLE_SCHEMA.items()])
    agreement = agreement_table(judged, cfg.pass_threshold)
    context.add_output_metadata({"dagster/row_count": out.height, "members": names, "member_errors": errors,
                                 "members_left_out": dg.MetadataValue.json(left_out),
                                 "disagreements": int((ens["judges_agree"] == False).sum()),  # noqa: E712
                                 "used_for": dg.MetadataValue.json(sorted(d for d in dims if choice.get(d, {}).get("ensemble_used"))),
                                 "agreement": preview(agreement, 40, 60)})  # fmt: skip
    return out


def _members(llm: LLM, specs: list, primary: str) -> tuple[list[LLM], list[str]]:
    """The ensemble's usable members: a model that cannot be loaded, or one already judging (the judge itself, a
    member named twice), is left out with the reason — the night goes on with the others."""
    members, left_out, seen = [], [], {primary}
    for i, spec in enumerate(specs):
        try:
            member = named_llm(llm, spec, f"judge.ensemble[{i}]")
        except dg.Failure as e:
            left_out.append(str(e.description or e))
            continue
        if member.fingerprint() in seen:
            left_out.append(f"judge.ensemble[{i}]: {member.fingerprint()} judges already (the judge or an earlier member)")
            continue
        seen.add(member.fingerprint())
        members.append(member)
    return members, left_out


def _ensemble_lookup(path: str, cfg_hash: str, members: str) -> dict[str, dict]:
    """judge_validation's ensemble choice per dimension for this judge and exactly these members (empty: never judged)."""
    rows = _validation_lookup(path, cfg_hash)
    return {d: r for d, r in rows.items() if r.get("members") == members}


def _campaign_items(human_labels: pl.DataFrame, warehouse: Path, cfg: JudgeConfig, cap: int) -> tuple[list, dict]:
    """The campaign's labelled answers of the judge's dimensions (held out: test split, at most ``cap`` per dimension) and
    their metadata: items per dimension, and every label that could not be used with its reason."""
    try:
        responses = stored_answers(warehouse, human_labels.select("case_id", "system_id").unique())
        items, skipped = campaign_label_items(consensus_labels(human_labels), responses, stored_claims(warehouse), cfg.dimensions,
                                              cfg.pass_threshold)  # fmt: skip
    except ValueError as e:
        raise dg.Failure(f"judge_validation: {e}") from e
    kept, counts = held_out(items, cfg.dimensions, cap)
    return kept, {
        "campaign_items": dg.MetadataValue.json(counts["per_dimension"]), "campaign_items_dev_held_back": counts["dev_held_back"],
        "campaign_items_over_cap": dg.MetadataValue.json(counts["over_cap"]), "campaign_labels_unused": skipped.height,
        "campaign_labels_unused_reasons": dg.MetadataValue.json(dict(skipped.group_by("reason").len().sort("reason").iter_rows())),
    }  # fmt: skip


def _ensemble_choice(context, config, llm: LLM, items: list, cfg: JudgeConfig, scores: pl.DataFrame,
                     table: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """Each ensemble member judges the same held-out items; ``judge.ensemble.choose_scorer`` per dimension; its columns
    joined onto the validation table."""
    fp = llm.fingerprint()
    rows = [scores.select("item_id", "dimension", "score", "human_label").with_columns(pl.lit(fp).alias("judge_model"))] if scores.height else []
    for i, spec in enumerate(config.ensemble):
        member = named_llm(llm, spec, f"judge_validation (judge.ensemble[{i}])")
        judged = validate_judge(member, items, [], cfg, min_items=config.min_items, kappa_floor=config.kappa_floor)["scores"]
        if judged.height:
            rows.append(judged.select("item_id", "dimension", "score", "human_label").with_columns(pl.lit(member.fingerprint()).alias("judge_model")))
        context.log.info(f"judge_validation: ensemble member {member.fingerprint()} judged {judged.height} items")
    labelled = pl.concat(rows) if rows else pl.DataFrame(schema={"item_id": pl.String, "dimension": pl.String, "score": pl.Int64,
                                                                   "human_label": pl.Int64, "judge_model": pl.String})  # fmt: skip
    choice = choose_scorer(labelled, cfg.pass_threshold, config.kappa_floor, config.min_items, config.rule)
    out = table.drop([c for c in ENSEMBLE_CHOICE if c in table.columns]).join(choice, on="dimension", how="left")
    return out, {"ensemble": preview(choice, 20, 160)}


@dg.asset(
    group_name="judge",
    pool=llm_pool(),
    ins={"human_labels": dg.AssetIn(metadata=OPTIONAL)},
    description="LLM judge vs held-out human labels (FaithDial → groundedness, ToxiGen → safety, and the campaign's own labels "
    "where they mean the judge's dimension — the only labels the §14.4 items can have): Cohen's κ with its 95 % CI per dimension, validated flag (κ ≥ floor; never used for gates otherwise), position / length / self-preference audits "
    "with figures. Keyed by judge_config_hash.",
)
def judge_validation(context: dg.AssetExecutionContext, config: JudgeValidationConfig, llm: LLM,
                     human_labels: Optional[pl.DataFrame]) -> pl.DataFrame:  # fmt: skip
    cfg = _core_config(config)
    llm = named_llm(llm, config.llm, "judge_validation")
    items, pairs = [], []
    try:  # the public sets label groundedness and safety only: read only when the judge has one of them
        if "groundedness" in cfg.dimensions:
            items += sample_items(faithdial_items(config.validation_dir), config.n_per_label, "test", config.sample_seed)
            pairs = [p for p in faithdial_pairs(config.validation_dir) if p["split"] == "test"][: config.n_pairs]
        if "safety" in cfg.dimensions:
            items += sample_items(toxigen_items(config.validation_dir), config.n_per_label, "test", config.sample_seed)
    except FileNotFoundError as e:
        raise dg.Failure(f"judge_validation: {e}") from e
    items = [i for i in items if i.dimension in cfg.dimensions]
    campaign_meta: dict = {"campaign_labels": "off (campaign_labels: false)" if not config.campaign_labels else "none stored"}
    if config.campaign_labels and human_labels is not None and human_labels.height:
        camp, campaign_meta = _campaign_items(human_labels, Path(config.warehouse_dir or WAREHOUSE_DIR), cfg, config.max_campaign_items)
        items += camp
    t0 = time.perf_counter()
    res = validate_judge(
        llm, items, pairs if "groundedness" in cfg.dimensions else [], cfg, kappa_floor=config.kappa_floor,
        min_items=config.min_items, rule=config.rule, max_flip_rate=config.max_flip_rate,
        max_abs_length_rho=config.max_abs_length_rho, max_self_preference_gap=config.max_self_preference_gap,
        progress=lambda d, t: context.log.info(f"judge validation {d}/{t}") if d % 10 == 0 else None,
    )  # fmt: skip
    table = res["validation"]
    if config.ensemble:
        table, ensemble_meta = _ensemble_choice(context, config, llm, items, cfg, res["scores"], table)
        campaign_meta.update(ensemble_meta)
    wall = time.perf_counter() - t0
    figures = validation_figures(res)
    scores = res["scores"]
    cols = ["dimension", "validated", "kappa", "kappa_ci_low", "kappa_ci_high", "n", "accuracy", "n_errors", "reason"]
    bias_cols = ["dimension", "length_rho", "length_rho_ci_low", "length_rho_ci_high", "length_bias_flagged", "self_preference_gap",
                 "self_preference_ci_low", "self_preference_ci_high", "self_preference_note", "position_flip_rate",
                 "position_flip_ci_low", "position_flip_ci_high", "position_n_pairs", "position_bias_flagged"]  # fmt: skip
    calls = len(items) + 2 * len(pairs)
    context.add_output_metadata({
        "dagster/row_count": table.height, "judge_config_hash": table["judge_config_hash"][0], "judge_model": table["judge_model"][0],
        "validated": dg.MetadataValue.json(dict(zip(table["dimension"].to_list(), table["validated"].to_list(), strict=True))),
        "kappa": preview(table.select(cols), 20, 60), "bias_audits": preview(table.select(bias_cols), 20, 60),
        "position_bias": dg.MetadataValue.json(res["position_bias"]), "label_split": "test (held out; dev is 1 in 5 items by hash)",
        "items": len(items), "pairs": len(pairs), "calls": calls, "wall_seconds": round(wall, 1), **campaign_meta,
        "judged_items": preview(scores.select("dimension", "system", "human_label", "score", "error", "justification")
                                if scores.height else scores, 20, 80),
        **{name: dg.MetadataValue.md(png_markdown(png, name)) for name, png in figures.items()},
    })  # fmt: skip
    n_labels = human_labels.height if human_labels is not None else 0  # the sensor re-checks once enough new ones arrive
    table = table.with_columns(pl.lit(dt.datetime.now(dt.UTC).isoformat(timespec="seconds")).alias("validated_at"),
                               pl.lit(n_labels, pl.Int64).alias("n_design_labels"))  # fmt: skip
    return table.select(list(VALIDATION_SCHEMA))
