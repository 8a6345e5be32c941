"""Word-level helpers of the NLI groundedness features (HCAT §3.2.2): regex tokens, numbers, names,
negation, hedges, causal / temporal connectives and a small antonym table. Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from hcat_pipeline.common.lexicon import ANTONYMS  # noqa: F401 (the NLI features read it from here)
from hcat_pipeline.common.text import STOPWORDS  # the project's one stop-word list (re-exported)

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'_\-]*|\d+(?:[.,:]\d+)*")
NUM_RE = re.compile(r"\d+(?:[.,:]\d+)*")
CAP_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][A-Za-z0-9'\-]+")
NEG_RE = re.compile(r"\b(?:not|no|never|none|nothing|neither|nor|cannot|without|nobody|nowhere)\b|n't\b", re.I)


# words that turn an assertion into a possibility / report (and back): "may cause" vs "causes"
HEDGES = frozenset(
    """may might could possibly perhaps probably likely unlikely maybe reportedly allegedly apparently
    suggest suggests suggested seem seems seemed appear appears appeared believed expected estimated
    potential potentially plan plans planned proposed consider considering rumoured rumored""".split()
)
# causal / temporal links a sentence may assert without the context asserting them
CONNECTIVES = frozenset(
    """because since therefore thus hence consequently cause caused causes causing led lead leads result
    resulted results due after before following then until later earlier afterwards subsequently prior
    so""".split()
)
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "i'm", "i've", "i'd", "i'll"})


_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
                      "ninety": "90", "hundred": "100", "thousand": "1000", "million": "1000000", "billion": "1000000000",
                      "dozen": "12", "half": "0.5", "twice": "2", "double": "2", "triple": "3"})


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _WORD_RE.findall(text)]


def content_tokens(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STOPWORDS and len(t) > 1]


def stem(t: str) -> str:
    """A crude suffix stripper, so 'films' matches 'film' and 'directed' matches 'direct'."""
    for suf in ("ing", "ed", "es", "s"):
        if len(t) > len(suf) + 3 and t.endswith(suf):
            return t[: -len(suf)]
    return t




def numbers(text: str) -> list[str]:
    """Numbers as written in digits (thousands separators dropped), plus spelled-out small numbers."""
    out = [n.replace(",", "") for n in NUM_RE.findall(text)]
    out += [_NUMBER_WORDS[t] for t in tokens(text) if t in _NUMBER_WORDS and t != "one"]
    return out


def capitalised(text: str) -> list[str]:
    """Capitalised words not at the start of a sentence: a regex proxy for names."""
    return [m.group(0).lower() for m in CAP_RE.finditer(text.strip())]


def negation_count(text: str) -> int:
    return len(NEG_RE.findall(text))


def hedge_count(text: str) -> int:
    return sum(1 for t in tokens(text) if t in HEDGES)


def connectives(text: str) -> set[str]:
    return {t for t in tokens(text) if t in CONNECTIVES}


_OPINION_FRAME_RE = re.compile(
    r"^\W*(?:(?:yes|no|well|oh|actually|sure|so|and)\W+)*(?:i\s+(?:think|believe|guess|know|heard|read|suppose|feel|'m\s+sure)"
    r"(?:\s+that)?|as\s+far\s+as\s+i\s+know|did\s+you\s+know(?:\s+that)?|do\s+you\s+know(?:\s+that)?)\W*", re.I)


def first_person(text: str) -> bool:
    """A claim about the speaker ("I love that film", "we went there"); a leading opinion / report
    frame ("I think …", "As far as I know …") does not count."""
    return any(t in _FIRST_PERSON for t in tokens(_OPINION_FRAME_RE.sub("", text, count=1)))


def novelty(hyp: Sequence, prem: set) -> float:
    """Fraction of ``hyp`` items absent from ``prem`` (0 when ``hyp`` is empty)."""
    if not hyp:
        return 0.0
    return sum(1 for t in hyp if t not in prem) / len(hyp)


def antonym_flip(hyp_words: Iterable[str], aligned_words: set[str]) -> float:
    """1.0 when the hypothesis uses a word whose antonym the aligned context sentence uses instead
    (and the word itself is not there): "sales rose" against "sales fell"."""
    for w in hyp_words:
        if w in ANTONYMS and w not in aligned_words and ANTONYMS[w] & aligned_words:
            return 1.0
    return 0.0
