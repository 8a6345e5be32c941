"""Lineage stage: the task-specific exam (exam-generation paper, whole) — exam_candidates → exam (frozen,
versioned) → exam_responses → irt_model → exam_report.

* ``exam_candidates``: the exam's own stratified sample of chunks (same strata and sampler as the golden
  set, its own size and seed); per chunk up to ``candidates_per_chunk`` candidates of two LLM calls
  (question + key, then a pool of wrong answers); a-priori filters (App. A.2) with every rejection's reason.
* ``exam``: the selected questions frozen under ``data/exams/<version>/`` (content hash, manifest,
  immutable); the version key is on every row and every downstream row. Baselines (App. A.3) in metadata.
* ``exam_responses``: every system of the campaign (retriever × LLM × ICL 0/1/2) takes the exam; local
  models by length-normalised option log-likelihood, API models by the letter; checkpointed, resumable.
* ``irt_model``: 3PL / hierarchical IRT fit (``hcat_pipeline.irt``), information curves, pruning history.
* ``exam_report``: accuracy with CIs per taker beside the baselines, abilities per component,
  information curves per Bloom level / question word.

Core: ``exam/generation.py``, ``exam/filters.py``, ``exam/freeze.py``, ``exam/taking.py``,
``exam/report.py``. (No `from __future__ import annotations`: Dagster reads the Config annotations.)
"""

import json
import time
from pathlib import Path
from typing import Literal

import dagster as dg
import numpy as np
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import frame_metadata, preview
from hcat_pipeline.assets._takers import exam_takers
from hcat_pipeline.campaign_spec import DEFAULT_CAMPAIGN_FILE
from hcat_pipeline.common.ids import json_hash
from hcat_pipeline.common.images import png_markdown
from hcat_pipeline.common.prompts import load_prompt
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.corpus.sampling import AllocationMode, stratified_sample
from hcat_pipeline.exam.filters import FilterConfig, baselines
from hcat_pipeline.exam.freeze import ExamError, exam_table, freeze_exam, load_exam
from hcat_pipeline.exam.generation import (
    DISTRACTOR_PROMPT,
    QUESTION_PROMPT,
    SPAN_QUESTION_PROMPT,
    generate_exam_candidates,
    reason_counts,
    survival,
)
from hcat_pipeline.exam.report import (
    accuracy_table,
    component_table,
    plot_accuracy,
)
from hcat_pipeline.exam.spans import TermIndex
from hcat_pipeline.exam.taking import matrix_frame, response_matrix, take_exam
from hcat_pipeline.exam.topics import topic_table
from hcat_pipeline.golden.cases import corpus_hash
from hcat_pipeline.paths import DATA_DIR, WAREHOUSE_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM, LLMCallFailed
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.sets import llm_pool
from hcat_pipeline.schemas import EXAM_CANDIDATES as CANDIDATES
from hcat_pipeline.schemas import IRT_MODEL as IRT_TABLE

EXAMS_DIR = DATA_DIR / "exams"
CHECKPOINT_DIR = WAREHOUSE_DIR / "_checkpoints" / "exam_responses"

# the filter thresholds are the core's FilterConfig (one field list, one set of defaults)
ExamGenerationConfig = config_from(
    FilterConfig,
    "ExamGenerationConfig",
    sample_size=(int, Field(default=80, description="chunks drawn for the exam (its own sample, golden-set strata)")),
    allocation=(AllocationMode, "proportional"),
    min_per_stratum=(int, 1),
    sample_seed=(int, Field(default=13, description="the exam sample's seed (not the golden set's)")),
    candidates_per_chunk=(int, Field(default=3, description="candidates tried per chunk until one passes the filters")),
    answer_targets_first=(bool, Field(default=True, description="ask about the chunk's answer targets (a term of a sentence; "
                                      "the model writes only the question) before free questions")),
    sample_temperature=(float, Field(default=0.7, description="temperature of the 2nd+ candidates (the 1st is greedy)")),
    seed=(int, 0),
    max_passage_chars=(int, 1200),
    checkpoint_dir=(str, Field(default=str(WAREHOUSE_DIR / "_checkpoints" / "exam_candidates"),
                               description="generated candidates, one JSONL per generation setting (model, prompts, seed)")),
)


class ExamConfig(dg.Config):
    exam_dir: str = Field(default=str(EXAMS_DIR), description="frozen exams live in <exam_dir>/<version>/")
    version: str = Field(default="", description="version name; empty = ex-<content hash>[:12] (same candidates ⇒ same version)")


