"""The metrics stage (HCAT paper §3-4, concept-level chapter §14.2-14.3, violation-match deck): metric tables.

One module per metric family, each registering its metrics in ``registry`` (name, needs, explanation
columns, aggregations, compute): ``relevancy``, ``groundedness``, ``groundedness_nli``, ``completeness``,
``similarity``, ``privacy``, ``refusal``, ``toxicity_metric``. ``scoring.score_frame`` resolves requested names
through the registry over a ``batch.Batch`` with ``batch.Resources`` and ``options.ScoreOptions``;
``matching`` (violation matching) and ``aggregation`` are shared helpers; ``safety`` holds the bias and harm
checks. The models' pure parts are sub-packages: ``nli/`` (the groundedness head, its recipe and data) and
``toxicity/`` (the toxicity head, attributes, rules, recipe and data).

Asset face: ``hcat_pipeline.assets.metrics`` (``metric_tables``, ``bias_report``), ``assets.nli`` (``nli_head``),
``assets.violations``. The public API (``score``, ``match_violations``, ``aggregate`` … — see ``api``) is
re-exported here lazily, so importing one scorer module does not load the whole scoring chain.
"""

from __future__ import annotations

import importlib

__all__ = ["MatchConfig", "MatchResult", "MetricUnavailable", "ScoreOptions", "aggregate", "char_iou", "default_metrics",
           "hierarchical_consistency", "match_violations", "metric_names", "opt_in_metrics", "score"]  # fmt: skip


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("hcat_pipeline.metrics.api"), name)
    raise AttributeError(f"module 'hcat_pipeline.metrics' has no attribute {name!r}")
