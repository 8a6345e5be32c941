"""Lineage stage: exam_chunking — chunk size as a design variable (exam-generation paper App. B.1).

One frozen exam, the two chunkings of the corpus the campaign file names (``exam_chunkings``: name, max_tokens,
overlap_tokens): the corpus is chunked and embedded each way (the stored ``chunks`` are never touched), the exam's
source chunks are mapped to each chunking's chunks (the oracle's passages), every campaign system takes the exam over
each index (checkpointed: a taker whose index did not change resumes), and one joint IRT fit with a chunking latent
says which chunking retrieves better for this corpus, with its 95 % interval (core: ``exam/chunkings.py``).
Without ``exam_chunkings`` in the campaign file the table is empty and the metadata says why.
"""

from pathlib import Path
from typing import Literal

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.assets._takers import exam_takers
from hcat_pipeline.assets.exam import ExamResponsesConfig
from hcat_pipeline.campaign_spec import CampaignFileError, load_campaign
from hcat_pipeline.corpus.chunking import chunk_corpus
from hcat_pipeline.exam.chunkings import compare_chunkings, remap_sources, source_map
from hcat_pipeline.exam.taking import take_exam
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.sets import llm_pool
from hcat_pipeline.schemas import EXAM_CHUNKING


class ExamChunkingConfig(ExamResponsesConfig):
    icl_levels: list[int] = Field(default_factory=lambda: [0], description="ICL counts per taker (each chunking doubles the exam's cost)")
    model: Literal["3pl", "2pl", "1pl"] = Field(default="2pl", description="the joint IRT fit's model")
    n_boot: int = Field(default=200, ge=10, description="bootstrap refits over the questions for Δ's interval")


@dg.asset(
    group_name="exam",
    pool=llm_pool(),
    description="Chunk size as a design variable (exam paper App. B.1): the exam taken over the two chunkings the campaign "
    "file names; per taker θ under each with its 95% CI, and which chunking retrieves better (joint IRT fit with a "
    "chunking latent, Δ with its CI). Empty when the campaign file names no exam_chunkings.",
)
def exam_chunking(context: dg.AssetExecutionContext, config: ExamChunkingConfig, llm: LLM, embedding_model: EmbeddingModel,
                  multilingual_encoder: MultilingualEncoder, exam: pl.DataFrame, corpus: pl.DataFrame, chunks: pl.DataFrame) -> pl.DataFrame:  # fmt: skip
    try:
        spec = load_campaign(config.campaign_file)
    except CampaignFileError as e:
        raise dg.Failure(str(e)) from None
    if not spec.exam_chunkings:
        context.add_output_metadata({"dagster/row_count": 0, "skipped": f"{config.campaign_file} names no exam_chunkings"})
        return pl.DataFrame(schema=EXAM_CHUNKING)
    version = exam["exam_version"][0]
    questions = exam.sort("question_id").head(config.max_questions) if config.max_questions > 0 else exam
    docs = corpus.select("doc_id", "text", "title").rows()
    responses, sizes = {}, {}
    for ch in spec.exam_chunkings:
        cks = chunk_corpus(docs, ch.max_tokens, ch.overlap_tokens)
        index = cks.select("chunk_id", "text").with_columns(pl.Series("embedding", embedding_model.embed(cks["text"].to_list())))
        mapped = remap_sources(questions, source_map(chunks, cks))
        takers, _, _ = exam_takers(config, llm, embedding_model, multilingual_encoder, mapped, index)
        out, figures = take_exam(takers, mapped, Path(config.checkpoint_dir) / version / config.run_label)
        context.log.info(f"{ch.name}: {cks.height} chunks; " + "; ".join(f"{k}: {v}" for k, v in figures.items()))
        responses[ch.name], sizes[ch.name] = out, cks.height
    try:
        table, verdict = compare_chunkings(responses, config.model, config.seed, config.n_boot)
    except ValueError as e:
        raise dg.Failure(f"exam_chunking: {e}") from e
    params = {c.name: c for c in spec.exam_chunkings}
    table = table.with_columns(
        pl.lit(version).alias("exam_version"), pl.col("chunking").replace_strict({k: v.max_tokens for k, v in params.items()}).alias("max_tokens"),
        pl.col("chunking").replace_strict({k: v.overlap_tokens for k, v in params.items()}).alias("overlap_tokens"),
        pl.col("chunking").replace_strict(sizes).alias("chunks"), pl.lit(f"{verdict['b']} − {verdict['a']}").alias("comparison"),
        pl.lit(verdict["delta"]).alias("delta"), pl.lit(verdict["ci_low"]).alias("delta_ci_low"),
        pl.lit(verdict["ci_high"]).alias("delta_ci_high"), pl.lit(verdict["verdict"]).alias("verdict"),
    ).select([pl.col(c).cast(t) for c, t in EXAM_CHUNKING.items()])  # fmt: skip
    context.add_output_metadata({
        "dagster/row_count": table.height, "exam_version": version, "verdict": verdict["verdict"],
        "delta": dg.MetadataValue.json({k: (round(v, 4) if isinstance(v, float) else v) for k, v in verdict.items()}),
        "chunks": dg.MetadataValue.json(sizes),
        "abilities": preview(table.select("taker", "chunking", "theta", "ci_low", "ci_high", "accuracy"), 60),
    })  # fmt: skip
    return table
