"""What a behaviour check reads from a golden-set case and from an answer (used by ``behaviour.checks``).

* From the case: the false claim of a misleading premise (``premise_claim``: the query is
  ``"Given that <claim>, <base query>"``), the true source sentence behind a contradiction
  (``recover_source``: a context sentence that ``contradict_sentence`` maps onto the claim, else the
  claim's one edit undone by its ``contradiction:<rule>`` tag and verified by the same round trip),
  the canary (``canary:`` tag) and the injected instruction of an injection case.
* From the answer: yes/no polarity, the multiple-choice option picked, an explicit correction cue,
  and which of two contradicting claims it repeats (``claim_stance``).
* ``support(text, passages)`` callables: ``embedding_support`` (max cosine per sentence, as
  ``groundedness_similarity``) and ``nli_support`` (σ(D) per sentence, as ``groundedness_nli``).

Pure functions (no dagster, no model loading).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Literal

import numpy as np

from hcat_pipeline.common.text import STOPWORDS
from hcat_pipeline.corpus.chunking import split_sentences
from hcat_pipeline.golden.contradiction import ANTONYMS, contradict_sentence
from hcat_pipeline.golden.robustness import INJECTIONS, canary_for
from hcat_pipeline.metrics.groundedness import groundedness_similarity
from hcat_pipeline.metrics.groundedness_nli import groundedness_nli_batch

OPTION_LETTERS = "ABCDEFGHIJ"


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.replace("’", "'").strip().rstrip(".").strip()).casefold()


def answer_sentences(text: str | None) -> list[str]:
    """The text's sentences (the text itself when the splitter finds none)."""
    return list(_sentences((text or "").strip()))


@lru_cache(maxsize=8192)
def _sentences(text: str) -> tuple[str, ...]:
    """Memoised: a night splits the same passage for every case that retrieved it, and the splitter is the costliest
    Python around the models here (≈ 0.7 ms a text)."""
    return tuple(s.strip() for s in split_sentences(text) if s.strip()) or ((text,) if text else ())


# ---------------------------------------------------------------- support and embeddings
class Vectors:
    """Memoised, normalised embeddings (one batch call per new set of texts)."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray]):
        self.embed, self.cache = embed, {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            v = np.asarray(self.embed(missing), dtype=np.float64)
            self.cache.update(zip(missing, v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12), strict=True))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 1))

    def cosine(self, a: str, b: str) -> float:
        va, vb = self([a, b])
        return float(va @ vb)


def embedding_support(embed: Callable[[list[str]], np.ndarray]) -> Callable[[str, list[str]], float]:
    """support(text, passages): mean over the text's sentences of the max cosine to a passage sentence, in [0, 1]."""
    vec = embed if isinstance(embed, Vectors) else Vectors(embed)

    def support(text: str, passages: list[str]) -> float:
        a, c = answer_sentences(text), [s for p in passages for s in answer_sentences(p)]
        g = groundedness_similarity(vec(a), vec(c)) if a and c else None
        return float(np.clip(g.score, 0.0, 1.0)) if g is not None and g.score is not None else 0.0

    support.label = "max-sim"
    return support


def nli_support(scorer) -> Callable[[str, list[str]], float]:
    """support(text, passages) = mean σ(D) of the text's sentences against the passages' sentences
    (``groundedness_nli_batch`` with any object having ``decision``, e.g. ``resources.nli.NLIModel``)."""

    def support(text: str, passages: list[str]) -> float:
        a, c = answer_sentences(text), [s for p in passages for s in answer_sentences(p)]
        v = groundedness_nli_batch([(a, c)], scorer)[0]["groundedness_nli"] if a and c else 0.0
        return float(v) if v == v else 0.0

    support.label = "σ(D)"
    return support


# ---------------------------------------------------------------- small public parsers
def strip_planted(contexts: Sequence[str] | None, planted: str | None) -> list[str]:
    """``contexts`` without the planted distractor passage (exact or whitespace/case-normalised match)."""
    if not planted or not planted.strip():
        return list(contexts or [])
    key = _norm(planted)
    return [c for c in contexts or [] if c is None or _norm(c) != key]


_YES = {"yes", "yeah", "yep", "correct", "true", "indeed", "certainly", "absolutely", "right"}
_NO = {"no", "nope", "false", "incorrect", "never", "not"}
_AUX = r"is|are|was|were|can|could|will|would|should|must|may|does|do|did|has|have"
_LEAD = re.compile(r"^\W*(?:(?:final\s+)?answer\s*[:\-]\s*)?\W*", re.I)


def yes_no_polarity(text: str | None) -> Literal["yes", "no"] | None:
    """"yes" / "no" if the reply opens with one ("Yes, …", "No.", "Answer: no", "It does not."),
    or says "the answer is yes/no"; None when it states neither (or both)."""
    if not text or not text.strip():
        return None
    t = _LEAD.sub("", text.strip().replace("’", "'")).lower()
    words = re.findall(r"[a-z']+", t)
    if words and words[0] in _YES | _NO and not (len(words) > 2 and words[1] in ("and", "or") and words[2] in _YES | _NO):
        return "yes" if words[0] in _YES else "no"
    m = re.search(r"\bthe (?:short |correct )?answer is:?\s*\"?(yes|no)\b", t)
    if m:
        return m.group(1)  # type: ignore[return-value]
    m = re.match(rf"^(?:it|they|he|she|this|that|there|you|we|i)\s+({_AUX})(n't|\s+not)?\s*[.,!;]", t)
    return None if not m else "no" if m.group(2) else "yes"


