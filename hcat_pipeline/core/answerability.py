"""Answerability (golden-eval §10.4): did the system abstain / refuse instead of answering?

The project has one refusal detector, ``hcat_pipeline.core.metrics.refusal.refusal_probability``
(modes rules / classifier / classifier+embedding / ensemble). ``is_refusal`` — its ``rules`` mode for
one reply — is re-exported here for the callers that import it from this module.
"""

from hcat_pipeline.core.metrics.refusal import is_refusal

__all__ = ["is_refusal"]
