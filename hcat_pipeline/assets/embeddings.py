"""Lineage stage 3: chunk_embeddings (one normalised vector per chunk, through the cache)."""


import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.resources.embedding import EmbeddingModel


class ChunkEmbeddingsConfig(dg.Config):
    """Cache upkeep for long-lived instances: after embedding, the cache keeps every current chunk's vector and
    whatever else was written within ``cache_max_age_days`` (e.g. recent nights' answer sentences); the rest
    is dropped and the shards are merged into one. 0 turns the collection off."""

    cache_max_age_days: float = Field(default=30.0, ge=0.0, description="drop cache entries older than this unless reachable; 0 = never")


@dg.asset(group_name="embeddings", description="One L2-normalised sentence embedding per chunk (content-addressed cache, "
          "garbage-collected by age and reachability; its size is in the metadata).")  # fmt: skip
def chunk_embeddings(context: dg.AssetExecutionContext, config: ChunkEmbeddingsConfig, embedding_model: EmbeddingModel,
                     chunks: pl.DataFrame) -> pl.DataFrame:  # fmt: skip
    texts = chunks["text"].to_list()
    vectors = embedding_model.embed(texts)
    stats = embedding_model.last_stats
    gc = embedding_model.cache_gc(config.cache_max_age_days or None, keep_texts=texts)
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
            **{f"embedding_cache_{k}": v for k, v in gc.items()},
        }
    )
    return out
