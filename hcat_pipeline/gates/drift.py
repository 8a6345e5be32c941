"""Drift is never compared silently (golden-eval §5.6), pure core.

A comparison across nights is like for like only when the same models scored both: the judge's model and config hash
(``llm_judge_scores``), the metric models (``metric_tables``' ``score_info`` → ``models``: the embedding model id and
the NLI head's fingerprint). ``scoring_models(frame)`` reads them off a stored table; ``model_drift(current, past)``
names every change against the earlier runs, or None. A trend gate whose history drifted is INDETERMINATE with the
change named (``gates.apply``); the report prints it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import polars as pl

UNRECORDED = "(not recorded)"


def scoring_models(frame: pl.DataFrame | None) -> dict[str, str]:
    """{model role: identity} of the models that scored ``frame`` (empty when the table records none)."""
    if frame is None or frame.height == 0:
        return {}
    out: dict[str, str] = {}
    for col, role in (("judge_model", "judge model"), ("judge_config_hash", "judge config")):
        if col in frame.columns:
            vals = sorted({str(v) for v in frame[col].drop_nulls().to_list()})
            if vals:
                out[role] = ",".join(vals)
    if "score_info" in frame.columns:
        for raw in frame["score_info"].drop_nulls().unique().to_list()[:4]:
            try:
                models = json.loads(raw).get("models") or {}
            except (ValueError, AttributeError):
                continue
            for role, ident in models.items():
                out[f"{role} model"] = str(ident)
    return out


def model_drift(current: dict[str, str], past: Sequence[tuple[str, dict[str, str]]]) -> str | None:
    """'nli model nli-head@a → nli-head@b since v1|2026-03-01; …' for every role whose model differs from an earlier
    run's (a role recorded on one side only counts: an unrecorded model cannot be shown to be the same); None if none."""
    changes = []
    for label, models in past:
        for role in sorted(set(current) | set(models)):
            before, now = models.get(role, UNRECORDED), current.get(role, UNRECORDED)
            if before != now:
                changes.append(f"{role} {before} → {now} since {label}")
    return "; ".join(dict.fromkeys(changes)) or None
