"""Lexical signals for the toxicity head: obfuscation undone, slurs (and their reclaimed,
self-referential use), dehumanising comparisons, threats, identity mentions with negative tone,
and counter-speech cues (denouncing or reporting hate). Pure stdlib + VADER (bundled lexicon).

The word lists are package data (``toxicity_lexicon.json``). These signals are *features*: their
weights in the final score are learned from the labelled data (``metrics/toxicity/train.py``); they also
name the category and the signal in the explanation columns.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

LEXICON_PATH = Path(__file__).with_name("toxicity_lexicon.json")

RULE_FEATURES: tuple[str, ...] = (
    "slur",  # a slur, not used self-referentially
    "slur_reclaimed",  # a reclaimable slur in a first-person / in-group frame
    "dehumanising",  # vermin / animal / disease words about a group or "they / those people"
    "threat",  # a violence word in an intent frame ("should be shot", "I will burn")
    "identity",  # an identity-group word
    "identity_negative",  # identity word × VADER negativity of the sentence
    "hate_word",  # hate / contempt words ("disgusting", "hate", "vile")
    "denounce",  # condemnation of hate ("is racist", "a myth", "we reject", "report it")
    "reported",  # speech-act frame or quotation ("saying that", "he shouted '...'", "the idea that")
    "negation",  # not / never / no
    "obfuscated",  # a word had to be de-obfuscated (leet, inserted spaces or symbols, misspelling)
)

_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "@": "a", "$": "s", "!": "i", "|": "l", "+": "t", "€": "e"})
_TOKEN = re.compile(r"\S+")
_EDGE = re.compile(r"^[^\w@$*#]+|[^\w*#!]+$")
_SPACED = re.compile(r"(?<![\w@$*])(?:[A-Za-z0-9@$*!][ .\-_]){2,}[A-Za-z0-9@$*!](?![\w@$*])")
_WILD = re.compile(r"[*#?%]+")
_REPEAT = re.compile(r"(.)\1{2,}")
WORD = re.compile(r"[a-z]+(?:[-'][a-z]+)*")

_INTENT = re.compile(
    r"\b(should|must|ought to|will|shall|gonna|going to|need(?:s)? to|deserves?|let's|lets|i'll|we'll|want to|wanna|"
    r"time to|have to|got to|gotta|someone|somebody|all of them|them all|every (?:one|last) of them|i'd|we'd)\b"
)
_DENOUNCE = re.compile(
    r"\b(racis[mt]|sexis[mt]|homophobi[ac]|transphobi[ac]|bigot(?:ed|ry|s)?|hateful|hate speech|hate crimes?|prejudiced?|prejudice|"
    r"xenophobi[ac]|antisemit\w*|islamophobi[ac]|ableis[mt]|discriminat\w+|stereotyp\w+|myths?|debunked|untrue|false|lies|a lie|nonsense|"
    r"unacceptable|offensive|harmful|hurtful|ignorant|dehumaniz\w+|dehumanis\w+|(?:is|are|was|it's|that's)(?: \w+)? wrong|wrong to|"
    r"(?:we|i) (?:reject|condemn|denounce|oppose)|report (?:it|them|him|her|this)|stand (?:against|up to)|"
    r"(?:no ?one|nobody) (?:should|deserves)|(?:stop|quit) (?:saying|calling|spreading|telling)|(?:don't|do not|never) (?:call|say|tell))\b"
)
_REPORTED = re.compile(
    r"(\b(saying|calling|claiming|claims?|calls?|said|says|shouted|yelled|screamed|tweeted|tweet|posted|wrote|writes|hear|heard|hearing|"
    r"told|tells|the (?:idea|claim|notion|belief|myth|stereotype|assumption|lie|trope|narrative) that|statements? like|comments? like|"
    r"words like|remarks? like|jokes? like|stereotypes? like|to (?:say|call|claim|suggest|assume|pretend))\b|[\"“”‘’]|(?<![a-z])'(?=[a-z]))"
)
_NEGATION = re.compile(r"\b(not|never|no|none|n't|nobody|nothing)\b|n't\b")
_SELF = re.compile(r"\b(i'm|i am|im|we're|we are|as an?|us|my fellow|our|fellow|myself|ourselves|proud|my)\b")
_GROUP_PRONOUN = re.compile(r"\b(they|them|their|those people|these people|those|these|such people|you people|your kind|their kind)\b")


@lru_cache(maxsize=1)
def lexicon() -> dict[str, frozenset[str]]:
    data = json.loads(LEXICON_PATH.read_text(encoding="utf-8"))
    return {k: frozenset(v) for k, v in data.items() if isinstance(v, list)}


@lru_cache(maxsize=1)
def _targets() -> frozenset[str]:
    lx = lexicon()
    return lx["slurs"] | lx["identity"] | lx["dehumanising"] | lx["violence"] | lx["hate_words"] | lx["profanity"]


def in_words(word: str, words: frozenset[str]) -> bool:
    """``word`` or, for a plural, its singular is in ``words``."""
    return word in words or (len(word) > 3 and word.endswith("s") and word[:-1] in words)


def _near(a: str, b: str) -> bool:
    """One substitution, insertion, deletion or adjacent swap apart (Damerau distance 1)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return a == b
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    s, t = (a, b) if len(a) < len(b) else (b, a)
    return any(t[:i] + t[i + 1 :] == s for i in range(len(t)))


