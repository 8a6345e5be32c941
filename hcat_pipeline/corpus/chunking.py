"""Sentence-aware chunking with a token budget and a sentence overlap.

Documents are split into paragraphs (blank lines), paragraphs into sentences (pysbd, a kept
rule-based splitter), and consecutive sentences are packed into chunks of at most ``max_tokens``
tokens; each new chunk repeats the last sentences of the previous one up to ``overlap_tokens``.
Every chunk is an exact slice ``text[start:end]`` of its document, so offsets always reproduce it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

import polars as pl

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.common.sentences import headings, title_at
from hcat_pipeline.schemas import CHUNKS as CHUNKS_SCHEMA

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_PARA_RE = re.compile(r"\n[ \t]*\n")



def approx_token_count(text: str) -> int:
    """Words and punctuation marks: close to a WordPiece count for English prose and code."""
    return len(_TOKEN_RE.findall(text))


@lru_cache(maxsize=4)
def _segmenter(language: str):
    import pysbd

    return pysbd.Segmenter(language=language, clean=False)


def sentence_spans(text: str, language: str = "en") -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of ``text``; whitespace between them is not included.

    A paragraph's line breaks are read as spaces (same length, so offsets hold): plain text wrapped at a fixed width
    (licences, manuals, pydoc) would otherwise give the segmenter a "sentence" per line, and chunks that start and end
    mid-sentence."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for raw in _PARA_RE.split(text):
        p_start = text.find(raw, pos) if raw else pos
        pos = p_start + len(raw)
        if not raw.strip():
            continue
        para = raw.replace("\r", " ").replace("\n", " ")
        cursor = 0
        for sent in _segmenter(language).segment(para):
            s = sent.strip()
            if not s:
                continue
            i = para.find(s, cursor)
            if i < 0:  # splitter normalised something: fall back to the rest of the paragraph
                i = cursor
                s = para[cursor:].strip()
                if not s:
                    break
                i = para.find(s, cursor)
            spans.append((p_start + i, p_start + i + len(s)))
            cursor = i + len(s)
    return spans


def _split_long(text: str, start: int, end: int, max_tokens: int, count: Callable[[str], int]) -> list[tuple[int, int]]:
    """Hard-wrap one over-long sentence at token boundaries."""
    out = []
    toks = [m.span() for m in _TOKEN_RE.finditer(text, start, end)]
    for i in range(0, len(toks), max_tokens):
        piece = toks[i : i + max_tokens]
        out.append((piece[0][0], piece[-1][1]))
    return out or [(start, end)]


def chunk_document(
    text: str,
    max_tokens: int = 200,
    overlap_tokens: int = 40,
    count_tokens: Callable[[str], int] = approx_token_count,
    language: str = "en",
) -> list[tuple[int, int, int]]:
    """Return (start, end, n_tokens) for each chunk of ``text``."""
    if max_tokens <= 0:
        raise ValueError("max_tokens must be positive")
    if not 0 <= overlap_tokens < max_tokens:
        raise ValueError("overlap_tokens must be in [0, max_tokens)")
    units: list[tuple[int, int, int]] = []
    for s, e in sentence_spans(text, language):
        n = count_tokens(text[s:e])
        if n > max_tokens:
            for a, b in _split_long(text, s, e, max_tokens, count_tokens):
                units.append((a, b, count_tokens(text[a:b])))
        else:
            units.append((s, e, n))
    chunks: list[tuple[int, int, int]] = []
    i = 0
    while i < len(units):
        j, total = i, 0
        while j < len(units) and (total + units[j][2] <= max_tokens or j == i):
            total += units[j][2]
            j += 1
        chunks.append((units[i][0], units[j - 1][1], total))
        if j >= len(units):
            break
        # overlap: step back over trailing sentences worth at most overlap_tokens, always progressing
        k, back = j, 0
        while k - 1 > i and back + units[k - 1][2] <= overlap_tokens:
            back += units[k - 1][2]
            k -= 1
        i = k
    return chunks


def chunk_id_for(doc_id: str, start: int, end: int) -> str:
    return short_hash(doc_id, str(start), str(end), n=16, sep=":")


def chunk_corpus(
    docs: Iterable[tuple[str, str] | tuple[str, str, str | None]],
    max_tokens: int = 200,
    overlap_tokens: int = 40,
    count_tokens: Callable[[str], int] = approx_token_count,
    language: str = "en",
) -> pl.DataFrame:
    """Chunk (doc_id, text[, title]) tuples into the ``chunks`` table. Each chunk's ``title`` is the heading it sits
    under (``common.sentences.title_at``: section numbers removed), else the document's title: structure kept as
    metadata, so the generator can name what a passage is about."""
    rows = []
    for doc in docs:
        doc_id, text = doc[0], doc[1]
        doc_title = doc[2] if len(doc) > 2 else None
        heads = headings(text)
        for idx, (s, e, n) in enumerate(chunk_document(text, max_tokens, overlap_tokens, count_tokens, language)):
            rows.append(
                {
                    "chunk_id": chunk_id_for(doc_id, s, e),
                    "doc_id": doc_id,
                    "chunk_index": idx,
                    "start": s,
                    "end": e,
                    "n_tokens": n,
                    "text": text[s:e],
                    "title": title_at(heads, s, e, doc_title),
                }
            )
    return pl.DataFrame(rows, schema=CHUNKS_SCHEMA)


def split_sentences(text: str, language: str = "en") -> list[str]:
    """The project's one sentence splitter (pysbd, paragraph-aware), shared by chunking and metrics."""
    return [text[s:e] for s, e in sentence_spans(text, language)]


@dataclass(frozen=True)
class Chunking:
    """One chunking of the corpus (``chunk_corpus``'s parameters) under a name: the campaign file's ``exam_chunkings``
    (exam paper App. B.1, ``exam.chunkings``)."""

    name: str
    max_tokens: int = 200
    overlap_tokens: int = 40

    def __post_init__(self):
        if not self.name or "|" in self.name:
            raise ValueError(f"chunking name {self.name!r}: a non-empty name without '|'")
        if not 0 <= self.overlap_tokens < self.max_tokens:
            raise ValueError(f"chunking {self.name}: overlap_tokens ({self.overlap_tokens}) must be ≥ 0 and < max_tokens ({self.max_tokens})")
