"""Retrieval mechanisms of a RAG pipeline (exam-generation paper §4.2): closed-book, oracle,
sparse (BM25), dense (MiniLM), a second dense encoder ``dense_use`` (the packaged multilingual USE-M3: the paper
compares two dense encoders) and hybrid (MiniLM dense + sparse fused by reciprocal rank fusion).

Every retriever has ``retrieve_batch(queries, k, source_chunk_ids=None) -> list[list[Passage]]``
(and ``retrieve(query, k, source_chunk_ids=None)`` for one query). Pure: the dense retriever takes
the chunk matrix and an ``embed(texts) -> np.ndarray`` callable; nothing here loads a model.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

import numpy as np

if TYPE_CHECKING:
    import polars as pl

DISTRACTOR_PREFIX = "distractor:"
RetrieverName = Literal["closed_book", "oracle", "bm25", "dense", "dense_use", "hybrid", "hybrid_rerank"]
DenseIndex = tuple[np.ndarray, Callable[[list[str]], np.ndarray]]  # (chunk vectors in chunk order, embed of the same model)
RETRIEVERS: tuple[str, ...] = get_args(RetrieverName)


@dataclass(frozen=True)
class Passage:
    chunk_id: str
    text: str
    rank: int  # 1-based, in the order given to the generator
    score: float = 0.0


class Retriever:
    name = "retriever"

    def retrieve_batch(
        self, queries: Sequence[str], k: int, source_chunk_ids: Sequence[Sequence[str]] | None = None
    ) -> list[list[Passage]]:
        raise NotImplementedError

    def retrieve(self, query: str, k: int, source_chunk_ids: Sequence[str] | None = None) -> list[Passage]:
        return self.retrieve_batch([query], k, [source_chunk_ids or []])[0]


def _passages(ids_scores: Sequence[tuple[str, float]], texts: dict[str, str]) -> list[Passage]:
    return [Passage(cid, texts[cid], i + 1, float(s)) for i, (cid, s) in enumerate(ids_scores)]


class ClosedBook(Retriever):
    """No context: the LLM answers from its parametric knowledge (lower bound)."""

    name = "closed_book"

    def retrieve_batch(self, queries, k, source_chunk_ids=None):
        return [[] for _ in queries]


class Oracle(Retriever):
    """The case's own source chunks, in the order recorded on the case (upper bound).

    All source chunks are returned even when there are more than ``k``: the oracle gives the ground
    truth knowledge. Unknown chunk ids are skipped.
    """

    name = "oracle"

    def __init__(self, chunk_ids: Sequence[str], texts: Sequence[str]):
        self.texts = dict(zip(chunk_ids, texts))

    def retrieve_batch(self, queries, k, source_chunk_ids=None):
        sources = source_chunk_ids or [[] for _ in queries]
        out = []
        for ids in sources:
            known = [c for c in dict.fromkeys(ids or []) if c in self.texts]
            out.append(_passages([(c, 1.0) for c in known], self.texts))
        return out


class BM25(Retriever):
    """Sparse retrieval: Okapi BM25 (bm25s) over the chunk texts, English stop words removed."""

    name = "bm25"

    def __init__(self, chunk_ids: Sequence[str], texts: Sequence[str], k1: float = 1.5, b: float = 0.75):
        import bm25s

        self._bm25s = bm25s
        self.ids = list(chunk_ids)
        self.texts = dict(zip(chunk_ids, texts))
        self.index = bm25s.BM25(k1=k1, b=b)
        self.index.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        tokens = self._bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        return np.asarray(self.index.get_scores(tokens), dtype=np.float64)

    def ranking(self, query: str, depth: int) -> list[tuple[str, float]]:
        s = self.scores(query)
        order = np.lexsort((np.arange(len(s)), -s))[:depth]  # score desc, ties by corpus order
        return [(self.ids[i], float(s[i])) for i in order if s[i] > 0]

    def retrieve_batch(self, queries, k, source_chunk_ids=None):
        return [_passages(self.ranking(q, k), self.texts) for q in queries]


class Dense(Retriever):
    """Dense retrieval: cosine similarity between the query embedding and the chunk embeddings."""

    name = "dense"

    def __init__(self, chunk_ids: Sequence[str], texts: Sequence[str], matrix: np.ndarray, embed: Callable[[list[str]], np.ndarray],
                 name: str = "dense"):
        self.name = name
        m = np.asarray(matrix, dtype=np.float32)
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        self.matrix = m / np.where(norms == 0, 1, norms)
        self.ids = list(chunk_ids)
        self.texts = dict(zip(chunk_ids, texts))
        self.embed = embed
        if len(self.ids) != self.matrix.shape[0]:
            raise ValueError(f"dense retriever: {len(self.ids)} chunk ids but {self.matrix.shape[0]} vectors")

    def rankings(self, queries: Sequence[str], depth: int) -> list[list[tuple[str, float]]]:
        if not queries:
            return []
        q = np.asarray(self.embed(list(queries)), dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != self.matrix.shape[1]:
            raise ValueError(f"{self.name} retriever: the query vectors have {q.shape[-1]} dimensions, the chunk index "
                             f"{self.matrix.shape[1]}: the index and the query encoder must be the same model")  # fmt: skip
        q = q / np.where((n := np.linalg.norm(q, axis=1, keepdims=True)) == 0, 1, n)
        sims = q @ self.matrix.T
        out = []
        for row in sims:
            order = np.lexsort((np.arange(len(row)), -row))[:depth]
            out.append([(self.ids[i], float(row[i])) for i in order])
        return out

    def retrieve_batch(self, queries, k, source_chunk_ids=None):
        return [_passages(r, self.texts) for r in self.rankings(queries, k)]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], rrf_k: int = 60) -> list[tuple[str, float]]:
    """Fuse ranked id lists: score(d) = Σ 1 / (rrf_k + rank_d); ties broken by first appearance."""
    scores: dict[str, float] = {}
    first: dict[str, int] = {}
    pos = 0
    for ranking in rankings:
        for rank, cid in enumerate(ranking, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (rrf_k + rank)
            if cid not in first:
                first[cid] = pos
                pos += 1
    return sorted(scores.items(), key=lambda kv: (-kv[1], first[kv[0]]))


class Hybrid(Retriever):
    """Hybrid retrieval: dense and BM25 rankings (each to ``depth``) fused by reciprocal rank fusion."""

    name = "hybrid"

    def __init__(self, dense: Dense, sparse: BM25, depth: int = 20, rrf_k: int = 60):
        self.dense, self.sparse, self.depth, self.rrf_k = dense, sparse, depth, rrf_k
        self.texts = dense.texts

    def retrieve_batch(self, queries, k, source_chunk_ids=None):
        depth = max(self.depth, k)
        dense_r = self.dense.rankings(queries, depth)
        out = []
        for q, dr in zip(queries, dense_r):
            sr = self.sparse.ranking(q, depth)
            fused = reciprocal_rank_fusion([[c for c, _ in dr], [c for c, _ in sr]], self.rrf_k)[:k]
            out.append(_passages(fused, self.texts))
        return out


RERANK_DEPTH = 10  # fused candidates a re-ranker scores per question


class HybridReranked(Retriever):
    """The hybrid's fused top ``depth``, re-ordered by ``score(question, passages)`` (a cross-encoder, or the system's LLM
    read as one: ``responses.rerank.llm_relevance``); ties keep the fused order."""

    name = "hybrid_rerank"

    def __init__(self, hybrid: Hybrid, score: Callable[[str, Sequence[str]], list[float]], depth: int = RERANK_DEPTH):
        self.hybrid, self.score, self.depth = hybrid, score, depth
        self.texts = hybrid.texts

    def retrieve_batch(self, queries, k, source_chunk_ids=None):
        fused = self.hybrid.retrieve_batch(queries, max(self.depth, k))
        out = []
        for q, cands in zip(queries, fused, strict=True):
            scores = self.score(q, [c.text for c in cands])
            order = sorted(range(len(cands)), key=lambda i: (-scores[i], i))[:k]
            out.append([Passage(cands[i].chunk_id, cands[i].text, r + 1, scores[i]) for r, i in enumerate(order)])
        return out


def inject_distractor(passages: list[Passage], distractor: str | None, seed: int, case_id: str) -> list[Passage]:
    """Insert an adversarial distractor passage at a seeded position (same case + seed ⇒ same slot).

    Its chunk id is ``distractor:<sha1[:12]>`` so retrieval metrics can leave it out; ranks are
    renumbered 1..n in the new order.
    """
    if not distractor:
        return list(passages)
    rng = random.Random(f"{seed}:{case_id}:distractor")
    slot = rng.randint(0, len(passages))
    did = DISTRACTOR_PREFIX + hashlib.sha1(distractor.encode()).hexdigest()[:12]
    items = [(p.chunk_id, p.text, p.score) for p in passages]
    items.insert(slot, (did, distractor, 0.0))
    return [Passage(c, t, i + 1, s) for i, (c, t, s) in enumerate(items)]


def without_planted(frame: pl.DataFrame) -> pl.DataFrame:
    """Move planted distractor passages (chunk id ``distractor:…``) out of ``contexts`` into
    ``planted_passages``: groundedness and every context metric are measured against the true
    context only (the behaviour checks judge the planted passage separately)."""
    import polars as pl

    planted = pl.col("context_chunk_ids").list.eval(pl.element().str.starts_with(DISTRACTOR_PREFIX))
    return frame.with_columns(
        pl.col("contexts").list.gather(planted.list.eval(pl.element().not_().arg_true())).alias("_true_ctx"),
        pl.col("contexts").list.gather(planted.list.eval(pl.element().arg_true())).alias("planted_passages"),
    ).with_columns(pl.col("_true_ctx").alias("contexts")).drop("_true_ctx")


def build_retriever(
    name: str,
    chunk_ids: Sequence[str],
    texts: Sequence[str],
    matrix: np.ndarray | None = None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    cache: dict | None = None,
    second_dense: DenseIndex | None = None,
    rerank: Callable[[str, Sequence[str]], list[float]] | None = None,
) -> Retriever:
    """Make the retriever ``name`` (one of ``RETRIEVERS``); ``cache`` shares indexes between systems. ``matrix`` /
    ``embed``: the MiniLM index (dense, hybrid); ``second_dense``: the USE-M3 index (dense_use); ``rerank``: the
    system's re-ranker (hybrid_rerank: ``responses.rerank.llm_relevance`` of its LLM; never cached, it is the system's)."""
    cache = {} if cache is None else cache
    if name == "hybrid_rerank":
        if rerank is None:
            raise ValueError("retriever 'hybrid_rerank' needs a re-ranker (responses.rerank.llm_relevance of the system's local LLM)")
        return HybridReranked(build_retriever("hybrid", chunk_ids, texts, matrix, embed, cache), rerank)
    if name in cache:
        return cache[name]
    if name == "closed_book":
        r: Retriever = ClosedBook()
    elif name == "oracle":
        r = Oracle(chunk_ids, texts)
    elif name == "bm25":
        r = BM25(chunk_ids, texts)
    elif name in ("dense", "hybrid"):
        if matrix is None or embed is None:
            raise ValueError(f"retriever {name!r} needs chunk embeddings and an embed callable")
        if name == "dense":
            r = Dense(chunk_ids, texts, matrix, embed)
        else:
            r = Hybrid(build_retriever("dense", chunk_ids, texts, matrix, embed, cache),
                       build_retriever("bm25", chunk_ids, texts, cache=cache))
    elif name == "dense_use":
        if second_dense is None:
            raise ValueError("retriever 'dense_use' needs the multilingual encoder's chunk index (second_dense)")
        r = Dense(chunk_ids, texts, second_dense[0], second_dense[1], name="dense_use")
    else:
        raise ValueError(f"unknown retriever {name!r}; expected one of {RETRIEVERS}")
    cache[name] = r
    return r
