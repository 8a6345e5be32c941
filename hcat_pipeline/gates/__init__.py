"""Statistical core of the last stage: uncertainty, release gates, rankings, Pareto, integrity.

No Dagster here (numpy / scipy / polars); the assets in ``hcat_pipeline/assets/gates.py`` and
``assets/rankings.py`` are thin wrappers.

- ``uncertainty``: ``bootstrap_ci``, ``paired_bootstrap_ci``, ``claim_strength`` (golden-eval §6.6).
"""

from hcat_pipeline.gates.uncertainty import (
    CLAIM_RULES,
    Estimate,
    bootstrap_ci,
    claim_strength,
    estimate_strength,
    paired_bootstrap_ci,
)

__all__ = [
    "CLAIM_RULES",
    "Estimate",
    "bootstrap_ci",
    "claim_strength",
    "estimate_strength",
    "paired_bootstrap_ci",
]
