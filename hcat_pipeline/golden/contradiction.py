"""Contradiction rules (HCAT §6.1.1; golden-eval §11.2): a true source sentence made false by one rule-based edit.

``contradict_sentence`` removes or adds a negation, swaps an antonym or changes a number; ``swap_span`` puts another
term of the same shape in place of the answer a question asks for (a distractor that contradicts the answer itself,
not a neighbouring word of its sentence: issue 68); ``false_premise`` picks the
first source sentence a reviewer would sign as a claim that a rule turns into a checkably false one — a *misleading
premise* in a query (``misleading_premise_query``) and a *distractor passage* in the retrieved context
(``golden.robustness``), the "No" twins of yes/no cases (``golden.yes_no``), the canaries' planted falsehoods.
No dagster import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hcat_pipeline.common.sentences import shape
from hcat_pipeline.golden.claims import claim_problem, sentence_problem
from hcat_pipeline.golden.counterfactual import lower_first
from hcat_pipeline.golden.variant_checks import premise_checks

_NEGATABLE = re.compile(  # "can only" / "have just" read badly negated; "has" / "have" only as auxiliaries (before a participle)
    r"\b(?:(is|are|was|were|can|could|will|would|should|must|may|does|do|did)|(?:has|have)(?=\s+(?:been|\w+(?:ed|en|wn|ne))\b))\b"
    r"(?!\s+[*_]*(?:not|only|also|just|both|either|neither|never)\b)(?!n't)(?!\s*[,;:])", re.I  # "must *not*", "that is," stay
)
_NEGATED = re.compile(r"\b(is|are|was|were|can|could|will|would|should|must|may|does|do|did|has|have)\s+[*_]*not[*_]*(?![\w*])|\b(\w+)n't\b",
                      re.I)  # fmt: skip
# a negation added where the clause already denies ("when no method is not defined"): a double negative, no claim
_DOUBLE_NEGATIVE = re.compile(r"\b(?:no|none|nothing|never|neither|nor)\b[^,.;:]{0,40}\bnot\b|^\s*(?:at most|at least|only|exactly)\b", re.I)
# (… and a quantified subject: "At most one pattern may not be in …" denies nothing a reader can check)
ANTONYMS = {
    "true": "false", "false": "true", "always": "never", "never": "always", "before": "after", "after": "before",
    "immutable": "mutable", "mutable": "immutable", "first": "last", "last": "first", "left": "right",
    "right": "left", "local": "global", "global": "local", "required": "optional", "optional": "required",
    "increases": "decreases", "decreases": "increases", "allowed": "forbidden", "forbidden": "allowed",
    "faster": "slower", "slower": "faster", "more": "fewer", "fewer": "more", "minimum": "maximum", "maximum": "minimum",
    "enabled": "disabled", "disabled": "enabled", "synchronous": "asynchronous", "asynchronous": "synchronous",
}  # fmt: skip


def contradict_sentence(sentence: str) -> tuple[str, str] | None:
    """A sentence that contradicts ``sentence`` by one rule-based edit, and the rule used; None if none applies.

    Rules, in order: remove an existing negation; negate the first auxiliary verb; swap an antonym;
    change a number.
    """
    s = sentence.strip()
    m = re.search(r"\bcannot\b", s, re.I)
    if m:
        return s[: m.start()] + ("Can" if m.group(0)[0].isupper() else "can") + s[m.end() :], "remove_negation"
    m = _NEGATED.search(s)
    if m:
        if m.group(1):
            return s[: m.start()] + m.group(1) + s[m.end() :], "remove_negation"
        base = {"can": "can", "won": "will", "don": "do", "doesn": "does", "isn": "is", "aren": "are"}.get(m.group(2).lower(), m.group(2))
        return s[: m.start()] + base + s[m.end() :], "remove_negation"
    m = _NEGATABLE.search(s)
    if m:
        return s[: m.end()] + " not" + s[m.end() :], "negation"
    return swap_antonym_or_number(s)


# shapes whose terms name one thing: another of the shape in the answer's place is a different answer
SWAPPABLE = frozenset({"dunder", "call", "exception", "version", "number", "dotted", "camel", "identifier"})


def swap_span(sentence: str, span: str, pool: Iterable[tuple[str, str]]) -> str | None:
    """``sentence`` with its answer ``span`` replaced by the first term of ``pool`` ((term, the sentence it is in)) of
    the same shape and markup (quoted, ``code``, *emphasis*) that names something else (not the span with other
    arguments) and is not already in the sentence; None when the span is no single named term or no term fits."""
    kind, mark = shape(span), _markup(span, sentence)
    if kind not in SWAPPABLE or sentence.count(span) != 1:
        return None
    for term, where in pool:
        if shape(term) == kind and _markup(term, where) == mark and _name(term) != _name(span) and term not in sentence:
            return sentence.replace(span, term, 1)
    return None


def _markup(term: str, sentence: str) -> str:
    """The character that opens ``term`` in ``sentence`` (a quote, a backtick, an asterisk), or ""."""
    i = sentence.find(term)
    return sentence[i - 1] if i > 0 and not sentence[i - 1].isalnum() and not sentence[i - 1].isspace() else ""


def _name(term: str) -> str:
    """What a term names: lower case, a call's arguments set aside ("range(3)" names "range")."""
    return re.sub(r"\(.*\)$", "", term.strip()).lower()


