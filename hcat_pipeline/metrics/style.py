"""Style rubric dimensions golden-eval §3.2 names that no other metric measures: conciseness and tone (opt-in).

* ``conciseness`` — the answer says what the reference says in as few words: ``min(1, words(reference) /
  words(answer))`` (1: no longer than the reference; 0.25: four times as long); ``answer_words`` beside it. Without a
  reference it is null (no length to compare with), and a refusal is not scored.
* ``tone`` — the answer's sentiment as VADER's compound score in [−1, 1] (the lexicon ships in ``vaderSentiment``);
  ``tone_negative_sentences`` lists the sentences at or below ``NEGATIVE_AT`` — a curt, dismissive or hostile answer.

Neither is validated against human labels yet (``constructs``: validity UNKNOWN in the report): they describe, they
never decide a gate. No Dagster import.
"""

from __future__ import annotations

import polars as pl

from hcat_pipeline.common.sentences import sentences
from hcat_pipeline.metrics.refusal import is_refusal
from hcat_pipeline.metrics.registry import STR_LIST, metric
from hcat_pipeline.metrics.toxicity.rules import vader

NEGATIVE_AT = -0.5  # VADER's compound at or below which a sentence reads negative


def conciseness(answer: str, reference: str | None) -> float | None:
    """min(1, words(reference) / words(answer)); None without a reference or an answer."""
    a, r = len((answer or "").split()), len((reference or "").split())
    if not a or not r:
        return None
    return min(1.0, r / a)


def tone(answer: str) -> tuple[float | None, list[str]]:
    """(VADER compound of the answer, its sentences at or below NEGATIVE_AT)."""
    if not (answer or "").strip():
        return None, []
    analyzer = vader()
    negative = [s for s in sentences(answer) if analyzer.polarity_scores(s)["compound"] <= NEGATIVE_AT]
    return float(analyzer.polarity_scores(answer)["compound"]), negative


@metric("conciseness", needs={"reference"}, default=False, columns={"answer_words": pl.Int64})
def conciseness_metric(batch, resources, options) -> dict[str, list]:
    """Conciseness (golden-eval §3.2): the reference's length over the answer's, capped at 1 (opt-in, not validated)."""
    value, words = batch.column(), batch.column()
    for i in batch.valid:
        answer = batch.answers[i] or ""
        words[i] = len(answer.split())
        if not is_refusal(answer):
            value[i] = conciseness(answer, batch.references[i])
    return {"conciseness": value, "answer_words": words}


@metric("tone", default=False, columns={"tone_negative_sentences": STR_LIST})
def tone_metric(batch, resources, options) -> dict[str, list]:
    """Tone (golden-eval §3.2): VADER compound of the answer and its negative sentences (opt-in, not validated)."""
    value, negative = batch.column(), batch.column()
    for i in batch.valid:
        value[i], negative[i] = tone(batch.answers[i] or "")
    return {"tone": value, "tone_negative_sentences": negative}
