"""The campaign report's first screen: the release decision a reviewer reads (golden-eval §6).

* ``decision_section`` — per system, the release verdict (CLEARED / BLOCKED / BLOCKED pending confirmation) and one
  row per blocking gate with its evidence: a FAIL as its estimate and CI against the threshold and, for a count gate, its
  flagged answers with what a person said of them (``gates.flags``); an INDETERMINATE as its n and how many more cases
  would resolve it; a gate that could not run as its error.
* ``gate_matrix_section`` — the gates as a gate × system matrix (one short cell per verdict), so the table fits a
  laptop's width; the long table (one row per gate × system × scope group) follows as the details.
* ``judge_section`` — the LLM judge per system × rubric dimension: n, pass rate with its Wilson 95 % CI, and whether
  that dimension of the judge is validated against human labels (only validated ones may decide a gate).

Pure: polars in, ``Section`` out (no dagster import).
"""

from __future__ import annotations

import json

import polars as pl

from hcat_pipeline.common.stats import wilson_interval
from hcat_pipeline.gates.calibrated import EVIDENCE_TEXT
from hcat_pipeline.gates.flags import flag_text
from hcat_pipeline.gates.gate import WORST_FIRST
from hcat_pipeline.judge.ensemble import ENSEMBLE, agreement_table
from hcat_pipeline.reports.campaign_report import Section

_ORDER = WORST_FIRST
_SHORT = {"FAIL": "FAIL", "INDETERMINATE": "IND", "PASS": "pass", "NOT_APPLICABLE": "n/a"}


def _num(v) -> str:
    return "–" if v is None or v != v else f"{v:.3g}"  # v != v: nan


def _estimate(row: dict) -> str:
    if not row["n"]:
        return "no case in scope (n=0)"
    ci = "" if row["ci_low"] is None or row["ci_low"] != row["ci_low"] else f" [{_num(row['ci_low'])}, {_num(row['ci_high'])}]"
    return f"{_num(row['estimate'])}{ci} n={row['n']}"


def evidence_text(row: dict) -> str:
    """'rests on your human labels: human-pass rate 0.84 [0.78, 0.9] (active inference, 120 labels, 3 left out); …'."""
    what = EVIDENCE_TEXT.get(row.get("evidence") or "uncalibrated", str(row.get("evidence")))
    if row.get("human_pass_rate") is not None:
        left = f", {row['n_labels_excluded']} left out" if row.get("n_labels_excluded") else ""
        what += (f": human-pass rate {_num(row['human_pass_rate'])} [{_num(row['human_pass_ci_low'])}, "
                 f"{_num(row['human_pass_ci_high'])}] (active inference, {row['n_labelled']} design labels{left})")  # fmt: skip
    if row.get("threshold_source") and not str(row["threshold_source"]).startswith("declared in"):
        what += f"; threshold from {row['threshold_source']}"
    return f"rests on {what}"


def flags_evidence(row: dict, shown: int = 3) -> str:
    """A count gate's flagged answers: 'k confirmed / m unconfirmed / r overturned — c3 (hybrid): PERSON: John Doe
    [unconfirmed]; …' (the first ``shown``, unreviewed first), or '' when it flagged none."""
    if not row.get("n_flagged") or not row.get("flagged"):
        return ""
    flags = sorted(json.loads(row["flagged"]), key=lambda f: (f["status"] != "unconfirmed", f["case_id"]))
    items = []
    for f in flags[:shown]:
        extra = f"; contradicted: {f['contradicted_by']}" if f.get("contradicted_by") else ""
        items.append(f"{f['case_id']}: «{f['span']}» [{f['status']}{extra}]")
    more = f"; … {len(flags) - shown} more on the review page" if len(flags) > shown else ""
    return f"{flag_text(row)} — " + "; ".join(items) + more


def gate_reason(row: dict) -> str:
    """One line a reviewer reads for a gate row: what was measured against what, or what is missing."""
    name = f"{row['gate']} ({row['kind']}{'' if row.get('group') in (None, 'all') else ', ' + str(row['group'])})"
    return f"{name}: {gate_measure(row)}"


