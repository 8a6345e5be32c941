"""The hybrid retriever's re-ranker (exam paper §4.2): the fused list re-ordered by a pointwise relevance score — the
packaged LLM read as a cross-encoder (no cross-encoder ships offline) — with known answers."""

import numpy as np
import pytest

from hcat_pipeline.responses.rerank import llm_relevance
from hcat_pipeline.responses.retrieval import HybridReranked, build_retriever
from hcat_pipeline_tests.golden_data import bow_embed

TEXTS = [
    "Savings accounts: the Easy Saver account pays interest monthly on the first business day of the month.",
    "Savings accounts: the Easy Saver account is a variable-rate account for customers aged 16 or over.",
    "Transfers: a same-day transfer made at a branch costs 15 pounds; online it is free.",
    "Cards: a lost card must be reported within 24 hours to limit the customer's liability.",
]
IDS = [f"c{i}" for i in range(len(TEXTS))]


def test_the_reranker_reorders_the_fused_list_by_its_score_and_keeps_k():
    matrix = bow_embed(TEXTS)
    prefer_cards = lambda q, passages: [2.0 if "Cards" in p else 0.0 for p in passages]  # noqa: E731
    r = build_retriever("hybrid_rerank", IDS, TEXTS, matrix, bow_embed, {}, rerank=prefer_cards)
    assert isinstance(r, HybridReranked)
    top = r.retrieve("When does the Easy Saver account pay interest?", 2)
    assert [p.chunk_id for p in top][0] == "c3" and len(top) == 2 and [p.rank for p in top] == [1, 2]
    plain = build_retriever("hybrid", IDS, TEXTS, matrix, bow_embed, {}).retrieve("When does the Easy Saver account pay interest?", 2)
    assert top[1].chunk_id == plain[0].chunk_id  # ties keep the fused order
    with pytest.raises(ValueError, match="needs a re-ranker"):
        build_retriever("hybrid_rerank", IDS, TEXTS, matrix, bow_embed, {})


def test_an_api_model_cannot_rerank_by_loglikelihood():
    class Api:
        supports_logprobs = False

    with pytest.raises(ValueError, match="local llama.cpp"):
        llm_relevance(Api())


def test_the_packaged_llm_as_reranker_puts_the_answering_passage_first(local_llm):
    """Real llama.cpp: of four passages, the one that answers each question scores highest."""
    score = llm_relevance(local_llm)
    for question, right in (("How much does a same-day transfer at a branch cost?", 2),
                            ("Within how many hours must a lost card be reported?", 3)):  # fmt: skip
        s = score(question, TEXTS)
        assert int(np.argmax(s)) == right, (question, s)
    assert score("Within how many hours must a lost card be reported?", TEXTS) == s  # deterministic
