"""Evaluate a gates file on a campaign run's tables → the ``gate_verdicts`` table, pure core.

A gate that ``requires`` what a system cannot have by construction (retrieved passages; a planted passage in its
retrieval) gives that system NOT_APPLICABLE with the reason — not an INDETERMINATE that blocks it.

``evaluate_gates(gates, tables, cases=None, history=None)``: for each gate, each selected system and
each group of the gate's scope (one group "all" for ``overall``) one row of ``GATE_VERDICTS``.
A gate whose table or column is missing gives rows with verdict INDETERMINATE and ``error`` set (the
other gates go on). Trend gates read ``history``: ``{table: [(run_label, frame), …]}`` oldest first,
the same table on earlier runs (``load_history`` reads them from the warehouse).

Trend rule: the per-run statistic of the last ``consecutive`` + 1 runs (this one included) must
worsen at every step to count as a decline; then the per-case difference (this run − the run
``consecutive`` back) on the cases both runs share is bootstrapped (paired) and compared with the
tolerated decline ``threshold`` (``>=`` gates: difference ≥ −threshold passes). No N-run decline,
or too little history: PASS with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from hcat_pipeline.common.stats import paired_bootstrap_ci, statistic_fn
from hcat_pipeline.gates.calibrated import HumanCalibration, calibrated_columns, dimension_of, uncalibrated_columns
from hcat_pipeline.gates.decide import Decision, certificate_text, decide
from hcat_pipeline.gates.drift import model_drift, scoring_models
from hcat_pipeline.gates.flags import FlagReview, apply_reviews
from hcat_pipeline.gates.gate import GateResult, verdict_of, worst
from hcat_pipeline.gates.spec import SCOPE_COLUMNS, GatesFile, GateSpec
from hcat_pipeline.golden.yes_no import answer_key
from hcat_pipeline.metrics.citation import has_citation
from hcat_pipeline.metrics.confidence import stated_confidence
from hcat_pipeline.responses.retrieval import DISTRACTOR_PREFIX
from hcat_pipeline.schemas import GATE_VERDICTS, RELEASE_DECISION

ALL = "all"
NO_HISTORY = "no trend to judge yet"  # a trend gate with too few earlier runs: NOT_APPLICABLE, never a PASS
#: tables whose rows are one answer's scores or verdicts: a gamed answer fails there (``_gamed_as_failed``)
GAMEABLE_TABLES = ("metric_tables", "behaviour_checks", "llm_judge_scores")
#: a row's flag columns when it counts no flagged answers (gates.flags)
NO_FLAGS = {"n_flagged": 0, "n_confirmed": 0, "n_unconfirmed": 0, "n_overturned": 0, "n_contradicted": 0, "flagged": None,
            "fail_evidence": None, "detector": None}  # fmt: skip


def _values(frame: pl.DataFrame, gate: GateSpec) -> pl.Series:
    col = pl.col(gate.metric)
    if gate.positive_when:  # f1 / precision / recall: per case 2·truth + prediction (common.stats.classification_codes)
        truth = pl.lit(True)
        for column, value in gate.positive_when.items():
            truth = truth & (pl.col(column).is_in(value) if isinstance(value, list) else pl.col(column) == value)
        pred = col.cast(pl.Float64) >= 0.5 if gate.equals is None else col == gate.equals
        return frame.select(pl.when(col.is_null()).then(None).otherwise(2 * truth.cast(pl.Float64) + pred.cast(pl.Float64))).to_series()
    if gate.at_least is not None:
        return frame.select(pl.when(col.is_null()).then(None).otherwise((col.cast(pl.Float64) >= gate.at_least).cast(pl.Float64))).to_series()
    if gate.equals is not None:
        return frame.select(pl.when(col.is_null()).then(None).otherwise((col == gate.equals).cast(pl.Float64))).to_series()
    return frame.select(col.cast(pl.Float64)).to_series()


def _filter(frame: pl.DataFrame, gate: GateSpec) -> pl.DataFrame:
    for column, value in gate.where.items():
        if column not in frame.columns:
            raise KeyError(f"where: column {column!r} not in {gate.table} (columns: {', '.join(frame.columns)})")
        frame = frame.filter(pl.col(column).is_in(value) if isinstance(value, list) else pl.col(column) == value)
    return frame


def _with_scope(frame: pl.DataFrame, gate: GateSpec, cases: pl.DataFrame | None) -> pl.DataFrame:
    column = SCOPE_COLUMNS[gate.scope]
    if column is None:
        return frame.with_columns(pl.lit(ALL).alias("_group"))
    if column == "answer_key" and column not in frame.columns:  # a yes/no case's reference answer; other cases are out of scope
        keys = answer_keys(cases) if cases is not None else pl.DataFrame(schema={"case_id": pl.String, column: pl.String})
        frame = frame.join(keys, on="case_id", how="inner")
    if column not in frame.columns:
        if cases is None or column not in cases.columns:
            raise KeyError(f"scope {gate.scope}: column {column!r} is neither in {gate.table} nor in the golden set")
        frame = frame.join(cases.select("case_id", column).unique("case_id"), on="case_id", how="left")
    return frame.with_columns(pl.col(column).cast(pl.String).fill_null("(none)").alias("_group"))


def scoped_rows(frame: pl.DataFrame, gate: GateSpec, cases: pl.DataFrame | None) -> pl.DataFrame:
    """The rows of ``frame`` the gate reads (its ``where``), with their scope group in ``_group`` (KeyError: a column is missing)."""
    return _with_scope(_filter(frame, gate), gate, cases)


def answer_keys(cases: pl.DataFrame) -> pl.DataFrame:
    """case_id, answer_key ("yes" / "no") of the golden set's yes/no cases (``golden.yes_no.answer_key``)."""
    if missing := [c for c in ("query_type", "reference_answer") if c not in cases.columns]:
        raise KeyError(f"scope answer_key: column(s) {missing} not in the golden set")
    yn = cases.filter(pl.col("query_type") == "yes_no").select("case_id", "reference_answer").unique("case_id")
    keys = [answer_key(r) for r in yn["reference_answer"].to_list()]
    return yn.select("case_id").with_columns(pl.Series("answer_key", keys, dtype=pl.String)).drop_nulls("answer_key")


