"""Lineage stage 4: topic_strata and sampled_chunks (HCAT paper §2, steps 2-4).

topic_strata: chunk embeddings → dimensionality reduction (PCA | UMAP) → clustering (K-Means with
k by silhouette | DBSCAN | HDBSCAN) → strata with c-TF-IDF labels, sizes and the Figure 1 plot.
sampled_chunks: stratified sample of chunks (proportional | equal | weighted, with a minimum per
stratum) that query generation starts from.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

from pathlib import Path

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import frame_metadata, preview
from hcat_pipeline.common.images import png_markdown
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.corpus.sampling import SamplingParams, coverage_table, stratified_sample
from hcat_pipeline.corpus.strata import StrataParams, build_strata, plot_strata
from hcat_pipeline.paths import WAREHOUSE_DIR
from hcat_pipeline.schemas import SAMPLED_CHUNKS, TOPIC_STRATA, conform

# Steps 2-3 and step 4: the core's dataclasses are the one field list (names, types, defaults, descriptions)
TopicStrataConfig = config_from(StrataParams, "TopicStrataConfig",
                                plot_dir=(str, Field(default=str(WAREHOUSE_DIR), description="where topic_strata.png is written")))  # fmt: skip
SamplingConfig = config_from(SamplingParams, "SamplingConfig")


def _png_markdown(path: Path) -> str:
    return png_markdown(path.read_bytes(), "topic strata")


@dg.asset(
    group_name="strata",
    description="One row per chunk: topic stratum (reduction + clustering of its embedding), "
    "c-TF-IDF label and 2-D coordinates; Figure 1 scatter plot in metadata (HCAT §2 steps 2-3).",
)
def topic_strata(
    context: dg.AssetExecutionContext, config: TopicStrataConfig, chunks: pl.DataFrame, chunk_embeddings: pl.DataFrame
) -> pl.DataFrame:
    joined = chunk_embeddings.select("chunk_id", "embedding").join(
        chunks.select("chunk_id", "text"), on="chunk_id", how="inner", maintain_order="left"
    )
    if joined.is_empty():
        raise dg.Failure("topic_strata: no chunk has both an embedding and a text; materialize chunks and chunk_embeddings")
    unmatched = chunk_embeddings.height - joined.height
    if unmatched:
        context.log.warning(f"{unmatched} embedding(s) have no chunk text and were left out")

    result = build_strata(joined["chunk_id"].to_list(), joined["text"].to_list(), joined["embedding"].to_numpy(), to_core(StrataParams, config))
    out = conform(result.frame, TOPIC_STRATA)

    plot = plot_strata(
        out, Path(config.plot_dir) / "topic_strata.png",
        title=f"Topic strata ({config.reduction} + {config.clustering}, {result.strata.height} strata, {out.height} chunks)",
        seed=config.seed,
    )
    summary = result.strata.with_columns(pl.col("share").round(4))
    context.add_output_metadata(
        {
            **frame_metadata(out),
            "n_strata": summary.height,
            "strata": preview(summary.select("stratum", "stratum_label", "size", "share"), n=summary.height, max_chars=60),
            "stratum_sizes": dg.MetadataValue.json({str(s): int(n) for s, n in zip(summary["stratum"], summary["size"])}),
            "smallest_stratum": int(summary["size"].min()),
            "chosen_k": result.chosen_k if result.chosen_k is not None else -1,
            "silhouette": result.silhouette if result.silhouette is not None else float("nan"),
            "silhouette_by_k": dg.MetadataValue.json({str(k): v for k, v in result.silhouette_by_k.items()}),
            "noise_points": result.n_noise,
            "params": dg.MetadataValue.json(result.params),
            "timings_s": dg.MetadataValue.json(result.timings),
            "plot": dg.MetadataValue.path(str(plot)),
            "plot_preview": dg.MetadataValue.md(_png_markdown(plot)),
            "unmatched_embeddings": unmatched,
        }
    )
    return out


@dg.asset(
    group_name="strata",
    description="Stratified sample of chunks (HCAT §2 step 4), ordered by sample_rank (round-robin "
    "over strata, so any prefix covers as many strata as it can); query generation starts from it.",
)
def sampled_chunks(
    context: dg.AssetExecutionContext, config: SamplingConfig, topic_strata: pl.DataFrame, chunks: pl.DataFrame
) -> pl.DataFrame:
    try:
        p = to_core(SamplingParams, config)
        sample, alloc = stratified_sample(topic_strata.select("chunk_id", "stratum", "stratum_label"), p.sample_size, p.allocation,
                                          p.weights or None, p.min_per_stratum, p.seed)  # fmt: skip
    except ValueError as exc:
        raise dg.Failure(f"sampled_chunks: {exc}") from exc
    out = (
        sample.join(chunks.select("chunk_id", "doc_id", "text"), on="chunk_id", how="inner")
        .select(list(SAMPLED_CHUNKS))
        .sort("sample_rank")
    )
    out = conform(out, SAMPLED_CHUNKS)
    coverage = coverage_table(topic_strata, out).with_columns(pl.col(pl.Float64).round(4))
    if alloc.grown_by:
        context.log.warning(
            f"sample grown from {alloc.requested} to {alloc.total} chunks so that every stratum gets "
            f"min_per_stratum={config.min_per_stratum}"
        )
    context.add_output_metadata(
        {
            **frame_metadata(out.select("sample_rank", "stratum", "stratum_label", "chunk_id", "text")),
            "requested": alloc.requested,
            "sampled": out.height,
            "grown_by_minimum": alloc.grown_by,
            "capped_by_corpus": alloc.capped_by,
            "allocation": config.allocation,
            "strata_covered": int((coverage["sampled_chunks"] > 0).sum()),
            "n_strata": coverage.height,
            "coverage": preview(coverage, n=coverage.height, max_chars=50),
            "allocation_counts": dg.MetadataValue.json({str(s): c for s, c in alloc.counts.items()}),
        }
    )
    return out
