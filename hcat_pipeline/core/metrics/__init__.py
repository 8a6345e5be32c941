"""Explainable metrics (HCAT paper §3-4, concept-level chapter §14.2-14.3, violation-match deck).

One module per metric family: relevancy, groundedness, completeness, similarity, matching,
aggregation, scoring (frame-level orchestration), plus the NLI and safety modules. This package
file stays free of imports so the modules can be written and imported independently.
"""
