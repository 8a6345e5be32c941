"""Answer targets and corpus distractors for exam generation (no LLM, no dagster).

A small model writes a far better exam question when it is told *which* fact to ask about and what the
answer is than when it must choose the fact, word the key and bound its length itself (measured on the
default corpus: see the README's exam section). So before the question call:

* ``answer_targets(text)`` picks (sentence, span) pairs from a chunk: a *term* of a complete, readable
  sentence — a quoted / back-quoted / emphasised term, a number or a version — preferring terms that
  occur once in the chunk, in sentences of 6-40 words. The span is the correct answer (grounded and
  short by construction) and the sentence its evidence.
* ``TermIndex`` collects every such term of the corpus with its ``shape`` (dunder method, call,
  exception class, dotted name, CamelCase, number, operator, identifier, phrase). ``mined_distractors``
  returns terms of the *same shape* from other chunks, absent from the question's chunk, the most
  similar to the answer first (embedding cosine) below a rephrasing ceiling: "the same kind of thing"
  as the key, which the exam paper asks of a distractor, without the LLM repeating the key.

Both are deterministic (sorted, no sampling). The LLM's own wrong answers and the mined ones form one pool
from which ``exam.filters.choose_distractors`` keeps the best passing three.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from hcat_pipeline.common.sentences import sentences, shape, terms  # noqa: F401 (the exam's span readers)
from hcat_pipeline.golden.case_signals import leans_on_context

# code-like terms make the clearest questions; bare identifiers are often parameter names (*item*, *key*)
_SHAPE_BONUS = {"dunder": 1.0, "call": 1.0, "exception": 1.0, "dotted": 1.0, "camel": 1.0, "version": 0.5, "phrase": 0.5}


@dataclass(frozen=True)
class Target:
    """One answer target of a chunk: ``answer`` (a span of ``sentence``) and its shape."""

    sentence: str
    answer: str
    shape: str


def answer_targets(text: str, k: int = 3) -> list[Target]:
    """Up to ``k`` (sentence, term) targets of a chunk, best first, each sentence and term used once.

    Preference: a term that occurs once in the chunk (unambiguous), whose sentence says more than the term
    (≥ 4 words besides it), of a sentence of 10-30 words; ties by position (earlier first)."""
    text_count = Counter()
    flat = " ".join((text or "").split())
    ranked = []
    for pos, s in enumerate(sentences(text)):
        for t in terms(s):
            if t not in text_count:
                text_count[t] = flat.count(t)
            rest = len(s.replace(t, " ").split())
            if rest < 4:
                continue
            n = len(s.split())
            score = (text_count[t] == 1) * 2 + (10 <= n <= 30) + _SHAPE_BONUS.get(shape(t), 0.0)
            ranked.append((-score, pos, s, t))
    out: list[Target] = []
    used_s: set[str] = set()
    used_t: set[str] = set()
    for _, _, s, t in sorted(ranked, key=lambda r: (r[0], r[1])):
        if s in used_s or t in used_t:
            continue
        out.append(Target(s, t, shape(t)))
        used_s.add(s)
        used_t.add(t)
        if len(out) >= k:
            break
    return out


_PRONOUN_START = re.compile(r"^(it|its|they|their|them|this|these|those|that|such|he|she|both|either|neither)\b", re.I)
CLOZE_BLANK = "____"
_LEAD = re.compile(r"^(hint|note|however|for (example|instance)|also|thus|therefore|in addition|otherwise)\s*[:,]\s*", re.I)


def cloze_question(sentence: str, answer: str) -> str | None:
    """The evidence sentence with the key blanked, as a fill-in-the-blank question; None when it would be ambiguous
    (the key occurs more than once) or not self-contained (the sentence opens with a pronoun whose referent is in the
    passage, or leans on it otherwise: "In this case", "When doing so" — ``golden.case_signals.leans_on_context``)."""
    s = " ".join(sentence.split())
    if s.count(answer) != 1 or _PRONOUN_START.match(s) or leans_on_context(_LEAD.sub("", s)):
        return None
    blanked = s.replace(f'"{answer}"', CLOZE_BLANK).replace(f"`{answer}`", CLOZE_BLANK).replace(f"*{answer}*", CLOZE_BLANK)
    blanked = _LEAD.sub("", blanked.replace(answer, CLOZE_BLANK))
    return f"Which term fills the blank? {blanked}"


class TermIndex:
    """Every answer-like term of a corpus by shape, with the number of chunks it occurs in."""

    def __init__(self, texts: Iterable[str]):
        df: Counter[str] = Counter()
        for text in texts:
            df.update({t for s in sentences(text) for t in terms(s)})
        self.doc_freq = dict(df)
        self.by_shape: dict[str, list[str]] = {}
        for t in sorted(df):
            self.by_shape.setdefault(shape(t), []).append(t)

    def __len__(self) -> int:
        return len(self.doc_freq)


def mined_distractors(
    answer: str,
    chunk_text: str,
    index: TermIndex,
    embed: Callable[[list[str]], np.ndarray],
    k: int = 5,
    max_cosine: float = 0.9,
    shortlist: int = 200,
) -> list[str]:
    """Up to ``k`` terms of the answer's shape from elsewhere in the corpus, most similar to the answer first.

    Excluded: the answer itself, terms that occur in the question's chunk (they may be true there),
    rephrasings (cosine ≥ ``max_cosine``) and terms containing / contained in the answer. The shortlist
    (terms closest in length, then most frequent) bounds the embedding work per question."""
    flat = " ".join((chunk_text or "").split())
    a = answer.strip()
    pool = [t for t in index.by_shape.get(shape(a), []) if t != a and t not in flat and a not in t and t not in a]
    if not pool:
        return []
    pool.sort(key=lambda t: (abs(len(t) - len(a)), -index.doc_freq.get(t, 0), t))
    pool = pool[:shortlist]
    vecs = np.asarray(embed([a, *pool]), dtype=np.float32)
    sims = vecs[1:] @ vecs[0]
    order = sorted(range(len(pool)), key=lambda i: (-float(sims[i]), pool[i]))
    return [pool[i] for i in order if sims[i] < max_cosine][:k]


def sources(distractors: Sequence[str], llm_pool: Sequence[str]) -> list[str]:
    """Where each chosen distractor came from: ``llm`` or ``corpus``."""
    llm = {d.strip() for d in llm_pool}
    return ["llm" if d.strip() in llm else "corpus" for d in distractors]