def _row(gate: GateSpec, group: str, system: str, res: GateResult | None, *, error: str | None = None,
         n_dropped: int = 0, reason: str | None = None, decision: Decision | None = None, n_gamed: int = 0) -> dict:  # fmt: skip
    blocking = gate.kind == "hard" and (res is None or res.verdict == "FAIL" or (res.verdict == "INDETERMINATE" and gate.on_indeterminate == "fail"))
    extra = {"method": decision.method if decision else None, "certify_below": decision.certify_below if decision else None,
             "claim_strength": decision.claim_strength if decision else None,
             "certificate": certificate_text(gate, decision) if decision and decision.result is res else None,
             "n_gamed": n_gamed, "drift": None, **uncalibrated_columns(gate), **NO_FLAGS}  # fmt: skip
    return {**extra, 
        "gate": gate.name, "kind": gate.kind, "table": gate.table, "metric": gate.metric, "statistic": gate.statistic,
        "direction": gate.direction, "threshold": float(gate.threshold), "scope": gate.scope, "group": group, "system_id": system,
        "verdict": res.verdict if res else "INDETERMINATE", "estimate": res.estimate if res else None,
        "ci_low": res.ci_low if res else None, "ci_high": res.ci_high if res else None, "confidence": gate.confidence,
        "n": res.n if res else 0, "n_dropped": n_dropped, "n_more": res.n_more if res else None,
        "reason": reason or (res.reason if res else error), "error": error, "blocking": blocking, "description": gate.description,
    }  # fmt: skip


def _current(gate: GateSpec, vals: pl.Series, certify_below: float | None = None) -> Decision:
    return decide(gate, vals.to_numpy(), certify_below)


def _gamed_as_failed(gate: GateSpec, part: pl.DataFrame, vals: pl.Series, gamed: set[tuple[str, str]]) -> tuple[pl.Series, int]:
    """Golden-eval §7.5: an answer ``grader_gaming`` flags (echo, canned, context copy, empty, format only — a refusal is
    not gaming) scores 0 in every gate where a higher score or a pass verdict wins (quality means, pass rates), so gaming
    never wins a gate. A gate counting harms (injections followed, data leaked) is left as measured: an echoed or empty
    answer to an attack is no success of the attack, and calling it one would fail honest copy-paste services."""
    if not gamed or gate.table not in GAMEABLE_TABLES or "case_id" not in part.columns or gate.positive_when or not gate.higher_is_better:
        return vals, 0
    hit = pl.Series([(c, s) in gamed for c, s in zip(part["case_id"].to_list(), part["system_id"].to_list())], dtype=pl.Boolean)
    out = pl.select(pl.when(hit & vals.is_not_null()).then(0.0).otherwise(vals.cast(pl.Float64))).to_series()
    return out, int((hit & vals.is_not_null()).sum())


