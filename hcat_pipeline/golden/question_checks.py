"""Is a generated question one a stranger could ask, and does the generator's own reader answer it with its reference?

``referent_problem(question)``: why a question has no referent of its own — it leans on the text it was written from
("this method", "Does it …", "the passage"), or names nothing a reader could look up (only a generic subject: "the
value", "the semantics", "pairs"; no name, literal, number or qualified noun) — or None. Counted as the selection
reason ``no_referent``.

``wh_slot_problem(doc)``: why a wh-question with do-support is garbled — its wh-word fills no slot of the clause
("What does bound method objects support?": a subject after "does"; "What does the inheritance list usually give a
list of base classes?": the object of a preposition that has its own) — read from a spaCy-like parse (tokens with
``dep_``, ``head``, ``tag_``, ``pos_``; no spaCy import here: ``resources.nli.NLIModel.docs`` parses), or None.

``roundtrip_problem(row)``: the round-trip check's verdict recorded on a generated row (``golden.roundtrip``): why
the generator, answering the question from the source chunk alone, disagrees with the reference — or None.
"""

from __future__ import annotations

import re

from hcat_pipeline.golden.claims import GENERIC_NOUNS
from hcat_pipeline.golden.selection import AUXILIARIES, STOPWORDS, words

_WH = frozenset("what which when where who whom whose why how".split())
_PRONOUN = frozenset("it its they them their theirs he she his her".split())
_DEMONSTRATIVE = frozenset("this these those that".split())
_TEXT_REFERENCE = re.compile(r"\b(?:the|this|that) (?:passage|text|document|section|paragraph|sentence|excerpt|example|table|figure)\b|"
                             r"\b(?:above|below|mentioned|aforementioned|as follows|the following|this way|that way|in this case|"
                             r"in that case|such (?:a|an|cases?))\b", re.I)
_BARE_PARAMETER = re.compile(r"\bthe [*\"'`]?\w+[*\"'`]? (?:argument|parameter|field|attribute|option|flag|value|keyword)s?\b", re.I)
_OWNER = re.compile(r"\(\)|\b(?:of|for|to|in|by|on)\b", re.I)
_ANCHOR = re.compile(r"[\"'`*“”_()\[\]]|\d|\b[A-Z][A-Za-z0-9]+\b")
MORE_GENERIC = frozenset("pair pairs semantics thing things way ways case cases part parts kind kinds form forms step steps "
                         "process rule rules feature features behaviour behavior mode modes".split())


def referent_problem(question: str) -> str | None:
    """Why ``question`` cannot be understood without the text it was written from, or None."""
    q = " ".join((question or "").split())
    if not q:
        return "empty question"
    if _TEXT_REFERENCE.search(q):
        return "refers to the text it was written from ('the passage', 'above', 'this section')"
    toks = words(q)
    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if t in _DEMONSTRATIVE and (not nxt or nxt in AUXILIARIES or nxt in ("be", "mean", "do") or nxt in GENERIC_NOUNS or nxt in MORE_GENERIC):
            return f"{t!r} {nxt!r}: nothing in the question it refers to"
        if t in _PRONOUN and i < 6 and not (t == "it" and nxt == "true") and not _named_before(toks[:i]):
            return f"{t!r} with nothing in the question it refers to"
    if _BARE_PARAMETER.search(q) and not _OWNER.search(q):
        return "asks about a parameter without naming the function, method or command it belongs to"
    if _ANCHOR.search(q[1:]):  # a name, a literal, a number (the first word is capitalised anyway)
        return None
    content = [w for w in toks if w not in STOPWORDS and w not in AUXILIARIES and w not in _WH]
    specific = [w for w in content if w not in GENERIC_NOUNS and w not in MORE_GENERIC]
    if len(specific) < 2:
        return f"names nothing specific (content words {content})"
    return None


def _named_before(toks: list[str]) -> bool:
    """A noun the pronoun can refer to before it: a content word that is not a question word or an auxiliary."""
    return any(w not in STOPWORDS and w not in AUXILIARIES and w not in _WH for w in toks)


def roundtrip_problem(row: dict) -> str | None:
    """The round trip's disagreement recorded on a generated row (``roundtrip_agrees`` False), or None."""
    if row.get("roundtrip_agrees") is False:
        return f"the generator, answering from the source chunk alone, said {str(row.get('roundtrip_answer'))[:120]!r}"
    return None


_DO = frozenset(("do", "does", "did"))
_SLOTS = frozenset(("dobj", "dative", "attr", "oprd", "npadvmod", "ccomp", "xcomp"))


def wh_slot_problem(doc) -> str | None:
    """Why a "What / Which (noun) do / does / did …?" question is garbled (see the module docstring), or None."""
    toks = [t for t in doc if not t.is_punct]
    if len(toks) < 3 or toks[0].lower_ not in ("what", "which", "who", "whom") or toks[0].tag_ not in ("WP", "WDT"):
        return None
    wh = toks[0]
    filler = wh.head if wh.tag_ == "WDT" else wh  # "What statement does …": the noun takes the slot
    after = toks[1] if wh.tag_ == "WP" else toks[2]
    if after.lower_ not in _DO or filler.dep_ in _SLOTS:
        return None
    if filler.dep_ == "pobj":
        prep = filler.head
        if prep.dep_ != "prep" and prep.pos_ != "ADP":
            return f"'{wh.text}' reads as the object of '{prep.text}', which takes none"
        if any(c.dep_ == "pobj" and c.i != filler.i for c in prep.children):
            return f"'{wh.text}' has no slot: '{prep.text}' already has its object"
        return None  # a stranded preposition: "What is it made of?"
    return f"'{wh.text}' is the {filler.dep_} of the clause after '{after.text}' (do-support needs an object)"