def gate_measure(row: dict) -> str:
    """A gate row's verdict and measure without its name (the first screen's "verdict" cell)."""
    if row.get("error"):
        return f"could not be evaluated — {row['error']}"
    if row["verdict"] == "NOT_APPLICABLE":
        return f"NOT APPLICABLE — {row['reason']}"
    target = f"{row['statistic']}({row['metric']}) {row['direction']} {row['threshold']:g}"
    est = _estimate(row)
    if row.get("certificate") and row["verdict"] in ("PASS", "INDETERMINATE"):  # gates.decide: the sentence a reviewer signs
        return (f"{row['verdict']} — {row['certificate']}" + (f" (vs {target})" if row["verdict"] == "INDETERMINATE" else "")
                + f" [{evidence_text(row)}]")  # fmt: skip
    if row["verdict"] == "FAIL":
        pending = " — pending confirmation (no person confirmed a flag yet)" if row.get("fail_evidence") == "pending_confirmation" else ""
        return f"FAIL{pending} — {est}, needs {target} [{evidence_text(row)}]"
    if row["verdict"] == "INDETERMINATE":
        more = f"about {row['n_more']} more case(s) would resolve it" if row.get("n_more") else "more cases in scope are needed"
        why = f" ({row['reason']})" if row.get("reason") else ""
        return f"INDETERMINATE — {est} vs {target}{why}; {more}"
    return f"PASS — {est}"


def _release(blocking: pl.DataFrame) -> str:
    if blocking.height == 0:
        return "CLEARED"
    pending = "fail_evidence" in blocking.columns and bool((blocking["fail_evidence"] == "pending_confirmation").fill_null(False).all())
    return "BLOCKED pending confirmation" if pending else "BLOCKED"


def decision_section(gates: pl.DataFrame | None, systems: list[str]) -> tuple[Section, list[str]]:
    """Per system of the run: CLEARED / BLOCKED, then one row per blocking gate (failures first) with its verdict and its
    evidence (the flagged answers of a count gate, what a rate rests on), then one row of what its hard PASSes certify."""
    if gates is None:
        return Section.missing("decision", "Release decision", "gate_verdicts is not available"), ["Release decision: not available."]
    rows, classes, lines = [], [], []
    everyone = gates.filter(pl.col("system_id") == "*")  # a gate that could not run blocks every system
    for sid in systems:
        mine = pl.concat([gates.filter(pl.col("system_id") == sid), everyone], how="diagonal_relaxed")
        blocking = mine.filter(pl.col("blocking")).sort(pl.col("verdict").replace_strict(_ORDER, default=3, return_dtype=pl.Int8))
        release = _release(blocking)
        for r in blocking.iter_rows(named=True):
            group = "" if r.get("group") in (None, "all") else f", {r['group']}"
            rows.append([sid, release, f"{r['gate']} ({r['kind']}{group})", gate_measure(r), flags_evidence(r) or evidence_text(r)])
            classes.append(r["verdict"] if r["verdict"] in ("FAIL", "INDETERMINATE") else "FAIL")
        certified = mine.filter((pl.col("kind") == "hard") & (pl.col("verdict") == "PASS"))
        certs = "; ".join(gate_reason(r) for r in certified.iter_rows(named=True)) or "no hard gate passes"
        counts = {v: int((mine["verdict"] == v).sum()) for v in _ORDER}
        na = f" · {counts['NOT_APPLICABLE']} not applicable" if counts["NOT_APPLICABLE"] else ""
        rows.append([sid, release, f"hard PASSes ({certified.height})", f"{counts['FAIL']} fail · {counts['INDETERMINATE']} "
                     f"indeterminate · {counts['PASS']} pass{na}", certs])  # fmt: skip
        classes.append("PASS")
        lines.append(f"{sid}: {release}" + (f" by {blocking['gate'].n_unique()} gate(s)" if blocking.height else ""))
    sec = Section("decision", "Release decision", columns=["system", "release", "gate", "verdict", "evidence"], rows=rows,
                  row_classes=classes, note="One row per blocking gate, then what the system's hard PASSes certify. A system is "
                  "cleared when every hard gate PASSes; an INDETERMINATE hard gate blocks (too few cases to decide, or a claim "
                  "too weak to sign) unless the gates file says on_indeterminate: warn. A count gate's FAIL names its flagged "
                  "answers: a person confirms each or overturns it with a reason on the review page (/flags); a release "
                  "blocked only by unconfirmed flags is 'BLOCKED pending confirmation'. A zero-tolerance PASS certifies a "
                  "failure rate below its level at 95 % (exact one-sided bound); a rate gate's PASS rests on its one-sided "
                  "bound.")  # fmt: skip
    read = gates["cases_read"].drop_nulls().unique().to_list() if "cases_read" in gates.columns else []
    if read:  # all cases or the reviewed ones (golden-eval §2.5; the campaign file's gates_read)
        sec.note = f"Cases: {read[0]}. " + sec.note
    return sec, ["Release decision — " + "; ".join(lines) + "." + (f" Cases: {read[0]}." if read else "")]


