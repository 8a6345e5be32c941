"""Shared text helpers: the project's one English stop-word list and its word tokenizer.

``STOPWORDS`` — function words and conversational fillers ("yeah", "okay", "know", "think") that carry
no content for lexical overlap / novelty features: the NLI pair features (``metrics.nli.api``), the
behaviour evidence readers and the golden-set selection's content-word checks read it from here.
Negations ("not", "no", "nor") are in the list on purpose: overlap features ignore them and the
negation features look for them separately.
"""

from __future__ import annotations

import re

STOPWORDS: frozenset[str] = frozenset(
    """a an the and or but if then else of to in on at by for with from as into onto about over under
    than that this these those there here it its it's is are was were be been being am do does did
    doing have has had having can could will would shall should may might must i you he she we they
    me him her us them my your his our their mine yours ours theirs what which who whom whose when
    where why how all any both each few more most other some such only own same so too very just also
    not no nor yes well oh ok okay really like know think yeah sure one s t""".split()
)


def content_words(words: list[str]) -> list[str]:
    """``words`` (already lower-cased tokens) without the stop words."""
    return [w for w in words if w not in STOPWORDS]


_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.'][A-Za-z0-9_]+)*")


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text or "")]


def normalise(text: str) -> str:
    return " ".join(words(text))


def answer_in_question(question: str, answer: str, share: float = 0.75) -> bool:
    """At least ``share`` of the answer's content words already appear in the question (answerable from the question
    alone, or a key that restates the question)."""
    content = [w for w in words(answer) if w not in STOPWORDS]
    q = set(words(question))
    return bool(content) and sum(w in q for w in content) / len(content) >= share
