"""QA-style length-matched twins for the NLI groundedness head, and corpus helpers.

``qa_pairs``: a faithful short answer span copied from the premise vs a hallucinated span of the
same word count (another document's span, a swapped name / number / keyword, a half-faithful mix).
``vocabulary`` / ``nearest_neighbours``: derivational variants for paraphrased positives.
``documents_from_texts`` / ``documents_from_chunks``: sentences per document for the generators.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import numpy as np

from hcat_pipeline.metrics.nli.lexical import CAP_RE, STOPWORDS, content_tokens, numbers, tokens
from hcat_pipeline.metrics.nli.lexical import stem as _stem
from hcat_pipeline.metrics.nli.pairs import Pair, draw_window, finish_sentence, swap_number, swap_synonym, usable_sentence

QA_POSITIVE_KINDS = ("qa_span", "qa_paraphrase")
QA_NEGATIVE_KINDS = ("qa_other_span", "qa_entity_swap", "qa_number_swap", "qa_word_swap", "qa_mixed")
_QA_FRAMES = ("{}", "{}", "It is {}", "The answer is {}", "I believe it is {}")


def _words_span(words: Sequence[str], rng: random.Random, length: int) -> list[str] | None:
    """``length`` consecutive words of ``words`` starting at a content word, or None."""
    starts = [i for i in range(0, len(words) - length + 1) if words[i].lower().strip(",;:()\"'.") not in STOPWORDS]
    if not starts:
        return None
    i = rng.choice(starts)
    return [w.strip(",;:()\"'") if k in (0, length - 1) else w for k, w in enumerate(words[i : i + length])]


def _replace_word(words: list[str], pick, pool: Sequence[str], banned: set[str], rng: random.Random, n: int = 1) -> list[str] | None:
    idx = [i for i, w in enumerate(words) if pick(i, w)]
    opts = [w for w in pool if w.lower() not in banned]
    if not idx or not opts:
        return None
    out = list(words)
    for i in rng.sample(idx, min(n, len(idx))):
        rep = rng.choice(opts)
        out[i] = (rep[0].upper() + rep[1:]) if out[i][:1].isupper() else rep
    return out


def qa_pairs(
    documents: Sequence[Sequence[str]],
    n_pairs: int = 2000,
    seed: int = 0,
    window: tuple[int, int] = (1, 3),
    span_words: tuple[int, int] = (2, 10),
    frame_rate: float = 0.4,
    neighbours: dict[str, Sequence[str]] | None = None,
    paraphrase_rate: float = 0.5,
) -> list[Pair]:
    """QA-style labelled pairs, generated in length-matched twins (HaluEval-QA-like answers).

    The premise is a window of sentences of one document (the knowledge). Each draw yields a
    faithful short answer — a span of ``span_words`` words copied from a premise sentence — and a
    hallucinated answer of the SAME word count for the same premise: a span of another document or
    of an unsupported sentence of the same one (``qa_other_span``), the faithful span with a name
    swapped for another name of the corpus (``qa_entity_swap``), a number changed
    (``qa_number_swap``), one or two content words swapped for corpus words absent from the premise
    (``qa_word_swap``), or the first part of the faithful span completed by an unsupported one
    (``qa_mixed``). Both twins get the same answer frame, so neither length nor wording of the
    frame tells the labels apart. Deterministic for a given seed.

    With ``neighbours`` (as for ``perturbation_pairs``), a share ``paraphrase_rate`` of the faithful
    spans get one or two words replaced by a derivational variant (``qa_paraphrase``): lexically
    novel but supported, so lexical novelty alone no longer separates the twins.
    """
    rng = random.Random(seed)
    docs = [[s.strip() for s in d if s and s.strip()] for d in documents]
    docs = [d for d in docs if sum(usable_sentence(s) for s in d) >= 2]
    if len(docs) < 2:
        raise ValueError("need at least two documents with two usable sentences each")
    names: set[str] = set()
    words: set[str] = set()
    for d in docs:
        for s in d:
            words.update(t for t in content_tokens(s) if t.isalpha() and len(t) > 3)
            names.update(m.group(0) for m in CAP_RE.finditer(s) if m.group(0).isalpha())
    vocab_names, vocab_words = sorted(names), sorted(words)
    out: list[Pair] = []
    attempts = 0
    while len(out) < n_pairs and attempts < n_pairs * 30:
        attempts += 1
        di, doc, start, w, premise, inside = draw_window(docs, rng, window)
        if not inside:
            continue
        src_words = rng.choice(inside).rstrip(".!?").split()
        if len(src_words) < span_words[0]:
            continue
        length = rng.randint(span_words[0], min(span_words[1], len(src_words)))
        pos = _words_span(src_words, rng, length)
        if pos is None or not content_tokens(" ".join(pos)):
            continue
        prem_text = " ".join(premise)
        prem_tok = set(tokens(prem_text))
        prem_stems = {_stem(t) for t in content_tokens(prem_text)}
        kind = rng.choice(QA_NEGATIVE_KINDS)
        neg: list[str] | None = None
        outside = [s for k, s in enumerate(doc) if (k < start or k >= start + w) and usable_sentence(s)]
        other = [s for s in docs[(di + rng.randrange(1, len(docs))) % len(docs)] if usable_sentence(s)]
        if kind in ("qa_other_span", "qa_mixed"):
            pool = outside if (outside and rng.random() < 0.5) else other
            if not pool:
                continue
            cand = rng.choice(pool).rstrip(".!?").split()
            if kind == "qa_other_span":
                neg = _words_span(cand, rng, length) if len(cand) >= length else None
            elif length >= 4:
                k = rng.randint(1, length // 2)
                tail = _words_span(cand, rng, length - k) if len(cand) >= length - k else None
                neg = pos[:k] + tail if tail else None
        elif kind == "qa_entity_swap":
            neg = _replace_word(pos, lambda i, t: t[:1].isupper() and t.isalpha() and t.lower() not in STOPWORDS,
                                vocab_names, prem_tok, rng)
        elif kind == "qa_number_swap":
            ns = swap_number(" ".join(pos), rng)
            neg = ns.split() if ns else None
        elif kind == "qa_word_swap":
            neg = _replace_word(pos, lambda i, t: t.lower() not in STOPWORDS and t.isalpha() and len(t) > 3,
                                vocab_words, prem_tok, rng, n=rng.choice([1, 2]))
        if not neg:
            continue
        neg_text = " ".join(neg)
        # the hallucinated twin must assert something the premise does not contain
        if all(_stem(t) in prem_stems for t in content_tokens(neg_text)) and set(numbers(neg_text)) <= set(numbers(prem_text)):
            continue
        pos_text, pos_kind = " ".join(pos), "qa_span"
        if neighbours and rng.random() < paraphrase_rate:
            para = swap_synonym(pos_text, neighbours, rng)
            if para and para != pos_text:
                pos_text, pos_kind = para, "qa_paraphrase"
        frame = rng.choice(_QA_FRAMES) if rng.random() < frame_rate else "{}"
        out.append(Pair(list(premise), finish_sentence(frame.format(pos_text)), 1, pos_kind))
        out.append(Pair(list(premise), finish_sentence(frame.format(neg_text)), 0, kind))
    return out[:n_pairs]



def vocabulary(documents: Sequence[Sequence[str]], min_count: int = 2, max_words: int = 4000) -> list[str]:
    """Frequent content words of a corpus (alphabetic, > 3 letters), most frequent first, ties by word."""
    counts: dict[str, int] = {}
    for d in documents:
        for s in d:
            for t in content_tokens(s):
                if t.isalpha() and len(t) > 3:
                    counts[t] = counts.get(t, 0) + 1
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return words[:max_words]


def nearest_neighbours(words: Sequence[str], vectors: np.ndarray, k: int = 3, min_cos: float = 0.6, prefix: int = 4) -> dict[str, list[str]]:
    """word -> up to ``k`` derivational variants: other words sharing the first ``prefix`` letters
    whose (normalised) vectors have cosine ≥ ``min_cos`` ("invocation" -> "invoking", "hashing" ->
    "hashable"). Restricting to shared stems keeps antonyms and co-hyponyms out ("larger" ->
    "smaller" and "TypeError" -> "ValueError" are close in embedding space but change the meaning)."""
    V = np.asarray(vectors, dtype=np.float64)
    V = V / np.linalg.norm(V, axis=1, keepdims=True).clip(1e-12)
    groups: dict[str, list[int]] = {}
    for i, w in enumerate(words):
        groups.setdefault(w[:prefix], []).append(i)
    out: dict[str, list[str]] = {}
    for i, w in enumerate(words):
        cand = [j for j in groups[w[:prefix]] if j != i and _stem(words[j]) != _stem(w)]
        cand = sorted((j for j in cand if V[i] @ V[j] >= min_cos), key=lambda j: (-(V[i] @ V[j]), words[j]))[:k]
        if cand:
            out[w] = [words[j] for j in cand]
    return out


_WRAP_RE = re.compile(r"(?<!\n)[ \t]*\n(?!\s*\n)[ \t]*")


def documents_from_texts(texts: Sequence[str]) -> list[list[str]]:
    """Sentences per document for ``perturbation_pairs``: hard-wrapped lines are joined inside each
    paragraph first (so a line break is not taken for a sentence end), then the project's splitter runs."""
    from hcat_pipeline.corpus.chunking import split_sentences

    return [split_sentences(_WRAP_RE.sub(" ", t)) for t in texts if t and t.strip()]



def documents_from_chunks(doc_ids: Sequence[str], chunk_indexes: Sequence[int], texts: Sequence[str]) -> list[list[str]]:
    """Sentences per document from the (overlapping) ``chunks`` table: chunks in order, each split
    into sentences, sentences repeated by the overlap kept once."""
    by_doc: dict[str, list[tuple[int, str]]] = {}
    for d, i, t in zip(doc_ids, chunk_indexes, texts):
        by_doc.setdefault(d, []).append((int(i), t or ""))
    out = []
    for d in sorted(by_doc):
        sents: dict[str, None] = {}
        for _, t in sorted(by_doc[d]):
            for s in documents_from_texts([t])[0] if t.strip() else []:
                sents.setdefault(s, None)
        if sents:
            out.append(list(sents))
    return out