def gate_matrix_section(gates: pl.DataFrame | None, precision: dict[str, str] | None = None) -> Section:
    """Gate × system (a row per gate, hard first; a column per system, so the table fits a laptop's width): each cell
    the worst verdict over the gate's scope groups with its estimate, and a count gate's flags reviewed; beside each count
    gate its detector's false-positive rate among the flags people reviewed across nights (``precision``: detector →
    text, ``gates.flags.precision_text``)."""
    if gates is None or gates.height == 0:
        return Section.missing("gates", "Release gates", "gate_verdicts is not available" if gates is None else "no gates evaluated")
    names = list(dict.fromkeys(gates.sort(pl.col("kind").replace_strict({"hard": 0, "soft": 1, "trend": 2}, default=3, return_dtype=pl.Int8),
                                          "gate")["gate"].to_list()))  # fmt: skip
    kinds = dict(gates.select("gate", "kind").unique("gate").iter_rows())
    detectors = dict(gates.select("gate", "detector").drop_nulls().unique("gate").iter_rows()) if "detector" in gates.columns else {}
    systems = sorted(gates["system_id"].unique().to_list())
    rows, classes = [], []
    for g in names:
        cells, worst = [], _ORDER["PASS"]
        for sid in systems:
            part = gates.filter((pl.col("gate") == g) & (pl.col("system_id") == sid))
            if part.height == 0:
                cells.append("")
                continue
            r = part.sort(pl.col("verdict").replace_strict(_ORDER, default=3, return_dtype=pl.Int8)).row(0, named=True)
            worst = min(worst, _ORDER.get(r["verdict"], _ORDER["PASS"]) if kinds[g] == "hard" else _ORDER["PASS"])
            flags = f" ({r['n_confirmed']}✓ {r['n_unconfirmed']}? {r['n_overturned']}✗)" if r.get("n_flagged") else ""
            cells.append(f"{_SHORT.get(r['verdict'], r['verdict'])} {_num(r['estimate'])}{flags}" + (" !" if r["error"] else ""))
        det = detectors.get(g)
        fp = "" if det is None else (precision or {}).get(det, "no flag of this detector reviewed yet")
        rows.append([g, kinds[g], fp, *cells])
        classes.append("PASS" if worst >= _ORDER["PASS"] else next(v for v, i in _ORDER.items() if i == worst))
    return Section("gates", "Release gates", columns=["gate", "kind", "detector precision", *systems], rows=rows, row_classes=classes,
                   note="A row per gate (hard first), a column per system: the worst verdict over scope groups, then the "
                   "estimate; IND = INDETERMINATE; n/a = not applicable to this system (the reason is in the details); "
                   "! = the gate could not run; (k✓ m? r✗) = a count gate's flagged answers confirmed / unconfirmed / "
                   "overturned by a person; detector precision = the count gate's detector's false positives among the "
                   "flags people reviewed on every night so far (exact 95 % interval): what a FAIL on one unconfirmed flag "
                   "is worth. The row colour follows the hard gates. Each row's CI, n and reason are in the "
                   "details below.")  # fmt: skip


