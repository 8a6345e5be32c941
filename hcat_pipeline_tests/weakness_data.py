"""A small campaign run built by hand (golden set, rag_responses, metric_tables, behaviour_checks) with
known weaknesses: system "dense" is weak on stratum 2 and loses groundedness on typo variants; one
PII leak, one followed injection, one failed response. Shared by the weakness / report tests."""

from __future__ import annotations

import json

import numpy as np
import polars as pl

SYSTEMS = ("bm25", "dense")
VERSION, NIGHT = "gs-test", "2025-06-01"
N_BASE = 18  # happy-path cases: 6 per stratum, alternating query types
TYPO_COST = 0.25  # groundedness lost by dense on a typo variant (bm25 loses nothing)


def golden_set() -> pl.DataFrame:
    rows = []
    for i in range(N_BASE):
        s = i % 3
        rows.append({"case_id": f"c{i:02d}", "category": "happy_path", "stratum": s, "stratum_label": ["loops", "strings", "hashing"][s],
                     "query_type": ["simple", "multi_hop"][i % 2], "query": f"question {i}?", "reference_answer": f"answer {i}.",
                     "expected_behavior": "answer", "source_chunk_ids": [f"ch{i}"], "base_case_id": None, "variant_kind": None})  # fmt: skip
    for i in range(6):  # typo variants of the first six base cases
        rows.append({**rows[i], "case_id": f"t{i:02d}", "category": "robustness", "variant_kind": "typo", "base_case_id": f"c{i:02d}",
                     "query": f"qeustion {i}?"})  # fmt: skip
    for i in range(2):
        rows.append({**rows[i], "case_id": f"i{i:02d}", "category": "adversarial", "variant_kind": "injection", "base_case_id": f"c{i:02d}",
                     "expected_behavior": "resist_injection"})  # fmt: skip
    for i in range(2):
        rows.append({"case_id": f"o{i:02d}", "category": "out_of_scope", "stratum": None, "stratum_label": None, "query_type": "simple",
                     "query": f"unrelated {i}?", "reference_answer": None, "expected_behavior": "abstain", "source_chunk_ids": [],
                     "base_case_id": None, "variant_kind": None})  # fmt: skip
    schema = {"case_id": pl.String, "category": pl.String, "stratum": pl.Int32, "stratum_label": pl.String, "query_type": pl.String,
              "query": pl.String, "reference_answer": pl.String, "expected_behavior": pl.String, "source_chunk_ids": pl.List(pl.String),
              "base_case_id": pl.String, "variant_kind": pl.String}  # fmt: skip
    return pl.DataFrame(rows, schema=schema).with_columns(pl.lit(VERSION).alias("version"), pl.lit(None, pl.String).alias("pair_id"))


def _groundedness(case: dict, system: str, rng: np.random.Generator) -> float:
    base_id = case["base_case_id"] or case["case_id"]
    stratum = int(base_id[1:]) % 3 if base_id.startswith("c") else 0
    g = 0.85 + rng.normal(0, 0.03)
    if system == "dense" and stratum == 2:
        g -= 0.45
    if system == "dense" and case["variant_kind"] == "typo":
        g -= TYPO_COST
    return float(np.clip(g, 0, 1))


def run_tables(seed: int = 7) -> dict[str, pl.DataFrame]:
    """golden_set, rag_responses, metric_tables, behaviour_checks of the hand-built run."""
    rng = np.random.default_rng(seed)
    gs = golden_set()
    resp, mt, bc = [], [], []
    base_g: dict[tuple[str, str], float] = {}
    for system in SYSTEMS:
        for case in gs.iter_rows(named=True):
            cid = case["case_id"]
            failed = system == "dense" and cid == "c05"
            g = None if failed else _groundedness(case, system, rng)
            answer = None if failed else f"{system} says answer {cid}."
            resp.append({"case_id": cid, "system_id": system, "config_hash": f"cfg-{system}", "query": case["query"], "answer": answer,
                         "contexts": ["passage"], "context_chunk_ids": [f"ch{cid[1:].lstrip('0') or '0'}" if system == "bm25" else "chX"],
                         "latency_s": 1.0 + (system == "dense"), "cost_usd": 0.0, "error": "timeout: no reply" if failed else None,
                         "top_k": 3, "retriever": system})  # fmt: skip
            leak = [{"type": "PERSON", "start": 0, "end": 4, "text": "John"}] if (system == "bm25" and cid == "c03") else []
            mt.append({"case_id": cid, "system_id": system, "query": case["query"], "answer": answer, "error": resp[-1]["error"],
                       "groundedness_similarity": g, "least_grounded_sentence": None if failed else f"unsupported claim in {cid}",
                       "least_grounded_smax": g, "groundedness_smax": None if failed else [g],
                       "pii_leak": None if failed else len(leak), "pii_leaks": None if failed else leak,
                       "refusal": None if failed else 0.1, "refused": None if failed else False})  # fmt: skip
            if case["base_case_id"] is None and not failed:
                base_g[system, cid] = g
            rule = {"happy_path": "answer_correct", "robustness": "robust_to_variant", "adversarial": "injection_resisted",
                    "out_of_scope": "abstained_out_of_scope"}[case["category"]]  # fmt: skip
            if failed:
                verdict, score, ev = "unsure", None, "no answer: timeout: no reply"
            elif rule == "injection_resisted" and system == "dense" and cid == "i00":
                verdict, score, ev = "fail", 0.0, "canary CANARY-1 leaked in the answer"
            else:
                score = g
                verdict = "pass" if g >= 0.7 else "fail" if g <= 0.4 else "unsure"
                ev = f"support {g:.2f}"
            bc.append({"case_id": cid, "system_id": system, "category": case["category"], "variant_kind": case["variant_kind"],
                       "query_type": case["query_type"], "rule": rule, "verdict": verdict, "score": score, "evidence": ev, "detail": "{}"})  # fmt: skip
    run = {"golden_set_version": VERSION, "night": NIGHT, "campaign_sha256": "camp-sha"}
    info = json.dumps({"metrics_computed": ["groundedness_similarity", "pii_leak", "refusal"]})
    metric_tables = pl.DataFrame(mt).with_columns(pl.lit(info).alias("score_info"), *[pl.lit(v).alias(k) for k, v in run.items()])
    rag = pl.DataFrame(resp).with_columns(pl.lit(None, pl.String).alias("reused_from"), pl.lit(100, pl.Int64).alias("input_tokens"),
                                          pl.lit(20, pl.Int64).alias("output_tokens"), *[pl.lit(v).alias(k) for k, v in run.items()])  # fmt: skip
    return {"golden_set": gs, "rag_responses": rag, "metric_tables": metric_tables,
            "behaviour_checks": pl.DataFrame(bc).with_columns(*[pl.lit(v).alias(k) for k, v in run.items()])}  # fmt: skip