def swap_antonym_or_number(sentence: str) -> tuple[str, str] | None:
    """``sentence`` made false by its first antonym swapped, else its first number changed; (sentence, rule) or None."""
    s = sentence.strip()
    for w in re.finditer(r"[A-Za-z]+", s):
        ant = ANTONYMS.get(w.group(0).lower())
        if ant:
            ant = ant.capitalize() if w.group(0)[0].isupper() else ant
            return s[: w.start()] + ant + s[w.end() :], "antonym"
    for m in re.finditer(r"\b\d+(?:[.,]\d+)*\b", s):
        if _REFERENCE_NUMBER.search(s[: m.start()]) or not m.group(0).isdigit():
            continue  # "pg_restore(1)", "Section 24.1", "PEP 572", "UTF-8", "1,000", "3.7": a pointer, a name or a formatted value
        if _BOUND_BEFORE.search(s[: m.start()]) or _BOUND_AFTER.match(s[m.end() :]):
            continue  # "aged 16 or over" made "17 or over" is still true of a 17-year-old: a bound moved is no contradiction
        n = int(m.group(0))
        return s[: m.start()] + str(n + 1 if n < 9 else n * 2) + s[m.end() :], "number"
    return None


_BOUND_BEFORE = re.compile(r"\b(?:at least|at most|up to|more than|less than|fewer than|over|under|above|below|between|from|"
                           r"within|exceeding|maximum of|minimum of|as many as|as few as|since|until|between\b[^.;,]*\band|\d+\s+to)\s+\W?$", re.I)
_BOUND_AFTER = re.compile(r"\s*(?:\w+\s+)?or (?:over|more|less|fewer|under|above|below|older|younger|later|earlier|higher|lower)\b|"
                          r"\s*(?:and|to)\s+\d|\s*-\s*\d|\+", re.I)
_REFERENCE_NUMBER = re.compile(r"(?:\w\(|\w-|\w\.|\b(?:section|chapter|§|pep|rfc|python|version|release|step|item|page)\s*)$", re.I)


def false_premise(sentences: list[str], source: str = "") -> tuple[str, str, str] | str:
    """(true claim, false claim, rule) from the first source sentence a reviewer would sign as a claim
    (``golden.claims.sentence_problem``: grammatical, self-standing, no table / code / documentation noise) that a
    contradiction rule applies to, keeping the false claim only if it is itself a sentence and, given the ``source``
    text, passes the premise checks the golden set's validity applies (``golden.variant_checks.premise_checks``: from
    the source, and false by it); else the reason there is none."""

    why = "no supporting sentence"
    for sent in sentences:
        sent = " ".join(sent.split())
        problem = sentence_problem(sent)
        if problem:
            why = f"no well-formed source claim ({problem})"
            continue
        contra = contradict_sentence(sent)
        if not contra:
            why = "no contradiction rule applies to the supporting sentences"
            continue
        if claim_problem(contra[0]) is not None:
            why = f"the false claim is no sentence ({claim_problem(contra[0])})"
            continue
        if contra[1] == "negation" and _DOUBLE_NEGATIVE.search(contra[0]):
            why = "the negated claim reads as a double negative"
            continue
        unsound = premise_checks(contra[0], source) if source else []
        if not unsound:
            return sent, contra[0], contra[1]
        why = unsound[0]
    return why


def misleading_premise_query(query: str, false_claim: str) -> str:
    claim = false_claim.strip().rstrip(".")
    return f"Given that {lower_first(claim)}, {lower_first(query.strip())}"