@lru_cache(maxsize=50_000)
def _resolve(token: str) -> str | None:
    """The lexicon word an obfuscated token stands for, or None (plain words are left alone)."""
    targets = _targets()
    low = token.lower()
    if low in targets:
        return None
    cands = [low.translate(_LEET)]
    cands.append(re.sub(r"[.\-_'~^]", "", cands[0]))
    cands += [_REPEAT.sub(r"\1", c) for c in cands] + [_REPEAT.sub(r"\1\1", c) for c in cands]
    for c in cands:
        if c != low and (c in targets or (c.endswith("s") and c[:-1] in targets)):
            return c
    for c in cands[1:2]:
        # a masked word starts with a letter, shows at least two, and each mask character hides one letter
        # ("f*ck", "n**ger"); "*n*" or "a*b" in code and maths are not words
        if _WILD.search(c) and 3 <= len(c) <= 14 and c[0].isalpha() and sum(ch.isalpha() for ch in c) >= 2:
            parts = [(f"[a-z]{{{len(p)}}}" if _WILD.fullmatch(p) else re.escape(p)) for p in re.split(r"([*#?%]+)", c) if p]
            rx = re.compile("^" + "".join(parts) + "$")
            hits = sorted(w for w in targets if rx.match(w))
            if hits:
                return hits[0]
    c = cands[1]
    if c.isalpha() and len(c) >= 5:  # misspelt slurs: one edit away, same first letter
        for w in sorted(lexicon()["slurs"]):
            if len(w) >= 6 and w[0] == c[0] and _near(c, w):
                return w
    return None


def deobfuscate(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(text with obfuscated lexicon words spelt out, [(as written, read as)]). Handles leet
    digits/symbols, masking stars, inserted spaces/dots, stretched letters and one-edit misspellings
    of slurs; a token is changed only when it resolves to a lexicon word."""
    changes: list[tuple[str, str]] = []

    def spaced(m: re.Match) -> str:
        joined = re.sub(r"[ .\-_]", "", m.group(0))
        hit = joined.lower() if joined.lower() in _targets() else _resolve(joined)
        if hit:
            changes.append((m.group(0), hit))
            return hit
        return m.group(0)

    text = _SPACED.sub(spaced, text)

    def token(m: re.Match) -> str:
        tok = m.group(0)
        core = _EDGE.sub("", tok)
        if not core or core.isalpha() and core.lower() in _targets():
            return tok
        hit = _resolve(core)
        if not hit:
            return tok
        changes.append((core, hit))
        return tok.replace(core, hit)

    return _TOKEN.sub(token, text), changes


@lru_cache(maxsize=1)
def vader():
    """The one VADER analyzer (its lexicon ships in the vadersentiment package)."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


@lru_cache(maxsize=50_000)
def compound(text: str) -> float:
    """VADER's compound sentiment of one sentence, in [-1, 1] (cached: the rule features and the
    attribute rules read the same sentence)."""
    return float(vader().polarity_scores(text)["compound"])


def _vader_negativity(text: str) -> float:
    return max(0.0, -compound(text))


def rule_signals(text: str) -> dict:
    """Feature values (``RULE_FEATURES``, floats) and ``evidence`` (feature -> matched words) for
    one sentence. ``text`` is the sentence as written; it is de-obfuscated here."""
    norm, changes = deobfuscate(text)
    low = norm.lower()
    words = WORD.findall(low)
    lx = lexicon()
    ev: dict[str, list[str]] = {}

    def hit(name: str, found) -> float:
        found = sorted(set(found))
        if found:
            ev[name] = found
        return float(bool(found))

    slurs, reclaimed = [], []
    for i, w in enumerate(words):
        if in_words(w, lx["slurs"]):
            before = " ".join(words[max(0, i - 4) : i])
            (reclaimed if in_words(w, lx["reclaimable"]) and _SELF.search(before) else slurs).append(w)
    identity = [w for w in words if in_words(w, lx["identity"])]
    target = bool(identity or slurs or _GROUP_PRONOUN.search(low))
    dehum = [w for w in words if in_words(w, lx["dehumanising"])] if target else []
    violence = [w for w in words if in_words(w, lx["violence"])]
    intent = _INTENT.search(low)
    threat = violence if violence and (intent or (words and in_words(words[0], lx["violence"]))) else []
    f = {
        "slur": hit("slur", slurs),
        "slur_reclaimed": hit("slur_reclaimed", reclaimed),
        "dehumanising": hit("dehumanising", dehum),
        "threat": hit("threat", threat + ([intent.group(0)] if threat and intent else [])),
        "identity": hit("identity", identity),
        "hate_word": hit("hate_word", [w for w in words if in_words(w, lx["hate_words"])]),
        "denounce": hit("denounce", [m.group(0) for m in _DENOUNCE.finditer(low)]),
        "reported": hit("reported", [m.group(0).strip() or "quote" for m in _REPORTED.finditer(low)]),
        "negation": hit("negation", [m.group(0) for m in _NEGATION.finditer(low)]),
        "obfuscated": hit("obfuscated", [f"{a}->{b}" for a, b in changes]),
    }
    neg = _vader_negativity(norm) if identity else 0.0
    f["identity_negative"] = neg
    if neg > 0:
        ev["identity_negative"] = [f"{neg:.2f}"]
    return {"features": [f[k] for k in RULE_FEATURES], "evidence": ev, "normalised": norm}
