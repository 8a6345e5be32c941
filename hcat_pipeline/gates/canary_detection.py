"""Would these gates catch a broken system? Each canary (``gates.canaries``) against the verdicts its fault declares.

``canary_detection(...)`` → one row per canary × expectation (``CANARY_DETECTION``):

* ``gate:<name>`` — the gate must FAIL for the canary (any of its scope groups) and *not* for its parent: a gate the
  honest parent fails too does not tell them apart (said so, not caught). When the gate is NOT_APPLICABLE to the parent
  (a closed-book parent has no context to be grounded in), the expectation is not applicable either: ``caught`` null,
  left out of the detection rate, said why. A gate INDETERMINATE for the canary only for want of cases (the gate names
  how many more would decide it, ``n_more``) is *undecided at this budget*: null too, said so with n and n_more —
  the night was too small to test it, which is not the gate missing the fault.
* ``moves:<metric>`` — the paired bootstrap CI of (canary − parent) over the cases of the move's scope both answered
  excludes 0 on the declared side. ``answer_correct`` is the behaviour rule's pass (1) / other verdict (0); ``gamed``
  the grader-gaming flag; ``latency_s`` and ``cost_usd`` come from the responses; anything else is a ``metric_tables``
  column. A scope with fewer than 2 cases (e.g. no yes/no case whose reference is "No") is not testable: null, said why.
* ``rank_below_parent`` — on the ranking metrics, scored as the rankings score them (a gamed answer 0:
  ``gates.gaming.ungamed``), the canary is ranked below its parent (mean paired difference with its CI below 0) on at
  least one and above on none.
* ``off_frontier`` — on the Pareto frontier of the user's systems plus this canary, the canary is dominated.

``detection_summary(table)`` — per canary caught / missed (every applicable expectation met), and the detection rate
with its Wilson 95 % CI and n. Pure: polars in, polars out.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from hcat_pipeline.common.canary_ids import drop_canaries, is_canary, parse_canary
from hcat_pipeline.common.stats import paired_bootstrap_ci, wilson_interval
from hcat_pipeline.gates.canaries import CATALOGUE, Move
from hcat_pipeline.gates.gaming import ungamed
from hcat_pipeline.gates.pareto import pareto_frontier, system_axes
from hcat_pipeline.schemas import CANARY_DETECTION

UNDECIDED = "undecided at this budget"
NOT_SEPARABLE = "not separable"

RESPONSE_METRICS = ("latency_s", "cost_usd")


def metric_values(metric: str, metric_tables: pl.DataFrame, behaviour_checks: pl.DataFrame, responses: pl.DataFrame,
                  gaming: pl.DataFrame | None = None) -> pl.DataFrame | None:  # fmt: skip
    """case_id, system_id, value of ``metric`` (None when no table has it)."""
    if metric == "answer_correct":
        f = behaviour_checks.filter(pl.col("rule") == "answer_correct")
        return f.select("case_id", "system_id", (pl.col("verdict") == "pass").cast(pl.Float64).alias("value"))
    if metric == "gamed":
        return None if gaming is None else gaming.select("case_id", "system_id", pl.col("gamed").cast(pl.Float64).alias("value"))
    source = responses if metric in RESPONSE_METRICS else metric_tables
    if metric not in source.columns:
        return None
    return source.select("case_id", "system_id", pl.col(metric).cast(pl.Float64).alias("value"))


def paired(values: pl.DataFrame, canary: str, parent: str) -> tuple[list[float], list[float]]:
    a = values.filter(pl.col("system_id") == canary).select("case_id", pl.col("value").alias("c"))
    b = values.filter(pl.col("system_id") == parent).select("case_id", pl.col("value").alias("p"))
    both = a.join(b, on="case_id").drop_nulls().filter(pl.col("c").is_finite() & pl.col("p").is_finite()).sort("case_id")
    return both["c"].to_list(), both["p"].to_list()


def _row(canary: str, parent: str, fault: str, check: str, expected: str, observed: str, caught: bool | None, evidence: str) -> dict:
    return {"canary_id": canary, "parent_id": parent, "fault": fault, "check": check, "expected": expected, "observed": observed,
            "caught": caught, "evidence": evidence}  # fmt: skip


def _num(v) -> str:
    return "–" if v is None else f"{v:.3g}"


def _parent_estimate(row: dict, theirs: pl.DataFrame) -> float | None:
    same = theirs.filter(pl.col("group") == row["group"]) if "group" in theirs.columns else theirs
    return (same if same.height else theirs)["estimate"][0] if theirs.height else None


def _worse(row: dict, theirs: pl.DataFrame) -> bool | None:
    """Whether the canary's gate estimate is on the wrong side of its parent's (``<=`` gates: higher is worse)."""
    p = _parent_estimate(row, theirs)
    if row["estimate"] is None or p is None:
        return None
    return row["estimate"] > p if row["direction"] in ("<=", "<") else row["estimate"] < p


def _gate_rows(canary: str, parent: str, fault: str, gates: Sequence[str], verdicts: pl.DataFrame) -> list[dict]:
    out = []
    for gate in gates:
        mine = verdicts.filter((pl.col("gate") == gate) & (pl.col("system_id") == canary))
        theirs = verdicts.filter((pl.col("gate") == gate) & (pl.col("system_id") == parent))
        check, expected = f"gate:{gate}", f"{gate} FAIL"
        if mine.height == 0:
            out.append(_row(canary, parent, fault, check, expected, "gate not evaluated", False,
                            f"the gates file used has no gate {gate!r} for this system: nothing would catch this fault"))
            continue
        parent_v = ", ".join(sorted(set(theirs["verdict"].to_list()))) or "–"
        if theirs.height and (theirs["verdict"] == "NOT_APPLICABLE").all():
            out.append(_row(canary, parent, fault, check, expected, "NOT_APPLICABLE", None, f"not applicable to the parent: {theirs['reason'][0]}"))
            continue
        observed = ", ".join(sorted(set(mine["verdict"].to_list())))
        r = mine.sort("estimate", nulls_last=True).row(0, named=True)
        short = mine.filter((pl.col("verdict") == "INDETERMINATE") & pl.col("n_more").is_not_null()) if "n_more" in mine.columns else mine.clear()
        if short.height and not (mine["verdict"] == "FAIL").any():  # too few cases to decide (in any group): untested, not missed
            u = short.row(0, named=True)
            where = f" (group {u['group']})" if u.get("group") else ""
            out.append(_row(canary, parent, fault, check, expected, observed, None,
                            f"{UNDECIDED}: n={u['n']} in scope{where}, about {u['n_more']} more case(s) would decide it ({u['reason']})"))
            continue
        est = "–" if r["estimate"] is None else f"{r['estimate']:.3g} [{r['ci_low']:.3g}, {r['ci_high']:.3g}] n={r['n']}"
        failed, parent_failed = bool((mine["verdict"] == "FAIL").any()), bool((theirs["verdict"] == "FAIL").any())
        caught, note, head = failed and not parent_failed, "", ""
        if parent_failed:  # the parent fails it too: the gate separates them only if its measurement is worse for the canary
            worse = _worse(r, theirs) if failed else False
            caught = True if worse else None  # not worse: nothing could tell them apart — not separable, not a miss
            head = "" if worse else f"{NOT_SEPARABLE}: the honest parent FAILs {gate} too, so this gate cannot tell the fault apart; "
            note = (f"; the parent FAILs it too, the canary's {r['statistic']} is {'worse' if worse else 'not worse'}"
                    f" ({_num(r['estimate'])} vs {_num(_parent_estimate(r, theirs))})")  # fmt: skip
        out.append(_row(canary, parent, fault, check, expected, observed, caught,
                        f"{head}canary {r['statistic']}({r['metric']}) {est} vs {r['direction']} {r['threshold']:g}; parent: {parent_v}{note}"))
    return out


_SCOPES = {"all": "every case", "answerable": "answerable cases", "reference_no": "yes/no cases whose reference is No"}


def scope_cases(golden: pl.DataFrame | None, on: str) -> set[str] | None:
    """The case ids of a move's scope (None: every case)."""
    if on == "all" or golden is None:
        return None
    if on == "answerable":
        return set(golden.filter(pl.col("expected_behavior") == "answer")["case_id"].to_list())
    no = pl.col("reference_answer").fill_null("").str.strip_chars().str.to_lowercase().str.starts_with("no")
    return set(golden.filter((pl.col("query_type") == "yes_no") & no)["case_id"].to_list())