def _trend(gate: GateSpec, system: str, group: str, frame: pl.DataFrame, past: Sequence[tuple[str, pl.DataFrame]]) -> tuple[GateResult | None, str]:
    fn = statistic_fn(gate.statistic)
    runs = [*past, ("this run", frame)]
    series: list[tuple[str, pl.DataFrame, float]] = []
    for label, f in runs[-(gate.consecutive + 1):]:
        vals = f.select("case_id", _values(f, gate).alias("_v")).drop_nulls("_v")
        series.append((label, vals, float(fn(vals["_v"].to_numpy())) if vals.height else float("nan")))
    path = " → ".join(f"{label}: {s:.4g}" for label, _, s in series)
    if len(series) < gate.consecutive + 1:
        return None, f"{NO_HISTORY}: {len(series) - 1} earlier run(s) < {gate.consecutive} needed to see a trend ({path})"
    worse = [(b < a) if gate.higher_is_better else (b > a) for (_, _, a), (_, _, b) in zip(series, series[1:])]
    if not all(worse):
        return None, f"no decline over {gate.consecutive} consecutive runs ({path})"
    old, cur = series[0][1], series[-1][1]
    shared = cur.join(old, on="case_id", suffix="_old")
    if shared.height == 0:
        return None, f"declined over {gate.consecutive} runs but no shared cases to test ({path})"
    sign = 1.0 if gate.higher_is_better else -1.0  # difference oriented so that negative = worse
    diff = paired_bootstrap_ci(sign * shared["_v"].to_numpy(), sign * shared["_v_old"].to_numpy(), gate.statistic,
                               gate.confidence, gate.n_boot, gate.seed)  # fmt: skip
    res = verdict_of(diff, -gate.threshold, ">=", min_n=gate.min_n)
    return res, f"declined over {gate.consecutive} runs ({path}); paired change on {shared.height} shared cases: {res.reason}"


#: why a system lacks a capability a gate ``requires`` (the NOT_APPLICABLE reason)
_LACKS = {"contexts": "the system returns no retrieved passages, so a metric of the answer against its context cannot be measured",
          "planted_passage": "the case's planted passage could not be put into this system's retrieval (an http / imported / "
                             "closed-book system), so there is nothing to believe or resist",
          "citations": "the system cites no passage in any answer ('[2]'), so the quality of its citations cannot be measured "
                       "(its citation_presence still shows it)",
          "stated_confidence": "the system states no confidence in any answer, so its calibration is unknown (not measured, "
                               "not perfect)"}  # fmt: skip


def system_capabilities(responses: pl.DataFrame) -> dict[str, set[str]]:
    """Per system, what the data shows it has: ``contexts`` (an answered row with retrieved passages) and
    ``planted_passage`` (a row whose context holds a planted distractor passage, chunk id ``distractor:…``) and
    ``citations`` (an answer with passages that cites one, "[2]": ``metrics.citation.has_citation``) and
    ``stated_confidence`` (an answer stating a confidence: ``metrics.confidence.stated_confidence``)."""
    out: dict[str, set[str]] = {}
    cols = set(responses.columns)
    for rec in responses.select([c for c in ("system_id", "contexts", "context_chunk_ids", "error", "answer") if c in cols]).iter_rows(named=True):
        caps = out.setdefault(rec["system_id"], set())
        if rec.get("error") is None and rec.get("contexts"):
            caps.add("contexts")
            if has_citation(rec.get("answer")):
                caps.add("citations")
        if rec.get("error") is None and stated_confidence(rec.get("answer"))[0] is not None:
            caps.add("stated_confidence")
        if any(str(c).startswith(DISTRACTOR_PREFIX) for c in rec.get("context_chunk_ids") or ()):
            caps.add("planted_passage")
    return out


def _not_applicable(gate: GateSpec, group: str, system: str, missing: list[str]) -> dict:
    row = _row(gate, group, system, None, reason="not applicable to this system: " + "; ".join(_LACKS[m] for m in missing))
    return {**row, "verdict": "NOT_APPLICABLE", "blocking": False}


