"""Public API of the explainable metrics (re-exported lazily by ``hcat_pipeline.metrics``; HCAT paper §3-4, concept-level chapter §14, violation deck).

>>> from hcat_pipeline.metrics import score, match_violations, aggregate
>>> scored = score(frame)                      # query, contexts, answer[, reference] -> + metric columns
>>> scored, info = score(frame, ["groundedness_nli", "refusal"], return_info=True)
>>> result = match_violations(predicted, ground_truth, match_threshold=0.5)

``score(frame, metrics=None, allow_unavailable=False, **options)``

    metrics          metric names (``metric_names()``; unknown names raise ``ValueError`` listing the
                     known ones); ``None``: every default metric that applies (``semantic_similarity``
                     only with a ``reference`` column; ``cross_lingual_similarity`` is opt-in)
    allow_unavailable  a requested metric that cannot run (its model, package or input column is
                     missing) raises ``MetricUnavailable`` naming the metric, the cause and the fix;
                     with True its columns are null instead and ``info["metrics_unavailable"]`` /
                     ``score_info`` hold {metric: reason}. A bug inside a metric always raises.

options (all keyword):
    embedding_model  an ``EmbeddingModel`` (default: the packaged MiniLM with the project cache)
    embed            or any ``embed(texts) -> normalised vectors`` callable instead
    embed_layers     ``texts -> layer features`` for the toxicity head (default: ``layer_features`` of
                     the embedding model, or of the packaged MiniLM when only ``embed`` is given)
    nli, pii, multilingual, llm  resources (``NLIModel``, ``PIIDetector``, ``MultilingualEncoder``,
                     ``LLM``) or zero-argument factories; the first three default to the packaged
                     ones, built only when a requested metric needs them; pass None to withhold one
    aggregation      "mean" | "weighted" | "minimax", or a {metric: method} dict; a method the paper
                     does not define for a metric falls back to "mean" (recorded in info/score_info)
    sentence_weights callable(sentences) -> weights for "weighted" (default: token counts)
    coverage_threshold, ot_metric, language, refusal_mode, refusal_threshold, explain_sentences:
                     see ``hcat_pipeline.metrics.options.ScoreOptions`` (the one list of defaults)
    progress         tqdm progress bars (default False)
    return_info      return (frame, info) instead of the frame
    record_info      add a ``score_info`` JSON column (same for every row) recording metrics computed,
                     unavailable ones with the reason, and the aggregation used (default True)
"""

from __future__ import annotations

import json

import polars as pl

from hcat_pipeline.metrics.aggregation import aggregate
from hcat_pipeline.metrics.matching import MatchConfig, MatchResult, char_iou
from hcat_pipeline.metrics.matching import match_violations as _match
from hcat_pipeline.metrics.options import ScoreOptions
from hcat_pipeline.metrics.registry import MetricUnavailable, default_metrics, opt_in_metrics
from hcat_pipeline.metrics.scoring import score_frame
from hcat_pipeline.metrics.similarity import hierarchical_consistency_report

__all__ = [
    "MatchConfig",
    "MatchResult",
    "MetricUnavailable",
    "ScoreOptions",
    "aggregate",
    "char_iou",
    "default_metrics",
    "hierarchical_consistency",
    "match_violations",
    "metric_names",
    "opt_in_metrics",
    "score",
]


def metric_names() -> list[str]:
    """Every registered metric (default ones first, then the opt-in ones)."""
    return default_metrics() + opt_in_metrics()


def _embedding_model(options: dict):
    model = options.pop("embedding_model", None)
    if model is None and options.get("embed") is None:
        from hcat_pipeline.resources.embedding import EmbeddingModel

        model = EmbeddingModel()
    return model


def default_resources() -> dict:
    """Zero-argument factories of the packaged NLI, PII and multilingual models (built when needed)."""
    from hcat_pipeline.resources.multilingual import MultilingualEncoder
    from hcat_pipeline.resources.nli import NLIModel
    from hcat_pipeline.resources.pii import PIIDetector

    return {"nli": NLIModel, "pii": PIIDetector, "multilingual": MultilingualEncoder}


def score(frame: pl.DataFrame, metrics: list[str] | None = None, allow_unavailable: bool = False, **options):
    """Score a frame of (query, contexts, answer[, reference]) rows; see the module docstring."""
    return_info = options.pop("return_info", False)
    record_info = options.pop("record_info", True)
    model = _embedding_model(options)
    if options.get("embed") is None:
        options["embed"] = model.embed
    if options.get("embed_layers") is None:  # the toxicity head reads the packaged MiniLM's layer features
        from hcat_pipeline.resources.embedding import EmbeddingModel

        layers_model = model or EmbeddingModel()
        options["embed_layers"] = layers_model.layer_features
        options.setdefault("device", layers_model.device)  # the toxicity head's encoder runs beside its layer features
    if model is not None:
        options.setdefault("embed_stats", lambda: {**model.last_stats.as_metadata(), "model_id": model.model_id})
    for name, factory in default_resources().items():
        options.setdefault(name, factory)
    out, info = score_frame(frame, metrics, allow_unavailable=allow_unavailable, **options)
    if record_info:
        out = out.with_columns(pl.lit(json.dumps(info, sort_keys=True, default=str)).alias("score_info"))
    return (out, info) if return_info else out


def match_violations(predicted, ground_truth, **config) -> MatchResult:
    """Match predicted to ground-truth violations (dicts or polars frames with start, end, rule[,
    category, explanation, correction, text_id]). ``config``: ``MatchConfig`` fields (weights and
    thresholds), plus ``embedding_model=`` or ``embed=`` for the rule/explanation/correction similarity.
    """
    model = _embedding_model(config)
    embed = config.pop("embed", None) or model.embed
    return _match(predicted, ground_truth, embed, MatchConfig.from_options(**config))


def hierarchical_consistency(hierarchy: dict, embedding_model=None, nli=None, **thresholds) -> dict:
    """Parent-child alignment, sibling redundancy and (with ``nli=NLIModel``) cross-section contradiction."""
    opts = {"embedding_model": embedding_model}
    model = _embedding_model(opts)
    return hierarchical_consistency_report(
        hierarchy, model.embed, contradiction=None if nli is None else nli.contradiction, **thresholds
    )
