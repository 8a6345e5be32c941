"""The score cache the scoring assets share (``metrics.score_cache``): which models score, stated from the resources."""

from __future__ import annotations

import dagster as dg

from hcat_pipeline.metrics.score_cache import ScoreCache
from hcat_pipeline.paths import SCORE_CACHE_DIR

# fields that change where or how fast a resource runs, never what it computes
_PLUMBING = ("cache_dir", "embedding_cache_dir", "use_cache", "use_embedding_cache", "threads", "batch_size")


def _identity(resource: dg.ConfigurableResource) -> dict:
    fields = {k: v for k, v in resource.model_dump().items() if k not in _PLUMBING}
    if hasattr(resource, "fingerprint"):
        fields["fingerprint"] = resource.fingerprint()  # the NLI head's files, not just their path
    return {"class": type(resource).__name__, **fields}


def score_cache(*resources: dg.ConfigurableResource | None) -> ScoreCache | None:
    """A cache keyed by these resources' identities; None when ``HCAT_SCORE_CACHE_DIR`` is set empty."""
    if not SCORE_CACHE_DIR:
        return None
    return ScoreCache(SCORE_CACHE_DIR, {type(r).__name__: _identity(r) for r in resources if r is not None})