def _move_row(canary: str, parent: str, fault: str, move: Move, values: pl.DataFrame | None, cases: set[str] | None, seed: int) -> dict:
    metric, direction = move.metric, move.direction
    check = f"moves:{metric}" + ("" if move.on == "all" else f"@{move.on}")
    expected = f"{metric} {'↑' if direction == 'up' else '↓'} vs parent on {_SCOPES[move.on]}"
    if values is None:
        return _row(canary, parent, fault, check, expected, "metric not measured", False, f"no table of this run has {metric!r}")
    if cases is not None:
        values = values.filter(pl.col("case_id").is_in(list(cases)))
    c, p = paired(values, canary, parent)
    if len(c) < 2:
        return _row(canary, parent, fault, check, expected, f"n={len(c)}", None,
                    f"fewer than 2 of {_SCOPES[move.on]} have a value for both: not testable on this golden set")
    d = paired_bootstrap_ci(c, p, "mean", seed=seed)
    caught = d.ci_low > 0 if direction == "up" else d.ci_high < 0
    return _row(canary, parent, fault, check, expected, f"Δ {d.estimate:+.3g} [{d.ci_low:+.3g}, {d.ci_high:+.3g}] n={d.n}", bool(caught),
                f"mean canary − parent over {d.n} shared cases; canary mean {sum(c) / len(c):.3g}, parent {sum(p) / len(p):.3g}")


