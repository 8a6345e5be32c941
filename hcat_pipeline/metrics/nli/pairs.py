"""Labelled training pairs for the NLI groundedness head, generated from any corpus (seeded).

``perturbation_pairs`` takes a window of consecutive sentences of one document as the premise and
makes a faithful hypothesis (copy, clause span, merge of two premise clauses, short phrase,
derivational paraphrase) or an unsupported one. The unsupported kinds cover what a reader catches
and lexical novelty does not, because they re-use the context's own words:

* ``context_entity_swap`` / ``context_number_swap``: a name / number replaced by another name /
  number of the same document (so it is not new to the context, only wrong in this sentence);
* ``role_swap``: two names (or nouns) of the sentence exchanged — who did what to whom;
* ``negation`` and ``antonym_flip`` (rose → fell, won → lost, before → after);
* ``causal_link`` / ``temporal_link``: two premise sentences joined by a cause or an order the
  premise does not state;
* ``hedge_removal``: "may / reportedly / likely …" asserted as fact;
* and the easier ones: new numbers / names / words, unsupported sentences from the same or another
  document, a faithful clause joined to an unsupported one (``partial``).

Deterministic for a given seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hcat_pipeline.metrics.nli.lexical import (
    ANTONYMS,
    CAP_RE,
    NEG_RE,
    NUM_RE,
    STOPWORDS,
    content_tokens,
    tokens,
)

POSITIVE_KINDS = ("copy", "span", "merge", "phrase", "synonym_swap")
NEGATIVE_KINDS = ("number_swap", "entity_swap", "word_swap", "negation", "same_doc_unsupported", "other_doc", "partial",
                  "phrase_unsupported", "context_entity_swap", "context_number_swap", "role_swap", "antonym_flip",
                  "causal_link", "temporal_link", "hedge_removal")
FRAMES = ("Yes, {}", "I think {}", "Well, {}", "Did you know that {}", "Actually, {}", "As far as I know, {}")
_AUX_RE = re.compile(r"\b(is|are|was|were|can|could|will|would|should|must|may|does|do|did|has|have|had)\b")
_CLAUSE_RE = re.compile(r",\s+|;\s+|\s+\(|\)\s*|\s+(?:and|which|but|while|whereas)\s+")


@dataclass
class Pair:
    premise: list[str]
    hypothesis: str
    label: int  # 1: entailed by the premise, 0: not entailed
    kind: str

    def as_dict(self) -> dict:
        return {"premise": self.premise, "hypothesis": self.hypothesis, "label": self.label, "kind": self.kind}


def usable_sentence(s: str) -> bool:
    n = len(tokens(s))
    return 5 <= n <= 60 and sum(c.isalpha() for c in s) >= 0.6 * len(s.replace(" ", ""))


def _clauses(s: str) -> list[str]:
    parts = [p.strip(" ,;()") for p in _CLAUSE_RE.split(s)]
    return [p for p in parts if len(tokens(p)) >= 4]


def finish_sentence(s: str) -> str:
    s = s.strip()
    if s and s[-1] not in ".!?":
        s += "."
    return s[0].upper() + s[1:] if s else s


def _lower_first(s: str) -> str:
    return s[0].lower() + s[1:] if len(s) > 1 and not s[:2].isupper() else s


def _span(s: str, rng: random.Random) -> str | None:
    cl = _clauses(s)
    if len(cl) < 2:
        return None
    k = rng.randrange(len(cl))
    return finish_sentence(cl[k])


def swap_number(s: str, rng: random.Random) -> str | None:
    ms = list(NUM_RE.finditer(s))
    if not ms:
        return None
    m = rng.choice(ms)
    old = m.group(0)
    digits = old.replace(",", "").replace(".", "").replace(":", "")
    if not digits.isdigit():
        return None
    val = int(digits)
    new = val + rng.choice([-1, 1]) * rng.randint(1, max(2, val // 3 + 1))
    if new < 0 or str(new) == digits:
        new = val + 7
    return s[: m.start()] + str(new) + s[m.end() :]


def _swap_token(s: str, pool: Sequence[str], pick, rng: random.Random) -> str | None:
    cands = [m for m in re.finditer(r"[A-Za-z][A-Za-z'_\-]+", s) if pick(m)]
    if not cands or not pool:
        return None
    m = rng.choice(cands)
    low = m.group(0).lower()
    options = [w for w in pool if w.lower() != low]
    if not options:
        return None
    rep = rng.choice(options)
    if m.group(0)[0].isupper():
        rep = rep[0].upper() + rep[1:]
    return s[: m.start()] + rep + s[m.end() :]


def _negate(s: str, rng: random.Random) -> str | None:
    if NEG_RE.search(s):
        out = re.sub(r"\s+not\b|n't\b|\bnever\s+", " ", s, count=1)
        out = re.sub(r"\s{2,}", " ", out)
        return out if out != s else None
    m = _AUX_RE.search(s)
    if not m:
        return None
    return s[: m.end()] + " not" + s[m.end() :]



_HEDGE_DROP_RE = re.compile(r"\s*\b(?:reportedly|allegedly|possibly|probably|perhaps|apparently|likely|potentially)\b,?", re.I)
_MODAL_RE = re.compile(r"\b(may|might|could)\b(?!\s+not\b)", re.I)
_CONJ_RE = re.compile(r"^(?:and|but|or|so|which|while|whereas|then)\s+", re.I)
_LINKS = {"causal_link": ("{a} because {b}", "{a}, which led to {b}", "{a}, so {b}", "{a} as a result of the fact that {b}"),
          "temporal_link": ("{a} after {b}", "{a} before {b}", "{a}, and then {b}", "{a} until {b}")}


def _names(s: str) -> list[re.Match]:
    return [m for m in CAP_RE.finditer(s) if m.group(0).isalpha() and m.group(0).lower() not in STOPWORDS]


def _context_swap(src: str, doc: Sequence[str], numbers_: bool, rng: random.Random) -> str | None:
    """A name (number) of ``src`` replaced by another one of the same document: not new to the context."""
    if numbers_:
        ms = list(NUM_RE.finditer(src))
        pool = sorted({m.group(0) for d in doc for m in NUM_RE.finditer(d)} - {m.group(0) for m in ms})
    else:
        ms = _names(src)
        pool = sorted({m.group(0) for d in doc for m in _names(d)} - {m.group(0) for m in ms})
    if not ms or not pool:
        return None
    m = rng.choice(ms)
    return src[: m.start()] + rng.choice(pool) + src[m.end() :]


def _role_swap(src: str, rng: random.Random) -> str | None:
    """Two distinct names of the sentence exchanged (else its first and last noun-like content words)."""
    ms = _names(src)
    firsts: dict[str, re.Match] = {}
    for m in ms:
        firsts.setdefault(m.group(0), m)
    if len(firsts) < 2:
        words = [m for m in re.finditer(r"[A-Za-z]{4,}", src)
                 if m.group(0).lower() not in STOPWORDS and not m.group(0).lower().endswith(("ed", "ing", "ly"))]
        firsts = {}
        for m in words:
            firsts.setdefault(m.group(0).lower(), m)
        if len(firsts) < 2:
            return None
        picks = [list(firsts.values())[0], list(firsts.values())[-1]]
    else:
        picks = sorted(rng.sample(list(firsts.values()), 2), key=lambda m: m.start())
    a, b = picks
    return src[: a.start()] + b.group(0) + src[a.end() : b.start()] + a.group(0) + src[b.end() :]


def _antonym_flip(src: str, rng: random.Random) -> str | None:
    ms = [m for m in re.finditer(r"[A-Za-z]+", src) if m.group(0).lower() in ANTONYMS]
    if not ms:
        return None
    m = rng.choice(ms)
    rep = rng.choice(sorted(ANTONYMS[m.group(0).lower()]))
    rep = rep[0].upper() + rep[1:] if m.group(0)[0].isupper() else rep
    return src[: m.start()] + rep + src[m.end() :]


def _hedge_removal(src: str) -> str | None:
    out = _HEDGE_DROP_RE.sub("", src)
    out = _MODAL_RE.sub("will", out)
    out = re.sub(r"\s{2,}", " ", out).strip()
    return out if out != src else None


def _link(kind: str, inside: Sequence[str], rng: random.Random) -> str | None:
    if len(inside) < 2:
        return None
    a, b = rng.sample(list(inside), 2)
    ca, cb = _clauses(a) or [a.rstrip(".")], _clauses(b) or [b.rstrip(".")]
    ca, cb = [_CONJ_RE.sub("", c) for c in ca], [_CONJ_RE.sub("", c) for c in cb]
    frame = rng.choice(_LINKS[kind])
    return finish_sentence(frame.format(a=rng.choice(ca).rstrip(".!?"), b=_lower_first(rng.choice(cb).rstrip(".!?"))))


def perturbation_pairs(
    documents: Sequence[Sequence[str]],
    n_pairs: int = 4000,
    seed: int = 0,
    window: tuple[int, int] = (1, 4),
    frame_rate: float = 0.25,
    neighbours: dict[str, Sequence[str]] | None = None,
) -> list[Pair]:
    """Labelled (premise sentences, hypothesis) pairs generated from sentences of real documents.

    Each pair takes a window of consecutive sentences of one document as the premise. About half
    the pairs are faithful (label 1) and half are perturbed or unsupported (label 0), over the kinds
    in ``POSITIVE_KINDS`` / ``NEGATIVE_KINDS``. With probability ``frame_rate`` the hypothesis is
    wrapped in a conversational frame, equally for both labels. Deterministic for a given seed.

    ``neighbours`` (word -> near-synonyms, e.g. from ``nearest_neighbours`` over word embeddings)
    enables the ``synonym_swap`` positives: a premise sentence with one or two content words replaced
    by a close neighbour — lexically novel but meaning-preserving (mostly), the counterpart of the
    random ``word_swap`` negatives. Without it that kind is skipped.
    """
    rng = random.Random(seed)
    docs = [[s.strip() for s in d if s and s.strip()] for d in documents]
    docs = [d for d in docs if sum(usable_sentence(s) for s in d) >= 2]
    if len(docs) < 2:
        raise ValueError("need at least two documents with two usable sentences each")
    vocab_words: list[str] = []
    vocab_names: list[str] = []
    for d in docs:
        for s in d:
            vocab_words.extend(t for t in content_tokens(s) if t.isalpha() and len(t) > 3)
            vocab_names.extend(m.group(0) for m in CAP_RE.finditer(s))
    vocab_words = sorted(set(vocab_words))
    vocab_names = sorted(set(vocab_names))
    out: list[Pair] = []
    attempts = 0
    while len(out) < n_pairs and attempts < n_pairs * 30:
        attempts += 1
        # the label and kind are drawn first, so rare kinds (numbers, names) keep their share
        label = int(rng.random() < 0.5)
        kinds = [k for k in POSITIVE_KINDS if neighbours or k != "synonym_swap"] if label else NEGATIVE_KINDS
        kind = rng.choice(kinds)
        hyp = _try_pair(docs, kind, rng, window, vocab_words, vocab_names, neighbours=neighbours or {})
        if hyp is None:
            continue
        premise, hyp, src = hyp
        if rng.random() < frame_rate:
            frame = rng.choice(FRAMES)
            body = _lower_first(hyp.rstrip("."))
            hyp = frame.format(body) + ("?" if frame.startswith("Did") else ".")
        out.append(Pair(list(premise), hyp, label, kind))
    return out


def _phrase(s: str, rng: random.Random, lo: int = 2, hi: int = 6) -> str | None:
    """A short contiguous phrase of ``s`` starting at a content word (like a short QA answer)."""
    words = s.rstrip(".").split()
    starts = [i for i, w in enumerate(words) if w.lower().strip(",;:()\"'") not in STOPWORDS]
    if len(words) < lo or not starts:
        return None
    i = rng.choice(starts)
    n = rng.randint(lo, hi)
    ph = " ".join(words[i : i + n]).strip(" ,;:()")
    return ph if len(tokens(ph)) >= 1 and any(c.isalnum() for c in ph) else None


def swap_synonym(s: str, neighbours: dict[str, Sequence[str]], rng: random.Random) -> str | None:
    cands = [m for m in re.finditer(r"[A-Za-z][A-Za-z'_\-]+", s) if m.group(0).lower() in neighbours]
    if not cands:
        return None
    picked = sorted(rng.sample(cands, min(len(cands), rng.choice([1, 2]))), key=lambda m: -m.start())
    for m in picked:
        rep = rng.choice(list(neighbours[m.group(0).lower()]))
        if m.group(0)[0].isupper():
            rep = rep[0].upper() + rep[1:]
        s = s[: m.start()] + rep + s[m.end() :]
    return s


def draw_window(docs, rng, window):
    """A random premise window: (doc index, doc, start, width, premise sentences, usable ones)."""
    di = rng.randrange(len(docs))
    doc = docs[di]
    w = rng.randint(window[0], min(window[1], len(doc)))
    start = rng.randrange(0, len(doc) - w + 1)
    premise = doc[start : start + w]
    return di, doc, start, w, premise, [s for s in premise if usable_sentence(s)]


def _try_pair(docs, kind, rng, window, vocab_words, vocab_names, tries: int = 5, neighbours=None):
    """(premise, hypothesis, source sentence) for one pair of ``kind``, or None."""
    for _ in range(tries):
        di, doc, start, w, premise, inside = draw_window(docs, rng, window)
        if not inside:
            continue
        src = rng.choice(inside)
        outside = [s for k, s in enumerate(doc) if (k < start or k >= start + w) and usable_sentence(s) and s not in premise]
        other = docs[(di + rng.randrange(1, len(docs))) % len(docs)]
        other_sents = [s for s in other if usable_sentence(s)]
        hyp: str | None = None
        if kind == "copy":
            hyp = src
        elif kind == "span":
            hyp = _span(src, rng)
        elif kind == "merge":
            if len(inside) >= 2:
                a, b = rng.sample(inside, 2)
                ca, cb = _clauses(a) or [a.rstrip(".")], _clauses(b) or [b.rstrip(".")]
                hyp = finish_sentence(f"{rng.choice(ca).rstrip('.')} and {_lower_first(rng.choice(cb).rstrip('.'))}")
        elif kind == "phrase":
            hyp = _phrase(src, rng)
        elif kind == "synonym_swap":
            hyp = swap_synonym(src, neighbours or {}, rng)
        elif kind == "number_swap":
            hyp = swap_number(src, rng)
        elif kind == "entity_swap":
            hyp = _swap_token(src, vocab_names, lambda m: m.start() > 0 and m.group(0)[0].isupper(), rng)
        elif kind == "word_swap":
            hyp = _swap_token(src, vocab_words, lambda m: m.group(0).lower() not in STOPWORDS and len(m.group(0)) > 3, rng)
            if hyp is not None and rng.random() < 0.5:
                hyp = _swap_token(hyp, vocab_words, lambda m: m.group(0).lower() not in STOPWORDS and len(m.group(0)) > 3, rng)
        elif kind == "negation":
            hyp = _negate(src, rng)
        elif kind in ("context_entity_swap", "context_number_swap"):
            hyp = _context_swap(src, doc, kind == "context_number_swap", rng)
        elif kind == "role_swap":
            hyp = _role_swap(src, rng)
        elif kind == "antonym_flip":
            hyp = _antonym_flip(src, rng)
        elif kind == "hedge_removal":
            hyp = _hedge_removal(src)
        elif kind in _LINKS:
            hyp = _link(kind, inside, rng)
        elif kind == "same_doc_unsupported":
            hyp = rng.choice(outside) if outside else None
        elif kind == "other_doc":
            hyp = rng.choice(other_sents) if other_sents else None
        elif kind == "phrase_unsupported":
            pool = outside or other_sents
            hyp = _phrase(rng.choice(pool), rng) if pool else None
            if hyp is not None and all(t in set(content_tokens(" ".join(premise))) for t in content_tokens(hyp)):
                hyp = None
        elif kind == "partial":
            if outside:
                a = _clauses(src) or [src.rstrip(".")]
                b = rng.choice(outside)
                cb = _clauses(b) or [b.rstrip(".")]
                hyp = finish_sentence(f"{rng.choice(a).rstrip('.')}, and {_lower_first(rng.choice(cb).rstrip('.'))}")
        else:
            raise ValueError(f"unknown perturbation kind {kind!r}")
        if hyp and not (kind in NEGATIVE_KINDS and hyp.strip() == src.strip()):
            return premise, hyp, src
    return None


