"""Long-document faithfulness (concept-level chapter §14.5; metrics/long_document.py): the share of answer sentences
whose best source-document sentence reaches 0.70, on cosines worked by hand."""

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.metrics.long_document import long_source_documents
from hcat_pipeline.metrics.registry import MetricUnavailable, opt_in_metrics
from hcat_pipeline.metrics.scoring import score_frame

# source sentences S1 = e1, S2 = e2; answer sentences at cosine 0.8, 0.8, 0.6 and 0.0 from their best source sentence,
# and one at exactly 0.70 (faithful: the chapter flags < 0.70)
VEC = {"Source one.": (1, 0, 0), "Source two.": (0, 1, 0), "Close to one.": (0.8, 0, 0.6), "Close to two.": (0, 0.8, 0.6),
       "Loosely one.": (0.6, 0, 0.8), "Unrelated.": (0, 0, 1), "Exactly at the line.": (0.7, 0, 0.714142842854285)}  # fmt: skip


def embed(texts):
    return np.array([VEC[t] for t in texts], dtype=np.float32)


def _frame(answers, docs):
    n = len(answers)
    return pl.DataFrame({"query": ["q"] * n, "contexts": [["c"]] * n, "answer": answers, "source_documents": docs},
                        schema_overrides={"source_documents": pl.List(pl.String)})  # fmt: skip


def test_the_rate_is_the_share_of_sentences_traced_to_a_source_sentence():
    assert "long_document_faithfulness" in opt_in_metrics()
    answers = ["Close to one. Close to two. Loosely one. Unrelated.", "Exactly at the line.", "Close to one."]
    out, _ = score_frame(_frame(answers, [["Source one. Source two."], ["Source one."], []]), ["long_document_faithfulness"], embed=embed)
    first, at_line, no_docs = out.to_dicts()
    assert first["long_document_faithfulness"] == pytest.approx(0.5) and first["long_document_sentences"] == 4
    assert [(u["sentence"], round(u["max_source_similarity"], 3)) for u in first["long_document_unfaithful"]] == [("Loosely one.", 0.6), ("Unrelated.", 0.0)]
    assert at_line["long_document_faithfulness"] == 1.0 and at_line["long_document_unfaithful"] == []
    assert no_docs["long_document_faithfulness"] is None and no_docs["long_document_sources"] == 0
    # a stricter threshold is configuration
    strict, _ = score_frame(_frame(answers[:1], [["Source one. Source two."]]), ["long_document_faithfulness"], embed=embed,
                            long_document_threshold=0.85)  # fmt: skip
    assert strict["long_document_faithfulness"][0] == 0.0


def test_without_source_documents_the_metric_is_unavailable_with_the_fix():
    frame = pl.DataFrame({"query": ["q"], "contexts": [["c"]], "answer": ["Close to one."]})
    with pytest.raises(MetricUnavailable, match="source_documents"):
        score_frame(frame, ["long_document_faithfulness"], embed=embed)


def test_a_cases_long_source_documents_come_from_its_source_chunks():
    cases = pl.DataFrame({"case_id": ["a", "b", "c"], "source_chunk_ids": [["k1", "k9"], ["s1"], []]})
    chunks = pl.DataFrame({"chunk_id": ["k1", "k2", "k3", "k9", "s1"], "doc_id": ["long", "long", "long", "other", "short"]})
    corpus = pl.DataFrame({"doc_id": ["long", "short", "other"], "text": ["LONG DOC", "SHORT DOC", "OTHER DOC"]})
    got = dict(long_source_documents(cases, chunks, corpus, min_chunks=2).iter_rows())
    assert got == {"a": ["LONG DOC"], "b": [], "c": []}  # "other" and "short" have one chunk each
