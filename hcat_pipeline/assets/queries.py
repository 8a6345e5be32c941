"""Lineage stage 5 (HCAT §2 step 5): generated_queries → selected_queries + query_rejections → robustness_cases.

* ``generated_queries``: one LLM request per sampled chunk with the query type rotated (every stratum
  and every type asked for), then bounded repair rounds for the strata / types whose queries all
  failed selection (judged with the default selection thresholds); failures are rows with ``error``.
* ``selected_queries`` / ``query_rejections``: step 5.4 selection; every rejection keeps its reason;
  coverage (strata and types with a selected query) in metadata. Selection is its own step so
  thresholds can be tuned without paying for generation again.
* ``robustness_cases``: HCAT §6.1 / §4 and golden-eval §2.2 / §11.2 variants of the selected cases
  (typos, colloquial rewrites, misleading premise, contradicting distractor, prompt injection,
  counterfactual demographic pairs) plus out-of-scope questions.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import time
from typing import Literal, Optional

import dagster as dg
import numpy as np
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._llms import generator_llm
from hcat_pipeline.assets._metadata import frame_metadata, preview
from hcat_pipeline.campaign_spec import LLMSpec
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.console import progress_message
from hcat_pipeline.corpus.sampling import reserve_chunks
from hcat_pipeline.golden.cases import case_from_query, cases_frame, corpus_hash
from hcat_pipeline.golden.cases import new_case as make_case
from hcat_pipeline.golden.categories import build_category_cases
from hcat_pipeline.golden.composition import per_stratum, suite_record
from hcat_pipeline.golden.generation import (
    MAX_PASSAGE_CHARS,
    MAX_TOKENS,
    QUERY_TYPES,
    colloquial_rewrite,
    coverage,
    generate_covering,
    item_seed,
    paraphrases,
)
from hcat_pipeline.golden.grounded import (
    CASES_PER_STRATUM,
    DEFAULT_TYPES,
    MAX_REQUESTS_PER_STRATUM,
    N_DISTRACTORS,
    generate_grounded,
)
from hcat_pipeline.golden.grounded_gate import validity_gate
from hcat_pipeline.golden.query_mix import mix_report
from hcat_pipeline.golden.robustness import ATTRIBUTES, RobustnessParams, build_robustness_cases
from hcat_pipeline.golden.selection import REJECTION_REASONS, SelectionConfig, rejection_counts, select_queries
from hcat_pipeline.golden.yes_no import yes_no_suite
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM, LLMCallFailed
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.sets import llm_pool
from hcat_pipeline.schemas import GENERATED_QUERIES, QUERY_REJECTIONS, SELECTED_QUERIES


class QueryGenerationConfig(dg.Config):
    mode: Literal["grounded", "free"] = Field(
        default="grounded",
        description="grounded: the reference is a source sentence and the LLM writes the question for it, until each stratum "
        "has cases_per_stratum cases passing selection and validity (golden.grounded); free: the LLM writes question and "
        "answer, one type per chunk plus repair rounds (the earlier behaviour)",
    )
    cases_per_stratum: int = Field(default=CASES_PER_STRATUM, ge=1, description="grounded: happy-path cases each stratum should end with")
    happy_path_target: int = Field(default=0, ge=0, description="grounded: happy-path cases in all, spread over the strata (overrides "
                                   "cases_per_stratum; requests per stratum at least 4 a case); 0: cases_per_stratum decides")
    max_requests_per_stratum: int = Field(default=MAX_REQUESTS_PER_STRATUM, ge=1, description="grounded: at most this many LLM requests per stratum")
    max_chunks: int = Field(default=0, description="how many sampled chunks (lowest sample_rank first) get queries; 0 = all")
    types_per_chunk: int = Field(
        default=1, description="query types asked per chunk, rotated (seeded) so every type appears; >= number of types = all"
    )
    max_repair_requests: int = Field(
        default=8, description="at most this many extra requests for strata / types with no query surviving selection; 0 = none"
    )
    repair_rounds: int = Field(default=2, description="repair rounds sharing max_repair_requests (each only for what is still uncovered)")
    reserve_per_stratum: int = Field(default=8, description="unsampled chunks per stratum the repair rounds (free) or the "
                                     "per-stratum budget (grounded) may use; documentation chunks often hold few sentences a reviewer would sign")
    query_types: list[str] = Field(default_factory=lambda: list(DEFAULT_TYPES))
    type_shares: dict[str, float] = Field(default_factory=dict, description="grounded: share of each of query_types (HCAT §2 step "
                                          "5.3); empty: golden.query_mix.DEFAULT_SHARES")
    difficulty_shares: dict[str, float] = Field(default_factory=dict, description="grounded: the difficulty mix the LLM is asked for "
                                                "(golden.difficulty: easy / hard); empty: none asked")
    seed: int = 0
    temperature: float = 0.0
    max_tokens: int = MAX_TOKENS
    max_passage_chars: int = MAX_PASSAGE_CHARS
    llm: Optional[LLMSpec] = Field(default=None, description="the generator LLM (campaign file: generation.llm); absent: the packaged "
                                   "Qwen2.5-Coder-1.5B-Instruct (the llm resource when it is not installed)")


# the selection thresholds *are* the core's SelectionConfig (one field list, one set of defaults)
QuerySelectionConfig = config_from(SelectionConfig, "QuerySelectionConfig")


# the variant counts and thresholds *are* the core's RobustnessParams; + the generator LLM
RobustnessConfig = config_from(
    RobustnessParams, "RobustnessConfig",
    llm=(Optional[LLMSpec], Field(default=None, description="the generator LLM for the rewrites (campaign file: generation.llm); "
                                  "absent: the packaged Qwen2.5-Coder-1.5B-Instruct")),
)


def _partner_finder(sampled: pl.DataFrame, topic_strata: pl.DataFrame, chunks: pl.DataFrame, chunk_embeddings: pl.DataFrame):
    """partner_of(chunk) for multi-hop queries: another sampled chunk of its stratum (lowest sample_rank),
    else the most similar chunk of the same stratum (preferring another document); None if it is alone."""
    text = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
    doc = dict(zip(chunks["chunk_id"], chunks["doc_id"], strict=True))
    row_of = {c: i for i, c in enumerate(chunk_embeddings["chunk_id"].to_list())}
    vecs = chunk_embeddings["embedding"].to_numpy()
    stratum_of = dict(zip(topic_strata["chunk_id"], topic_strata["stratum"], strict=True))
    members: dict[int, list[str]] = {}
    for c, st in zip(topic_strata["chunk_id"], topic_strata["stratum"], strict=True):
        members.setdefault(st, []).append(c)
    sampled_in: dict[int, list[str]] = {}
    for c, st in sampled.sort("sample_rank").select("chunk_id", "stratum").iter_rows():
        sampled_in.setdefault(st, []).append(c)
    cache: dict[str, dict | None] = {}

    def partner_of(chunk: dict) -> dict | None:
        cid = chunk["chunk_id"]
        if cid not in cache:
            st = stratum_of.get(cid, chunk.get("stratum"))
            same = [c for c in sampled_in.get(st, []) if c != cid and c in text]
            best = same[0] if same else None
            if best is None and cid in row_of:
                cands = [c for c in members.get(st, []) if c != cid and c in row_of and c in text]
                if cands:
                    sims = vecs[[row_of[c] for c in cands]] @ vecs[row_of[cid]]
                    other_doc = np.array([doc[c] != doc.get(cid) for c in cands])
                    best = cands[int(np.argmax(sims + other_doc * 1.0))]
            cache[cid] = {"chunk_id": best, "text": text[best]} if best else None
        return cache[cid]

    return partner_of


def _distractor_finder(chunks: pl.DataFrame, embed):
    """distractors_of(answer, chunk) for grounded multiple choice: the exam's mined distractors (terms of the answer's
    shape from elsewhere in the corpus, none in the question's chunk), the index built on first use."""
    from hcat_pipeline.exam.spans import TermIndex, mined_distractors

    index: list[TermIndex] = []

    def distractors_of(answer: str, chunk: dict) -> list[str]:
        if not index:
            index.append(TermIndex(chunks["text"].to_list()))
        return mined_distractors(answer, chunk.get("text") or "", index[0], embed, k=N_DISTRACTORS)

    return distractors_of


