"""Lineage stages 1-2: corpus (+ ingest_errors) and chunks.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""


from pathlib import Path

import dagster as dg
import polars as pl

from hcat_pipeline.assets._metadata import frame_metadata, preview
from hcat_pipeline.campaign_spec import CorpusSpec
from hcat_pipeline.corpus.chunking import chunk_corpus
from hcat_pipeline.corpus.content_hash import corpus_sha256
from hcat_pipeline.corpus.ingest import ingest
from hcat_pipeline.paths import CORPUS_DIR


class CorpusConfig(CorpusSpec):
    """The campaign file's ``corpus:`` section (``CorpusSpec``) plus the drop folder, read only when no paths are given."""

    drop_folder: str = str(CORPUS_DIR)  # .txt .md .html .jsonl .pdf; empty string: none


class ChunkingConfig(dg.Config):
    max_tokens: int = 200
    overlap_tokens: int = 40
    language: str = "en"


@dg.multi_asset(
    outs={
        "corpus": dg.AssetOut(description="Documents: stable doc_id (content hash), source, title, text, metadata (JSON)."),
        "ingest_errors": dg.AssetOut(description="Files or lines that could not be ingested: file, line, reason."),
    },
    group_name="corpus",
    deps=["corpus_files"],  # watched source (assets/sources.py): data/corpus/ + the embedded corpus by content hash
)
def corpus(context: dg.AssetExecutionContext, config: CorpusConfig):
    drop = Path(config.drop_folder) if config.drop_folder and not config.paths else None
    docs, errors, dupes = ingest(config.embedded(), drop, config.max_file_bytes, paths=config.paths)
    if docs.is_empty():
        raise dg.Failure(
            "corpus is empty: give corpus.paths in the campaign file, put documents in the drop folder or enable include_embedded",
            metadata={"ingest_errors": errors.height, "errors": preview(errors, 20)},
        )
    if errors.height:
        context.log.warning(f"{errors.height} file(s)/line(s) not ingested; see the ingest_errors asset")
    chars = docs["text"].str.len_chars()
    yield dg.Output(
        docs,
        output_name="corpus",
        metadata={
            **frame_metadata(docs.select("doc_id", "source", "title")),
            "documents": docs.height,
            "characters": int(chars.sum()),
            "mean_characters": float(chars.mean()),
            "sources": dg.MetadataValue.json(docs["source"].str.split(":").list.first().value_counts().sort("source").to_dicts()),
            "duplicates_dropped": dupes,
            "embedded_reference": config.embedded(),
            "paths": dg.MetadataValue.json(list(config.paths)),
            "ingest_errors": errors.height,
            # the content hash corpus_files observes (corpus_change_sensor compares the two)
            "corpus_sha256": corpus_sha256(drop, include_embedded=config.embedded(), paths=config.paths)[0],
        },
    )
    yield dg.Output(
        errors,
        output_name="ingest_errors",
        metadata={"dagster/row_count": errors.height, "errors": preview(errors, 50, 160)},
    )


@dg.asset(group_name="corpus", description="Sentence-aware chunks with a token budget and overlap; exact char offsets.")
def chunks(context: dg.AssetExecutionContext, config: ChunkingConfig, corpus: pl.DataFrame) -> pl.DataFrame:
    out = chunk_corpus(corpus.select("doc_id", "text", "title").iter_rows(), config.max_tokens, config.overlap_tokens, language=config.language)
    context.add_output_metadata(
        {
            **frame_metadata(out.select("chunk_id", "doc_id", "start", "end", "n_tokens", "text")),
            "chunks": out.height,
            "documents": corpus.height,
            "mean_tokens": float(out["n_tokens"].mean() or 0),
            "max_tokens": int(out["n_tokens"].max() or 0),
        }
    )
    return out