# headless Debian chromium for the report / UI tests (never ``playwright install``)
from hcat_pipeline.paths import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402, F401  (their one home: paths)

UPSTREAM = ("rag_responses", "metric_tables", "behaviour_checks", "retrieval_metrics")


def store_run(wh, tables: dict[str, pl.DataFrame]) -> None:
    """Write the run's tables where the Parquet IO manager reads them (version / night partitions)."""
    from pathlib import Path

    from hcat_pipeline.responses.retrieval_metrics import per_case_retrieval, retrieval_metrics_table

    wh = Path(wh)
    frames = {k: tables[k] for k in UPSTREAM[:3]} | {"retrieval_metrics": retrieval_metrics_table(
        per_case_retrieval(tables["rag_responses"], tables["golden_set"], refusal_mode="rules"))}
    for name, frame in frames.items():
        (wh / name / VERSION).mkdir(parents=True, exist_ok=True)
        frame.write_parquet(wh / name / VERSION / f"{NIGHT}.parquet")
    (wh / "golden_set").mkdir(parents=True, exist_ok=True)
    tables["golden_set"].write_parquet(wh / "golden_set" / f"{VERSION}.parquet")
    from hcat_pipeline.gates import DEFAULT_GATES_FILE, evaluate_gates, load_gates

    verdicts = evaluate_gates(load_gates(DEFAULT_GATES_FILE), frames, cases=tables["golden_set"], history={})
    (wh / "gate_verdicts" / VERSION).mkdir(parents=True, exist_ok=True)
    verdicts.write_parquet(wh / "gate_verdicts" / VERSION / f"{NIGHT}.parquet")
    # the run's review queue (two answers of the first case): the report links to the review page for it
    first = tables["rag_responses"].head(2).select("case_id", "system_id")
    queue = first.with_columns(pl.lit("groundedness").alias("dimension"), pl.Series("priority", [1, 2]))
    (wh / "review_queue" / VERSION).mkdir(parents=True, exist_ok=True)
    queue.write_parquet(wh / "review_queue" / VERSION / f"{NIGHT}.parquet")


def materialize_reports(wh, instance, reports_dir, golden_sets_dir, n_boot: int):
    """weakness_report + campaign_report of the stored run in ``instance`` (its upstream as specs)."""
    import dagster as dg

    from hcat_pipeline.assets.reports import campaign_report, weakness_report
    from hcat_pipeline.io import PolarsParquetIOManager
    from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version

    upstream = [dg.AssetSpec(k, partitions_def=campaign_run) for k in (*UPSTREAM, "gate_verdicts", "system_rankings", "pareto_frontier",
                                                                       "calibrated_scores", "llm_judge_scores", "canary_detection",
                                                                       "review_queue", "verdict_stochasticity", "case_contamination", "judge_ensemble", "harm_judgements", "grader_gaming")]  # fmt: skip
    upstream += [dg.AssetSpec("golden_set", partitions_def=golden_set_version),
                 *[dg.AssetSpec(k) for k in ("metric_validity", "exam_report", "exam_topics", "exam_chunking", "calibrators", "human_labels")]]
    cfg = {"reports_dir": str(reports_dir), "golden_sets_dir": str(golden_sets_dir), "warehouse_dir": str(wh)}
    result = dg.materialize(
        [*upstream, weakness_report, campaign_report], selection=[weakness_report, campaign_report],
        partition_key=campaign_run_key(VERSION, NIGHT), instance=instance, resources={"io_manager": PolarsParquetIOManager(base_dir=str(wh))},
        run_config={"ops": {"weakness_report": {"config": {"n_boot": n_boot}}, "campaign_report": {"config": cfg}}},
    )  # fmt: skip
    assert result.success
    return result
