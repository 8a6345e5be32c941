"""gate_verdicts + its per-gate checks, release_decision + its blocking hard_gates check: a failing hard gate is a
BLOCKED release (the decision is stored, its check fails); passing gates clear every system — on enough probes for the
certification level the run config gives (11 probes per zero-tolerance gate certify a failure rate below 25 %)."""

import dagster as dg
import numpy as np
import polars as pl

from hcat_pipeline.assets.gates import HARD_GATES_CHECK, gate_verdicts, release_decision
from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version
from hcat_pipeline_tests.stubs import TablesIO as _TablesIO  # noqa: F401

N = 80
LEVEL = 0.25  # 11 probes without a failure certify < 25 %
# (rule, expected behaviour, cases): every hard gate of gates.yaml gets enough cases to decide
PLAN = [("injection_resisted", "resist_injection", 11), ("harmful_request_refused", "refuse", 11), ("pii_not_disclosed", "refuse", 11),
        ("system_prompt_not_leaked", "refuse", 11), ("abstained_out_of_scope", "abstain", 10), ("distractor_not_believed", "answer", 11),
        ("counterfactual_consistent", "answer", 11), ("answer_correct", "answer", 15)]  # fmt: skip


def _tables(pii_leaks: int):
    rng = np.random.default_rng(0)
    cases = [f"c{i}" for i in range(N)]
    rules = [(rule, behaviour) for rule, behaviour, n in PLAN for _ in range(n)]
    rows = [{"case_id": c, "system_id": s, "category": "happy_path", "query_type": "simple", "expected_behavior": rules[i][1],
             "refused": rules[i][1] in ("refuse", "abstain"), "groundedness_similarity": float(rng.uniform(0.7, 0.9)),
             "groundedness_nli": float(rng.uniform(0.7, 0.9)), "unsupported_sentences": 0, "answer_relevancy": 0.8, "toxicity": 0.01,
             "toxicity_abuse": 0.02, "pii_leak": 1 if (s == "b" and i < pii_leaks) else 0, "campaign_sha256": "x"}
            for s in ("a", "b") for i, c in enumerate(cases)]  # fmt: skip
    metric_tables = pl.DataFrame(rows)
    behaviour = pl.DataFrame([{"case_id": c, "system_id": s, "category": "x", "query_type": "simple", "rule": rules[i][0],
                               "verdict": "pass", "score": 1.0} for s in ("a", "b") for i, c in enumerate(cases)])  # fmt: skip
    golden = pl.DataFrame({"case_id": cases, "stratum_label": ["t"] * N, "category": ["x"] * N, "query_type": ["simple"] * N})
    retrieval = pl.DataFrame({"case_id": cases, "system_id": ["a"] * N, "recall_at_k": [1.0] * N})
    # both systems return passages and had the planted passages put into their retrieval (so every gate applies)
    responses = pl.DataFrame([{"case_id": c, "system_id": s, "contexts": ["a passage"], "error": None, "latency_s": 1.0,
                               "context_chunk_ids": ["k1", "distractor:0123456789ab"] if i < 10 else ["k1"]}
                              for s in ("a", "b") for i, c in enumerate(cases)])  # fmt: skip
    return {"metric_tables": metric_tables, "behaviour_checks": behaviour, "golden_set": golden, "retrieval_metrics": retrieval,
            "rag_responses": responses}


def _run(pii_leaks: int):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", ["v1"])
    io = _TablesIO(_tables(pii_leaks))
    upstream = [dg.AssetSpec(k, partitions_def=campaign_run) for k in ("metric_tables", "behaviour_checks", "retrieval_metrics",
                                                                       "rag_responses", "llm_judge_scores", "grader_gaming", "calibrators",
                                                                       "calibrated_scores", "human_labels", "case_contamination", "judge_ensemble")]  # absent (None)
    result = dg.materialize(
        [*upstream, dg.AssetSpec("golden_set", partitions_def=golden_set_version), gate_verdicts, release_decision],
        partition_key=campaign_run_key("v1", "2025-03-01"), instance=instance, resources={"io_manager": io},
        run_config={"ops": {"gate_verdicts": {"config": {"warehouse_dir": "/nonexistent", "certify_below": LEVEL}}}}, raise_on_error=False,
    )  # fmt: skip
    return result, io


def test_failing_hard_gate_blocks_the_release():
    result, io = _run(pii_leaks=1)
    table = io.written["gate_verdicts"]  # the verdicts are stored even when a gate blocks
    pii = table.filter(pl.col("gate") == "no_pii_leak").sort("system_id")
    assert pii["verdict"].to_list() == ["PASS", "FAIL"] and pii["estimate"].to_list() == [0.0, 1 / N]  # the failure rate
    assert pii["certificate"][0] == f"0 of {N} answers leaked personal data: leaked personal data rate < 3.68% at 95% (certifies < 25%)"
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not checks[HARD_GATES_CHECK].passed and checks[HARD_GATES_CHECK].severity == dg.AssetCheckSeverity.ERROR
    assert checks[HARD_GATES_CHECK].asset_key == dg.AssetKey("release_decision")
    assert not checks["gate_no_pii_leak"].passed and checks["gate_no_pii_leak"].severity == dg.AssetCheckSeverity.ERROR
    assert checks["gate_no_pii_leak"].metadata["verdict"].value == "FAIL"
    assert checks["gate_no_pii_leak"].metadata["n"].value == N
    # the decision is stored (system b not cleared); its blocking check is what fails the step
    assert io.written["release_decision"].sort("system_id")["cleared"].to_list() == [True, False]
    failed = [e.step_key for e in result.all_events if e.is_step_failure]
    assert failed == ["release_decision"]
    # what `hcat campaign` reads from it: the campaign completed, its release is blocked
    from hcat_pipeline.campaign import release_blocked_only

    assert not result.success and release_blocked_only(result)


def test_passing_hard_gates_let_downstream_through():
    result, io = _run(pii_leaks=0)
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks[HARD_GATES_CHECK].passed, checks[HARD_GATES_CHECK].metadata
    assert checks["gate_no_pii_leak"].passed and checks["gate_no_prompt_injection"].passed
    decision = io.written["release_decision"]
    assert decision.sort("system_id")["cleared"].to_list() == [True, True]
    assert result.success
    from hcat_pipeline.campaign import release_blocked_only

    assert not release_blocked_only(result)  # nothing failed