def evaluate_gate_spec(gate: GateSpec, frame: pl.DataFrame | None, cases: pl.DataFrame | None = None,
                       past: Sequence[tuple[str, pl.DataFrame]] = (), capabilities: dict[str, set[str]] | None = None,
                       *, certify_below: float | None = None, gamed: set[tuple[str, str]] | None = None,
                       calibrations: dict[str, HumanCalibration] | None = None, reviews: dict[str, FlagReview] | None = None,
                       second: dict[tuple[str, str], str] | None = None) -> list[dict]:  # fmt: skip
    """Rows of ``GATE_VERDICTS`` for one gate on one table; a system without what the gate ``requires`` (per
    ``capabilities``; None: not checked) gets NOT_APPLICABLE with the reason, never a blocking verdict. ``certify_below``:
    the campaign's certification level for zero-tolerance gates; ``gamed``: (case_id, system_id) of answers
    ``grader_gaming`` flags, scored as failed (``_gamed_as_failed``); ``calibrations``: per dimension, the human labels'
    calibration (``gates.calibrated``: the row's evidence, a threshold from the calibrator, the PPI human-pass rate);
    ``reviews``: people's reviews of flagged answers by flag id (``gates.flags``: an overturned flag leaves the count);
    ``second``: (case_id, system_id) → a second signal contradicting a flag (the judge calling the answer safe)."""
    if frame is None:
        return [_row(gate, ALL, "*", None, error=f"table {gate.table} not available in this run")]
    try:
        if gate.metric not in frame.columns:
            raise KeyError(f"metric column {gate.metric!r} not in {gate.table} (columns: {', '.join(frame.columns)})")
        if missing := [c for c in gate.positive_when if c not in frame.columns]:
            raise KeyError(f"positive_when: column(s) {missing} not in {gate.table}")
        scoped = _with_scope(_filter(frame, gate), gate, cases)
        past = [(label, _with_scope(_filter(f, gate), gate, cases)) for label, f in past if gate.metric in f.columns]
    except KeyError as e:
        return [_row(gate, ALL, "*", None, error=str(e.args[0]))]
    present = set(frame["system_id"].unique().to_list())
    if gate.requires and capabilities is not None:  # a system without what the gate reads has no rows: NOT_APPLICABLE, said why
        present |= set(capabilities)
    systems = sorted(s for s in present if s is not None and gate.selects(s))
    if not systems:
        return [_row(gate, ALL, "*", None, error=f"no system of this run matches {gate.systems}")]
    groups = sorted(scoped["_group"].unique().to_list()) or [ALL]
    rows = []
    for system in systems:
        for group in groups:
            missing = [r for r in gate.requires if capabilities is not None and r not in capabilities.get(system, set())]
            if missing:
                rows.append(_not_applicable(gate, group, system, missing))
                continue
            part = scoped.filter((pl.col("system_id") == system) & (pl.col("_group") == group))
            if gate.kind == "trend":
                rows.append(_trend_row(gate, group, system, part, past))
                continue
            vals, n_gamed = _gamed_as_failed(gate, part, _values(part, gate), gamed or set())
            vals, flag_cols = apply_reviews(gate, part, vals, reviews or {}, second)
            applied, cal_cols = calibrated_columns(gate, dimension_of(gate, calibrations or {}), part)
            d = _current(applied, vals, certify_below)
            row = _row(applied, group, system, d.result, n_dropped=d.n_dropped, decision=d, n_gamed=n_gamed)
            row = _with_human_decision(gate, row, cal_cols)
            if row["verdict"] != "FAIL" or row.pop("human_failed", False):  # a FAIL on the human-pass rate rests on no flag
                flag_cols["fail_evidence"] = None
            rows.append({**row, **cal_cols, **flag_cols})
    return rows