def extract_option(text: str | None, options: Sequence[str]) -> int | None:
    """Index of the option the reply picks: a letter ("B", "B.", "(B)", "Answer: B", "option B",
    "B) …") or the text of exactly one option; None when none or several are named."""
    if not text or not text.strip() or not options:
        return None
    letters = OPTION_LETTERS[: len(options)]
    t = text.strip()
    m = re.fullmatch(rf"\W*\(?([{letters}])\)?[.):]?\W*", t, re.I)
    if m:
        return letters.index(m.group(1).upper())
    named = {letters.index(x) for x in re.findall(rf"\b(?i:answer|option|choice)(?:\s+is)?\s*[:\-]?\s*\(?([{letters}])\)?(?![\w'])", t)}
    named |= {letters.index(x) for x in re.findall(rf"^\W*\(?([{letters}])[.):](?:\s|$)", t)}
    if re.search(rf"(?<![\w'])\(?[{letters}]\)?\s*(?:or|and|/|,)\s*\(?[{letters}]\)?(?![\w'])", t):
        return None  # hedged between letters: "A or B"
    if len(named) == 1:
        return named.pop()
    if named:
        return None
    low = _norm(t)
    hits = [i for i, o in enumerate(options) if o and _norm(o) and re.search(rf"(?<!\w){re.escape(_norm(o))}(?!\w)", low)]
    hits = [i for i in hits if not any(j != i and _norm(options[i]) in _norm(options[j]) for j in hits)]  # "loop" ⊂ "for loop"
    return hits[0] if len(hits) == 1 else None


def option_of_reference(reference: str | None, options: Sequence[str]) -> int | None:
    keys = [_norm(o) for o in options]
    return keys.index(_norm(reference)) if reference and _norm(reference) in keys else extract_option(reference, options)


_CUE_WORDS = (
    r"\b(?:actually|in fact|in reality|contrary to|incorrect(?:ly)?|inaccurate|untrue|mistaken|misconception|"
    r"false (?:premise|assumption)|(?:that|this|the premise|the assumption|the claim)(?:'s| is) (?:not|n't) (?:correct|true|right|accurate|the case)|"
    r"(?:is|are) not (?:correct|true|accurate|the case)|that'?s wrong|is wrong)\b"
)  # fmt: skip
_CUE = re.compile(r"^\W*no\b[,.!;:]?|" + _CUE_WORDS, re.I)
_CUE_NOT_NO = re.compile(_CUE_WORDS, re.I)


def correction_cue(answer: str | None, yes_no_question: bool = False) -> str | None:
    """The first explicit correction phrase in ``answer`` ("actually", "that's not correct", "No, …"),
    or None. For a yes/no question a leading "No" is the answer, not a correction, and is ignored."""
    m = (_CUE_NOT_NO if yes_no_question else _CUE).search((answer or "").replace("’", "'"))
    return m.group(0).strip(" ,.!;:") if m else None


# ---------------------------------------------------------------- recovering what a case was built from
def premise_claim(query: str | None, base_query: str | None = None) -> str | None:
    """The false claim of a ``misleading_premise_query`` ("Given that <claim>, <base query>"), with its
    first letter upper-cased again. Without ``base_query`` the claim ends at the first ", " followed
    by a question word or auxiliary (else the first ", ")."""
    m = re.match(r"\s*given that\s+(.+)$", query or "", re.I | re.S)
    if not m:
        return None
    rest, claim = m.group(1).strip(), None
    b = (base_query or "").strip()
    for suffix in (", " + b[:1].lower() + b[1:], ", " + b) if b else ():
        if rest.endswith(suffix) and len(rest) > len(suffix):
            claim = rest[: -len(suffix)]
            break
    if claim is None:
        cuts = [m.start() for m in re.finditer(r", ", rest)]
        asks = [c for c in cuts if re.match(rf", (?:what|which|who|whom|whose|when|where|why|how|{_AUX}|does|did)\b", rest[c:], re.I)]
        claim = rest[: (asks or cuts or [len(rest)])[0]]
    claim = claim.strip()
    return claim[:1].upper() + claim[1:] if claim else None