def _rank_row(canary: str, parent: str, fault: str, ranking_metrics: Sequence[str], metric_tables: pl.DataFrame, seed: int) -> dict:
    """``metric_tables`` already scored as the rankings score it (``ungamed``)."""
    below, above, parts = [], [], []
    for m in ranking_metrics:
        if m not in metric_tables.columns:
            continue
        c, p = paired(metric_tables.select("case_id", "system_id", pl.col(m).cast(pl.Float64).alias("value")), canary, parent)
        if len(c) < 2:
            parts.append(f"{m}: n={len(c)}")
            continue
        d = paired_bootstrap_ci(c, p, "mean", seed=seed)
        (below if d.ci_high < 0 else above if d.ci_low > 0 else []).append(m)
        parts.append(f"{m}: Δ {d.estimate:+.3g} [{d.ci_low:+.3g}, {d.ci_high:+.3g}]")
    caught = bool(below) and not above
    observed = f"below on {below}" if below else ("above on " + str(above) if above else "not separable")
    return _row(canary, parent, fault, "rank_below_parent", "ranked below its parent", observed, caught, "; ".join(parts) or "no ranking metric")


def _frontier_row(canary: str, parent: str, fault: str, responses: pl.DataFrame, metric_tables: pl.DataFrame, quality_metric: str,
                  axis: str | None = None) -> dict:  # fmt: skip
    check, expected = "off_frontier", "dominated on the frontier"
    if quality_metric not in metric_tables.columns:
        return _row(canary, parent, fault, check, expected, "no quality axis", False, f"{quality_metric!r} not in metric_tables")
    only = lambda f: pl.concat([drop_canaries(f), f.filter(pl.col("system_id") == canary)])  # noqa: E731
    table = pareto_frontier(system_axes(only(responses), only(metric_tables), quality_metric))
    row = table.filter(pl.col("system_id") == canary).row(0, named=True)
    parent_row = table.filter(pl.col("system_id") == parent)
    if axis and parent_row.height and parent_row[axis][0] is None:
        return _row(canary, parent, fault, check, expected, f"{axis} unknown", None,
                    f"the parent's {axis} is unknown (e.g. an http system without cost_path / cost_per_call_usd): a copy that "
                    "only differs there cannot be told apart — declare it to test this")  # fmt: skip
    if row["on_frontier"] is None and parent_row.height and parent_row["on_frontier"][0] is None:
        return _row(canary, parent, fault, check, expected, "not placed", None, f"parent not placed either: {parent_row['excluded_reason'][0]}")
    observed = "dominated" if row["on_frontier"] is False else ("on the frontier" if row["on_frontier"] else "not placed")
    return _row(canary, parent, fault, check, expected, observed, row["on_frontier"] is False, row["explanation"])