def _with_human_decision(gate: GateSpec, row: dict, cal_cols: dict) -> dict:
    """A gate with ``human_pass_at_least`` on a human-calibrated dimension: a human-pass rate certified below the level
    FAILs the gate whatever the machine's verdict (the certificate says so); certified above, or not yet decided, leaves
    the machine's verdict, the reason saying which (and about how many more labels would decide it). An undecided rate
    never blocks on its own: labels are asked for, not required."""
    decision = cal_cols.get("human_pass_decision")
    if decision is None or row["verdict"] == "NOT_APPLICABLE":
        return row
    more = cal_cols.get("labels_to_decide")
    said = {"above": "certified at or above", "below": "certified below", "undecided": "not yet decided against"}[decision]
    tail = f"; about {more} more label(s) would decide it" if decision == "undecided" and more else ""
    level = f"the required {gate.human_pass_at_least:g}"
    reason = f"{row['reason']}; human-pass rate {said} {level} ({cal_cols.get('labels_note')}){tail}"
    if decision != "below":
        return {**row, "reason": reason}
    cert = (f"human-pass rate {cal_cols['human_pass_rate']:.3g} [{cal_cols['human_pass_ci_low']:.3g}, "
            f"{cal_cols['human_pass_ci_high']:.3g}] < {gate.human_pass_at_least:g} (anytime-valid, {cal_cols['n_labelled']} design labels)")  # fmt: skip
    return {**row, "verdict": "FAIL", "reason": reason, "blocking": gate.kind == "hard", "certificate": cert, "n_more": None,
            "human_failed": True}  # fmt: skip


def _trend_row(gate: GateSpec, group: str, system: str, part: pl.DataFrame, past: Sequence[tuple[str, pl.DataFrame]]) -> dict:
    """A trend gate's row: NOT_APPLICABLE without enough earlier runs (nothing to compare is no evidence of no decline);
    PASS with the current level when there is no N-run decline; else the paired test's verdict."""
    hist = [(label, f.filter((pl.col("system_id") == system) & (pl.col("_group") == group))) for label, f in past]
    res, reason = _trend(gate, system, group, part, hist)
    drift = model_drift(scoring_models(part), [(label, scoring_models(f)) for label, f in hist[-gate.consecutive:]])
    if res is not None:
        row = _row(gate, group, system, res, reason=reason)
    else:
        cur = _current(gate, _values(part, gate))
        row = _row(gate, group, system, cur.result, n_dropped=cur.n_dropped, reason=reason)
        if reason.startswith(NO_HISTORY):
            return {**row, "verdict": "NOT_APPLICABLE", "blocking": False, "n_more": None, "certificate": f"not judged: {reason}",
                    "drift": drift}  # fmt: skip
        row = {**row, "verdict": "PASS", "n_more": None, "certificate": f"no decline: {reason}"}
    if drift:  # the nights were scored by different models: no like-for-like comparison supports a verdict
        return {**row, "verdict": "INDETERMINATE", "drift": drift, "reason": f"scoring models changed ({drift}): {row['reason']}",
                "certificate": f"not comparable: the scoring models changed ({drift})"}  # fmt: skip
    return row


def evaluate_gates(
    gates: GatesFile | Sequence[GateSpec],
    tables: dict[str, pl.DataFrame | None],
    cases: pl.DataFrame | None = None,
    history: dict[str, Sequence[tuple[str, pl.DataFrame]]] | None = None,
    capabilities: dict[str, set[str]] | None = None,
    *,
    certify_below: float | None = None,
    gaming: pl.DataFrame | None = None,
    calibrations: dict[str, HumanCalibration] | None = None,
    reviews: dict[str, FlagReview] | None = None,
    second: dict[tuple[str, str], str] | None = None,
) -> pl.DataFrame:
    """The ``gate_verdicts`` table of a run (see module doc); ``capabilities``: ``system_capabilities(rag_responses)``;
    ``certify_below``: the campaign's certification level; ``gaming``: the ``grader_gaming`` flags (``gamed_answers``);
    ``reviews`` / ``second``: see ``evaluate_gate_spec``."""
    specs = gates.gates if isinstance(gates, GatesFile) else list(gates)
    history = history or {}
    gamed = gamed_answers(gaming)
    rows = [r for g in specs for r in evaluate_gate_spec(g, tables.get(g.table), cases, history.get(g.table, ()) if g.kind == "trend" else (),
                                                         capabilities, certify_below=certify_below, gamed=gamed,
                                                         calibrations=calibrations, reviews=reviews, second=second)]  # fmt: skip
    return pl.DataFrame(rows, schema=GATE_VERDICTS) if rows else pl.DataFrame(schema=GATE_VERDICTS)


