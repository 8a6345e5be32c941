"""Explainable metrics (HCAT paper §3-4, concept-level chapter §14.2-14.3, violation-match deck).

One module per metric family, each registering its metrics in ``registry`` (name, needs, explanation
columns, aggregations, compute): relevancy, groundedness, completeness, similarity, privacy, refusal,
toxicity_metric. ``scoring.score_frame`` resolves requested names through the registry over a
``batch.Batch`` with ``batch.Resources`` and ``options.ScoreOptions``; ``matching`` and
``aggregation`` are shared helpers; the NLI and safety modules provide the models' pure parts. This
package file stays free of imports so the modules can be written and imported independently.
"""