def canary_detection(gate_verdicts: pl.DataFrame, metric_tables: pl.DataFrame, behaviour_checks: pl.DataFrame,
                     responses: pl.DataFrame, *, ranking_metrics: Sequence[str], quality_metric: str, seed: int = 42,
                     gaming: pl.DataFrame | None = None, golden: pl.DataFrame | None = None) -> pl.DataFrame:  # fmt: skip
    """The ``canary_detection`` table (see module doc); empty when the run has no canary. ``gaming``: grader_gaming
    (gamed answers score 0 for the ranking and the frontier, as the real rankings score them); ``golden``: the cases
    (the scope of a move)."""
    ranked = ungamed(metric_tables, gaming, [*ranking_metrics, quality_metric])
    rows: list[dict] = []
    canaries = sorted({s for s in responses["system_id"].unique().to_list() if is_canary(s)})
    for canary in canaries:
        fault, parent = parse_canary(canary)
        spec = CATALOGUE.get(fault)
        if spec is None:
            rows.append(_row(canary, parent, fault, "catalogue", "a known fault", "unknown fault", False, f"{fault!r} is not in the catalogue"))
            continue
        e = spec.expect
        rows += _gate_rows(canary, parent, fault, e.gates_fail, gate_verdicts)
        for move in e.moves:
            values = metric_values(move.metric, metric_tables, behaviour_checks, responses, gaming)
            rows.append(_move_row(canary, parent, fault, move, values, scope_cases(golden, move.on), seed))
        if e.rank_below_parent:
            rows.append(_rank_row(canary, parent, fault, ranking_metrics, ranked, seed))
        if e.off_frontier:
            rows.append(_frontier_row(canary, parent, fault, responses, ranked, quality_metric, e.frontier_axis))
    return pl.DataFrame(rows, schema=CANARY_DETECTION)


def row_status(caught: bool | None, evidence: str | None) -> str:
    """An expectation's status: met | missed | not_separable (the parent fails the same gate) | undecided (too few
    cases tonight) | not_applicable (to the parent) | untestable (no case of its scope)."""
    if caught is not None:
        return "met" if caught else "missed"
    ev = str(evidence or "")
    return ("not_separable" if ev.startswith(NOT_SEPARABLE) else "undecided" if ev.startswith(UNDECIDED)
            else "not_applicable" if ev.startswith("not applicable") else "untestable")  # fmt: skip


def detection_summary(table: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """Per canary: applicable checks, met, its verdict and why — caught (every applicable expectation met, at least
    one), missed (one not met: the evaluator would let it through), not separable (none met or missed, and its parent
    fails the gates meant for it: nothing could tell them apart), untested (no expectation could be tested tonight);
    and the detection rate over the caught and missed, with its Wilson 95 % CI and n."""
    t = table.with_columns(pl.struct("caught", "evidence").map_elements(lambda r: row_status(r["caught"], r["evidence"]),
                                                                       return_dtype=pl.String).alias("_status"))  # fmt: skip
    per = (t.group_by("canary_id", "parent_id", "fault", maintain_order=True)
           .agg(pl.col("caught").is_not_null().sum().alias("checks"), pl.col("caught").fill_null(False).sum().alias("met"),
                (pl.col("_status") == "missed").any().alias("_missed"), (pl.col("_status") == "not_separable").any().alias("_sep"),
                pl.col("check").filter(pl.col("_status") == "missed").alias("missed_checks"),
                pl.col("evidence").filter(pl.col("_status") != "met").alias("_why"))
           .with_columns(pl.when(pl.col("_missed")).then(pl.lit("missed")).when(pl.col("met") > 0).then(pl.lit("caught"))
                         .when(pl.col("_sep")).then(pl.lit("not separable")).otherwise(pl.lit("untested")).alias("verdict"))
           .with_columns((pl.col("verdict") == "caught").alias("caught"),
                         pl.when(pl.col("verdict") == "caught").then(pl.lit("")).otherwise(pl.col("_why").list.first()).alias("reason"))
           .drop("_missed", "_sep", "_why").sort("canary_id"))  # fmt: skip
    decided = per.filter(pl.col("verdict").is_in(["caught", "missed"]))
    k, n = int(decided["caught"].sum()), decided.height
    lo, hi = wilson_interval(k, n) if n else (None, None)
    return per, {"caught": k, "n": n, "rate": k / n if n else None, "ci_low": lo, "ci_high": hi,
                 "not_separable": int((per["verdict"] == "not separable").sum()), "untested": int((per["verdict"] == "untested").sum())}
