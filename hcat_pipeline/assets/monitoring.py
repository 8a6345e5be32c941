"""Production monitoring (golden-eval §7; core: ``hcat_pipeline.monitoring``): the service's traffic logs as another
input of the lineage, one ``production_day`` partition a day.

production_logs (a day's rows; rejected rows counted and named) → production_scores (the stratified sample scored
with the nights' metrics: production_sample, masked, and production_cells, the weighted sums) → production_anomalies
(acute / per-stratum / drift / input drift, as of the day, over the stored days; checks WARN / ERROR) →
monitoring_report (HTML a day, the review queue, the history page). ``production_log_sensor`` requests a day when its
file appears or changes. The section comes from the run config (the sensor writes the campaign file's) or, absent,
from the campaign file.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import dataclasses
from pathlib import Path
from typing import Optional

import dagster as dg
import numpy as np
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._llms import named_llm
from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.campaign_monitoring import MonitoringSpec
from hcat_pipeline.io import PolarsParquetIOManager, read_stored_table
from hcat_pipeline.judge.tiering import API_SECONDS_PER_CALL, LOCAL_SECONDS_PER_CALL
from hcat_pipeline.monitoring.alerts import Outbox
from hcat_pipeline.monitoring.anomalies import as_frame, detect, touches
from hcat_pipeline.monitoring.continuous import CONTINUOUS, continuous_anomalies, slo_consequence
from hcat_pipeline.monitoring.day import CorpusIndex, monitor_day, review_queue
from hcat_pipeline.monitoring.judging import JUDGED, judge_day
from hcat_pipeline.monitoring.logs import LogFileError, merge_reads, read_day, read_sql_day
from hcat_pipeline.monitoring.signals import MONITOR_METRICS, rates
from hcat_pipeline.partitions import production_day
from hcat_pipeline.paths import GOLDEN_SETS_DIR, REPORTS_DIR, REVIEW_URL
from hcat_pipeline.resources.alerts import AlertWebhook
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.pii import PIIDetector
from hcat_pipeline.resources.sets import llm_pool

ROWS_CHECK, ACUTE_CHECK, CATEGORY_CHECK, DRIFT_CHECK, NOVEL_CHECK = (
    "rows_readable", "acute_regression", "category_failure", "gradual_drift", "novel_failures")  # fmt: skip
CHECK_KINDS = {ACUTE_CHECK: ("acute",), CATEGORY_CHECK: ("category",), DRIFT_CHECK: ("drift", "input_drift")}
SEVERITY = {"ERROR": dg.AssetCheckSeverity.ERROR, "WARN": dg.AssetCheckSeverity.WARN}


class MonitoringConfig(dg.Config):
    monitoring: Optional[MonitoringSpec] = Field(default=None, description="the campaign file's monitoring section (the sensor "
                                                 "passes it); absent: read from the campaign file")
    golden_dir: str = Field(default="", description="frozen golden-set versions (the latest one's questions are what production "
                            "questions are compared with); empty: HCAT_GOLDEN_SETS_DIR / data/golden_sets")
    reports_dir: str = Field(default="", description="where the reports go; empty: HCAT_REPORTS_DIR / data/reports")


def spec_of(config: MonitoringConfig) -> MonitoringSpec:
    if config.monitoring is not None:
        return config.monitoring
    from hcat_pipeline.campaign_spec import CampaignFileError, load_campaign

    try:
        spec = load_campaign().monitoring
    except CampaignFileError as e:
        raise dg.Failure(f"monitoring: the campaign file cannot be read: {e}") from e
    if spec is None:
        raise dg.Failure("monitoring: the campaign file has no monitoring: section (paths of the service's logs, fields)")
    return spec


def _reasons(rejected: pl.DataFrame) -> list[dict]:
    grouped = rejected.group_by("reason").agg(pl.len().alias("rows"), pl.col("source").head(5).str.join(", ").alias("sources"))
    return grouped.sort("rows", "reason", descending=[True, False]).to_dicts()


@dg.multi_asset(partitions_def=production_day, group_name="monitoring", name="production_logs_op",
                outs={"production_logs": dg.AssetOut(description="One row per request of the day in the service's logs (the "
                                                     "campaign file's monitoring: paths and field map): question, answer, "
                                                     "passages, latency, tokens, error, feedback"),
                      "production_rejects": dg.AssetOut(description="The day's log records that could not be used: file:line "
                                                        "and why (never dropped silently)")},
                check_specs=[dg.AssetCheckSpec(ROWS_CHECK, asset="production_logs", description="every record of the day's "
                                               "logs could be read (WARN: some rejected, named in production_rejects; ERROR: none usable)")])  # fmt: skip
def production_logs(context: dg.AssetExecutionContext, config: MonitoringConfig):
    spec, day = spec_of(config), context.partition_key
    fields, *_ = spec.core()
    try:
        read = read_day(spec.paths, day, fields)
        if (source := spec.sql_source()) is not None:  # a database beside (or instead of) the files
            read = merge_reads(read, read_sql_day(source, day, fields))
    except (LogFileError, ValueError) as e:
        raise dg.Failure(str(e)) from e
    reasons = _reasons(read.rejected)
    yield dg.Output(read.rows, output_name="production_logs", metadata={
        "dagster/row_count": read.rows.height, "rejected": read.rejected.height, "service": spec.service,
        "rows_of_other_days": dg.MetadataValue.json(read.other_days)})  # fmt: skip
    yield dg.Output(read.rejected, output_name="production_rejects", metadata={"dagster/row_count": read.rejected.height,
                                                                             "reasons": dg.MetadataValue.json(reasons[:20])})  # fmt: skip
    usable = read.rows.height > 0
    yield dg.AssetCheckResult(asset_key="production_logs", check_name=ROWS_CHECK, passed=usable and read.rejected.height == 0,
                              severity=dg.AssetCheckSeverity.WARN if usable else dg.AssetCheckSeverity.ERROR,
                              description=f"{read.rows.height} rows read, {read.rejected.height} rejected",
                              metadata={"rejected": read.rejected.height, "reasons": dg.MetadataValue.json(reasons[:20])})  # fmt: skip


def golden_questions(golden_dir: Path) -> tuple[str | None, list[str]]:
    """(the latest frozen version, its happy-path and variant questions); (None, []) when nothing is frozen."""
    from hcat_pipeline.golden.cases import latest_version, load_version

    version = latest_version(golden_dir)
    if version is None:
        return None, []
    frame, _ = load_version(version, golden_dir)
    return version, frame["query"].drop_nulls().unique().sort().to_list()


def corpus_index(topic_strata: pl.DataFrame, chunk_embeddings: pl.DataFrame) -> CorpusIndex:
    joined = topic_strata.select("chunk_id", "stratum", "stratum_label").join(chunk_embeddings.select("chunk_id", "embedding"), on="chunk_id")
    if joined.is_empty():
        raise dg.Failure("production_scores: no chunk has both a topic stratum and an embedding; materialize topic_strata first")
    labels = {int(g): str(label) for g, label in joined.select("stratum", "stratum_label").unique().iter_rows()}
    return CorpusIndex(np.asarray(joined["embedding"].to_list(), dtype=np.float32), joined["stratum"].to_numpy(), labels)


def _groundedness_calibrator(calibrators: pl.DataFrame | None):
    """P(grounded) from the active groundedness calibrator, when the calibrators asset has one."""
    if calibrators is None or calibrators.is_empty():
        return {}
    from hcat_pipeline.calibration.fitting import CalibrationResult

    active = calibrators.filter((pl.col("dimension") == "groundedness") & pl.col("active"))
    if active.is_empty():
        return {}
    res = CalibrationResult.from_bytes(active["model"][0])
    passing = sorted(res.passing)
    return {"groundedness": lambda xs: res.predict(xs)[0][:, passing].sum(axis=1)}


@dg.multi_asset(partitions_def=production_day, group_name="monitoring",
                outs={"production_sample": dg.AssetOut(description="The day's stratified sample, scored with the nights' "
                                                       "reference-free metrics; failure signals; weights; text masked"),
                      "production_cells": dg.AssetOut(description="Weighted sums per (stratum, signal) of the day: what the "
                                                      "anomaly tests read")})  # fmt: skip
def production_scores(context: dg.AssetExecutionContext, config: MonitoringConfig, production_logs: pl.DataFrame,
                      topic_strata: pl.DataFrame, chunk_embeddings: pl.DataFrame, embedding_model: EmbeddingModel,
                      nli_model: NLIModel, pii_detector: PIIDetector, multilingual_encoder: MultilingualEncoder,
                      io_manager: dg.ResourceParam[PolarsParquetIOManager]):  # fmt: skip
    from hcat_pipeline.metrics import score

    spec, day = spec_of(config), context.partition_key
    _, sample_config, signal_config, _ = spec.core()
    metrics = [m for m in MONITOR_METRICS if m != "citation_presence" or signal_config.expect_citations]

    def scorer(frame: pl.DataFrame) -> pl.DataFrame:
        return score(frame, metrics, embed=embedding_model.embed, embed_layers=embedding_model.layer_features, nli=nli_model,
                     pii=pii_detector, multilingual=multilingual_encoder, record_info=False)  # fmt: skip

    # the stored calibrators when the nights have fitted them (read, not an input: monitoring is no part of the nights' runs)
    stored = Path(io_manager.base_dir) / "calibrators.parquet"
    calibrated = _groundedness_calibrator(read_stored_table(stored, "calibrators") if stored.is_file() else None)
    version, questions = golden_questions(Path(config.golden_dir or GOLDEN_SETS_DIR))
    index = corpus_index(topic_strata, chunk_embeddings)
    if questions:
        index = dataclasses.replace(index, golden=np.asarray(embedding_model.embed(questions), dtype=np.float32))
    result = monitor_day(production_logs, day, index, embed=embedding_model.embed, score=scorer,
                         find_pii=pii_detector.entities, sample_config=sample_config, signal_config=signal_config,
                         pass_probability=calibrated)  # fmt: skip
    today = rates(result.cells).select("signal", "rate", "ci_low", "ci_high", "n", "n_eff")
    yield dg.Output(result.sample.with_columns(pl.lit(spec.service).alias("service")), output_name="production_sample", metadata={
        "dagster/row_count": result.sample.height, "screened": result.screened, "masked_spans": result.masked_entities,
        "groundedness": "calibrated P(grounded)" if calibrated else "NLI groundedness (no active groundedness calibrator)",
        "golden_set_compared": f"{version} ({len(questions)} questions)" if version else "none frozen: unlike_golden not measured",
        "strata": dg.MetadataValue.json(dict(result.sample.group_by("stratum").len().sort("stratum").iter_rows()))})  # fmt: skip
    yield dg.Output(result.cells, output_name="production_cells", metadata={"rates": preview(today, 20, 60)})


@dg.asset(partitions_def=production_day, group_name="monitoring", pool=llm_pool(),
          description="The tiered LLM judge on the day's sample (golden-eval §5.5): the rows the metrics are unsure of, highest "
          "priority first, as many as monitoring.judge.time_budget_s allows, judged on the masked text. Not a sample: its "
          "verdicts go to the report and the review queue, not into the day's rates.")  # fmt: skip
def production_judge(context: dg.AssetExecutionContext, config: MonitoringConfig, production_sample: pl.DataFrame, llm: LLM) -> pl.DataFrame:
    spec = spec_of(config).judge
    if spec.enabled == "off" or production_sample.is_empty():
        context.add_output_metadata({"skipped": "enabled=off" if spec.enabled == "off" else "no sampled row"})
        return pl.DataFrame(schema=JUDGED)
    judge = named_llm(llm, spec.llm, "production_judge (monitoring.judge.llm)")
    per = LOCAL_SECONDS_PER_CALL if judge.provider == "local" else API_SECONDS_PER_CALL / max(1, judge.max_concurrency)
    rows, why = judge_day(production_sample, judge, per, spec.time_budget_s, tuple(spec.dimensions), judge.fingerprint())
    context.add_output_metadata({"judged": why, "dagster/row_count": rows.height,
                                 "failed": int(rows["passed"].eq(False).sum()) if rows.height else 0})  # fmt: skip
    return rows


def stored_cells(io_manager: PolarsParquetIOManager, day: str, days: int) -> pl.DataFrame:
    """production_cells of the stored days up to ``day`` (the last ``days`` of them)."""
    folder = Path(io_manager.base_dir) / "production_cells"
    files = sorted(p for p in folder.glob("*.parquet") if p.stem <= day)[-days:]
    return pl.concat([read_stored_table(p, "production_cells", p.stem) for p in files]) if files else pl.DataFrame()


def stored_values(io_manager: PolarsParquetIOManager, day: str, days: int) -> dict[str, dict[str, list[float]]]:
    """The continuous signals of the stored days of production_logs up to ``day``: signal → day → its values (latency,
    output tokens, answer length in characters)."""
    folder = Path(io_manager.base_dir) / "production_logs"
    out: dict[str, dict[str, list[float]]] = {c: {} for c in CONTINUOUS}
    for p in sorted(q for q in folder.glob("*.parquet") if q.stem <= day)[-days:]:
        rows = read_stored_table(p, "production_logs", p.stem).with_columns(pl.col("answer").str.len_chars().cast(pl.Float64).alias("answer_chars"))
        for c in CONTINUOUS:
            if c in rows.columns:
                out[c][p.stem] = rows[c].drop_nulls().cast(pl.Float64).to_list()
    return out


def _check(name: str, anomalies: list[dict], day: str) -> dg.AssetCheckResult:
    raised = [a for a in anomalies if a["kind"] in CHECK_KINDS[name] and touches(a, day)]
    worst = "ERROR" if any(a["severity"] == "ERROR" for a in raised) else "WARN"
    return dg.AssetCheckResult(check_name=name, passed=not raised, severity=SEVERITY[worst],
                               description=f"{len(raised)} raised on {day}" if raised else f"none on {day}",
                               metadata={"anomalies": dg.MetadataValue.json(raised)})  # fmt: skip


@dg.asset(partitions_def=production_day, group_name="monitoring", deps=["production_cells"],
          check_specs=[dg.AssetCheckSpec(n, asset="production_anomalies", description=d) for n, d in (
              (ACUTE_CHECK, "a day's failure rate far above its baseline (exact binomial at the effective n, minimum effect)"),
              (CATEGORY_CHECK, "a failure concentrated in one topic stratum (per stratum, Benjamini-Hochberg, vs the rest)"),
              (DRIFT_CHECK, "a trend over the window (Mann-Kendall, Holm) or a shift of the topic mix (χ²)"))],
          description="The anomalies as of the day over the stored days of production_cells (golden-eval §7.3): kind, signal, "
          "stratum, first and last day, severity, evidence; raised: the ones touching the day (what its checks raise).")  # fmt: skip
def production_anomalies(context: dg.AssetExecutionContext, config: MonitoringConfig, io_manager: dg.ResourceParam[PolarsParquetIOManager]):
    spec, day = spec_of(config), context.partition_key
    *_, anomaly_config = spec.core()
    span = max(anomaly_config.window_days, anomaly_config.baseline_days) * 4
    cells = stored_cells(io_manager, day, span)
    continuous = continuous_anomalies(stored_values(io_manager, day, span))
    found = sorted(slo_consequence(detect(cells, anomaly_config), continuous) + continuous,
                   key=lambda a: (a["start_day"], a["kind"], a["signal"], str(a["stratum"])))  # fmt: skip
    today = [a for a in found if touches(a, day)]
    yield dg.Output(as_frame(found, day), metadata={"dagster/row_count": len(found), "raised": len(today),
                                                    "days_read": cells["day"].n_unique() if cells.height else 0,
                                                    "anomalies": dg.MetadataValue.json(today)})  # fmt: skip
    for name in CHECK_KINDS:
        yield _check(name, found, day)


def _alert(webhook: AlertWebhook, reports: Path, service: str, raised: list[dict], report: Path) -> dict:
    """Each anomaly raised today that was never alerted, queued once in the outbox and sent to the webhook with the
    pending ones (``monitoring.alerts``): {new, sent, pending, failed_attempts, errors} (why: no URL configured)."""
    outbox = Outbox(reports / "monitoring" / "alerts.jsonl")
    new = outbox.add(raised, service, Path(report).resolve().as_uri())
    if webhook.url() is None:
        return {"new": len(new), "sent": 0, "pending": sum(r["status"] == "pending" for r in outbox.load().values()),
                "why": f"no webhook configured (${webhook.url_env_var}): kept in {outbox.path}"}  # fmt: skip
    return {"new": len(new), **outbox.deliver(webhook.send, webhook.retries, webhook.wait)}


def _judged_note(judged: pl.DataFrame) -> str:
    if judged.is_empty():
        return "nothing judged today (off, nothing flagged, or no time in the budget: production_judge's metadata says which)"
    n, failed = judged["request_id"].n_unique(), judged.filter(pl.col("passed") == False)["request_id"].n_unique()  # noqa: E712
    return f"{n} flagged answer(s) judged, {failed} failing at least one dimension (a tier, not a sample: not in the rates)"


def with_judge(queue: pl.DataFrame, judged: pl.DataFrame) -> pl.DataFrame:
    """The queue with the judge's verdicts on its rows (``judge``: "groundedness 2/5 fail; safety 5/5", null when not judged)."""
    if judged.is_empty():
        return queue.with_columns(pl.lit(None, dtype=pl.String).alias("judge"))
    text = judged.filter(pl.col("score").is_not_null()).group_by("request_id").agg(pl.format(
        "{} {}/5 {}", "dimension", "score", pl.when("passed").then(pl.lit("pass")).otherwise(pl.lit("fail"))).sort().str.join("; ").alias("judge"))
    return queue.join(text, on="request_id", how="left")


