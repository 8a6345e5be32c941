"""Toxicity (HCAT paper §4) as a registered metric: per answer sentence, max (``toxicity``) and mean.

The scores come from ``toxicity_scores`` (one call for every answer sentence of the batch); this
module is its one call site, so switching the toxicity model means changing ``_scorer`` only.
"""

from __future__ import annotations

import polars as pl

from hcat_pipeline.core.metrics.registry import F64_LIST, MetricUnavailable, metric


def _scorer():
    """The toxicity scorer: ``(answer sentences per row) -> [{toxicity, toxicity_mean, toxicity_per_sentence}]``."""
    from hcat_pipeline.core.metrics.safety import toxicity_scores

    return toxicity_scores


@metric("toxicity", columns={"toxicity_mean": pl.Float64, "toxicity_per_sentence": F64_LIST})
def toxicity_metric(batch, resources, options) -> dict[str, list]:
    """Toxicity of the answer: max over its sentences (mean and per-sentence values explain it)."""
    out = {c: batch.column() for c in ("toxicity", "toxicity_mean", "toxicity_per_sentence")}
    rows = [i for i in batch.valid if batch.sentences("answer", i)]
    if not rows:
        return out
    try:
        results = _scorer()([batch.sentences("answer", i) for i in rows])
    except ModuleNotFoundError as e:  # the packaged classifier is not installed: an environment problem, not a bug
        raise MetricUnavailable("toxicity", f"the toxicity classifier could not be loaded ({e})",
                                "install the project's dependencies (`bash scripts/setup.sh`; alt-profanity-check)") from e  # fmt: skip
    for i, r in zip(rows, results, strict=True):
        out["toxicity"][i] = r.get("toxicity")
        out["toxicity_mean"][i] = r.get("toxicity_mean")
        per = r.get("toxicity_per_sentence")
        out["toxicity_per_sentence"][i] = None if per is None else [float(x) for x in per]
    return out
