"""Long-document faithfulness (concept-level chapter §14.5, the harness's ``_check_contradictions`` for
``task_type == "long_document"``) as a registered, opt-in metric.

For every answer sentence, its best match among all sentences of the row's source documents (cosine of the sentence
embeddings); a sentence whose best match is below ``long_document_threshold`` (0.70, the chapter's) is unfaithful:

    long_document_faithfulness = 1 − unfaithful sentences / answer sentences

with the unfaithful sentences and their best similarity as the explanation. The source documents come from the
input's ``source_documents`` column (a list of full texts per row): ``metric_tables`` fills it, when this metric is
asked for, with the case's source documents that are long (``long_document_min_tokens``); ``hcat score`` reads it from
the input file. A row without long source documents is null, and ``long_document_sources`` says 0.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hcat_pipeline.metrics.registry import MetricUnavailable, metric

UNFAITHFUL = pl.Struct({"sentence": pl.String, "max_source_similarity": pl.Float64})
COLUMNS = {"long_document_unfaithful": pl.List(UNFAITHFUL), "long_document_sentences": pl.Int64, "long_document_sources": pl.Int64}


@metric("long_document_faithfulness", needs={"embed"}, columns=COLUMNS, default=False)
def long_document_faithfulness_metric(batch, resources, options) -> dict[str, list]:
    """Share of answer sentences whose best source-document sentence reaches the threshold (ch. 14.5; opt-in)."""
    if batch.source_documents is None:
        raise MetricUnavailable("long_document_faithfulness", "the input has no 'source_documents' column",
                                "metric_tables adds it when the metric is requested; for hcat score give each row a list of "
                                "its full source documents")  # fmt: skip
    out = {c: batch.column() for c in ("long_document_faithfulness", *COLUMNS)}
    rows = {}
    for i in batch.valid:
        docs = [d for d in batch.source_documents[i] if d and d.strip()]
        out["long_document_sources"][i] = len(docs)
        answer = batch.sentences("answer", i)
        if docs and answer:
            rows[i] = (answer, [s for d in docs for s in batch.split(d)])
    if not rows:
        return out
    uniq = list(dict.fromkeys(s for answer, source in rows.values() for s in (*answer, *source)))
    vecs = dict(zip(uniq, np.asarray(resources.get("embed")(uniq), dtype=np.float32)))  # one call for the batch
    threshold = options.long_document_threshold
    for i, (answer, source) in rows.items():
        best = (np.stack([vecs[s] for s in answer]) @ np.stack([vecs[s] for s in source]).T).max(axis=1)
        unfaithful = [{"sentence": s, "max_source_similarity": float(b)} for s, b in zip(answer, best) if b < threshold]
        out["long_document_faithfulness"][i] = 1.0 - len(unfaithful) / len(answer)
        out["long_document_unfaithful"][i] = unfaithful
        out["long_document_sentences"][i] = len(answer)
    return out


def long_source_documents(cases: pl.DataFrame, chunks: pl.DataFrame, corpus: pl.DataFrame, min_chunks: int) -> pl.DataFrame:
    """case_id → ``source_documents``: the full texts of the documents of the case's ``source_chunk_ids`` that have at
    least ``min_chunks`` chunks (the corpus's long documents), in document order; [] for a case without one."""
    sizes = chunks.group_by("doc_id").len("n_chunks")
    long_docs = corpus.select("doc_id", "text").join(sizes.filter(pl.col("n_chunks") >= min_chunks), on="doc_id", how="inner")
    per_case = (cases.select("case_id", pl.col("source_chunk_ids").alias("chunk_id")).explode("chunk_id")
                .join(chunks.select("chunk_id", "doc_id"), on="chunk_id", how="inner")
                .join(long_docs, on="doc_id", how="inner")
                .unique(["case_id", "doc_id"], keep="first").sort("case_id", "doc_id")
                .group_by("case_id", maintain_order=True).agg(pl.col("text").alias("source_documents")))  # fmt: skip
    every = cases.select("case_id").unique(maintain_order=True)
    return every.join(per_case, on="case_id", how="left").with_columns(pl.col("source_documents").fill_null(pl.lit([], pl.List(pl.String))))