class ExamResponsesConfig(dg.Config):
    campaign_file: str = Field(default=str(DEFAULT_CAMPAIGN_FILE), description="the systems (retriever, top_k) of the campaign")
    icl_levels: list[int] = Field(default_factory=lambda: [0, 1, 2], description="each retriever takes the exam with these ICL counts")
    mode: Literal["auto", "loglik", "letter"] = Field(default="auto", description="auto: loglik for the local model, letter for API")
    max_questions: int = Field(default=0, description="first N questions by id (0 = all); a smoke-test budget")
    run_label: str = Field(default="default", description="checkpoint name: the same label resumes, a new one asks again")
    checkpoint_dir: str = str(CHECKPOINT_DIR)
    seed: int = 0


class IRTConfig(dg.Config):
    model: Literal["3pl", "2pl", "1pl"] = "3pl"
    hierarchical: bool = Field(default=True, description="θ = θ_llm + θ_retriever + θ_icl (else one θ per taker)")
    prune_quantile: float = Field(default=0.1, description="share of least-discriminating questions dropped per round (App. B.3)")
    max_rounds: int = 5
    seed: int = 0


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:  # a torn last line after a crash: that candidate is generated again
            continue
    return out


def _append_jsonl(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write("\n" + json.dumps(row, default=str) + "\n")


def _png_md(png: bytes, alt: str) -> dg.MetadataValue:
    return dg.MetadataValue.md(png_markdown(png, alt))


def filter_config(config: ExamGenerationConfig) -> FilterConfig:
    """The core's filter thresholds from the asset config (its FilterConfig fields)."""
    return to_core(FilterConfig, config)


def candidates_checkpoint(config: ExamGenerationConfig, llm: LLM) -> Path:
    """The JSONL of generated raw candidates (a crash or a threshold change does not pay for generation again):
    keyed by everything that changes a generated candidate (model, prompts, seed, temperature, passage length,
    answer targets), not by the filter thresholds."""
    prompts = [load_prompt(p).hash for p in (QUESTION_PROMPT, DISTRACTOR_PROMPT, SPAN_QUESTION_PROMPT)]
    key = json_hash({"model": llm.fingerprint(), "prompts": prompts, "seed": config.seed, "t": config.sample_temperature,
                     "chars": config.max_passage_chars, "targets": config.answer_targets_first})  # fmt: skip
    return Path(config.checkpoint_dir) / f"{key}.jsonl"


@dg.asset(
    group_name="exam",
    pool=llm_pool(),
    description="Exam candidates (exam paper §3.2, App. A.1-A.2): per sampled chunk, question + key, then a pool of wrong "
    "answers (two LLM calls); a-priori filters keep the best 3 wrong answers; every rejection with its reason.",
)
def exam_candidates(
    context: dg.AssetExecutionContext, config: ExamGenerationConfig, llm: LLM, embedding_model: EmbeddingModel,
    topic_strata: pl.DataFrame, chunks: pl.DataFrame,
) -> pl.DataFrame:  # fmt: skip
    try:
        sample, alloc = stratified_sample(topic_strata.select("chunk_id", "stratum", "stratum_label"), config.sample_size,
                                          config.allocation, None, config.min_per_stratum, config.sample_seed)  # fmt: skip
    except ValueError as e:
        raise dg.Failure(f"exam_candidates: {e}") from e
    sample = sample.join(chunks.select("chunk_id", "text"), on="chunk_id", how="inner").sort("sample_rank")
    cfg = filter_config(config)
    store = candidates_checkpoint(config, llm)
    done = {(r["chunk_id"], r["candidate_no"]): r for r in _read_jsonl(store)}
    t0 = time.perf_counter()
    rows = generate_exam_candidates(
        sample.to_dicts(), llm, embedding_model.embed, config.candidates_per_chunk, config.seed, cfg, config.sample_temperature,
        config.max_passage_chars, (LLMCallFailed,),
        on_row=lambda r: context.log.info(f"{r['chunk_id']} #{r['candidate_no']}: {'pass' if r['passed'] else r['reasons']}"),
        done=done, on_raw=lambda r: _append_jsonl(store, r), answer_targets_first=config.answer_targets_first,
        term_index=TermIndex(chunks["text"].to_list()),
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    out = pl.DataFrame([{k: r.get(k) for k in CANDIDATES} for r in rows], schema=CANDIDATES, orient="row")
    sel = out.filter(pl.col("selected"))
    surv = survival(rows)
    context.add_output_metadata({
        **frame_metadata(out.select("chunk_id", "candidate_no", "question", "passed", "selected", "reasons")),
        **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in surv.items()},
        "rejections_by_reason": dg.MetadataValue.json(reason_counts(rows)),
        "strata_covered": f"{sel['stratum'].n_unique()} / {topic_strata['stratum'].n_unique()}",
        "sampled_chunks": sample.height, "grown_by_minimum": alloc.grown_by,
        "llm_model": llm.model_name, "llm_seconds": round(seconds, 1), "candidates_from_checkpoint": len(done),
        "checkpoint": str(store),
        "seconds_per_candidate": round(seconds / max(1, out.height), 2),
        "output_tokens": int(out["output_tokens"].sum() or 0),
        "rejected_examples": preview(out.filter(~pl.col("passed")).select("question", "answer", "distractors", "reasons"), 15, 90),
    })  # fmt: skip
    return out


@dg.asset(
    group_name="exam",
    description="The frozen exam (exam paper §3.2): selected questions with shuffled options and the correct position, "
    "immutable under data/exams/<version>/ (Parquet + manifest with SHA-256, statistics, provenance); exam_version on "
    "every row. Baselines (App. A.3) with n and CI in metadata.",
)
def exam(context: dg.AssetExecutionContext, config: ExamConfig, exam_candidates: pl.DataFrame, chunks: pl.DataFrame) -> pl.DataFrame:
    selected = exam_candidates.filter(pl.col("selected"))
    try:
        table = exam_table(selected.to_dicts(), corpus_hash(chunks["doc_id"].unique().to_list()))
        if table.height == 0:
            raise ExamError("no question survived the filters; see exam_candidates' rejections_by_reason")
        base = baselines(table["options"].to_list(), table["correct_index"].to_list())
        rows = exam_candidates.to_dicts()
        stats = {
            **survival(rows), "rejections_by_reason": reason_counts(rows), "baselines": base,
            "mean_question_chars": float(table["question"].str.len_chars().mean()),
        }  # fmt: skip
        provenance = {
            "question_prompt_hashes": sorted(set(table["question_prompt_hash"].drop_nulls())),
            "distractor_prompt_hashes": sorted(set(table["distractor_prompt_hash"].drop_nulls())),
            "models": sorted(set(table["model"].drop_nulls())), "run_id": context.run.run_id,
        }  # fmt: skip
        manifest = freeze_exam(table, config.exam_dir, config.version or None, stats, provenance)
        frame, manifest = load_exam(manifest["version"], config.exam_dir)
    except ExamError as e:
        raise dg.Failure(f"exam: {e}") from e
    b = manifest["statistics"].get("baselines", base)
    context.add_output_metadata({
        **frame_metadata(frame.select("question_id", "question", "options", "correct_index")),
        "exam_version": manifest["version"], "questions": frame.height, "content_sha256": manifest["content_sha256"],
        "manifest_path": str(Path(config.exam_dir) / manifest["version"] / "manifest.json"),
        "fixed_position_baseline": f"{b['fixed_position']['accuracy']:.3f} (always {b['fixed_position']['position']}; "
        f"n={b['fixed_position']['n']}, 95% CI {b['fixed_position']['ci_low']:.3f}-{b['fixed_position']['ci_high']:.3f})",
        "longest_answer_baseline": f"{b['longest_answer']['accuracy']:.3f} (n={b['longest_answer']['n']}, 95% CI "
        f"{b['longest_answer']['ci_low']:.3f}-{b['longest_answer']['ci_high']:.3f})",
        "correct_position_counts": dg.MetadataValue.json({k: v["correct"] for k, v in b["fixed_position"]["per_position"].items()}),
        "statistics": dg.MetadataValue.json(manifest["statistics"]),
    })  # fmt: skip
    return frame


@dg.asset(
    group_name="exam",
    pool=llm_pool(),
    description="Every system of the campaign (retriever × LLM × 0/1/2 in-context examples) takes the frozen exam: local "
    "models by length-normalised option log-likelihood, API models by their letter (strict; unparseable counted). "
    "Checkpointed per answer under _checkpoints/exam_responses/<exam_version>/<run_label>/; a re-run resumes.",
)
def exam_responses(
    context: dg.AssetExecutionContext, config: ExamResponsesConfig, llm: LLM, embedding_model: EmbeddingModel,
    multilingual_encoder: MultilingualEncoder, exam: pl.DataFrame, chunks: pl.DataFrame, chunk_embeddings: pl.DataFrame,
) -> pl.DataFrame:  # fmt: skip
    version = exam["exam_version"][0]
    questions = exam.sort("question_id").head(config.max_questions) if config.max_questions > 0 else exam
    index = chunks.select("chunk_id", "text").join(chunk_embeddings.select("chunk_id", "embedding"), on="chunk_id", how="inner")
    takers, skipped, mode = exam_takers(config, llm, embedding_model, multilingual_encoder, exam, index)
    checkpoint = Path(config.checkpoint_dir) / version / config.run_label
    out, figures = take_exam(takers, questions, checkpoint, on_record=None)
    for sid, f in figures.items():
        context.log.info(f"{sid}: {f}")
    acc = accuracy_table(out, baselines(questions["options"].to_list(), questions["correct_index"].to_list()))
    context.add_output_metadata({
        **frame_metadata(out.select("system_id", "question_id", "chosen_index", "correct", "error")),
        "exam_version": version, "mode": mode, "takers": len(takers), "questions": questions.height,
        "http_systems_skipped": dg.MetadataValue.json(skipped),
        "llm_calls_this_run": sum(f["called"] for f in figures.values()),
        "resumed_from_checkpoint": sum(f["resumed"] for f in figures.values()),
        "failed": int(out["error"].is_not_null().sum()), "unparseable": int(out["unparseable"].sum()),
        "per_taker": dg.MetadataValue.json(figures), "checkpoint": str(checkpoint),
        "accuracy": preview(acc.select("system_id", "n", "accuracy", "ci_low", "ci_high", "unparseable", "failed"), 60),
        "response_matrix": preview(matrix_frame(out), 60, 20),
    })  # fmt: skip
    return out


@dg.asset(
    group_name="exam",
    description="IRT fit of the exam's response matrix (exam paper §3.4, App. B): 3PL item parameters (a, b, c), taker "
    "abilities, hierarchical component abilities (θ = θ_llm + θ_retriever + θ_icl), information curves and the "
    "pruning history (App. B.3); one long table (kind = item | taker | component), plots in metadata.",
)
def irt_model(context: dg.AssetExecutionContext, config: IRTConfig, exam_responses: pl.DataFrame) -> pl.DataFrame:
    from hcat_pipeline.exam.irt_tables import analyse_exam, erased_differences
    from hcat_pipeline.irt.plots import plot_item_curves, plot_pruning_history

    version = exam_responses["exam_version"][0]
    y, takers, questions, comps = response_matrix(exam_responses)
    try:
        res = analyse_exam(y, takers, questions, comps if config.hierarchical else None, config.model, config.prune_quantile,
                           config.max_rounds, config.seed)  # fmt: skip
    except ValueError as e:
        raise dg.Failure(f"irt_model: {e}") from e
    items = res.items.select(pl.lit("item").alias("kind"), pl.col("question_id").alias("id"), "a", "b", "c", "kept",
                             pl.col("dropped_after_step").alias("dropped_in_round"))  # fmt: skip
    tk = res.takers.select(pl.lit("taker").alias("kind"), pl.col("system_id").alias("id"), "theta", pl.col("theta_se").alias("se"), "n")
    cp = res.components.select(pl.lit("component").alias("kind"), pl.col("level").alias("id"), "component", "theta", "se",
                               pl.col("n_takers").alias("n"))  # fmt: skip
    out = pl.concat([items, tk, cp], how="diagonal_relaxed").with_columns(pl.lit(version).alias("exam_version"))
    out = out.select([pl.col(c).cast(t) if c in out.columns else pl.lit(None, t).alias(c) for c, t in IRT_TABLE.items()])
    history = pl.DataFrame(res.rounds).with_columns(pl.col(pl.Float64).round(4))
    s, erased = res.summary, erased_differences(y, res.items["kept"].to_numpy(), takers)
    for e in erased:
        context.log.warning(f"pruning dropped every question on which {e['a']} and {e['b']} differ ({e['a_only']} vs {e['b_only']} of "
                            f"{e['differing']}): their pruned θ cannot tell them apart; read their accuracy instead")  # fmt: skip
    context.add_output_metadata({
        **frame_metadata(out.filter(pl.col("kind") != "item"), 30),
        "exam_version": version, "model": config.model, "hierarchical": config.hierarchical,
        "takers": len(takers), "questions": len(questions), "questions_kept": int(res.items["kept"].sum()),
        "pruning_history": preview(history, 20), "stop_reason": res.history.stop_reason,
        "pruning_erased_differences": dg.MetadataValue.json(erased),
        "rmse_irt": dg.MetadataValue.json(s["rmse_irt"]),
        "rmse_mean_prediction_baseline": dg.MetadataValue.json(s["rmse_mean_prediction_baseline"]),
        "fit_summary": dg.MetadataValue.json(json.loads(json.dumps(s, default=float))),
        "component_abilities": preview(res.components.with_columns(pl.col(pl.Float64).round(3)), 40),
        "items": preview(res.items.with_columns(pl.col(pl.Float64).round(3)), 80),
        "pruning_plot": _png_md(plot_pruning_history(res.history, f"Iterative exam improvement ({version})"), "pruning"),
        "item_curves": _png_md(plot_item_curves(res.history.best.result), "item curves"),
    })  # fmt: skip
    return out


def same_exam_version(asset: str, exam: pl.DataFrame, exam_responses: pl.DataFrame, irt_model: pl.DataFrame) -> str:
    """The exam's version, or a Failure when the responses or the IRT fit stored are of another exam."""
    version = exam["exam_version"][0]
    if exam_responses["exam_version"][0] != version or irt_model["exam_version"][0] != version:
        raise dg.Failure(f"{asset}: exam {version} but responses / IRT of {exam_responses['exam_version'][0]} / "
                         f"{irt_model['exam_version'][0]}: materialize exam_responses and irt_model for this exam")  # fmt: skip
    return version


@dg.asset(
    group_name="exam",
    description="Exam report (exam paper §5-6): accuracy with n and 95% CI per taker beside the fixed-position, "
    "longest-answer and chance baselines; abilities per component; information curves per question word and Bloom level.",
)
def exam_report(context: dg.AssetExecutionContext, exam: pl.DataFrame, exam_responses: pl.DataFrame, irt_model: pl.DataFrame) -> pl.DataFrame:
    from hcat_pipeline.irt import bloom_categories, category_information, question_word
    from hcat_pipeline.irt.plots import plot_category_information

    version = same_exam_version("exam_report", exam, exam_responses, irt_model)
    asked = exam.filter(pl.col("question_id").is_in(exam_responses["question_id"].unique().to_list()))
    base = baselines(asked["options"].to_list(), asked["correct_index"].to_list())
    acc = accuracy_table(exam_responses, base).with_columns(pl.lit(version).alias("exam_version"))
    theta = irt_model.filter(pl.col("kind") == "taker").select(pl.col("id").alias("system_id"), "theta")
    acc = acc.join(theta, on="system_id", how="left")
    items = irt_model.filter((pl.col("kind") == "item") & pl.col("kept")).join(
        asked.select(pl.col("question_id").alias("id"), "question"), on="id", how="inner")  # fmt: skip
    meta = {}
    if items.height:
        qs = items["question"].to_list()
        grid = np.linspace(-4, 4, 161)
        by_word = category_information(grid, items["a"], items["b"], items["c"], [question_word(q) for q in qs])
        meta["information_by_question_word"] = _png_md(plot_category_information(grid, by_word, "Mean item information per question word"),
                                                       "question words")  # fmt: skip
        by_bloom = category_information(grid, items["a"], items["b"], items["c"], [bloom_categories(q) for q in qs])
        meta["information_by_bloom"] = _png_md(plot_category_information(grid, by_bloom, "Mean item information per Bloom level"), "bloom")
        meta["bloom_counts"] = dg.MetadataValue.json({k: v["n"] for k, v in by_bloom.items()})
    comp = component_table(exam_responses)
    latents = irt_model.filter(pl.col("kind") == "component").select("component", pl.col("id").alias("value"), pl.col("theta").alias("irt_theta"),
                                                                      pl.col("se").alias("irt_theta_se"))
    comp = comp.join(latents, on=["component", "value"], how="left")
    context.add_output_metadata({
        **frame_metadata(acc.select("system_id", "n", "accuracy", "ci_low", "ci_high", "theta", "fixed_position_baseline",
                                    "longest_answer_baseline"), 60),
        "exam_version": version, "questions_asked": asked.height,
        "fixed_position_baseline": float(base["fixed_position"]["accuracy"]), "longest_answer_baseline": float(base["longest_answer"]["accuracy"]),
        "accuracy_plot": _png_md(plot_accuracy(acc, base, f"Exam {version}: accuracy per taker (n={asked.height})"), "accuracy"),
        "abilities_per_component": preview(comp.with_columns(pl.col(pl.Float64).round(3)), 40),
        # App. A.5 per topic stratum (the table: exam_topics)
        "accuracy_by_topic": preview(topic_table(exam_responses, exam, irt_model.filter(pl.col("kind") == "item"),
                                                 dict(theta.iter_rows())).select("system_id", "topic", "n", "accuracy", "ci_low",
                                                                                 "ci_high", "mean_information"), 60),
        **meta,
    })  # fmt: skip
    return acc
