"""Lineage stage 3: chunk_embeddings (one normalised vector per chunk, through the cache)."""


import dagster as dg
import polars as pl

from hcat_pipeline.resources.embedding import EmbeddingModel


@dg.asset(group_name="embeddings", description="One L2-normalised sentence embedding per chunk (content-addressed cache).")
def chunk_embeddings(context: dg.AssetExecutionContext, embedding_model: EmbeddingModel, chunks: pl.DataFrame) -> pl.DataFrame:
    vectors = embedding_model.embed(chunks["text"].to_list())
    stats = embedding_model.last_stats
    out = pl.DataFrame(
        {"chunk_id": chunks["chunk_id"], "embedding": pl.Series(vectors, dtype=pl.Array(pl.Float32, vectors.shape[1]))}
    )
    context.add_output_metadata(
        {
            "dagster/row_count": out.height,
            "model_id": embedding_model.model_id,
            "dimensions": int(vectors.shape[1]),
            **stats.as_metadata(),
            "chunks_per_second": round(stats.texts / stats.seconds, 1) if stats.seconds else 0.0,
        }
    )
    return out
