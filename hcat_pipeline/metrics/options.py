"""The settings of one ``score()`` call — one field list with one set of defaults.

``hcat_pipeline.metrics.score(**options)``, ``hcat score`` and the ``metric_tables`` asset config
(derived from this dataclass, never retyped) all read these fields. The field types are the ones
Dagster config accepts (string literals, plain dicts), so the derivation is mechanical.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal, get_args

from hcat_pipeline.metrics.completeness import OT_METRICS
from hcat_pipeline.metrics.groundedness_nli import DEFAULT_TASK, GroundingTask
from hcat_pipeline.metrics.refusal import DEFAULT_REFUSAL_MODE, DEFAULT_REFUSAL_THRESHOLD, REFUSAL_MODES, RefusalMode
from hcat_pipeline.metrics.registry import AGGREGATIONS, Metric, get_metric

Aggregation = Literal["mean", "weighted", "minimax"]
OTMetric = Literal["cosine", "euclidean"]
PiiPolicy = Literal["not_in_context", "any"]
assert get_args(Aggregation) == AGGREGATIONS and get_args(OTMetric) == OT_METRICS


@dataclass(frozen=True)
class ScoreOptions:
    aggregation: Aggregation = "mean"  # per-sentence aggregation, where the metric defines it (else mean)
    aggregation_by_metric: dict[str, str] = field(default_factory=dict)  # {metric: method} overriding `aggregation`
    coverage_threshold: float = 0.5  # S_max below which a context sentence counts as not covered
    pii_policy: PiiPolicy = "not_in_context"  # pii_leak counts PII not in the row's context | any PII in the answer
    ot_metric: OTMetric = "cosine"  # distance for the Wasserstein completeness
    language: str = "en"  # sentence splitting
    refusal_mode: RefusalMode = DEFAULT_REFUSAL_MODE  # see metrics.refusal
    refusal_threshold: float = DEFAULT_REFUSAL_THRESHOLD  # `refused` = refusal probability ≥ this
    explain_sentences: bool = True  # add query/context/answer sentence lists
    long_document_threshold: float = 0.70  # an answer sentence whose best source-document sentence is below: unfaithful (ch. 14.5)
    language_coverage_threshold: float = 0.6  # a source language whose best match with an answer sentence is below: not covered (ch. 14.5)
    task: GroundingTask = DEFAULT_TASK  # what groundedness_nli scores: RAG answers (qa), dialogue responses, summary sentences; a `task` column overrides per row

    def __post_init__(self):
        for m in (self.aggregation, *self.aggregation_by_metric.values()):
            if m not in AGGREGATIONS:
                raise ValueError(f"aggregation {m!r}: expected one of {AGGREGATIONS}")
        if self.ot_metric not in OT_METRICS:
            raise ValueError(f"ot_metric {self.ot_metric!r}: expected one of {OT_METRICS}")
        if self.task not in get_args(GroundingTask):
            raise ValueError(f"task {self.task!r}: expected one of {get_args(GroundingTask)}")
        if self.refusal_mode not in REFUSAL_MODES:
            raise ValueError(f"refusal_mode {self.refusal_mode!r}: expected one of {REFUSAL_MODES}")
        if not all(0.0 <= t <= 1.0 for t in (self.coverage_threshold, self.refusal_threshold, self.long_document_threshold,
                                             self.language_coverage_threshold)):
            raise ValueError("coverage_threshold, refusal_threshold, long_document_threshold and language_coverage_threshold must lie in [0, 1]")

    @classmethod
    def from_kwargs(cls, **kwargs) -> ScoreOptions:
        """Build from keyword options; ``aggregation`` may also be a {metric: method} dict (→ ``aggregation_by_metric``)."""
        agg = kwargs.get("aggregation")
        if isinstance(agg, dict):
            kwargs = {**kwargs, "aggregation": "mean", "aggregation_by_metric": dict(agg)}
        known = {f.name for f in fields(cls)}
        if unknown := set(kwargs) - known:
            raise TypeError(f"unknown score options {sorted(unknown)}; known: {sorted(known)}")
        return cls(**kwargs)

    def method(self, metric: Metric | str) -> str:
        """The aggregation used for ``metric`` (the requested one if the metric defines it, else mean)."""
        metric = get_metric(metric) if isinstance(metric, str) else metric
        return metric.aggregation_for(self.aggregation_by_metric.get(metric.name, self.aggregation))
