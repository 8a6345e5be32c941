"""Report sections about the verdicts themselves: were they proven (canaries), and the comparisons a reviewer reads.

* ``canary_section`` — "Would these gates catch a broken system?": per canary its fault, caught / missed and each
  expectation with what was observed; the detection rate with its Wilson 95 % CI and n in the summary line.
* ``rankings_section`` — one compact row per metric × system: Bradley-Terry rating with its CI, rank, P(best), n
  (the full table — every method and the rank distributions — stays in ``system_rankings``).
* ``pareto_section`` — per system: quality, cost and latency with their CIs, on / off / not placed and why.

Pure: polars in, ``Section`` out.
"""

from __future__ import annotations

import polars as pl

from hcat_pipeline.gates.canary_detection import detection_summary
from hcat_pipeline.gates.paired import paired_comparisons
from hcat_pipeline.reports.campaign_report import Section

_COMPACT_METHOD = "bradley_terry"


def _num(v, digits: int = 3) -> str:
    return "–" if v is None or v != v else f"{v:.{digits}g}"


def _ci(est, lo, hi, digits: int = 3) -> str:
    if est is None or est != est:
        return "unknown"
    return f"{_num(est, digits)} [{_num(lo, digits)}, {_num(hi, digits)}]" if lo is not None and lo == lo else _num(est, digits)


def canary_section(table: pl.DataFrame | None, why: str = "") -> tuple[Section, list[str]]:
    key, title = "canaries", "Would these gates catch a broken system?"
    if table is None or table.height == 0:
        reason = why or "no canary in this campaign (campaign file `canaries:`)"
        return Section.missing(key, title, reason), [f"Canaries: none ({reason})."]
    per, rate = detection_summary(table)
    rows, classes = [], []
    for c in per.iter_rows(named=True):
        mine = table.filter(pl.col("canary_id") == c["canary_id"])
        checks = "; ".join(f"{'✓' if r['caught'] else '–' if r['caught'] is None else '✗'} {r['expected']}: {r['observed']}"
                           for r in mine.iter_rows(named=True))  # fmt: skip
        verdict = {"missed": "MISSED"}.get(c["verdict"], c["verdict"]) + (f" — {c['reason']}" if c["reason"] else "")
        rows.append([c["canary_id"], c["fault"], verdict, f"{c['met']}/{c['checks']}", checks])
        classes.append({"caught": "PASS", "missed": "FAIL"}.get(c["verdict"], "INDETERMINATE"))
    apart = per.filter(pl.col("verdict").is_in(["not separable", "untested"]))
    line = (f"Canaries: {rate['caught']}/{rate['n']} planted faults caught (detection rate {_num(rate['rate'])} "
            f"[{_num(rate['ci_low'])}, {_num(rate['ci_high'])}], Wilson 95 %, n={rate['n']})"
            + "".join(f"; {v}: {', '.join(apart.filter(pl.col('verdict') == v)['canary_id'])}" for v in ("not separable", "untested")
                      if (apart["verdict"] == v).any()))  # fmt: skip
    note = ("Each canary is a copy of a system of this campaign with one planted fault (no extra LLM call); it must get the "
            "verdicts its fault declares. A miss means these gates would let such a broken system through — the evaluator "
            "is at fault, not the parent. Canaries never appear in the decision, rankings or frontier above. A metric moved "
            "when the paired bootstrap 95 % CI of canary − parent excludes 0; the frontier is the real systems' plus the canary. "
            "'not separable': the honest parent already FAILs the gates meant for this fault, so nothing could tell them "
            "apart (not a miss: fix the parent first); 'untested': no expectation could be tested tonight (too few cases). "
            f"{line}. ✓ met, ✗ not met, – not applicable to the parent (reason in canary_detection).")  # fmt: skip
    sec = Section(key, title, columns=["canary", "fault", "verdict", "checks met", "expected → observed"], rows=rows,
                  row_classes=classes, note=note)
    missed = per.filter(pl.col("verdict") == "missed")["canary_id"]
    return sec, [line + ("." if missed.is_empty() else "; MISSED: " + ", ".join(missed) + ".")]