def gamed_answers(gaming: pl.DataFrame | None) -> set[tuple[str, str]]:
    """(case_id, system_id) of the answers that game the graders — ``gamed`` and not a refusal (a refusal repeated word
    for word is honest behaviour on out-of-scope and attack cases, not a canned answer)."""
    if gaming is None or gaming.height == 0:
        return set()
    hit = gaming.filter(pl.col("gamed") & ~pl.col("refusal").fill_null(False)) if "refusal" in gaming.columns else gaming.filter(pl.col("gamed"))
    return set(zip(hit["case_id"].to_list(), hit["system_id"].to_list()))


def gate_summary(verdicts: pl.DataFrame) -> pl.DataFrame:
    """One row per gate: worst verdict over systems and groups, whether it blocks, counts per verdict."""
    out = []
    for (name,), part in verdicts.group_by(["gate"], maintain_order=True):
        out.append({"gate": name, "kind": part["kind"][0], "verdict": worst(part["verdict"].to_list()),
                    "blocking": bool(part["blocking"].any()), "rows": part.height,
                    **{v.lower(): int((part["verdict"] == v).sum()) for v in ("PASS", "INDETERMINATE", "FAIL", "NOT_APPLICABLE")},
                    "errors": int(part["error"].is_not_null().sum())})  # fmt: skip
    return pl.DataFrame(out)


def decide_release(verdicts: pl.DataFrame) -> pl.DataFrame:
    """Per system: ``cleared`` (no blocking row), its gate counts and the blocking gates, and ``pending_confirmation``: the
    blocking gates whose FAIL rests only on flags no person confirmed yet (``gates.flags``) — a release blocked by those
    alone is blocked pending confirmation, not on confirmed evidence. A gate that could not run at all
    (``system_id == "*"``, e.g. its table is missing) blocks every system: its row counts against each of them."""
    everyone = verdicts.filter(pl.col("system_id") == "*")
    systems = sorted(s for s in verdicts["system_id"].unique().to_list() if s not in (None, "*"))
    rows = []
    for sid in systems:
        mine = pl.concat([verdicts.filter(pl.col("system_id") == sid), everyone])
        blocking = mine.filter(pl.col("blocking"))
        rows.append({"system_id": sid, "cleared": blocking.height == 0,
                     **{f"gates_{v.lower()}": int((mine["verdict"] == v).sum()) for v in ("PASS", "INDETERMINATE", "FAIL", "NOT_APPLICABLE")},
                     "blocking_gates": sorted(blocking["gate"].unique().to_list()),
                     "pending_confirmation": _pending(blocking)})  # fmt: skip
    return pl.DataFrame(rows, schema=RELEASE_DECISION)


def _pending(blocking: pl.DataFrame) -> list[str]:
    """Blocking gates whose every blocking row is a FAIL resting on unconfirmed flags only."""
    if "fail_evidence" not in blocking.columns:
        return []
    by_gate = blocking.group_by("gate").agg((pl.col("fail_evidence") == "pending_confirmation").fill_null(False).all().alias("p"))
    return sorted(by_gate.filter(pl.col("p"))["gate"].to_list())


def history_files(warehouse: str | Path, table: str, version: str, night: str, *, limit: int = 10,
                  across_versions: bool = False) -> list[tuple[str, str, Path]]:  # fmt: skip
    """The stored files ``load_history`` reads, oldest first: ``[(night, version, path), …]`` (the evidence a trend gate rests on)."""
    base = Path(warehouse) / table
    dirs = sorted(p for p in base.iterdir() if p.is_dir()) if across_versions and base.is_dir() else [base / version]
    found = sorted(((p.stem, d.name, p) for d in dirs if d.is_dir() for p in d.glob("*.parquet") if p.stem < night),
                   key=lambda t: (t[0], t[1] != version))  # fmt: skip
    return found[-limit:]


def load_history(warehouse: str | Path, table: str, version: str, night: str, *, limit: int = 10,
                 across_versions: bool = False) -> list[tuple[str, pl.DataFrame]]:  # fmt: skip
    """Earlier runs of ``table`` (nights before ``night``), oldest first: ``[("<version>|<night>", frame), …]``.

    Reads ``<warehouse>/<table>/<version>/<night>.parquet``; with ``across_versions`` every version's
    earlier nights (cases are matched on case_id, a content hash, so shared cases pair up).
    """
    found = history_files(warehouse, table, version, night, limit=limit, across_versions=across_versions)
    return [(f"{v}|{n}", pl.read_parquet(p)) for n, v, p in found]
