"""The sections of the campaign report, built from the run's tables (pure; the asset only loads them).

``build_report`` takes the weakness results and whatever optional tables exist (gate verdicts,
rankings, Pareto table, calibrated scores, metric validity — ``None`` with the reason when missing)
and returns everything ``campaign_report.render_report`` needs. No dagster import.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from hcat_pipeline.gates.gate import WORST_FIRST
from hcat_pipeline.golden.composition import describe as describe_composition
from hcat_pipeline.golden.composition import describe_suites
from hcat_pipeline.reports.campaign_report import Plot, Section, fmt_ci, frame_section
from hcat_pipeline.reports.decision import decision_section, ensemble_section, gate_matrix_section, judge_section
from hcat_pipeline.reports.difficulty import difficulty_section
from hcat_pipeline.reports.integrity import trace_section
from hcat_pipeline.reports.paraphrase import paraphrase_section
from hcat_pipeline.reports.rubric import harm_judged_section, rubric_sections
from hcat_pipeline.reports.validity import construct_validity_section, rater_disagreement
from hcat_pipeline.reports.verdicts import calibration_section, canary_section, paired_section, pareto_section, rankings_section
from hcat_pipeline.reports.weakness_plots import heatmap_png, violin_png

DEFAULT_PLOT_METRICS = ("groundedness_nli", "groundedness_similarity", "answer_relevancy", "recall_at_k", "behaviour_pass")
VERDICT_COLUMNS = ("verdict", "status", "result")


@dataclass
class OptionalTable:
    """An optional input: its frame, or why it is missing."""

    frame: pl.DataFrame | None
    why: str = ""


def headline_section(cells: pl.DataFrame, metrics: Sequence[str]) -> Section:
    """Per system, each headline metric as mean [CI] (n) (the system marginal cells)."""
    sys_cells = cells.filter((pl.col("dims") == "system") & pl.col("metric").is_in(list(metrics)))
    if sys_cells.height == 0:
        return Section.missing("headline", "Headline", "no metric values for the systems of this run")
    present = [m for m in metrics if m in set(sys_cells["metric"])]
    rows = []
    for system in sorted(sys_cells["row"].unique().to_list()):
        row = [system]
        for m in present:
            c = sys_cells.filter((pl.col("row") == system) & (pl.col("metric") == m))
            row.append(fmt_ci(c["mean"][0], c["ci_low"][0], c["ci_high"][0], c["n"][0]) + f" {c['claim_strength'][0]}" if c.height else "–")
        rows.append(row)
    return Section("headline", "Headline", columns=["system", *present], rows=rows,
                   note="mean [95% bootstrap CI] (n), claim strength (golden-eval §6.6).")  # fmt: skip


def plots_for(cells: pl.DataFrame, scores: pl.DataFrame, metrics: Sequence[str], pairs: Sequence[tuple[str, str]], seed: int) -> dict[str, list[Plot]]:
    """Heatmaps of every bivariate pair and violins by topic and by system, for each metric with values."""
    out: dict[str, list[Plot]] = {"heatmaps": [], "violins": []}
    have = set(scores.filter(pl.col("value").is_not_null())["metric"].unique().to_list())
    for m in [m for m in metrics if m in have]:
        for a, b in pairs:
            dims = f"{a} × {b}"
            if cells.filter((pl.col("metric") == m) & (pl.col("dims") == dims)).height:
                out["heatmaps"].append(Plot(f"{m}: {dims}", heatmap_png(cells, m, dims), "mean per cell, n below; hatched = small cell"))
        for by in ("topic", "system"):
            out["violins"].append(Plot(f"{m} per case by {by}", violin_png(scores, m, by, seed=seed), "each point one case × system"))
    return out


def gate_section(gates: OptionalTable) -> tuple[Section, list[str]]:
    """Every gate row (sorted FAIL, INDETERMINATE, PASS) — the details under the gate matrix — and a summary line counting them."""
    if gates.frame is None:
        return Section.missing("gates_detail", "Release gates", gates.why), [f"Release gates: not available ({gates.why})."]
    f = gates.frame
    col = next((c for c in VERDICT_COLUMNS if c in f.columns), None)
    if col is None:
        return frame_section("gates", "Release gates", f), ["Release gates: table has no verdict column."]
    f = f.sort(pl.col(col).cast(pl.String).str.to_uppercase().replace_strict(WORST_FIRST, default=len(WORST_FIRST)))
    counts = f[col].cast(pl.String).str.to_uppercase().value_counts().sort(col)
    line = "Release gates: " + ", ".join(f"{r[col]} {r['count']}" for r in counts.iter_rows(named=True))
    shown = [c for c in ("gate", "kind", "system_id", "group", "verdict", "estimate", "ci_low", "ci_high", "n", "n_more", "threshold",
                         "reason", "error") if c in f.columns]  # fmt: skip
    sec = frame_section("gates_detail", "Release gates: every gate × system × group",
                        f.with_columns(pl.col(col).cast(pl.String).str.to_uppercase().alias("_class")), columns=shown, row_class="_class")
    return sec, [line + "."]


def review_status_section(gates: pl.DataFrame | None) -> tuple[Section, list[str]]:
    """Per gate, what the review established of the cases it read (``gates.review_status``): reviewed by case, accepted by
    sample (with the unsound share's bound), not reviewed — and the PASSes that share could erase (NOT CERTIFIED)."""
    title = "What the gates read: the review status of their cases"
    cols = ("n_reviewed_by_case", "n_accepted_by_sample", "n_not_reviewed")
    if gates is None or any(c not in gates.columns for c in cols):
        return Section.missing("gate_review", title, "the gate verdicts carry no review status (a night before issue 68)"), []
    per = gates.filter(pl.col("n_reviewed_by_case").is_not_null()).group_by("gate", maintain_order=True).agg(
        *[pl.col(c).max() for c in cols], pl.col("unsound_bound").max(),
        pl.col("review_margin").str.starts_with("NOT CERTIFIED").fill_null(False).sum().alias("not_certified"))  # fmt: skip
    rows = [[r["gate"], str(r["n_reviewed_by_case"]), str(r["n_accepted_by_sample"]) + (f" (unsound ≤ {r['unsound_bound']:.3f})" if r["unsound_bound"] else ""),
             str(r["n_not_reviewed"]), str(r["not_certified"])] for r in per.iter_rows(named=True)]  # fmt: skip
    groups: dict[tuple, list[str]] = {}
    for r in rows:
        groups.setdefault((r[1], r[2], r[3]), []).append(r[0])
    lines = ["Cases the gates read, by review status (most cases over the systems; per gate in 'What the gates read'): " + "; ".join(
        f"{len(names)} gate(s) read {k[0]} reviewed by case, {k[1]} accepted by sample, {k[2]} not reviewed "
        f"({', '.join(names[:4])}{' …' if len(names) > 4 else ''})" for k, names in sorted(groups.items(), key=lambda kv: -len(kv[1])))]  # fmt: skip
    erased = int(per["not_certified"].sum())
    if erased:
        lines.append(f"NOT CERTIFIED: {erased} PASS row(s) rest on cases accepted by sample whose unsound share could erase their margin.")
    return Section("gate_review", title, columns=["gate", "reviewed by case", "accepted by sample", "not reviewed", "PASS rows not certified"],
                   rows=rows, note="A case accepted by sample was not read: its kind's seeded sample bounded the kind's unsound "
                   "share (exact, 95 %). A PASS is re-read with that share: an unsound case may hide a failure."), lines  # fmt: skip


def provenance(golden_set: pl.DataFrame, golden_table_sha256: str, manifest: dict | None, rag_responses: pl.DataFrame,
               metric_tables: pl.DataFrame, weakness_settings: dict) -> dict:  # fmt: skip
    """Golden-set version and hashes, campaign hash, systems with config hashes, models, seeds."""
    run = rag_responses.head(1).to_dicts()[0] if rag_responses.height else {}
    info = json.loads(metric_tables["score_info"][0]) if "score_info" in metric_tables.columns and metric_tables.height else {}
    out = {
        "golden-set version": run.get("golden_set_version") or (golden_set["version"][0] if "version" in golden_set.columns else "–"),
        "golden-set table SHA-256 (canonical rows)": golden_table_sha256,
        "golden-set manifest": ", ".join(f"{k}={v}" for k, v in (manifest or {}).items() if k in ("content_sha256", "table_sha256", "inputs_sha256", "frozen_at", "n_cases"))
        or "no manifest found",
        "campaign SHA-256": run.get("campaign_sha256", "–"),
        "night": run.get("night", "–"),
        "golden-set generation": ", ".join(f"{c}={sorted(set(map(str, golden_set[c].drop_nulls().to_list())))}"
                                           for c in ("model", "prompt_hash", "seed", "corpus_hash") if c in golden_set.columns) or "–",
        "golden-set strata": strata_coverage((manifest or {}).get("provenance", {}).get("generation")),
        "golden-set composition": composition_line(manifest, golden_set),
        "golden-set suites": describe_suites(_suites(manifest)),
        "metrics computed": ", ".join(info.get("metrics_computed", [])) or "–",
        "metrics unavailable": json.dumps(info.get("metrics_unavailable", {})) if info.get("metrics_unavailable") else "none",
        "embedding model": json.dumps(info.get("embedding_model") or info.get("embedding", {}).get("model_id", "")) if info else "–",
        "weakness analysis": ", ".join(f"{k}={v}" for k, v in weakness_settings.items()),
    }  # fmt: skip
    cols = [c for c in ("system_id", "config_hash", "retriever", "top_k", "model", "prompt", "prompt_hash", "temperature", "seed")
            if c in rag_responses.columns]  # fmt: skip
    systems = rag_responses.group_by(cols).agg(pl.len().alias("responses"), pl.col("error").is_not_null().sum().alias("failed"),
                                               pl.col("reused_from").is_not_null().sum().alias("reused")
                                               if "reused_from" in rag_responses.columns else pl.lit(0).alias("reused")).sort(cols, nulls_last=True)  # fmt: skip
    out["systems"] = frame_section("systems", "Systems", systems)
    return out


def composition_line(manifest: dict | None, golden_set: pl.DataFrame | None = None) -> str:
    """The version's size and happy-path share against the campaign's target and why it falls short (manifest provenance);
    a curated or imported version's read from its cases against the default target."""
    from hcat_pipeline.golden.composition import CompositionTarget, composition

    comp = (manifest or {}).get("provenance", {}).get("composition")
    if comp:
        return describe_composition(comp)
    if golden_set is None or "category" not in golden_set.columns or golden_set.height == 0:
        return "not recorded (a curated or imported version, or frozen before composition was recorded)"
    generation = (manifest or {}).get("provenance", {}).get("generation")  # a curated version: its base's generation record
    return describe_composition(composition(golden_set["category"].to_list(), CompositionTarget(), generation)) + " (read from the cases)"


def _suites(manifest: dict | None) -> dict | None:
    prov = (manifest or {}).get("provenance", {})
    return (prov.get("composition") or {}).get("suites") or prov.get("suites")


def level_mismatch(manifest: dict | None, gates: pl.DataFrame | None) -> str | None:
    """The first screen's line when the version's suites were sized for another certify_below than the night's
    zero-tolerance gates certify: which level each, and the gates a suite too small leaves undecided."""
    rec = _suites(manifest)
    if not rec or rec.get("sized_for") is None or gates is None or "certify_below" not in gates.columns:
        return None
    levels = gates.filter(pl.col("certify_below").is_not_null())["certify_below"].unique().to_list()
    night = min(levels) if levels else None
    if night is None or abs(night - rec["sized_for"]) < 1e-9:
        return None
    short = gates.filter(pl.col("certify_below").is_not_null() & (pl.col("verdict") == "INDETERMINATE") & pl.col("n_more").is_not_null())
    names = sorted(set(short["gate"].to_list())) if "n_more" in gates.columns else []
    return (f"Golden set sized for certify_below {rec['sized_for']:.0%}, read at {night:.0%}: "
            + (f"its suites are too small for {', '.join(names)} (INDETERMINATE: more probes needed) — regenerate the version at "
               "this level" if names and night < rec["sized_for"] else "the suites hold more probes than this level needs"
               if night > rec["sized_for"] else "every zero-tolerance gate still decided") + ".")  # fmt: skip


def strata_coverage(gen: dict | None) -> str:
    """The generation's cases per topic stratum against its budget, naming each short stratum and why (manifest provenance)."""
    if not gen or "kept_per_stratum" not in gen:
        return "not recorded (a curated version, or frozen before coverage was recorded)"
    budget, kept, short, labels = gen.get("cases_per_stratum"), gen["kept_per_stratum"], gen.get("short_strata") or {}, gen.get("stratum_labels") or {}
    head = f"{len(kept) - len(short)} of {len(kept)} strata hold their {budget} happy-path cases"
    return head + ("" if not short else "; short: " + "; ".join(f"stratum {k} ({labels.get(str(k), '?')}): {v}" for k, v in short.items()))


def setting_section(run: dict, optional: dict[str, OptionalTable]) -> tuple[Section, str]:
    """The test setting the night's results hold for (``reports.generalisation``), or why it cannot be read."""
    from hcat_pipeline.reports.generalisation import setting_bounds

    golden, responses = (optional.get(k) or OptionalTable(None, "") for k in ("golden_set", "rag_responses"))
    if golden.frame is None or responses.frame is None or golden.frame.height == 0:
        why = "the golden set or the responses are not given to the report"
        return Section.missing("test_setting", "Test setting: what these results hold for", why), f"Test setting: not read ({why})."
    return setting_bounds(golden.frame, responses.frame, run.get("manifest"), str(run.get("night", "?")))


def build_report(*, run: dict, cells: pl.DataFrame, weakest: pl.DataFrame, worst: pl.DataFrame, deltas: pl.DataFrame,
                 failures: pl.DataFrame, scores: pl.DataFrame, optional: dict[str, OptionalTable], plot_metrics: Sequence[str],
                 pairs: Sequence[tuple[str, str]], seed: int, prov: dict) -> dict:  # fmt: skip
    """Keyword arguments for ``render_report``."""
    gate_frame = optional["gate_verdicts"].frame
    decision, summary = decision_section(gate_frame, sorted(scores["system_id"].unique().to_list()))
    gates, gate_lines = gate_section(optional["gate_verdicts"])
    summary += gate_lines
    gate_review, review_lines = review_status_section(gate_frame)
    summary += review_lines
    if run.get("judge_note"):
        summary.append(f"LLM judge: {run['judge_note']}.")
    if run.get("review"):
        r = run["review"]
        summary.append(f"Human labels wanted: {r['n']} items ({r['answers']} answers) in the review queue — `hcat review`, {r['url']}.")
    if "; short: " in prov.get("golden-set strata", ""):
        summary.append(f"Golden set: {prov['golden-set strata']}.")
    if run.get("suites_note"):
        summary.insert(0, run["suites_note"])
    if run.get("contamination_note"):  # golden-eval §3.5.4
        summary.append(f"Contamination: {run['contamination_note']}.")
    if prov.get("golden-set composition", "").startswith(tuple("0123456789")):  # the first screen says it, met or short
        summary.append(f"Golden-set composition (golden-eval §2.2-2.3): {prov['golden-set composition']}.")
    setting, setting_line = setting_section(run, optional)
    summary.append(setting_line)
    canary = optional.get("canary_detection") or OptionalTable(None, "canary_detection is not materialized for this run")
    canaries, canary_lines = canary_section(canary.frame, canary.why)
    summary += canary_lines
    cal = optional["calibrated_scores"]
    calibration, cal_lines = calibration_section(cal.frame, (optional.get("calibrators") or OptionalTable(None, "")).frame,
                                                 (optional.get("human_labels") or OptionalTable(None, "")).frame, cal.why)
    summary += cal_lines
    sev = failures.group_by("severity").len().sort("severity") if failures.height else None
    summary.append("Failures (§3.4): " + (", ".join(f"{r['len']} {r['severity']}" for r in sev.iter_rows(named=True)) if sev is not None else "none") + ".")
    by_bound = weakest.filter((pl.col("ranking") == "ci_bound") & (pl.col("rank") == 1))
    for r in by_bound.filter(pl.col("metric").is_in(list(plot_metrics))).iter_rows(named=True):
        where = r["row"] if r["col"] is None else f"{r['row']} × {r['col']}"
        summary.append(f"Weakest {r['metric']} cell ({r['dims']}): {where} — {fmt_ci(r['mean'], r['ci_low'], r['ci_high'], r['n'])}.")
    worst_costs = deltas.filter((pl.col("system_id") != "all") & pl.col("ci_low").is_not_null() & (pl.col("direction") != "none")).sort("cost", descending=True).head(3)
    summary += [f"Robustness: {s}." for s in worst_costs["statement"].to_list()]
    paraphrase, paraphrase_lines = paraphrase_section((optional.get("paraphrase_variance") or OptionalTable(None, "")).frame)
    summary += paraphrase_lines
    rubric, rubric_plots, rubric_lines = rubric_sections((optional.get("metric_tables") or OptionalTable(None, "")).frame,
                                                         (optional.get("behaviour_checks") or OptionalTable(None, "")).frame,
                                                         (optional.get("golden_set") or OptionalTable(None, "")).frame,
                                                         (optional.get("llm_judge_scores") or OptionalTable(None, "")).frame)
    summary += rubric_lines  # also returned apart: the console prints them
    metrics = [m for m in plot_metrics if m in set(cells["metric"])]
    raters = rater_disagreement((optional.get("human_labels") or OptionalTable(None, "")).frame)
    stoch = (optional.get("verdict_stochasticity") or OptionalTable(None, "")).frame
    constructs, construct_lines = construct_validity_section(cells, metrics, optional["metric_validity"].frame, deltas,
                                                             run.get("live_shares"), raters, stoch)  # fmt: skip
    summary += construct_lines
    cell_cols = ["dims", "row", "col", "metric", "source", "n", "n_missing", "mean", "ci_low", "ci_high", "claim_strength", "small"]
    judge = optional.get("llm_judge_scores") or OptionalTable(None, "llm_judge_scores is not materialized for this run")
    ens = optional.get("judge_ensemble") or OptionalTable(None, "judge_ensemble is not materialized for this run")
    harm_src = optional.get("harm_judgements") or OptionalTable(None, "harm_judgements is not materialized for this run")
    harm_judged, harm_lines = harm_judged_section(harm_src.frame, harm_src.why)
    summary += harm_lines
    traces, trace_lines = trace_section((optional.get("grader_gaming") or OptionalTable(None, "")).frame,
                                        (optional.get("rag_responses") or OptionalTable(None, "")).frame)
    summary += trace_lines
    difficulty, difficulty_lines = difficulty_section((optional.get("golden_set") or OptionalTable(None, "")).frame,
                                                      (optional.get("behaviour_checks") or OptionalTable(None, "")).frame)
    summary += difficulty_lines
    sections = {
        "decision": decision,
        "gates": gate_matrix_section(gate_frame, run.get("detector_precision")) if gate_frame is not None else gates,
        "gates_detail": gates,
        "gate_review": gate_review,
        "trace_cheating": traces,
        "judge": judge_section(judge.frame, judge.why),
        "judge_ensemble": ensemble_section(ens.frame, why=ens.why),
        "harm_judged": harm_judged,
        "headline": headline_section(cells, metrics),
        "test_setting": setting,
        "canaries": canaries,
        "rankings": rankings_section(optional["rankings"].frame, optional["rankings"].why),
        "paired": paired_section(scores),
        "pareto": pareto_section(optional["pareto"].frame, optional["pareto"].why),
        "weakest": frame_section("weakest", "Weakest cells", weakest.filter(pl.col("metric").is_in(metrics)).with_columns(
            pl.when(pl.col("small")).then(pl.lit("small")).otherwise(pl.lit("")).alias("_class")),
            columns=["metric", "ranking", "rank", *cell_cols[:3], "n", "mean", "ci_low", "ci_high", "claim_strength", "small"],
            row_class="_class", note="Per metric, ranked by mean and by the optimistic CI bound (upper bound when higher is better); "
            "small = fewer values than min_cell_n (shown, not hidden)."),
        "worst_cases": frame_section("worst_cases", "Worst cases", worst.filter(pl.col("metric").is_in(metrics) & (pl.col("ranking") == "ci_bound")),
                                     columns=["metric", "dims", "row", "col", "cell_rank", "case_rank", "system_id", "case_id", "value",
                                              "query", "answer", "explanation"]),
        "cells": frame_section("cells", "All cells", cells.filter(pl.col("metric").is_in(metrics)).with_columns(
            pl.when(pl.col("small")).then(pl.lit("small")).otherwise(pl.lit("")).alias("_class")), columns=cell_cols, row_class="_class",
            max_rows=400, note=f"Headline metrics only ({', '.join(metrics)}); the weakness_report table has every metric."),
        "robustness": frame_section("robustness", "Robustness", deltas, columns=["statement", "variant_kind", "system_id", "metric", "n_pairs",
                                    "variant_mean", "base_mean", "delta", "ci_low", "ci_high", "claim_strength"]),
        "paraphrase": paraphrase,
        "difficulty": difficulty,
        "failures": frame_section("failures", "Failures", failures, columns=["severity", "failure_category", "system_id", "case_id", "category",
                                  "variant_kind", "evidence", "score"], row_class="severity"),
        "validity": _optional_section("validity", "Metric validity", optional["metric_validity"]),
        "calibrated": calibration,
        **rubric,
        "construct_validity": constructs,
        "exam": _optional_section("exam", "Exam accuracy per taker (exam_report)",
                                  optional.get("exam_report") or OptionalTable(None, "exam_report is not materialized (exam_job)")),
        "exam_chunking": _optional_section("exam_chunking", "Chunk size as a design variable (exam_chunking)",
                                           optional.get("exam_chunking") or OptionalTable(None, "exam_chunking is not materialized")),
        "exam_topics": _optional_section("exam_topics", "Exam accuracy and item information per topic and taker (exam_topics)",
                                         optional.get("exam_topics") or OptionalTable(None, "exam_topics is not materialized (exam_job)")),
    }  # fmt: skip
    plots = {**plots_for(cells, scores, metrics, pairs, seed), "rubric": rubric_plots}
    run = {**run, "n_systems": scores["system_id"].n_unique(), "n_cases": scores["case_id"].n_unique()}
    return {"title": f"Campaign report — {run['version']} — {run['night']}", "run": run, "summary": summary, "sections": sections,
            "plots": plots, "provenance": prov, "rubric_lines": rubric_lines + construct_lines}  # fmt: skip


def _optional_section(key: str, title: str, opt: OptionalTable) -> Section:
    if opt.frame is None:
        return Section.missing(key, title, opt.why)
    return frame_section(key, title, opt.frame)