def strata_table(cells: pl.DataFrame, labels: dict[int, str]) -> pl.DataFrame:
    """Per stratum of the day: its share of the traffic and its main failure rates (95 % CI)."""
    by = rates(cells, by_stratum=True)
    traffic = cells.filter(pl.col("signal") == "error").group_by("stratum").agg(pl.col("sw").sum()).with_columns(share=pl.col("sw") / pl.col("sw").sum())
    out = traffic.select("stratum", pl.col("share").round(3))
    for signal in ("ungrounded", "irrelevant", "refused"):
        part = by.filter(pl.col("signal") == signal).select(
            "stratum", pl.format("{}% ({}-{}, n={})", *(pl.col(c).mul(100).round(1) for c in ("rate", "ci_low", "ci_high")), pl.col("n")).alias(signal))
        out = out.join(part, on="stratum", how="left")
    label = pl.col("stratum").replace_strict(labels, default=None, return_dtype=pl.String).alias("label")
    return out.with_columns(label).select("stratum", "label", pl.exclude("stratum", "label")).sort("stratum")


@dg.asset(partitions_def=production_day, group_name="monitoring",
          check_specs=[dg.AssetCheckSpec(NOVEL_CHECK, asset="monitoring_report", description="no failing answer far from every "
                                         "topic stratum today (WARN: novel failure modes queued for a person on the review page)")],
          description="The day's monitoring report (data/reports/monitoring/<day>/report.html), its review queue (queue.jsonl: "
          "masked rows for a person, novel failure modes first) and the history page (data/reports/history.html).")  # fmt: skip