def rankings_section(rankings: pl.DataFrame | None, why: str = "") -> Section:
    key, title = "rankings", "Rankings"
    if rankings is None or rankings.height == 0:
        return Section.missing(key, title, why or "no ranking in this run (fewer than 2 systems)")
    method = _COMPACT_METHOD if (rankings["method"] == _COMPACT_METHOD).any() else rankings["method"][0]
    f = rankings.filter(pl.col("method") == method).sort("metric", "rank")
    rows = [[r["metric"], str(r["rank"]), r["system_id"], _ci(r["rating"], r["ci_low"], r["ci_high"]), _num(r["p_best"], 2), str(r["n_cases"])]
            for r in f.iter_rows(named=True)]  # fmt: skip
    return Section(key, title, columns=["metric", "rank", "system", f"{method} rating [95 % CI]", "P(best)", "n cases"], rows=rows,
                   note="Pairwise outcomes per case on each metric; overlapping CIs mean the order is not established. "
                   "Elo and TrueSkill ratings and the rank distributions are in the system_rankings table.")  # fmt: skip


PAIRED_METRICS = ("behaviour_pass", "groundedness_nli")  # the pass / fail outcome (McNemar) and the validated score (bootstrap)


def paired_section(scores: pl.DataFrame) -> Section:
    """Every pair of systems on the cases both answered (golden-eval §4.3): McNemar on behaviour pass / fail, the paired
    bootstrap on groundedness, each with its p-value and effect size."""
    key, title = "paired", "Paired comparisons (golden-eval §4.3)"
    raw = scores.filter(pl.col("source").is_in(["raw", "behaviour"])) if "source" in scores.columns else scores
    tables = [paired_comparisons(raw, m) for m in PAIRED_METRICS if (raw["metric"] == m).any()]
    table = pl.concat(tables) if tables else None
    if table is None or table.height == 0:
        return Section.missing(key, title, "fewer than 2 systems with scores on shared cases")
    rows = [[r["metric"], r["system_a"], r["system_b"], str(r["n"]), _num(r["mean_a"], 3), _num(r["mean_b"], 3),
             _ci(r["difference"], r["ci_low"], r["ci_high"]), r["test"], _num(r["p_value"], 4),
             f"{r['effect']} {_num(r['effect_size'], 2)}" if r["effect"] else "–", r["verdict"]] for r in table.iter_rows(named=True)]  # fmt: skip
    return Section(key, title, columns=["metric", "system a", "system b", "n shared", "mean a", "mean b", "a − b [95 % CI]", "test",
                                        "p", "effect size", "verdict"], rows=rows,
                   note="On the cases both systems answered. Pass / fail: McNemar's exact test on the cases only one passed; a score: "
                   "the paired bootstrap (B 1000) with a sign-flip permutation p. 'a better' / 'b better' at p < 0.05, one test per "
                   "row (no correction across rows).")  # fmt: skip


def pareto_section(pareto: pl.DataFrame | None, why: str = "") -> Section:
    key, title = "pareto", "Pareto frontier (quality × cost × latency)"
    if pareto is None or pareto.height == 0:
        return Section.missing(key, title, why or "pareto_frontier has no rows")
    rows, classes = [], []
    for r in pareto.sort("system_id").iter_rows(named=True):
        place = "not placed" if r["on_frontier"] is None else "on the frontier" if r["on_frontier"] else "dominated"
        cost = "unknown" if r.get("cost_usd_per_case") is None else _ci(r["cost_usd_per_case"], r.get("cost_ci_low"), r.get("cost_ci_high"))
        rows.append([r["system_id"], place, f"{_ci(r['quality'], r['quality_ci_low'], r['quality_ci_high'])} n={r['n_quality']}", cost,
                     _ci(r["latency_p50_s"], r["latency_p50_ci_low"], r["latency_p50_ci_high"]), _per(r, "second"), _per(r, "usd"),
                     r["explanation"]])
        classes.append("PASS" if r["on_frontier"] else "")
    metric = pareto["quality_metric"][0] if "quality_metric" in pareto.columns else "quality"
    return Section(key, title, columns=["system", "place", f"quality ({metric}) [95 % CI]", "USD per case", "latency p50 s",
                                        "quality per second [CI] (rank)", "quality per USD [CI] (rank)", "why"],
                   rows=rows, row_classes=classes,
                   note="Better on an axis only when the 95 % CIs are apart; an unknown quality is not placed, an unknown cost "
                   "is not compared (never counted as best or as $0). Secondary rankings: mean quality over mean seconds / "
                   "USD per answer, bootstrap CI over cases; '≈' = its CI overlaps a neighbour's (order not established).")  # fmt: skip