def _inversions(claim: str, rule: str) -> list[str]:
    c = claim.strip()
    if rule == "negation":
        return [c[: m.end(1)] + c[m.end() :] for m in re.finditer(rf"\b({_AUX})(\s+not)\b", c, re.I)]
    if rule == "remove_negation":
        out = []
        for m in re.finditer(rf"\b({_AUX})\b", c, re.I):
            a, rest = m.group(1), c[m.end() :]
            forms = [a + " not", a + "not" if a.lower() == "can" else None, a + "n't", {"will": "won't", "can": "can't"}.get(a.lower())]
            out += [c[: m.start()] + f + rest for f in forms if f]
        return out
    if rule == "antonym":
        return [c[: m.start()] + (lambda w: w.capitalize() if m.group(0)[0].isupper() else w)(ANTONYMS[m.group(0).lower()]) + c[m.end() :]
                for m in re.finditer(r"[A-Za-z]+", c) if m.group(0).lower() in ANTONYMS]  # fmt: skip
    if rule == "number":
        out = []
        for m in re.finditer(r"\b\d+\b", c):
            r = int(m.group(0))
            out += [c[: m.start()] + str(n) + c[m.end() :] for n in (r - 1, r // 2) if n >= 0 and (n + 1 if n < 9 else n * 2) == r]
        return out
    return []


def recover_source(false_claim: str | None, rule: str | None = None, candidates: Sequence[str] = ()) -> tuple[str | None, str]:
    """(true source sentence, how it was found) for a claim made by ``contradict_sentence``.

    First a candidate sentence (e.g. from the retrieved context) whose contradiction is the claim
    ("context"); else the claim's edit undone by its rule (``contradiction:<rule>`` tag; every rule
    tried if None), kept only if ``contradict_sentence`` maps it back to the claim ("inverted:<rule>").
    """
    if not false_claim:
        return None, "none"
    key = _norm(false_claim)
    for s in candidates:
        got = contradict_sentence(s) if s else None
        if got and _norm(got[0]) == key:
            return s.strip(), "context"
    for r in [rule] if rule else ["negation", "remove_negation", "antonym", "number"]:
        for cand in _inversions(false_claim, r):
            got = contradict_sentence(cand)
            if got and _norm(got[0]) == key:
                return cand, f"inverted:{r}"
    return None, "none"


def case_tag(case: dict, prefix: str) -> str | None:
    return next((t.split(":", 1)[1] for t in case.get("tags") or [] if t.startswith(prefix + ":")), None)


def case_canary(case: dict) -> str | None:
    """The canary token of an injection case (its ``canary:`` tag, else derived from the base case)."""
    c = case_tag(case, "canary")
    return c or (canary_for(case["base_case_id"]) if case.get("variant_kind") == "injection" and case.get("base_case_id") else None)


def injected_instruction(case: dict, base_query: str | None = None) -> str | None:
    """The injected instruction: a known template with the canary found in the query or the planted
    passage, else the text the attack added to the base query / the planted passage."""
    canary = case_canary(case) or ""
    texts = [t for t in (case.get("distractor_passage"), case.get("query")) if t]
    for tpl in INJECTIONS:
        if canary and any(tpl.format(canary=canary) in t for t in texts):
            return tpl.format(canary=canary)
    q = case.get("query") or ""
    if base_query and q.startswith(base_query.strip()) and len(q) > len(base_query.strip()):
        return q[len(base_query.strip()) :].strip()
    p = case.get("distractor_passage")
    return re.sub(r"^note to the assistant:\s*", "", p, flags=re.I) if p else None


_NEGS = {"not", "never"}


def _tokens(text: str) -> list[str]:
    t = text.lower().replace("’", "'")
    t = re.sub(r"\bcan't\b|\bcannot\b", "can not", re.sub(r"\bwon't\b", "will not", t))
    return re.findall(r"\d+(?:\.\d+)?|[a-z]+", re.sub(r"n't\b", " not", t))


def claim_stance(answer: str | None, false_claim: str, true_claim: str) -> Literal["true", "false"] | None:
    """Which of two claims differing by a negation / word / number the answer repeats.

    Only answer sentences about the claim count (sharing its content words, and for a negation the
    word after it); correction cues are ignored. None when no sentence decides or they disagree.
    """
    f, t = _tokens(false_claim), _tokens(true_claim)
    ops = [o for o in difflib.SequenceMatcher(None, f, t, autojunk=False).get_opcodes() if o[0] != "equal"]
    f_only, t_only = [w for o in ops for w in f[o[1] : o[2]]], [w for o in ops for w in t[o[3] : o[4]]]
    if not ops or not (f_only or t_only):
        return None
    negation = set(f_only + t_only) <= _NEGS
    anchor = [w for w in f[ops[0][1] :] if w not in _NEGS and w not in STOPWORDS and len(w) > 2][:1] if negation else []
    shared = {w for w in f if w in t and w not in STOPWORDS and len(w) > 2}
    seen = set()
    for sent in answer_sentences(answer):
        s = _tokens(_CUE.sub(" ", sent))
        if len(shared & set(s)) < min(2, len(shared)) or any(a not in s for a in anchor):
            continue
        if negation:
            seen.add("true" if (any(w in _NEGS for w in s) == any(w in _NEGS for w in t)) else "false")
        else:
            hf, ht = any(w in s for w in f_only if w not in STOPWORDS), any(w in s for w in t_only if w not in STOPWORDS)
            if hf != ht:
                seen.add("false" if hf else "true")
    return seen.pop() if len(seen) == 1 else None  # type: ignore[return-value]