def judge_section(judge: pl.DataFrame | None, why: str = "") -> Section:
    """The LLM judge per system × dimension: n scored, errors, mean score, pass rate [Wilson 95 % CI], validated."""
    if judge is None or judge.height == 0:
        return Section.missing("judge", "LLM judge", why or "llm_judge_scores has no rows (the judge was skipped or disabled)")
    rows, classes = [], []
    for (sid, dim), g in sorted(judge.group_by("system_id", "dimension"), key=lambda kv: kv[0]):
        s = g.filter(pl.col("score").is_not_null())
        k = int(s["passed"].sum()) if s.height else 0
        lo, hi = wilson_interval(k, s.height) if s.height else (None, None)
        validated = bool(g["validated"].all())
        rate = f"{k / s.height:.2f} [{lo:.2f}, {hi:.2f}]" if s.height else "–"
        why = next(iter(g["validation_reason"].drop_nulls().to_list()), "") if "validation_reason" in g.columns else ""
        said = ("yes" + (f" — {why}" if why else "")) if validated else ("no — never decides a gate" + (f" ({why})" if why else ""))
        rows.append([sid, dim, str(s.height), str(int(g["error"].is_not_null().sum())),
                     f"{s['score'].mean():.2f}" if s.height else "–", rate, said])  # fmt: skip
        classes.append("" if validated else "small")
    return Section("judge", "LLM judge", columns=["system", "dimension", "n", "errors", "mean score (1-5)", "pass rate [95% CI]",
                                                   "validated"], rows=rows, row_classes=classes,
                   note="Only dimensions validated against held-out human labels (judge_validation) may decide a gate "
                   "(golden-eval §5.6): each says κ, on how many labels and when it was measured; a validation older than 30 days "
                   "no longer validates, and judge_recheck_sensor re-runs it once 20 new labels arrived or a week passed. Items "
                   "where the judge is unsure, disagrees with the metric, or a flagged judge bias touches go to the review queue "
                   "first, within the labelling design.")  # fmt: skip


def ensemble_section(ensemble: pl.DataFrame | None, pass_threshold: int = 4, why: str = "") -> Section:
    """Ensemble judging (golden-eval §5.5): per dimension and pair of judges, their agreement — Cohen's κ [95 % CI], the
    agreeing share [Wilson 95 % CI], n — the disagreements sent to the review queue, and whether the ensemble decides."""
    title = "Judges in ensemble"
    if ensemble is None or ensemble.height == 0:
        return Section.missing("judge_ensemble", title, why or "no ensemble this night (the campaign file's judge.ensemble is empty, "
                               "or the judge scored nothing)")  # fmt: skip
    members = ensemble.filter(pl.col("judge_model") != ENSEMBLE)
    combined = ensemble.filter(pl.col("judge_model") == ENSEMBLE)
    rows = []
    for r in agreement_table(members, pass_threshold).iter_rows(named=True):
        mine = combined.filter(pl.col("dimension") == r["dimension"])
        used = bool(mine["used"].any()) if mine.height else False
        kappa = "undefined (one verdict only)" if r["kappa"] is None else _ci(r["kappa"], r["kappa_ci_low"], r["kappa_ci_high"])
        rows.append([r["dimension"], r["judge_a"], r["judge_b"], str(r["n"]), _ci(r["agree_share"], r["agree_ci_low"], r["agree_ci_high"]),
                     kappa, str(int((mine["judges_agree"] == False).sum())),  # noqa: E712
                     "yes" if used else f"no — {(mine['validation_reason'][0] if mine.height else None) or 'not chosen: the judge decides'}"])  # fmt: skip
    return Section("judge_ensemble", title, columns=["dimension", "judge", "judge", "n", "agree [95% CI]", "Cohen's κ [95% CI]",
                                                     "disagreements in the dimension (to the review queue)", "ensemble decides"], rows=rows,
                   note="Each judge scored the same answers; the ensemble's score is their mean. It decides a dimension only where "
                   "it beat each judge on half of the held-out human labels and held on the other half (judge_validation with "
                   "the same ensemble); elsewhere the judge decides. A disagreement raises the item in the review queue's design.")  # fmt: skip


def _ci(x: float | None, lo: float | None, hi: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.2f}" + ("" if lo is None or hi is None else f" [{lo:.2f}, {hi:.2f}]")
