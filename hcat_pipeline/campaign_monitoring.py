"""The campaign file's ``monitoring:`` section (golden-eval §7): where the service's traffic logs are, how their
records map onto the row schema, how a day is sampled and scored, and how anomalies are tested.

Each sub-section is derived from the core's dataclass (``monitoring.logs.LogFields``, ``sampling.SampleConfig``,
``signals.SignalConfig``, ``anomalies.AnomalyConfig``): one field list, one set of defaults. ``monitoring_run_config``
hands the section to ``monitoring_job`` (the production-log sensor calls it).
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, field_validator, model_validator

from hcat_pipeline.campaign_systems import LLMSpec, Strict
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.monitoring.anomalies import AnomalyConfig
from hcat_pipeline.monitoring.judging import MONITOR_DIMENSIONS
from hcat_pipeline.monitoring.logs import LogFields
from hcat_pipeline.monitoring.sampling import SampleConfig
from hcat_pipeline.monitoring.signals import SignalConfig
from hcat_pipeline.monitoring.sql_source import SqlSource

LogFieldsSpec = config_from(LogFields, "LogFieldsSpec", base=Strict)
SampleSpec = config_from(SampleConfig, "SampleSpec", base=Strict)
SignalSpec = config_from(SignalConfig, "SignalSpec", base=Strict)
AnomalySpec = config_from(AnomalyConfig, "AnomalySpec", base=Strict)
SqlSourceSpec = config_from(SqlSource, "SqlSourceSpec", base=Strict)
MONITORING_STEPS = ("production_logs_op", "production_scores", "production_judge", "production_anomalies", "monitoring_report")  # their op names


class MonitorJudgeSpec(Strict):
    """The tiered LLM judge on the day's sample (golden-eval §5.5): the rows the metrics are unsure of, within the budget."""

    enabled: Literal["auto", "off"] = Field(default="auto", description="auto: the flagged rows that fit time_budget_s; off: none")
    time_budget_s: float = Field(default=120.0, ge=0, description="judge time a day (the local model: ~6 s a call, 3 dimensions)")
    dimensions: list[str] = Field(default_factory=lambda: list(MONITOR_DIMENSIONS), min_length=1,
                                  description="reference-free judge dimensions (production has no reference answer)")
    llm: Optional[LLMSpec] = Field(default=None, description="the judge LLM; absent: the llm resource")

    @field_validator("dimensions")
    @classmethod
    def _dimensions(cls, v: list[str]) -> list[str]:
        from hcat_pipeline.judge.scoring import DIMENSIONS

        if bad := [d for d in v if d not in DIMENSIONS or d in ("correctness", "completeness")]:
            raise ValueError(f"judge dimension(s) {bad}: expected reference-free ones of {[d for d in DIMENSIONS if d not in ('correctness', 'completeness')]}")
        return v


class MonitoringSpec(Strict):
    """A production service's logs, read every day they appear (``production_log_sensor``)."""

    service: str = Field(default="service", min_length=1, description="the monitored service's name (reports, history page)")
    paths: list[str] = Field(default_factory=list, description="log files, folders or globs (.jsonl .ndjson .json .parquet .csv, "
                             "span exports); a file's day is in its name (fields.day_pattern) or each row's timestamp; relative to "
                             "the campaign file")
    sql: Optional[SqlSourceSpec] = Field(default=None, description="traffic in a database: a query per day (:day_start, :day_end), "
                                         "the days it holds, the URL from an env var (monitoring.sql_source)")
    fields: LogFieldsSpec = Field(default_factory=LogFieldsSpec, description="where each field sits in a record (JSON paths)")
    sample: SampleSpec = Field(default_factory=SampleSpec, description="the day's stratified sample")
    signals: SignalSpec = Field(default_factory=SignalSpec, description="what a row fails: thresholds and the latency service level")
    anomalies: AnomalySpec = Field(default_factory=AnomalySpec, description="the acute / per-stratum / drift tests")
    judge: MonitorJudgeSpec = Field(default_factory=MonitorJudgeSpec, description="the tiered LLM judge on the day's flagged rows")
    queue_size: int = Field(default=10, ge=0, description="rows a day queued for a person on the review page (novel failure modes)")

    @model_validator(mode="after")
    def _a_source(self):
        if not self.paths and self.sql is None:
            raise ValueError("monitoring: paths (log files) or sql (a query), at least one")
        return self

    def sql_source(self) -> SqlSource | None:
        return to_core(SqlSource, self.sql) if self.sql is not None else None

    def core(self) -> tuple[LogFields, SampleConfig, SignalConfig, AnomalyConfig]:
        return (to_core(LogFields, self.fields), to_core(SampleConfig, self.sample), to_core(SignalConfig, self.signals),
                to_core(AnomalyConfig, self.anomalies))  # fmt: skip


def monitoring_run_config(spec: MonitoringSpec) -> dict:
    """monitoring_job's run config: the section, to every step that reads it."""
    section = {"monitoring": spec.model_dump(mode="json")}
    return {"ops": {name: {"config": section} for name in MONITORING_STEPS}}
