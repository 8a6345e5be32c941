"""Signals of an unsound happy-path case that do not depend on the corpus's domain (issue 47).

The validity checks of ``golden.validity`` read a case against its source with an embedding model and word recall;
for a generated grounded case (the reference *is* a source sentence) support and round trip are near 1 whatever the
question, so they cannot see the faults a stranger sees first. These read the question and the reference as a reader
would, with no vocabulary of one domain:

- ``restatement``: the reference adds little to the question — its content words are mostly the question's own
  ("What is the first step in looking up X as an attribute?" → "X is looked up as an attribute."); 1 - novelty;
- ``defers``: the reference points elsewhere instead of answering ("the same caveat applies as for …", "as described
  in …", "see …", "as follows");
- ``context_lost``: the reference leans on text the user never sees (opens with "This" / "It" / "Such", "this way",
  "the *n*", "the above");
- ``polarity_denied``: an open question presupposes what the reference denies ("What must be enclosed in quotes?" →
  "The command must *not* be enclosed in quotes.");
- ``no_referent``: the question names nothing a reader could look up (``question_checks.referent_problem``; the
  generation loop already rejects on it, so ``validity`` does not repeat it).

Tried and not kept (docs/golden_set.md, issue 47): the question's log-probability under the packaged LLM, the rank of
the reference sentence among every corpus sentence — neither separated sound from unsound on held-out corpora.
"""

from __future__ import annotations

import re

from hcat_pipeline.golden.question_checks import referent_problem
from hcat_pipeline.golden.selection import content_words, split_yes_no, stem

__all__ = ["SIGNALS", "defers", "leans_on_context", "text_signals"]

SIGNALS = ("restatement", "defers", "context_lost", "polarity_denied", "no_referent")
_DEFERS = re.compile(r"\b(?:the same \w+(?: \w+)? (?:applies|apply|as)|(?:is|are) the same as (?:for|in|with|those|that)|as (?:described|explained|defined|shown|noted|stated|specified|"
                     r"discussed|mentioned) (?:in|above|below|earlier|later)|applies as for|as for (?:regular|normal|other)|see (?:section|"
                     r"chapter|below|above|the)|as follows|the following|described (?:below|above|later|earlier)|refer to)\b", re.I)
_OPENS_ON_CONTEXT = re.compile(r"^\s*(?:yes|no)?[.,]?\s*(?:this|these|that|those|it|its|they|their|such|here|there|the latter|the former|"
                               r"both|each|either|neither)\b(?!\s+(?:is|are) (?:called|named|known))", re.I)
_CONTEXT_PHRASE = re.compile(r"\b(?:this way|that way|the above|as above|in this case|in that case|the former|the latter|doing so|"
                             r"the \*?[a-z]\*?(?=[\s.,;:)]))", re.I)
_NEGATION = re.compile(r"\b(?:not|never|cannot|no longer|neither|nor)\b|n't\b", re.I)
_WH = re.compile(r"^\s*(?:what|which|who|whom|whose|when|where|why|how)\b", re.I)


_QUOTED = re.compile(r"[\"'`“]([^\"'`”]+)[\"'`”]")
MIN_RESTATEMENT_WORDS = 4  # a shorter reference ("Nothing happens.") may answer with the question's own words


def _literals(text: str) -> set[str]:
    """The quoted literals of ``text`` ("['']", `__dict__`)."""
    return set(_QUOTED.findall(text))


def _restatement(question: str, reference: str) -> float:
    """Share of the reference's content words (stemmed) that the question already has; 0 for a short reference, and
    for one whose new words carry a number (a number is an answer: "Within 30 days of discovering the loss.")."""
    ref = {stem(w) for w in content_words(reference)}
    if len(ref) < MIN_RESTATEMENT_WORDS:
        return 0.0
    q = {stem(w) for w in content_words(question)}
    new = [w for w in ref if w not in q]
    if _literals(reference) - _literals(question) or any(any(ch.isdigit() for ch in w) for w in new):
        return 0.0  # a number or a quoted literal the question does not have is an answer
    return 1 - len(new) / len(ref)


_CONTRACTED = {"ca": "can"}  # "can't" reads as "ca" + "n't"
_NEGATED_PHRASE = re.compile(r"\b(\w+?)(?:n't| not| never|not)\s+(?:\w+ly\s+)?(\w+)", re.I)


def _denied(question: str, reference: str) -> bool:
    """The reference negates what the question asserts: a negated "AUX not VERB" of the reference ("must not be",
    "cannot contain") whose two words the question has without the negation ("What must be enclosed …?")."""
    q = {stem(w.lower()) for w in re.findall(r"[A-Za-z]+", question)}
    for aux, verb in _NEGATED_PHRASE.findall(reference):
        aux = _CONTRACTED.get(aux.lower(), aux.lower())
        if stem(aux) in q and stem(verb.lower()) in q:
            return True
    return False


def _plain(text: str) -> str:
    return re.sub(r"(?<!\w)[*_]{1,2}(\w[^*_]*?)[*_]{1,2}(?!\w)", r"\1", text)


def leans_on_context(text: str) -> bool:
    """``text`` leans on text before it: opens on "This" / "It" / "Such" …, or says "this way", "in this case", "doing
    so", "the *n*" (a sentence a reader cannot take on its own: no reference, and no cloze, is made of it)."""
    text = _plain(text or "")
    return bool(_OPENS_ON_CONTEXT.match(text) or _CONTEXT_PHRASE.search(text))


def defers(reference: str) -> bool:
    """The reference points elsewhere instead of answering ("as described in", "see section", "the same … applies")."""
    return bool(_DEFERS.search(_plain(reference or "")))


def text_signals(question: str, reference: str, query_type: str | None = None) -> dict[str, float]:
    """Each of ``SIGNALS`` in 0-1 (1 = the fault is there) for one case (markup emphasis read as plain words)."""
    ref = split_yes_no(reference)[1] if query_type == "yes_no" else reference
    ref = _plain(ref or reference or "")
    question = _plain(question or "")
    polarity = bool(_WH.match(question) and not _NEGATION.search(question) and _denied(question, ref))
    return {
        "restatement": _restatement(question, ref) if query_type != "yes_no" else 0.0,
        "defers": float(defers(ref)),
        "context_lost": float(leans_on_context(ref)),
        "polarity_denied": float(polarity),
        "no_referent": float(referent_problem(question) is not None),
    }
