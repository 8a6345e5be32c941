"""Question categories for the exam analysis (exam paper §6.2, App. C): Bloom's revised taxonomy and question words.

Bloom: multi-label keyword detection with the verb lists of App. C (Table 6); a question with no keyword is
"Uncategorized". The paper matched the lemmas of the words spaCy tags as verbs; a loaded spaCy pipeline can be
passed through ``spacy_verb_lemmas(nlp)`` (the core loads no model). Without one, a rule-based approximation is
used: lower-cased words, regular inflections undone (-s, -es, -ed, -ing, -ies/-ied, doubled consonants), and a
keyword right after a determiner ("the state", "a test", "which name") is taken as a noun and skipped.

Question words: the first of what / which / how / when / why / where / who in the question (whole words; whom and
whose count as who); "yes/no" when the question opens with an auxiliary verb (Is, Does, Can, ...); else "other".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

BLOOM_LEVELS: tuple[str, ...] = ("Remembering", "Understanding", "Applying", "Analyzing", "Evaluating", "Creating")
UNCATEGORIZED = "Uncategorized"

# App. C, Table 6 (duplicates inside a list dropped; a verb may sit in several levels, hence multi-label)
BLOOM_KEYWORDS: dict[str, tuple[str, ...]] = {
    "Remembering": ("list", "identify", "name", "define", "state", "mention", "recall", "label", "repeat", "recognize"),
    "Understanding": ("explain", "describe", "summarize", "predict", "interpret", "paraphrase", "translate", "illustrate",
                      "rephrase", "clarify", "check", "find", "experience", "suspect", "review", "notice", "assume",
                      "interact", "observe", "understand"),
    "Applying": ("demonstrate", "apply", "use", "write", "illustrate", "solve", "show", "execute", "implement", "operate",
                 "practice", "set", "configure", "try", "follow", "take", "run", "serve", "task", "read", "work", "enable",
                 "exist"),
    "Analyzing": ("analyze", "distinguish", "compare", "differentiate", "examine", "test", "question", "inspect", "debate",
                  "investigate", "manage", "optimize", "troubleshoot", "resolve"),
    "Evaluating": ("evaluate", "rate", "justify", "critique", "decide", "rank", "measure", "validate", "test", "assess",
                   "choose", "verify", "monitor", "recommend"),
    "Creating": ("design", "construct", "produce", "invent", "devise", "formulate", "originate", "assemble", "generate",
                 "create", "develop", "compose", "implement", "build", "customize"),
}

QUESTION_WORDS: tuple[str, ...] = ("what", "which", "how", "when", "why", "where", "who")
QUESTION_WORD_CATEGORIES: tuple[str, ...] = (*QUESTION_WORDS, "yes/no", "other")
_AUX = frozenset("is are was were do does did can could should would will shall has have had may might must".split())
_DETERMINERS = frozenset("the a an this these those its their his her our your my each every no any some which what whose".split())
_WORD = re.compile(r"[a-z]+")
_KEYWORDS = frozenset(k for words in BLOOM_KEYWORDS.values() for k in words)
_BRITISH = {"analyse": "analyze", "summarise": "summarize", "recognise": "recognize", "optimise": "optimize",
            "customise": "customize", "organise": "organize"}


def _candidates(word: str) -> list[str]:
    """The word and its possible base forms under regular English inflection."""
    out = [word]
    for suffix in ("ies", "ied"):
        if word.endswith(suffix):
            out.append(word[: -len(suffix)] + "y")
    for suffix in ("es", "s", "ed", "d", "ing"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            stem = word[: -len(suffix)]
            out += [stem, stem + "e"]
            if len(stem) > 2 and stem[-1] == stem[-2]:  # setting → set, running → run
                out.append(stem[:-1])
    return [_BRITISH.get(w, w) for w in out]


def _keyword_lemmas(question: str) -> list[str]:
    words = _WORD.findall(question.lower())
    found = []
    for i, w in enumerate(words):
        if i > 0 and words[i - 1] in _DETERMINERS:
            continue
        for cand in _candidates(w):
            if cand in _KEYWORDS:
                found.append(cand)
                break
    return found


def spacy_verb_lemmas(nlp) -> Callable[[str], list[str]]:
    """Adapter for a loaded spaCy pipeline: the lemmas of the tokens tagged VERB (the paper's method)."""
    return lambda text: [t.lemma_.lower() for t in nlp(text) if t.pos_ == "VERB"]


def bloom_categories(question: str, verbs: Callable[[str], Iterable[str]] | None = None) -> list[str]:
    """Bloom levels whose keywords the question uses, in taxonomy order; ``["Uncategorized"]`` when none."""
    if not isinstance(question, str):
        raise TypeError(f"bloom_categories: question must be a string, got {type(question).__name__}")
    lemmas = set(verbs(question)) if verbs is not None else set(_keyword_lemmas(question))
    cats = [lvl for lvl in BLOOM_LEVELS if lemmas & set(BLOOM_KEYWORDS[lvl])]
    return cats or [UNCATEGORIZED]


def question_word(question: str) -> str:
    """The question's category by question word (one label per question)."""
    words = _WORD.findall(question.lower())
    for w in words:
        w = "who" if w in ("whom", "whose") else w
        if w in QUESTION_WORDS:
            return w
    if words and words[0] in _AUX:
        return "yes/no"
    return "other"


def categorize_questions(questions: list[str], verbs: Callable[[str], Iterable[str]] | None = None) -> list[dict]:
    """Both categorisations for each question: {"bloom": [...], "question_word": "..."}."""
    return [{"bloom": bloom_categories(q, verbs), "question_word": question_word(q)} for q in questions]
