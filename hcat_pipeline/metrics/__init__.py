"""Public API of the explainable metrics (HCAT paper §3-4, concept-level chapter §14, violation deck).

>>> from hcat_pipeline.metrics import score, match_violations, aggregate
>>> scored = score(frame)                      # query, contexts, answer[, reference] -> + metric columns
>>> scored, info = score(frame, return_info=True)
>>> result = match_violations(predicted, ground_truth, match_threshold=0.5)

``score`` options (all keyword):
    embedding_model  an ``EmbeddingModel`` (default: the packaged MiniLM with the project cache)
    embed            or any ``embed(texts) -> normalised vectors`` callable instead
    aggregation      "mean" | "weighted" | "minimax", or a {metric: method} dict; a method the paper
                     does not define for a metric falls back to "mean" (recorded in info/score_info)
    sentence_weights callable(sentences) -> weights for "weighted" (default: token counts)
    coverage_threshold  S_max below which a context sentence is "not covered" (default 0.5)
    ot_metric        "cosine" | "euclidean" distance for the Wasserstein completeness
    nli, pii, multilingual  resources (``NLIModel``, ``PIIDetector``, ``MultilingualEncoder``); NLI and
                     PII are created lazily when their metric is requested and none is given
    explain_sentences  add query/context/answer sentence lists (default True)
    progress         tqdm progress bars (default False)
    return_info      return (frame, info) instead of the frame
    record_info      add a ``score_info`` JSON column (same for every row) recording metrics computed,
                     unavailable ones with the reason, and the aggregation used (default True)
"""

from __future__ import annotations

import json
import polars as pl

from hcat_pipeline.core.metrics.aggregation import aggregate
from hcat_pipeline.core.metrics.matching import MatchConfig, MatchResult, char_iou
from hcat_pipeline.core.metrics.matching import match_violations as _match
from hcat_pipeline.core.metrics.scoring import METRICS, OPT_IN, score_frame
from hcat_pipeline.core.metrics.similarity import hierarchical_consistency_report

__all__ = [
    "METRICS",
    "OPT_IN",
    "MatchConfig",
    "MatchResult",
    "aggregate",
    "char_iou",
    "hierarchical_consistency",
    "match_violations",
    "score",
]


def _embedding_model(options: dict):
    model = options.pop("embedding_model", None)
    if model is None and options.get("embed") is None:
        from hcat_pipeline.resources.embedding import EmbeddingModel

        model = EmbeddingModel()
    return model


def score(frame: pl.DataFrame, metrics: list[str] | None = None, **options):
    """Score a frame of (query, contexts, answer[, reference]) rows; see the module docstring."""
    return_info = options.pop("return_info", False)
    record_info = options.pop("record_info", True)
    model = _embedding_model(options)
    embed = options.pop("embed", None) or model.embed
    if model is not None:
        options.setdefault("embed_stats", lambda: {**model.last_stats.as_metadata(), "model_id": model.model_id})
    out, info = score_frame(frame, metrics, embed=embed, **options)
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
