"""Lineage stage 5 (HCAT §2 step 5): generated_queries → selected_queries + query_rejections → robustness_cases.

* ``generated_queries``: one LLM request per (sampled chunk, query type); failures are rows with
  ``error`` set.
* ``selected_queries`` / ``query_rejections``: step 5.4 selection; every rejection keeps its reason.
  Selection is its own step so thresholds can be tuned without paying for generation again.
* ``robustness_cases``: HCAT §6.1 / §4 and golden-eval §2.2 / §11.2 variants of the selected cases
  (typos, colloquial rewrites, misleading premise, contradicting distractor, prompt injection,
  counterfactual demographic pairs) plus out-of-scope questions.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import time

import dagster as dg
import numpy as np
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import frame_metadata, preview
from hcat_pipeline.core.generation import QUERY_TYPES, colloquial_rewrite, generate_queries, item_seed
from hcat_pipeline.core.golden import case_from_query, cases_frame, corpus_hash
from hcat_pipeline.core.robustness import VARIANT_COUNTS, build_robustness_cases
from hcat_pipeline.core.selection import SelectionConfig, rejection_counts, select_queries
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM, LLMCallFailed

GENERATED_QUERIES = {
    "query_id": pl.String, "query_type": pl.String, "chunk_id": pl.String, "source_chunk_ids": pl.List(pl.String),
    "stratum": pl.Int32, "stratum_label": pl.String, "query": pl.String, "options": pl.List(pl.String),
    "correct_index": pl.Int32, "reference_answer": pl.String, "answer_label": pl.String, "evidence": pl.String,
    "model": pl.String, "prompt_hash": pl.String, "prompt_name": pl.String, "seed": pl.Int64, "latency_s": pl.Float64,
    "input_tokens": pl.Int64, "output_tokens": pl.Int64, "raw_reply": pl.String, "error": pl.String,
}  # fmt: skip
SELECTED_QUERIES = {**GENERATED_QUERIES, "relevancy": pl.Float64, "answer_support": pl.Float64}
QUERY_REJECTIONS = {
    "query_id": pl.String, "query_type": pl.String, "chunk_id": pl.String, "source_chunk_ids": pl.List(pl.String),
    "query": pl.String, "reference_answer": pl.String, "stage": pl.String, "reason": pl.String, "detail": pl.String,
}  # fmt: skip


class QueryGenerationConfig(dg.Config):
    max_chunks: int = Field(default=5, description="how many sampled chunks (lowest sample_rank first) get queries")
    query_types: list[str] = Field(default_factory=lambda: list(QUERY_TYPES))
    seed: int = 0
    temperature: float = 0.0
    max_tokens: int = 200
    max_passage_chars: int = 1200


class QuerySelectionConfig(dg.Config):
    min_relevancy: float = SelectionConfig.min_relevancy
    min_answer_support: float = SelectionConfig.min_answer_support
    min_lexical_support: float = SelectionConfig.min_lexical_support
    min_evidence_overlap: float = SelectionConfig.min_evidence_overlap
    min_hop_relevancy: float = SelectionConfig.min_hop_relevancy
    max_duplicate_similarity: float = SelectionConfig.max_duplicate_similarity
    min_query_words: int = SelectionConfig.min_query_words
    max_query_words: int = SelectionConfig.max_query_words
    max_answer_passage_ratio: float = SelectionConfig.max_answer_passage_ratio
    min_copied_passage_words: int = SelectionConfig.min_copied_passage_words


class RobustnessConfig(dg.Config):
    seed: int = 0
    n_typo: int = VARIANT_COUNTS["typo"]
    n_colloquial: int = VARIANT_COUNTS["colloquial"]
    n_misleading_premise: int = VARIANT_COUNTS["misleading_premise"]
    n_distractor: int = VARIANT_COUNTS["distractor"]
    n_injection: int = VARIANT_COUNTS["injection"]
    n_ood: int = VARIANT_COUNTS["ood"]
    n_counterfactual_pairs: int = VARIANT_COUNTS["counterfactual_pairs"]
    min_rewrite_similarity: float = 0.5
    ood_max_similarity: float = 0.45


def _partners(sampled: pl.DataFrame, topic_strata: pl.DataFrame, chunks: pl.DataFrame, chunk_embeddings: pl.DataFrame) -> dict:
    """Multi-hop partner of each sampled chunk: another sampled chunk of its stratum, else the most
    similar chunk of the same stratum (preferring another document)."""
    out: dict[str, dict] = {}
    text = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
    doc = dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
    emb_ids = chunk_embeddings["chunk_id"].to_list()
    row_of = {c: i for i, c in enumerate(emb_ids)}
    vecs = chunk_embeddings["embedding"].to_numpy()
    strata = topic_strata.select("chunk_id", "stratum")
    for r in sampled.iter_rows(named=True):
        same = sampled.filter((pl.col("stratum") == r["stratum"]) & (pl.col("chunk_id") != r["chunk_id"]))
        if same.height:
            p = same.row(0, named=True)
            out[r["chunk_id"]] = {"chunk_id": p["chunk_id"], "text": p["text"]}
            continue
        cands = [c for c in strata.filter((pl.col("stratum") == r["stratum"]) & (pl.col("chunk_id") != r["chunk_id"]))["chunk_id"] if c in row_of and c in text]
        if not cands or r["chunk_id"] not in row_of:
            continue
        sims = vecs[[row_of[c] for c in cands]] @ vecs[row_of[r["chunk_id"]]]
        other_doc = np.array([doc[c] != r["doc_id"] for c in cands])
        best = cands[int(np.argmax(sims + other_doc * 1.0))]
        out[r["chunk_id"]] = {"chunk_id": best, "text": text[best]}
    return out


@dg.asset(
    group_name="queries",
    pool="llm",
    description="HCAT §2 step 5: one LLM-generated query per (sampled chunk, query type) with its reference answer and "
    "source chunk ids; structured JSON, schema-validated; failed calls are rows with `error`.",
)
def generated_queries(
    context: dg.AssetExecutionContext,
    config: QueryGenerationConfig,
    llm: LLM,
    sampled_chunks: pl.DataFrame,
    topic_strata: pl.DataFrame,
    chunks: pl.DataFrame,
    chunk_embeddings: pl.DataFrame,
) -> pl.DataFrame:
    sampled = sampled_chunks.sort("sample_rank").head(config.max_chunks)
    partners = _partners(sampled, topic_strata, chunks, chunk_embeddings)
    t0 = time.perf_counter()
    rows = generate_queries(
        sampled.to_dicts(), llm, partners, tuple(config.query_types), config.seed, config.temperature, config.max_tokens,
        config.max_passage_chars, failed_exceptions=(LLMCallFailed,),
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    out = pl.DataFrame(rows, schema=GENERATED_QUERIES, orient="row") if rows else pl.DataFrame(schema=GENERATED_QUERIES)
    errors = out.filter(pl.col("error").is_not_null())
    context.add_output_metadata(
        {
            **frame_metadata(out.select("query_type", "query", "reference_answer", "error")),
            "requests": out.height,
            "chunks": sampled.height,
            "failed": errors.height,
            "failures": preview(errors.select("query_id", "query_type", "error"), 20, 160),
            "by_type": dg.MetadataValue.json({t: int((out["query_type"] == t).sum()) for t in config.query_types}),
            "llm_model": llm.model_name,
            "llm_seconds": round(seconds, 1),
            "output_tokens": int(out["output_tokens"].sum() or 0),
            "prompt_hashes": dg.MetadataValue.json(dict(zip(out["prompt_name"], out["prompt_hash"], strict=True))),
        }
    )
    return out


@dg.multi_asset(
    outs={
        "selected_queries": dg.AssetOut(description="HCAT §2 step 5.4: generated queries that pass every selection check."),
        "query_rejections": dg.AssetOut(description="Every rejected or failed generated query with its reason and detail."),
    },
    group_name="queries",
)
def selected_queries(
    context: dg.AssetExecutionContext,
    config: QuerySelectionConfig,
    embedding_model: EmbeddingModel,
    generated_queries: pl.DataFrame,
    chunks: pl.DataFrame,
):
    cfg = SelectionConfig(**config.model_dump())
    needed = {c for ids in generated_queries["source_chunk_ids"].to_list() for c in ids}
    chunk_texts = dict(chunks.filter(pl.col("chunk_id").is_in(list(needed))).select("chunk_id", "text").iter_rows())
    kept, rej = select_queries(generated_queries.to_dicts(), chunk_texts, embedding_model.embed, cfg)
    kept_df = pl.DataFrame(kept, schema=SELECTED_QUERIES, orient="row") if kept else pl.DataFrame(schema=SELECTED_QUERIES)
    rej_df = pl.DataFrame(rej, schema=QUERY_REJECTIONS, orient="row") if rej else pl.DataFrame(schema=QUERY_REJECTIONS)
    by_type = {t: int((kept_df["query_type"] == t).sum()) for t in QUERY_TYPES}
    missing = [t for t, n in by_type.items() if n == 0 and t in set(generated_queries["query_type"])]
    if missing:
        context.log.warning(f"no query of type(s) {missing} survived selection; see query_rejections")
    yield dg.Output(
        kept_df,
        output_name="selected_queries",
        metadata={
            **frame_metadata(kept_df.select("query_type", "query", "reference_answer", "relevancy")),
            "generated": generated_queries.height,
            "selected": kept_df.height,
            "selected_by_type": dg.MetadataValue.json(by_type),
            "mean_relevancy": float(kept_df["relevancy"].mean() or 0.0),
        },
    )
    yield dg.Output(
        rej_df,
        output_name="query_rejections",
        metadata={
            "dagster/row_count": rej_df.height,
            "rejected": rej_df.height,
            "rejections_by_reason": dg.MetadataValue.json(rejection_counts(rej)),
            "rejections": preview(rej_df.select("query_type", "reason", "detail", "query"), 30, 120),
        },
    )


@dg.asset(
    group_name="queries",
    pool="llm",
    description="Robustness and risk cases (HCAT §6.1, §4; golden-eval §2.2, §11.2): typos, colloquial rewrites, misleading "
    "premise, contradicting distractor, prompt injection, counterfactual demographic pairs (each linked to its base case) "
    "and out-of-scope questions (expected: abstain).",
)
def robustness_cases(
    context: dg.AssetExecutionContext,
    config: RobustnessConfig,
    llm: LLM,
    embedding_model: EmbeddingModel,
    selected_queries: pl.DataFrame,
    chunks: pl.DataFrame,
    chunk_embeddings: pl.DataFrame,
) -> pl.DataFrame:
    chash = corpus_hash(chunks["doc_id"].unique().to_list())
    bases = [case_from_query(r, chash) for r in selected_queries.to_dicts()]
    needed = {c for b in bases for c in b["source_chunk_ids"]}
    chunk_texts = dict(chunks.filter(pl.col("chunk_id").is_in(list(needed))).select("chunk_id", "text").iter_rows())

    def rewrite(query: str, seed: int):
        return colloquial_rewrite(query, llm, item_seed(seed, "colloquial", query), failed_exceptions=(LLMCallFailed,))

    counts = {
        "typo": config.n_typo, "colloquial": config.n_colloquial, "misleading_premise": config.n_misleading_premise,
        "distractor": config.n_distractor, "injection": config.n_injection, "ood": config.n_ood,
        "counterfactual_pairs": config.n_counterfactual_pairs,
    }  # fmt: skip
    vectors = chunk_embeddings["embedding"].to_numpy()
    cases, failures = build_robustness_cases(
        bases, chunk_texts, embedding_model.embed, vectors, config.seed, counts, rewrite,
        config.min_rewrite_similarity, config.ood_max_similarity,
    )  # fmt: skip
    for c in cases:
        c["corpus_hash"] = c["corpus_hash"] or chash
    out = cases_frame(cases)
    kinds = out["variant_kind"].fill_null("out_of_scope").value_counts().to_dicts()
    context.add_output_metadata(
        {
            **frame_metadata(out.select("category", "variant_kind", "query", "base_case_id")),
            "cases": out.height,
            "base_cases": len(bases),
            "by_kind": dg.MetadataValue.json({d["variant_kind"]: d["count"] for d in kinds}),
            "by_category": dg.MetadataValue.json(dict(zip(*out["category"].value_counts().to_dict(as_series=False).values(), strict=True))),
            "failed": len(failures),
            "failures": dg.MetadataValue.json(failures),
        }
    )
    return out

