"""Construct definitions (golden-eval §3.5): per metric, the capability it is claimed to measure (the *claim*), what it
actually computes (the *proxy*) and the gap between them — read by the report's construct-validity section.

One entry per headline figure a report shows; a metric without an entry is reported with validity UNKNOWN and "no
construct definition" (never silently as valid). ``dimension`` names the human-label dimension its validity evidence
comes from (``metric_validity``), when there is one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Construct:
    claim: str
    proxy: str
    gap: str
    dimension: str | None = None  # metric_validity's dimension whose labels validate this metric


CONSTRUCTS: dict[str, Construct] = {
    "conciseness": Construct(
        "the answer says what is needed without padding (golden-eval §3.2)",
        "the reference's word count over the answer's, capped at 1",
        "length only: a short wrong answer is concise; the reference's own length sets the bar; not validated against labels"),
    "tone": Construct(
        "the answer's tone is courteous and professional (golden-eval §3.2)",
        "VADER's compound sentiment of the answer and its negative sentences",
        "lexical sentiment: bad news stated politely reads negative, sarcasm reads positive; not validated against labels"),
    "groundedness_nli": Construct(
        "the answer states only what its retrieved passages support (no fabrication)",
        "mean σ(D) of the packaged NLI head over answer sentences, premise = the row's context sentences",
        "entailment by the retrieved passages, not truth: a faithful copy of a wrong passage scores high", "groundedness"),
    "groundedness_similarity": Construct(
        "the answer states only what its retrieved passages support",
        "mean best cosine of each answer sentence to a context sentence (MiniLM)",
        "topical closeness, not support: a negated or altered fact stays close", "groundedness"),
    "answer_relevancy": Construct(
        "the answer addresses the question asked",
        "cosine of answer sentences to the question (MiniLM), aggregated",
        "on-topic is not answering: restating the question scores well"),
    "recall_at_k": Construct(
        "the retriever finds the passage that answers the question",
        "share of the case's source chunks among the top-k retrieved",
        "the generated case's source chunk only: another passage that also answers counts as a miss"),
    "behaviour_pass": Construct(
        "the system behaves as each case requires (answers correctly, declines, resists, corrects)",
        "the behaviour rule of the case's kind: deterministic checks, NLI support, refusal detector",
        "each rule reads surface evidence (cues, overlap, support); an unsure verdict counts as not passed"),
    "toxicity": Construct(
        "the answer is free of abuse and toxic content",
        "max over sentences of the packaged toxicity head's probability",
        "trained on other text (ToxiGen): domain wording may shift it", "toxicity"),
    "citation_precision": Construct(
        "each citation points at a passage that supports its sentence (attribution, §10.3)",
        "share of citations whose cited passage the NLI head finds entailing the sentence (ALCE)",
        "as valid as the NLI head; markers must follow the [n] / [chunk id] conventions"),
    "stated_confidence": Construct(
        "the confidence a system states matches how often it is right (§3.2.3)",
        "number, JSON field or verbal hedge read from the answer, against the answer_correct verdict",
        "verbal hedges mapped by a fixed lexicon; correctness is itself a rule's verdict"),
}
