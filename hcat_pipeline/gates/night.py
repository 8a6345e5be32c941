"""A night's gate verdicts from its stored tables, pure core: what the ``gate_verdicts`` asset computes, as one function
``night_gate_table`` — so ``hcat verify`` can re-derive every verdict offline from the same tables and settings and
name a row that differs (issue 67 item 5). ``GateSettings`` is the asset's configuration (its ``Config`` derives from
it) and what the campaign stores beside the night's plan (``gate_settings.json``)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import polars as pl

from hcat_pipeline.behaviour.harm import with_harm_category
from hcat_pipeline.calibration.design import design_file
from hcat_pipeline.calibration.fitting import load_results
from hcat_pipeline.calibration.stated import stated_confidence_cases
from hcat_pipeline.gates.apply import evaluate_gates, load_history, system_capabilities
from hcat_pipeline.gates.calibrated import human_calibrations
from hcat_pipeline.gates.contamination import EXCLUDED_RISKS, contamination_note, flagged_cases, without_cases
from hcat_pipeline.gates.flags import judge_second_signals, read_flag_reviews
from hcat_pipeline.gates.review_status import with_review_status
from hcat_pipeline.gates.spec import GatesFile
from hcat_pipeline.golden.review import GatesRead, gate_tables, review_summary
from hcat_pipeline.judge.ensemble import with_ensemble
from hcat_pipeline.judge.scoring import judge_gate_table

# the stored run tables the verdicts read (the first five always exist after a night; the rest may not)
GATE_INPUTS = ("metric_tables", "behaviour_checks", "retrieval_metrics", "golden_set", "rag_responses", "llm_judge_scores",
               "grader_gaming", "calibrators", "calibrated_scores", "human_labels", "case_contamination", "judge_ensemble")  # fmt: skip
# what a re-derived row must match of the stored one
COMPARED = ("verdict", "blocking", "estimate", "ci_low", "ci_high", "n", "n_more", "certificate")
SETTINGS_FILE = "gate_settings.json"


@dataclass
class GateSettings:
    """How a night's gates were read (the campaign file's certify_below and gates_read, what became of its shipped review)."""

    history_runs: int = field(default=10, metadata={"ge": 1, "description": "earlier runs read by trend gates"})
    trend_across_versions: bool = field(
        default=False, metadata={"description": "trend gates also read other versions' nights (shared cases pair up)"}
    )
    certify_below: float | None = field(
        default=None,
        metadata={
            "gt": 0,
            "lt": 1,
            "description": "the failure rate every "
            "zero-tolerance gate certifies (the campaign file's certify_below); empty: each gate's own",
        },
    )
    gates_read: GatesRead = field(
        default="all",
        metadata={
            "description": "all: the gates read every case of the version; "
            "reviewed: only the cases a person accepted or edited (the campaign file's gates_read)"
        },
    )
    exclude_risk: list[str] = field(
        default_factory=lambda: list(EXCLUDED_RISKS),
        metadata={
            "description": "contamination risks "
            "(case_contamination) whose cases the gates leave out (golden-eval §3.5.4), counted on the first screen"
        },
    )
    review_note: str = field(
        default="",
        metadata={
            "description": "what became of the campaign's shipped review (review.shipped): "
            "said with the cases the gates read, on the first screen"
        },
    )

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> GateSettings:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def _calibrations(calibrators, calibrated, labels, design):
    if calibrators is None or calibrators.height == 0:
        return {}
    active = [r for r, a in zip(load_results(calibrators), calibrators["active"].to_list()) if a]
    return human_calibrations(active, calibrated, labels, design=design)


def night_gate_table(gates: GatesFile, inputs: dict[str, pl.DataFrame | None], settings: GateSettings, version: str, night: str,
                     labels_dir: Path, warehouse: Path) -> tuple[pl.DataFrame, dict]:  # fmt: skip
    """The night's ``gate_verdicts`` table and what it read (history labels, cases read, design file, flag reviews)."""
    get = inputs.get
    metric_tables, behaviour_checks, golden_set = get("metric_tables"), get("behaviour_checks"), get("golden_set")
    judge_rows = with_ensemble(
        get("llm_judge_scores"), get("judge_ensemble")
    )  # the ensemble's rows where it beat each judge (§5.5)
    tables = {
        "metric_tables": metric_tables,
        "behaviour_checks": behaviour_checks,
        "retrieval_metrics": get("retrieval_metrics"),
        "rag_responses": get("rag_responses"),
        "stated_confidence": stated_confidence_cases(metric_tables, behaviour_checks),  # golden-eval §3.2.3
        "llm_judge_scores": judge_gate_table(judge_rows),
    }  # validated judge rows only (golden-eval §5.6)
    tables = gate_tables(tables, golden_set, settings.gates_read)
    cases_read = review_summary(golden_set, settings.gates_read)["text"]  # the report's first screen and the console say it
    if settings.review_note:
        cases_read = f"{cases_read}; {settings.review_note}"
    contaminated = flagged_cases(get("case_contamination"), settings.exclude_risk)
    if contaminated:  # golden-eval §3.5.4: a case the model may have memorised decides no gate
        tables = without_cases(tables, contaminated)
        cases_read = f"{cases_read}; {contamination_note(contaminated, settings.exclude_risk)}"
    history = {t: load_history(warehouse, t, version, night, limit=settings.history_runs, across_versions=settings.trend_across_versions)
               for t in sorted({g.table for g in gates.gates if g.kind == "trend"})}  # fmt: skip
    frozen = design_file(labels_dir, version, night)
    design = pl.read_parquet(frozen) if frozen.is_file() else None
    reviews = read_flag_reviews(labels_dir)
    table = evaluate_gates(gates, tables, cases=with_harm_category(golden_set), history=history,
                           capabilities=system_capabilities(get("rag_responses")), certify_below=settings.certify_below,
                           gaming=get("grader_gaming"),
                           calibrations=_calibrations(get("calibrators"), get("calibrated_scores"), get("human_labels"), design),
                           reviews=reviews, second=judge_second_signals(judge_rows)).with_columns(
        pl.lit(version).alias("golden_set_version"), pl.lit(night).alias("night"), pl.lit(cases_read).alias("cases_read"),
        pl.lit(metric_tables["campaign_sha256"][0] if "campaign_sha256" in metric_tables.columns and metric_tables.height else None,
               dtype=pl.String).alias("campaign_sha256"),
    )  # fmt: skip
    table = with_review_status(gates, tables, golden_set, table)  # what the review established of the cases each row read
    read = {"history": history, "cases_read": cases_read, "design": frozen if design is not None else None, "reviews": reviews}
    return table, read


def _key(row: dict) -> str:
    return f"{row['gate']} × {row['system_id']} × {row['group']}"


def verdict_differences(stored: pl.DataFrame, derived: pl.DataFrame, tol: float = 1e-9) -> list[str]:
    """Each gate row whose stored verdict, CI, n or blocking differs from the re-derived one (or is missing or extra)."""
    a = {_key(r): r for r in stored.iter_rows(named=True)}
    b = {_key(r): r for r in derived.iter_rows(named=True)}
    out = [f"gate row {k}: in the stored table, not re-derived (added after the night)" for k in sorted(a.keys() - b.keys())]
    out += [f"gate row {k}: re-derived, missing from the stored table (removed)" for k in sorted(b.keys() - a.keys())]
    for k in sorted(a.keys() & b.keys()):
        for col in COMPARED:
            x, y = a[k].get(col), b[k].get(col)
            same = x == y or (isinstance(x, float) and isinstance(y, float)
                              and (math.isnan(x) and math.isnan(y) or abs(x - y) <= tol * max(1.0, abs(y))))  # fmt: skip
            if not same:
                out.append(f"gate row {k}: stored {col} {x!r}, re-derived from the stored tables {y!r}")
                break
    return out