def _per(r: dict, unit: str) -> str:
    """'0.12 [0.10, 0.14] (#1 ≈)' for quality per second / per USD, or why it is unknown."""
    v = r.get(f"quality_per_{unit}")
    if v is None:
        return "unknown" + (f": {r['efficiency_note']}" if unit == "usd" and r.get("efficiency_note") else "")
    rank, tied = r.get(f"rank_per_{unit}"), r.get(f"rank_per_{unit}_tied")
    return f"{_ci(v, r.get(f'quality_per_{unit}_ci_low'), r.get(f'quality_per_{unit}_ci_high'))} (#{rank}{' ≈' if tied else ''})"


def calibration_section(calibrated: pl.DataFrame | None, calibrators: pl.DataFrame | None, labels: pl.DataFrame | None,
                        why: str = "") -> tuple[Section, list[str]]:  # fmt: skip
    """Per calibrated dimension × metric: whose human labels calibrated it — the user's (n, when) or the borrowed
    reference labels (named; the coverage guarantee is not established on the user's data) — or why it is not."""
    key, title = "calibrated", "What the calibrated scores rest on"
    if calibrated is None or calibrated.height == 0 or "label_source" not in calibrated.columns:
        return Section.missing(key, title, why or "calibrated_scores has no rows"), []
    rows, classes, lines = [], [], []
    parts = calibrated.group_by("dimension", "metric", "label_source").agg(pl.len().alias("rows"), pl.col("calibration_note").first())
    for r in parts.sort("dimension", "metric").iter_rows(named=True):
        src = r["label_source"] or "none"
        fit = None
        if calibrators is not None and calibrators.height:
            hit = calibrators.filter((pl.col("dimension") == r["dimension"]) & (pl.col("label_source") == src))
            fit = hit.row(0, named=True) if hit.height else None
        n = str(fit["n_labels"]) if fit else "–"
        if src == "campaign":
            when = "–"
            if labels is not None and labels.height and "labelled_at" in labels.columns:
                mine = labels.filter(pl.col("dimension") == r["dimension"])["labelled_at"].drop_nulls()
                when = f"{mine.min():%Y-%m-%d} … {mine.max():%Y-%m-%d}" if mine.len() else "–"
            whose, guarantee, cls = "your labels", "conformal coverage on your held-out labels (see Metric validity)", "PASS"
        elif src.startswith("reference:"):
            when, cls = "shipped with the tool", "INDETERMINATE"
            whose = f"borrowed reference labels: {src.removeprefix('reference:')} (public data, not your documents)"
            guarantee = "coverage guarantee not established on your data — label your own (review queue) to establish it"
        else:
            when, whose, cls = "–", "none: not calibrated", "FAIL"
            guarantee = r["calibration_note"] or "no calibrator for this dimension"
        rows.append([r["dimension"], r["metric"], whose, n, when, guarantee, str(r["rows"])])
        classes.append(cls)
        kind = "your labels" if src == "campaign" else src.removeprefix("reference:") if src.startswith("reference:") else None
        lines.append((kind, r["dimension"]))
    sec = Section(key, title, columns=["dimension", "metric", "whose labels", "n labels", "labelled", "guarantee", "rows this run"],
                  rows=rows, row_classes=classes,
                  note="A calibrated probability is only as good as the human labels behind it: the reviewer's own labels on this "
                  "campaign's answers give the conformal coverage guarantee; borrowed public labels do not transfer it.")  # fmt: skip
    yours = sorted({d for k, d in lines if k == "your labels"})
    borrowed = sorted({f"{d} ({k})" for k, d in lines if k not in (None, "your labels")})
    none = sorted({d for k, d in lines if k is None})
    summary = "Calibration: " + "; ".join(p for p in (
        f"{', '.join(yours)} on your labels" if yours else "",
        f"{', '.join(borrowed)} on borrowed reference labels — coverage guarantee not established on your data" if borrowed else "",
        f"{len(none)} dimension(s) not calibrated (no labels)" if none else "") if p) + "."  # fmt: skip
    return sec, [summary]
