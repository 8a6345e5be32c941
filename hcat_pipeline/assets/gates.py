"""Lineage stage: gate_verdicts (+ its asset checks) and release_decision — release gates per campaign run
(golden-eval §6).

``gate_verdicts`` evaluates the gates file (``gates.yaml``; core: ``hcat_pipeline.gates``) on the run's
metric_tables, behaviour_checks and retrieval_metrics: one row per gate × system × scope group
(``GATE_VERDICTS`` in schemas.py) with verdict PASS / FAIL / INDETERMINATE, the CI, n and n_more. The
asset carries one check per gate of the default gates file (declared at import), never blocking — the
verdicts are the input of the reports, which a reviewer must read exactly when a gate fails:

* hard gates: severity ERROR (a FAIL, or an INDETERMINATE unless ``on_indeterminate: warn``);
* soft and trend gates: severity WARN.

``release_decision`` (per system: cleared or not) carries the **blocking** check ``hard_gates``: every hard
gate of the gates file actually used (so a file passed by config with other gate names is still
enforced). When it fails, the run's step fails with ``DagsterAssetCheckFailedError`` — the release
verdict BLOCKED, which ``hcat campaign`` reports as a verdict — and anything a deployment puts
downstream of release_decision does not run. Trend gates
read earlier nights of the same version from the warehouse (``data/warehouse/<table>/<version>/<night>.parquet``).

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

from pathlib import Path
from typing import Optional

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.automation import ON_NEW_RUN_DATA
from hcat_pipeline.common.canary_ids import drop_canaries
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.console import RELEASE_CHECK
from hcat_pipeline.gates import DEFAULT_GATES_FILE, GatesFileError, decide_release, gate_summary, load_gates
from hcat_pipeline.gates.gate import WORST_FIRST
from hcat_pipeline.gates.night import GateSettings, night_gate_table
from hcat_pipeline.io import OPTIONAL
from hcat_pipeline.partitions import campaign_run, split_run_key
from hcat_pipeline.paths import LABELS_DIR, WAREHOUSE_DIR

HARD_GATES_CHECK = RELEASE_CHECK  # console.RELEASE_CHECK: the one home of the name


def _declared_gates():
    """The gates of the default file (the declared checks); an unreadable file declares none (the run then fails loudly)."""
    try:
        return load_gates(DEFAULT_GATES_FILE).gates
    except GatesFileError:
        return []


_DECLARED = _declared_gates()
_CHECK_SPECS = [
    dg.AssetCheckSpec(f"gate_{g.name}", asset="gate_verdicts",
                      description=f"{g.kind} gate: {g.statistic}({g.table}.{g.metric}) {g.direction} {g.threshold:g}"
                      + (f" — {g.description}" if g.description else ""))  # fmt: skip
    for g in _DECLARED
]


# The Dagster config *is* the core's GateSettings (one field list, one set of defaults) + where the files are.
GateVerdictsConfig = config_from(
    GateSettings, "GateVerdictsConfig",
    gates_file=(str, Field(default="", description="empty: HCAT_GATES_FILE or gates.yaml at the project root")),
    warehouse_dir=(str, Field(default="", description="where trend gates read earlier nights; empty: data/warehouse")),
    labels_dir=(str, Field(default="", description="where the night's labelling design and people's reviews of flagged "
                           "answers are read; empty: HCAT_LABELS_DIR or data/labels")),
)  # fmt: skip


def _check_metadata(rows: pl.DataFrame) -> dict:
    worst = rows.sort(pl.col("verdict").replace_strict(WORST_FIRST, return_dtype=pl.Int8)).row(0, named=True)
    fmt = lambda v: None if v is None else float(v)  # noqa: E731
    return {
        "verdict": worst["verdict"],
        "system_id": worst["system_id"],
        "group": worst["group"],
        "estimate": fmt(worst["estimate"]),
        "ci_low": fmt(worst["ci_low"]),
        "ci_high": fmt(worst["ci_high"]),
        "n": int(worst["n"]),
        "n_more": int(worst["n_more"]) if worst["n_more"] is not None else -1,
        "reason": str(worst["reason"] or ""),
        "rows": preview(rows.select("system_id", "group", "verdict", "estimate", "ci_low", "ci_high", "n", "n_more", "reason"), 50, 120),
    }


@dg.asset(automation_condition=ON_NEW_RUN_DATA, 
    partitions_def=campaign_run,
    group_name="gates",
    ins={k: dg.AssetIn(metadata=OPTIONAL) for k in ("llm_judge_scores", "grader_gaming", "calibrators", "calibrated_scores", "human_labels",
                                                     "case_contamination", "judge_ensemble")},
    deps=["gates_file"],  # watched source (assets/sources.py): a changed gates file makes the verdicts stale
    check_specs=_CHECK_SPECS,
    description="Per campaign run: every release gate of gates.yaml per system (and scope group) — verdict PASS / FAIL / "
    "INDETERMINATE with the bootstrap CI, n and n_more (golden-eval §6). Hard gates are blocking checks.",
)
def gate_verdicts(
    context: dg.AssetExecutionContext,
    config: GateVerdictsConfig,
    metric_tables: pl.DataFrame,
    behaviour_checks: pl.DataFrame,
    retrieval_metrics: pl.DataFrame,
    golden_set: pl.DataFrame,
    rag_responses: pl.DataFrame,
    llm_judge_scores: Optional[pl.DataFrame],
    grader_gaming: Optional[pl.DataFrame],
    calibrators: Optional[pl.DataFrame],
    calibrated_scores: Optional[pl.DataFrame],
    human_labels: Optional[pl.DataFrame],
    case_contamination: Optional[pl.DataFrame],
    judge_ensemble: Optional[pl.DataFrame],
):
    version, night = split_run_key(context)
    try:
        gates = load_gates(config.gates_file or DEFAULT_GATES_FILE)
    except GatesFileError as e:
        raise dg.Failure(str(e)) from e
    inputs = {"metric_tables": metric_tables, "behaviour_checks": behaviour_checks, "retrieval_metrics": retrieval_metrics,
              "golden_set": golden_set, "rag_responses": rag_responses, "llm_judge_scores": llm_judge_scores,
              "grader_gaming": grader_gaming, "calibrators": calibrators, "calibrated_scores": calibrated_scores,
              "human_labels": human_labels, "case_contamination": case_contamination, "judge_ensemble": judge_ensemble}
    labels_dir = Path(config.labels_dir) if config.labels_dir else LABELS_DIR
    table, read = night_gate_table(gates, inputs, to_core(GateSettings, config), version, night, labels_dir,
                                   Path(config.warehouse_dir or WAREHOUSE_DIR))  # fmt: skip
    history, cases_read, frozen, reviews = read["history"], read["cases_read"], read["design"], read["reviews"]
    summary = gate_summary(table)
    yield dg.Output(table, metadata={
        "dagster/row_count": table.height,
        "campaign_run": str(context.partition_key),
        "gates_file": str(config.gates_file or DEFAULT_GATES_FILE),
        "summary": preview(summary, 100),
        "blocking": dg.MetadataValue.json(sorted(table.filter(pl.col("blocking"))["gate"].unique().to_list())),
        "history_runs": dg.MetadataValue.json({t: [label for label, _ in h] for t, h in history.items()}),
        "cases_read": cases_read,
        "flags": dg.MetadataValue.json({k: int(table[k].sum()) for k in ("n_flagged", "n_confirmed", "n_unconfirmed", "n_overturned")}),
        "flag_reviews_read": len(reviews),
        "labelling_design": str(frozen) if frozen is not None else "none drawn yet",
    })  # fmt: skip
    used = {g.name: g for g in gates.gates}
    for spec in _DECLARED:
        name = f"gate_{spec.name}"
        gate = used.get(spec.name)
        rows = drop_canaries(table).filter(pl.col("gate") == spec.name)
        if gate is None or rows.height == 0:
            yield dg.AssetCheckResult(check_name=name, passed=True, metadata={"note": "gate not in the gates file used by this run"})
            continue
        severity = dg.AssetCheckSeverity.ERROR if gate.kind == "hard" else dg.AssetCheckSeverity.WARN
        passed = not rows["blocking"].any() if gate.kind == "hard" else bool((rows["verdict"] == "PASS").all())
        yield dg.AssetCheckResult(check_name=name, passed=passed, severity=severity, metadata=_check_metadata(rows))


@dg.asset(automation_condition=ON_NEW_RUN_DATA, 
    partitions_def=campaign_run,
    group_name="gates",
    check_specs=[dg.AssetCheckSpec(HARD_GATES_CHECK, asset="release_decision", blocking=True,
                                   description="every hard gate of the gates file used: a FAIL (or INDETERMINATE) blocks the release "
                                   "and everything downstream of this decision")],  # fmt: skip
    description="Per campaign run: per system, cleared for release (every hard gate PASS) or not, with its gate counts. "
    "Its blocking check hard_gates fails when any system is not cleared: the release verdict BLOCKED.",
)
def release_decision(context: dg.AssetExecutionContext, gate_verdicts: pl.DataFrame):
    gate_verdicts = drop_canaries(gate_verdicts)  # canaries are judged by canary_detection, never released
    per_system = decide_release(gate_verdicts)
    run = gate_verdicts.select("golden_set_version", "night", "campaign_sha256").head(1)
    if run.height:
        per_system = per_system.with_columns(*[pl.lit(run[c][0]).alias(c) for c in run.columns])
    yield dg.Output(per_system, metadata={"dagster/row_count": per_system.height, "decision": preview(per_system, 50)})
    hard = gate_verdicts.filter(pl.col("kind") == "hard")
    blocking = hard.filter(pl.col("blocking"))
    yield dg.AssetCheckResult(
        check_name=HARD_GATES_CHECK, passed=blocking.height == 0, severity=dg.AssetCheckSeverity.ERROR,
        metadata={"hard_gates": hard["gate"].n_unique(), "blocking_rows": blocking.height,
                  "blocking": preview(blocking.select("gate", "system_id", "group", "verdict", "estimate", "ci_low", "ci_high", "n",
                                                      "n_more", "reason"), 50, 120)},
    )  # fmt: skip