def _keep_fn(chunks: pl.DataFrame, embed, validity: bool = False, parse=None):
    """keep(rows) -> ids of the rows that pass selection with the default thresholds (for the repair rounds) and, with
    ``validity``, that the golden set's validity accepts (``golden.grounded.validity_gate``)."""
    text = dict(zip(chunks["chunk_id"], chunks["text"], strict=True))
    verdicts: dict = {}  # validity per query id, across rounds

    def keep(rows: list[dict]) -> set[str]:
        needed = {c for r in rows for c in r["source_chunk_ids"]}
        kept, _ = select_queries(rows, {c: text[c] for c in needed if c in text}, embed, SelectionConfig())
        if validity and kept:
            kept, _ = validity_gate(kept, text, embed, verdicts, parse)
        return {k["query_id"] for k in kept}

    return keep


@dg.asset(
    group_name="queries",
    pool=llm_pool(),
    description="HCAT §2 step 5: LLM-generated queries with reference answers and source chunk ids. grounded (default): the "
    "reference is a source sentence and the LLM writes the question for it, asked per stratum until cases_per_stratum pass "
    "selection and validity; free: one LLM question + answer per sampled chunk with repair rounds. Structured JSON, "
    "schema-validated; failed calls are rows with `error`.",
)
def generated_queries(
    context: dg.AssetExecutionContext,
    config: QueryGenerationConfig,
    llm: LLM,
    embedding_model: EmbeddingModel,
    nli_model: NLIModel,
    sampled_chunks: pl.DataFrame,
    topic_strata: pl.DataFrame,
    chunks: pl.DataFrame,
    chunk_embeddings: pl.DataFrame,
) -> pl.DataFrame:
    llm = generator_llm(llm, config.llm, "generated_queries (generation.llm)", context.log)
    sampled = sampled_chunks.sort("sample_rank")
    sampled = sampled.head(config.max_chunks) if config.max_chunks > 0 else sampled
    partner_of = _partner_finder(sampled, topic_strata, chunks, chunk_embeddings)
    reserve = reserve_chunks(topic_strata, sampled, config.reserve_per_stratum, config.seed).join(
        chunks.select("chunk_id", "doc_id", "text"), on="chunk_id", how="inner", maintain_order="left"
    )
    pools: dict[int, list[dict]] = {}
    title_of = dict(zip(chunks["chunk_id"], chunks["title"], strict=True)) if "title" in chunks.columns else {}
    for c in [*sampled.to_dicts(), *reserve.sort("stratum", "reserve_rank").to_dicts()]:
        pools.setdefault(c["stratum"], []).append({**c, "title": title_of.get(c["chunk_id"])})
    t0 = time.perf_counter()
    budget, max_requests = config.cases_per_stratum, config.max_requests_per_stratum
    if config.happy_path_target > 0:
        budget = per_stratum(config.happy_path_target, len(pools))
        max_requests = max(max_requests, 4 * budget)
    if config.mode == "grounded":
        rows, plan = generate_grounded(
            pools, llm, _keep_fn(chunks, embedding_model.embed, validity=True, parse=nli_model.docs), budget, max_requests,
            query_types=tuple(config.query_types), partner_of=partner_of, seed=config.seed, failed_exceptions=(LLMCallFailed,),
            progress=lambda done, total: context.log.debug(progress_message(done, total)), shares=config.type_shares or None,
            distractors_of=_distractor_finder(chunks, embedding_model.embed), difficulty=config.difficulty_shares or None,
        )  # fmt: skip
        plan |= {"round_1_requests": plan["requests_by_round"][0] if plan["requests_by_round"] else 0,
                 "repair_requests": sum(plan["requests_by_round"][1:])}  # fmt: skip
        if plan["short_strata"]:
            context.log.warning(f"strata short of {budget} valid cases: {plan['short_strata']}")
    else:
        rows, plan = generate_covering(
            sampled.to_dicts(), llm, _keep_fn(chunks, embedding_model.embed), pools, partner_of, tuple(config.query_types), config.seed,
            config.types_per_chunk, config.max_repair_requests, config.repair_rounds, temperature=config.temperature, max_tokens=config.max_tokens,
            max_passage_chars=config.max_passage_chars, failed_exceptions=(LLMCallFailed,),
        )  # fmt: skip
    seconds = time.perf_counter() - t0
    out = pl.DataFrame(rows, schema=GENERATED_QUERIES, orient="row") if rows else pl.DataFrame(schema=GENERATED_QUERIES)
    errors = out.filter(pl.col("error").is_not_null())
    n_strata = topic_strata["stratum"].n_unique()
    context.add_output_metadata(
        {
            **frame_metadata(out.select("query_type", "stratum", "query", "reference_answer", "error")),
            "requests": out.height,
            "round_1_requests": plan["round_1_requests"],
            "repair_requests": plan["repair_requests"],
            "requests_by_round": dg.MetadataValue.json(plan["requests_by_round"]),
            "coverage_after_round_1": dg.MetadataValue.json(plan.get("after_round_1", {})),
            "mode": config.mode,
            "cases_per_stratum": budget,
            "happy_path_target": config.happy_path_target or budget * len(pools),
            "stratum_labels": dg.MetadataValue.json({str(k): v for k, v in topic_strata.group_by("stratum").agg(pl.col("stratum_label").first()).iter_rows()}
                                                    if "stratum_label" in topic_strata.columns else {}),
            "kept_per_stratum": dg.MetadataValue.json({str(k): v for k, v in plan.get("kept_per_stratum", {}).items()}),
            "short_strata": dg.MetadataValue.json({str(k): v for k, v in plan.get("short_strata", {}).items()}),
            "chunks": out["chunk_id"].n_unique(),
            "strata_asked": f"{out['stratum'].n_unique()} / {n_strata}",
            "failed": errors.height,
            "failures": preview(errors.select("query_id", "query_type", "error"), 20, 160),
            "by_type": dg.MetadataValue.json({t: int((out["query_type"] == t).sum()) for t in config.query_types}),
            "llm_model": llm.model_name,
            "roundtrip_calls": plan.get("roundtrip_calls", 0),
            "no_twins_kept": plan.get("no_twins", 0),
            "difficulty_asked": dg.MetadataValue.json({"shares": plan.get("difficulty_shares", {}), "rows": {
                str(k): int(v) for k, v in out["difficulty_asked"].value_counts().iter_rows()} if out.height else {}}),
            "type_mix": dg.MetadataValue.json(mix_report(plan.get("kept_types", []), plan["type_shares"]) if "type_shares" in plan else {}),
            "roundtrip_agrees": int(out["roundtrip_agrees"].fill_null(False).sum()),
            "roundtrip_disagrees": int((~out["roundtrip_agrees"].fill_null(True)).sum()),
            "llm_seconds": round(seconds, 1),
            "seconds_per_request": round(seconds / max(1, out.height), 2),
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
    nli_model: NLIModel,
    generated_queries: pl.DataFrame,
    chunks: pl.DataFrame,
    topic_strata: pl.DataFrame,
):
    cfg = to_core(SelectionConfig, config)
    needed = {c for ids in generated_queries["source_chunk_ids"].to_list() for c in ids}
    chunk_texts = dict(chunks.filter(pl.col("chunk_id").is_in(list(needed))).select("chunk_id", "text").iter_rows())
    kept, rej = select_queries(generated_queries.to_dicts(), chunk_texts, embedding_model.embed, cfg)
    kept, invalid = validity_gate(kept, chunk_texts, embedding_model.embed, parse=nli_model.docs)  # grounded rows: what the generation loop kept
    rej += invalid
    kept_df = pl.DataFrame(kept, schema=SELECTED_QUERIES, orient="row") if kept else pl.DataFrame(schema=SELECTED_QUERIES)
    rej_df = pl.DataFrame(rej, schema=QUERY_REJECTIONS, orient="row") if rej else pl.DataFrame(schema=QUERY_REJECTIONS)
    by_type = {t: int((kept_df["query_type"] == t).sum()) for t in QUERY_TYPES}
    cov = coverage(kept, topic_strata["stratum"].unique().to_list(), QUERY_TYPES)
    if cov["types_missing"] or cov["strata_missing"]:
        context.log.warning(f"no selected query for type(s) {cov['types_missing']} / stratum(s) {cov['strata_missing']}; see query_rejections")
    yield dg.Output(
        kept_df,
        output_name="selected_queries",
        metadata={
            **frame_metadata(kept_df.select("query_type", "stratum", "query", "reference_answer", "relevancy")),
            "generated": generated_queries.height,
            "selected": kept_df.height,
            "rejected": len(rej),
            "selected_by_type": dg.MetadataValue.json(by_type),
            "strata_covered": f"{cov['strata_covered']} / {cov['n_strata']}",
            "strata_missing": dg.MetadataValue.json(cov["strata_missing"]),
            "types_covered": f"{cov['types_covered']} / {cov['n_types']}",
            "types_missing": dg.MetadataValue.json(cov["types_missing"]),
            "mean_relevancy": float(kept_df["relevancy"].mean() or 0.0),
        },
    )
    yield dg.Output(
        rej_df,
        output_name="query_rejections",
        metadata={
            "dagster/row_count": rej_df.height,
            "rejected": rej_df.height,
            "rejections_by_reason": dg.MetadataValue.json({**dict.fromkeys(REJECTION_REASONS, 0), **rejection_counts(rej)}),
            "rejections": preview(rej_df.select("query_type", "reason", "detail", "query"), 40, 120),
        },
    )


@dg.asset(
    group_name="queries",
    pool=llm_pool(),
    description="Robustness and risk cases (HCAT §6.1, §4; golden-eval §2, §10.4, §11.2): typos, colloquial rewrites, misleading "
    "premise, contradicting distractor, prompt injection, counterfactual demographic pairs, ambiguous, edge-case and partially "
    "answerable questions (each linked to its base case), out-of-scope questions (expected: abstain), jailbreaks and "
    "PII elicitation (expected: refuse).",
)
def robustness_cases(
    context: dg.AssetExecutionContext,
    config: RobustnessConfig,
    llm: LLM,
    embedding_model: EmbeddingModel,
    selected_queries: pl.DataFrame,
    chunks: pl.DataFrame,
    chunk_embeddings: pl.DataFrame,
    topic_strata: pl.DataFrame,
) -> pl.DataFrame:
    llm = generator_llm(llm, config.llm, "robustness_cases (generation.llm)", context.log)
    chash = corpus_hash(chunks["doc_id"].unique().to_list())
    bases = [case_from_query(r, chash) for r in selected_queries.to_dicts()]
    needed = {c for b in bases for c in b["source_chunk_ids"]}
    chunk_texts = dict(chunks.filter(pl.col("chunk_id").is_in(list(needed))).select("chunk_id", "text").iter_rows())

    def rewrite(query: str, seed: int):
        return colloquial_rewrite(query, llm, item_seed(seed, "colloquial", query), failed_exceptions=(LLMCallFailed,))

    def reword(query: str, n: int, seed: int):
        return paraphrases(query, n, llm, item_seed(seed, "paraphrase", query), failed_exceptions=(LLMCallFailed,))

    counts = to_core(RobustnessParams, config).counts()
    vectors = chunk_embeddings["embedding"].to_numpy()
    cases, failures = build_robustness_cases(
        bases, chunk_texts, embedding_model.embed, vectors, config.seed, counts, rewrite,
        config.min_rewrite_similarity, config.ood_max_similarity, bias_share=config.max_bias_share,
        attributes=tuple(config.attributes), n_other=sum(config.category_counts.values()), reword=reword,
        paraphrases_per_case=config.paraphrases_per_case,
    )  # fmt: skip
    more, more_failures = build_category_cases(bases, chunks["text"].to_list(), embedding_model.embed, vectors, config.seed,
                                               config.category_counts)  # fmt: skip
    cases, failures = cases + more, failures + more_failures
    strata = chunks.select("chunk_id", "text").join(topic_strata.select("chunk_id", "stratum", "stratum_label"), on="chunk_id", how="left")
    yes_no, yes_no_failures = yes_no_suite(strata.to_dicts(), config.n_yes_no, config.seed, make_case, {b["query"] for b in bases}, chash)
    cases, failures = cases + yes_no, failures + yes_no_failures
    for c in cases:
        c["corpus_hash"] = c["corpus_hash"] or chash
    out = cases_frame(cases)
    kinds = out["variant_kind"].fill_null("out_of_scope").value_counts(sort=True).sort("count", "variant_kind", descending=[True, False]).to_dicts()
    tags = out["tags"].explode().drop_nulls()
    injections = {t.split(":", 1)[1]: int((tags == t).sum()) for t in ("injection:direct", "injection:indirect")}
    pairs = out.filter(pl.col("pair_id").is_not_null()).group_by("attribute", "pair_id").len()
    complete = {a: int(pairs.filter((pl.col("attribute") == a) & (pl.col("len") == 2)).height) for a in ATTRIBUTES}
    context.add_output_metadata(
        {
            **frame_metadata(out.select("category", "variant_kind", "query", "base_case_id")),
            "cases": out.height,
            "base_cases": len(bases),
            "by_kind": dg.MetadataValue.json({d["variant_kind"]: d["count"] for d in kinds}),
            "injections": dg.MetadataValue.json(injections),
            "complete_pairs_by_attribute": dg.MetadataValue.json(complete),
            "by_category": dg.MetadataValue.json(dict(zip(*out["category"].value_counts().sort("category").to_dict(as_series=False).values(), strict=True))),
            "failed": len(failures),
            "failures": dg.MetadataValue.json(failures),
            "suites": dg.MetadataValue.json(suite_record(out, config.sized_for, dict(config.planned), failures)),
        }
    )
    return out

