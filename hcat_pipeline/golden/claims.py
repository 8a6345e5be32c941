"""Claims: is a sentence a grammatical claim, and does the source say the opposite of it? (misleading premises, distractor passages, references.)

``claim_problem(claim)``: why a text is no self-standing sentence (a table / code fragment, no subject, no verb, ends
mid-phrase), or None. ``contradicted_by(claim, source)`` finds the source clauses that restate most of the claim's content words (the
best-overlapping ones, at least ``min_overlap``) and says how the best of them says the opposite: ``negation`` (one of
the two is negated), ``number`` (another number in its place) or ``antonym``; None when it agrees or none restates it.
Clauses are split at sentence ends, semicolons, commas, "and" / "but" / "while" joins, so the negation of a neighbouring
predicate ("costs 25 pounds and is not guaranteed to succeed") is not read as negating the claim.
"""

from __future__ import annotations

import re

from hcat_pipeline.core.metrics.nli_lexical import ANTONYMS
from hcat_pipeline.core.selection import AUXILIARIES, NEGATIONS, content_words, polarity_tokens, words

_CLAUSE = re.compile(r"(?<=[.!?])\s+|;\s*|,\s+|,?\s+(?:and|but|while|whereas)\s+(?=(?:is|are|was|were|can|cannot|will|must|may|does|do|has|have|it|they|we|you)\b)")


_MARKUP = re.compile(r"\||\+[-=]{2,}|\(\d+\)\s*\(\d+\)|>>>|:::|^[^\w\"'`*(]|\s[-=]{3,}")
_SUBORDINATE = frozenset("if when whether because although though while since unless that which who".split())


def claim_problem(claim: str) -> str | None:
    """Why ``claim`` is not a grammatical, self-standing sentence, or None."""
    c = " ".join((claim or "").split())
    toks = words(c)
    if len(toks) < 4:
        return f"claim {c!r} has fewer than 4 words"
    if _MARKUP.search(c):
        return f"claim {c[:60]!r} is a table or code fragment"
    alpha = sum(t.isalpha() for t in toks) / len(toks)
    if alpha < 0.6:
        return f"claim {c[:60]!r} is mostly symbols or numbers ({alpha:.0%} words)"
    first = toks[0]
    if first in AUXILIARIES or first in ("not", "to", "and", "or", "but") or first in _SUBORDINATE:
        return f"claim {c[:60]!r} has no subject (starts with {first!r})"
    if not any(t in AUXILIARIES or t in ("not", "cannot") or (len(t) > 3 and t.endswith(("s", "ed")) and i > 0) for i, t in enumerate(toks)):
        return f"claim {c[:60]!r} has no verb"
    if toks[-1] in ("the", "a", "an", "of", "to", "and", "or", "in", "for", "with", "by", "is", "are"):
        return f"claim {c[:60]!r} ends mid-phrase"
    return None


def clauses(source: str) -> list[str]:
    return [c.strip() for c in _CLAUSE.split(" ".join((source or "").split())) if c and c.strip()]


def _numbers(toks: list[str]) -> set[str]:
    return {t for t in toks if t.isdigit()}


def contradicted_by(claim: str, source: str, min_overlap: float = 0.5) -> str | None:
    cw = set(content_words(claim))
    if not cw:
        return None
    c_toks = polarity_tokens(claim)
    scored = [(len(cw & set(content_words(c))) / len(cw), c) for c in clauses(source)]
    best = max((o for o, _ in scored), default=0.0)
    if best < min_overlap:
        return None
    for overlap, clause in scored:
        if overlap < best:
            continue
        s_toks = polarity_tokens(clause)
        if sum(t in NEGATIONS for t in s_toks) % 2 != sum(t in NEGATIONS for t in c_toks) % 2:
            return "negation"
        if _numbers(c_toks) - _numbers(s_toks) and _numbers(s_toks) - _numbers(c_toks):
            return "number"
        if any(ANTONYMS.get(t, frozenset()) & set(s_toks) and t not in s_toks for t in c_toks):
            return "antonym"
    return None
