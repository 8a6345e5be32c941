"""Table contracts: for every table the lineage stores, its columns and dtypes (``schemas``), its key and the columns
that may never be null. ``assets/contracts.py`` turns each into an ``@dg.asset_check`` on its asset (the UI's Checks
tab); ``contract_problems`` is the check itself, plain polars. No Dagster import.

Every stored table has one (``test_contracts``), but ``nli_head`` (a JSON file, checked by its loader) and
``exam_report`` (figures in metadata). A contract says what consumers may rely on: extra columns are allowed (metric_tables adds one per metric), a missing
column, a wrong dtype, a duplicated key or a null in a never-null column is a broken contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from hcat_pipeline import schemas as s


@dataclass(frozen=True)
class Contract:
    columns: Mapping[str, pl.DataType]
    key: tuple[str, ...] = ()  # unique together (empty: no key)
    not_null: tuple[str, ...] = ()  # besides the key columns, which are never null


RUN = tuple(s.RUN_COLUMNS)  # golden_set_version, night, campaign_sha256: every per-run table's identity
PER_SYSTEM = ("case_id", "system_id")

CONTRACTS: dict[str, Contract] = {
    # corpus → strata
    "corpus": Contract(s.CORPUS, ("doc_id",), ("source", "text")),
    "ingest_errors": Contract(s.INGEST_ERRORS, (), ("file", "reason")),
    "chunks": Contract(s.CHUNKS, ("chunk_id",), ("doc_id", "text")),
    "chunk_embeddings": Contract({"chunk_id": pl.String}, ("chunk_id",), ("embedding",)),
    "topic_strata": Contract(s.TOPIC_STRATA, ("chunk_id",), ("stratum", "stratum_label")),
    "sampled_chunks": Contract(s.SAMPLED_CHUNKS, ("chunk_id",), ("sample_rank", "stratum", "text")),
    # golden set
    "generated_queries": Contract(s.GENERATED_QUERIES, (), ("query_id", "query_type", "chunk_id")),
    "selected_queries": Contract(s.SELECTED_QUERIES, ("query_id",), ("query", "query_type")),
    "query_rejections": Contract(s.QUERY_REJECTIONS, (), ()),
    "robustness_cases": Contract(s.GOLDEN_SET, ("case_id",), ("category", "query", "expected_behavior")),
    "golden_candidates": Contract(s.GOLDEN_SET, ("case_id",), ("category", "query", "expected_behavior")),
    "golden_set": Contract(s.GOLDEN_SET, ("case_id",), ("version", "category", "query", "expected_behavior")),
    # responses and what is measured on them (per campaign run)
    "rag_responses": Contract({**s.RAG_RESPONSES, **s.RUN_COLUMNS}, PER_SYSTEM, ("config_hash", "query", *RUN)),
    "retrieval_metrics": Contract(s.RETRIEVAL_METRICS, ("system_id",), ("n_cases",)),
    "metric_tables": Contract({k: pl.String for k in s.METRIC_KEYS}, PER_SYSTEM, ()),
    "behaviour_checks": Contract(s.BEHAVIOUR_CHECKS, (), ("case_id", "system_id", "rule", "verdict")),
    "bias_report": Contract(s.BIAS_REPORT, (), ()),
    "llm_judge_scores": Contract(s.LLM_JUDGE_SCORES, (), ("case_id", "system_id", "dimension", *RUN)),
    "judge_ensemble": Contract(s.JUDGE_ENSEMBLE, ("case_id", "system_id", "dimension", "judge_model"), RUN),
    "harm_judgements": Contract(s.HARM_JUDGEMENTS, ("case_id", "system_id"), ("stratum", "drawn", *RUN)),
    "calibrated_scores": Contract(s.CALIBRATED_SCORES, (), ("case_id", "system_id")),
    # gates and reports (per campaign run)
    "gate_verdicts": Contract(s.GATE_VERDICTS, (), ("gate", "kind", "verdict", "system_id")),
    "release_decision": Contract({**s.RELEASE_DECISION, **s.RUN_COLUMNS}, ("system_id",), ("cleared", *RUN)),
    "grader_gaming": Contract(s.GRADER_GAMING, PER_SYSTEM, ("gamed",)),
    "system_rankings": Contract(s.SYSTEM_RANKINGS, (), ("metric", "method", "system_id")),
    "pareto_frontier": Contract(s.PARETO_FRONTIER, (), ("system_id",)),
    "case_contamination": Contract(s.CASE_CONTAMINATION, ("case_id",), ("risk",)),
    "verdict_stochasticity": Contract(s.VERDICT_STOCHASTICITY, ("system_id",), ("n_cases", "repeats", "n_pairs", "flips", "answers_changed")),
    "weakness_report": Contract({**s.WEAKNESS_CELLS, **s.RUN_COLUMNS}, (), ("analysis", "metric", *RUN)),
    "weakest_cases": Contract(s.WEAKEST_CASES, (), ("metric", "case_id", "system_id")),
    "campaign_report": Contract(s.CAMPAIGN_REPORT, (), ("path",)),
    "canary_detection": Contract({**s.CANARY_DETECTION, **s.RUN_COLUMNS}, ("canary_id", "check"), ("fault", "expected", *RUN)),
    "failure_cases": Contract(s.FAILURE_CASES, (), ("case_id", "system_id")),
    "robustness_deltas": Contract(s.ROBUSTNESS_DELTAS, (), ("system_id",)),
    "paraphrase_variance": Contract(s.PARAPHRASE_VARIANCE, ("system_id", "base_case_id", "metric"), ("flagged",)),
    # calibration
    "review_queue": Contract(s.REVIEW_QUEUE, ("case_id", "system_id", "dimension"), ("priority", "reason")),
    "human_labels": Contract(s.HUMAN_LABELS, (), ("case_id", "dimension", "label", "row_hash")),
    "calibrators": Contract(s.CALIBRATORS, (), ("dimension",)),
    "metric_validity": Contract(s.METRIC_VALIDITY, (), ("dimension",)),
    "reference_label_scores": Contract(s.REFERENCE_SCORES, ("set", "item_id", "dimension", "metric"), ("label", "split")),
    "judge_validation": Contract(s.JUDGE_VALIDATION, (), ("dimension",)),
    # exam
    "exam_candidates": Contract(s.EXAM_CANDIDATES, (), ("chunk_id", "candidate_no")),
    "exam": Contract(s.EXAM, ("question_id",), ("exam_version", "question", "options")),
    "exam_responses": Contract(s.EXAM_RESPONSES, (), ("exam_version", "question_id", "system_id")),
    "irt_model": Contract(s.IRT_MODEL, (), ("exam_version", "kind", "id")),
    "exam_chunking": Contract(s.EXAM_CHUNKING, ("taker", "chunking"), ("exam_version", "chunking", "taker", "verdict")),
    "exam_topics": Contract(s.EXAM_TOPICS, ("system_id", "topic"), ("exam_version", "system_id", "topic", "n", "correct", "items_kept")),
    # production monitoring (per production_day)
    "production_logs": Contract(s.PRODUCTION_LOGS, ("source",), ("request_id", "day", "question")),
    "production_rejects": Contract(s.PRODUCTION_REJECTS, ("source",), ("reason",)),
    "production_sample": Contract(s.PRODUCTION_SAMPLE, ("source",), ("request_id", "day", "stratum", "weight", "feedback")),
    "production_cells": Contract(s.PRODUCTION_CELLS, ("day", "stratum", "signal"), ("n", "sw", "swy", "sw2")),
    "production_judge": Contract(s.PRODUCTION_JUDGE, (), ("request_id", "dimension")),
    "production_anomalies": Contract(s.PRODUCTION_ANOMALIES, (), ("kind", "signal", "start_day", "end_day", "severity")),
    "monitoring_report": Contract(s.MONITORING_REPORT, ("day",), ("report",)),
    # violation matching
    "violation_campaign": Contract(s.VIOLATION_CAMPAIGN, (), ()),
    "violation_matches": Contract(s.VIOLATION_MATCHES, (), ()),
    "violation_file_errors": Contract(s.VIOLATION_FILE_ERRORS, (), ("file", "reason")),
}


def contract_problems(frame: pl.DataFrame, contract: Contract) -> list[str]:
    """Every way ``frame`` breaks ``contract`` (empty: it holds): missing columns, wrong dtypes, duplicated keys, nulls."""
    problems = [f"missing column {c!r}" for c in contract.columns if c not in frame.columns]
    problems += [f"column {c!r} is {frame.schema[c]}, the contract says {t}" for c, t in contract.columns.items()
                 if c in frame.columns and frame.schema[c] != t]  # fmt: skip
    key = [c for c in contract.key if c in frame.columns]
    if key and frame.height:
        dupes = frame.select(key).is_duplicated().sum()
        if dupes:
            problems.append(f"{dupes} row(s) share a key {tuple(key)} with another row")
    for c in dict.fromkeys((*contract.key, *contract.not_null)):
        if c not in frame.columns:
            problems += [] if c in contract.columns else [f"missing column {c!r}"]
            continue
        nulls = frame[c].null_count()
        if nulls:
            problems.append(f"{nulls} null(s) in {c!r}, which is never null")
    return problems