def monitoring_report(context: dg.AssetExecutionContext, config: MonitoringConfig, production_logs: pl.LazyFrame,
                      production_rejects: pl.DataFrame, production_sample: pl.DataFrame, production_cells: pl.DataFrame,
                      production_anomalies: pl.DataFrame, production_judge: pl.DataFrame, topic_strata: pl.DataFrame,
                      io_manager: dg.ResourceParam[PolarsParquetIOManager], alert_webhook: AlertWebhook):  # fmt: skip
    from hcat_pipeline.reports.history import render_history
    from hcat_pipeline.reports.monitoring import distribution_rows, render_monitoring_report

    spec, day = spec_of(config), context.partition_key
    _, sample_config, _, anomaly_config = spec.core()
    labels = {int(g): str(label) for g, label in topic_strata.select("stratum", "stratum_label").unique().iter_rows()}
    reports = Path(config.reports_dir or REPORTS_DIR)
    queue = with_judge(review_queue(production_sample, spec.queue_size, sample_config.far_below), production_judge)
    folder = reports / "monitoring" / day
    folder.mkdir(parents=True, exist_ok=True)
    queue.with_columns(pl.lit(day).alias("day")).write_ndjson(folder / "queue.jsonl")
    before = stored_cells(io_manager, day, anomaly_config.baseline_days + 1)
    before = before.filter(pl.col("day") < day) if before.height else production_cells.head(0)
    read = {"rows": production_logs.select(pl.len()).collect().item(), "rejected": production_rejects.height, "screened":
            int(production_cells.filter(pl.col("signal") == "error")["n"].sum()), "sampled": production_sample.height,
            "masked": int(production_sample["masked_spans"].sum()),
            "reasons": _reasons(production_rejects), "judged": _judged_note(production_judge)}  # fmt: skip
    raised = production_anomalies.filter(pl.col("raised"))
    path = render_monitoring_report(folder / "report.html", service=spec.service, day=day, read=read,
                                    today=rates(production_cells), baseline=rates(before.with_columns(pl.lit(day).alias("day"))),
                                    strata=strata_table(production_cells, labels), anomalies=raised, queue=queue,
                                    labels=labels, review_url=REVIEW_URL, history_href="../../history.html",
                                    distributions=distribution_rows(stored_values(io_manager, day, anomaly_config.baseline_days + 1), day))  # fmt: skip
    render_history(reports / "history.html", Path(io_manager.base_dir), service=spec.service, system_id=spec.service,
                   anomalies=production_anomalies.to_dicts())  # every anomaly found as of the day, not found again here
    novel = queue.filter(pl.col("queue_reason") == "novel")
    alerts = _alert(alert_webhook, reports, spec.service, raised.to_dicts(), path)
    if alerts.get("pending"):
        context.log.warning(f"{alerts['pending']} anomaly alert(s) not delivered yet: {alerts.get('why') or alerts.get('errors')}")
    yield dg.Output(pl.DataFrame({"day": [day], "report": [str(path)], "anomalies": [raised.height], "queued": [queue.height]}),
                    metadata={"report": dg.MetadataValue.path(str(path)), "queued": queue.height, "novel": novel.height,
                              "alerts": dg.MetadataValue.json(alerts)})  # fmt: skip
    yield dg.AssetCheckResult(check_name=NOVEL_CHECK, passed=novel.is_empty(), severity=dg.AssetCheckSeverity.WARN,
                              description=f"{novel.height} failing answer(s) far from every topic stratum queued for review",
                              metadata={"requests": dg.MetadataValue.json(novel["request_id"].to_list())})  # fmt: skip
