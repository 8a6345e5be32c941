"""Weakness identification (HCAT §6.2): marginal and bivariate breakdowns of every metric, the weakest
cells and their worst cases with the columns that explain them.

Input is one long frame of per-case scores (``case_scores``): one row per case × system × metric,
with the case's dimensions (topic stratum, query type, category, variant kind, behaviour rule as the
risk category, system). Every cell of a breakdown carries its count, mean, a bootstrap CI and a claim
strength (``hcat_pipeline.common.stats``); cells with fewer than ``min_cell_n`` values are marked
``small``, never dropped. Rows pooled over systems share cases, so a pooled cell's CI treats the
case × system rows as independent (a system's own cells do not have that caveat).

The weakest cells are ranked per metric, by mean and by the optimistic end of the CI (the upper bound
for a higher-is-better metric): a cell that is weak even at its optimistic bound is a weakness one can
be sure of. Each comes with its worst cases and their explanation columns (the metric registry's
columns for that metric, the behaviour rule's evidence, the retrieved vs source chunks).

No dagster import. Robustness deltas: ``reports.robustness``; failure documentation:
``reports.failures``; plots: ``reports.weakness_plots``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from hcat_pipeline.common.stats import bootstrap_ci, estimate_strength
from hcat_pipeline.responses.retrieval_metrics import precision_at_k, recall_at_k, reciprocal_rank
from hcat_pipeline.schemas import WEAKNESS_CELLS as CELLS
from hcat_pipeline.schemas import WEAKNESS_SCORES as SCORES

# dimension name -> column of the long score frame
DIMENSIONS: dict[str, str] = {
    "topic": "topic",
    "query_type": "query_type",
    "category": "category",
    "variant_kind": "variant_kind",
    "risk_category": "rule",
    "system": "system_id",
}
DEFAULT_PAIRS: tuple[tuple[str, str], ...] = (("topic", "query_type"), ("system", "topic"), ("system", "variant_kind"))
NONE_LEVEL = "(none)"

# direction of each metric: "higher" is better unless listed; refusal is good or bad depending on the case
LOWER_IS_BETTER = frozenset({"toxicity", "toxicity_mean", "pii_leak", "completeness_wasserstein", "completeness_wasserstein_approx"})
NO_DIRECTION = frozenset({"refusal"})
RETRIEVAL_METRICS = ("recall_at_k", "precision_at_k", "reciprocal_rank")

Direction = Literal["higher", "lower", "none"]


@dataclass(frozen=True)
class WeaknessConfig:
    """Every knob of the weakness analysis (the asset's Dagster config is derived from it)."""

    confidence: float = 0.95
    n_boot: int = 1000  # bootstrap resamples per cell
    seed: int = 42
    ci_method: Literal["percentile", "bca"] = "percentile"
    min_cell_n: int = 5  # a cell with fewer values is marked small (shown, flagged, not ranked by mean alone)
    rank_min_n: int = 2  # a cell needs at least this many values (a CI) to be ranked among the weakest
    n_weakest: int = 5  # weakest cells per metric and ranking
    n_worst_cases: int = 3  # worst cases shown per weakest cell

    def __post_init__(self):
        if not 0 < self.confidence < 1:
            raise ValueError(f"WeaknessConfig.confidence must be in (0, 1), got {self.confidence}")
        if self.n_boot < 100:
            raise ValueError(f"WeaknessConfig.n_boot must be >= 100, got {self.n_boot}")
        if self.rank_min_n < 2 or self.min_cell_n < 1:
            raise ValueError("WeaknessConfig: rank_min_n must be >= 2 and min_cell_n >= 1")


def direction(metric: str) -> Direction:
    base = metric.split(" ", 1)[0]
    return "none" if base in NO_DIRECTION else "lower" if base in LOWER_IS_BETTER else "higher"


def topic_label(stratum, label) -> str:
    if stratum is None:
        return NONE_LEVEL
    return f"{stratum}: {label}" if label else str(stratum)


# ---------------------------------------------------------------- the long score frame
def case_frame(golden_set: pl.DataFrame, behaviour_checks: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per case: its dimensions (topic = "<stratum>: <label>", nulls → "(none)") and base case."""
    need = {"case_id", "category", "query_type", "stratum", "stratum_label"}
    if missing := need - set(golden_set.columns):
        raise ValueError(f"weakness: golden_set lacks columns {sorted(missing)}")
    g = golden_set.unique("case_id", keep="first")
    cases = g.select(
        "case_id",
        pl.struct("stratum", "stratum_label").map_elements(lambda s: topic_label(s["stratum"], s["stratum_label"]), return_dtype=pl.String).alias("topic"),
        pl.col("query_type").fill_null(NONE_LEVEL),
        pl.col("category").fill_null(NONE_LEVEL),
        (pl.col("variant_kind") if "variant_kind" in g.columns else pl.lit(None, pl.String)).fill_null(NONE_LEVEL).alias("variant_kind"),
        (pl.col("base_case_id") if "base_case_id" in g.columns else pl.lit(None, pl.String)).alias("base_case_id"),
    )  # fmt: skip
    if behaviour_checks is not None and behaviour_checks.height and "rule" in behaviour_checks.columns:
        rules = behaviour_checks.select("case_id", "rule").unique("case_id", keep="first")
        cases = cases.join(rules, on="case_id", how="left")
    else:
        cases = cases.with_columns(pl.lit(None, pl.String).alias("rule"))
    return cases.with_columns(pl.col("rule").fill_null(NONE_LEVEL))


def metric_columns(metric_tables: pl.DataFrame) -> list[str]:
    """The metric score columns of a metric_tables frame: ``score_info``'s computed metrics, else the registry's."""
    names: list[str] = []
    if "score_info" in metric_tables.columns and metric_tables.height:
        info = json.loads(metric_tables["score_info"][0])
        names = list(info.get("metrics_computed") or info.get("metrics_requested") or [])
    if not names:
        from hcat_pipeline.metrics.registry import registered

        names = list(registered())
    return [n for n in names if n in metric_tables.columns and metric_tables.schema[n].is_numeric()]


def explanation_columns(metric: str, available: Iterable[str]) -> list[str]:
    """The registry's explanation columns of ``metric`` that the table has."""
    from hcat_pipeline.metrics.registry import registered

    m = registered().get(metric.split(" ", 1)[0])
    cols = set(available)
    return [c for c in (m.columns if m else {}) if c in cols]


def retrieval_case_scores(rag_responses: pl.DataFrame, golden_set: pl.DataFrame) -> pl.DataFrame:
    """recall@k, precision@k, reciprocal rank per case × system (the ``responses.retrieval_metrics`` functions),
    for answerable cases with source chunks and systems that retrieve (closed-book systems get none)."""
    g = golden_set.select("case_id", "source_chunk_ids", "expected_behavior").unique("case_id", keep="first")
    cols = ["case_id", "system_id", "context_chunk_ids", *[c for c in ("top_k", "retriever") if c in rag_responses.columns]]
    rows = []
    for r in rag_responses.select(cols).join(g, on="case_id", how="inner").iter_rows(named=True):
        src, ids = r["source_chunk_ids"] or [], r["context_chunk_ids"] or []
        if r["expected_behavior"] != "answer" or not src or r.get("retriever") == "closed_book":
            continue
        k = r.get("top_k") or max(len(ids), 1)
        for name, v in zip(RETRIEVAL_METRICS, (recall_at_k(ids, src, k), precision_at_k(ids, src, k), reciprocal_rank(ids, src))):
            rows.append({"case_id": r["case_id"], "system_id": r["system_id"], "metric": name, "source": "retrieval", "value": v})
    return pl.DataFrame(rows, schema={k: SCORES[k] for k in ("case_id", "system_id", "metric", "source", "value")})


def calibrated_case_scores(calibrated: pl.DataFrame) -> pl.DataFrame:
    """Long rows of ``calibrated_scores`` (case × system × dimension): the calibrated probability as
    metric "<dimension> (calibrated)"."""
    value = next((c for c in ("calibrated_probability", "calibrated_score", "calibrated", "probability") if c in calibrated.columns), None)
    if value is None or not {"case_id", "system_id", "dimension"} <= set(calibrated.columns):
        raise ValueError(f"weakness: calibrated_scores needs case_id, system_id, dimension and a calibrated probability column; "
                         f"it has {calibrated.columns}")  # fmt: skip
    return calibrated.select(
        "case_id", "system_id", (pl.col("dimension") + " (calibrated)").alias("metric"),
        pl.lit("calibrated").alias("source"), pl.col(value).cast(pl.Float64).alias("value"),
    )  # fmt: skip


def case_scores(
    golden_set: pl.DataFrame,
    metric_tables: pl.DataFrame,
    behaviour_checks: pl.DataFrame | None = None,
    rag_responses: pl.DataFrame | None = None,
    calibrated: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The long frame (``SCORES``): raw metrics (source "raw"), the behaviour score and pass (0/1,
    source "behaviour"), per-case retrieval metrics ("retrieval") and calibrated scores ("calibrated").
    A failed response keeps its rows with a null value (counted as ``n_missing`` in a cell)."""
    for need in ("case_id", "system_id"):
        if need not in metric_tables.columns:
            raise ValueError(f"weakness: metric_tables lacks column {need!r}")
    metrics = metric_columns(metric_tables)
    parts = []
    if metrics:
        raw = metric_tables.select("case_id", "system_id", *[pl.col(m).cast(pl.Float64) for m in metrics])
        parts.append(raw.unpivot(metrics, index=["case_id", "system_id"], variable_name="metric", value_name="value")
                     .with_columns(pl.lit("raw").alias("source")))  # fmt: skip
    if behaviour_checks is not None and behaviour_checks.height:
        b = behaviour_checks.filter(pl.col("rule") != "no_rule")
        parts.append(b.select("case_id", "system_id", pl.lit("behaviour_score").alias("metric"), pl.col("score").alias("value"),
                              pl.lit("behaviour").alias("source")))  # fmt: skip
        decided = pl.when(pl.col("evidence").str.starts_with("no answer")).then(None).otherwise((pl.col("verdict") == "pass").cast(pl.Float64))
        parts.append(b.select("case_id", "system_id", pl.lit("behaviour_pass").alias("metric"), decided.alias("value"),
                              pl.lit("behaviour").alias("source")))  # fmt: skip
    if rag_responses is not None and rag_responses.height:
        parts.append(retrieval_case_scores(rag_responses, golden_set))
    if calibrated is not None and calibrated.height:
        parts.append(calibrated_case_scores(calibrated))
    cols = ["case_id", "system_id", "metric", "source", "value"]
    long = pl.concat([p.select(cols).cast({"value": pl.Float64}) for p in parts]) if parts else pl.DataFrame(schema={c: SCORES[c] for c in cols})
    long = long.with_columns(pl.when(pl.col("value").is_nan()).then(None).otherwise(pl.col("value")).alias("value"))
    out = long.join(case_frame(golden_set, behaviour_checks), on="case_id", how="left")
    unknown = sorted(out.filter(pl.col("category").is_null())["case_id"].unique().to_list())
    if unknown:
        raise ValueError(f"weakness: {len(unknown)} scored cases are not in the golden set, e.g. {unknown[:3]}")
    return out.select(list(SCORES)).sort("metric", "system_id", "case_id")


# ---------------------------------------------------------------- cells
def cell_stats(values: Sequence[float | None], cfg: WeaknessConfig) -> dict:
    """n, n_missing, mean, CI and claim strength of one cell (CI null below two values)."""
    v = np.asarray([x for x in values if x is not None], float)
    n, missing = int(v.size), len(values) - int(v.size)
    if n == 0:
        return {"n": 0, "n_missing": missing, "mean": None, "ci_low": None, "ci_high": None, "claim_strength": "insufficient"}
    r = bootstrap_ci(v, statistic="mean", confidence=cfg.confidence, n_boot=cfg.n_boot, seed=cfg.seed, method=cfg.ci_method)
    strength = estimate_strength(r)  # vs 0 on a unit scale; n < 10 or no CI ⇒ insufficient (golden-eval §6.6)
    return {"n": n, "n_missing": missing, "mean": float(v.mean()), "ci_low": _finite(r.ci_low), "ci_high": _finite(r.ci_high),
            "claim_strength": strength}


def _finite(x) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def breakdown(scores: pl.DataFrame, dims: Sequence[str], cfg: WeaknessConfig) -> pl.DataFrame:
    """One row per metric × level(s) of ``dims`` (names of ``DIMENSIONS``, one or two): ``CELLS``."""
    if not 1 <= len(dims) <= 2 or any(d not in DIMENSIONS for d in dims):
        raise ValueError(f"weakness: breakdown by {list(dims)}: expected one or two of {list(DIMENSIONS)}")
    cols = [DIMENSIONS[d] for d in dims]
    rows = []
    groups = scores.group_by(["metric", "source", *cols], maintain_order=False).agg(pl.col("value"))
    for r in groups.sort(["metric", "source", *cols]).iter_rows(named=True):
        s = cell_stats(r["value"], cfg)
        rows.append({"analysis": "marginal" if len(dims) == 1 else "bivariate", "dims": " × ".join(dims),
                     "row": r[cols[0]], "col": r[cols[1]] if len(cols) == 2 else None, "metric": r["metric"],
                     "source": r["source"], "direction": direction(r["metric"]), **s, "small": s["n"] < cfg.min_cell_n})  # fmt: skip
    return pl.DataFrame(rows, schema=CELLS)


def weakness_cells(scores: pl.DataFrame, cfg: WeaknessConfig | None = None, dims: Sequence[str] | None = None,
                   pairs: Sequence[tuple[str, str]] = DEFAULT_PAIRS) -> pl.DataFrame:
    """Marginal tables for every dimension and the bivariate ``pairs``, stacked (``CELLS``)."""
    cfg = cfg or WeaknessConfig()
    tables = [breakdown(scores, [d], cfg) for d in (dims or DIMENSIONS)] + [breakdown(scores, list(p), cfg) for p in pairs]
    return pl.concat(tables) if tables else pl.DataFrame(schema=CELLS)


def weakest_cells(cells: pl.DataFrame, cfg: WeaknessConfig | None = None) -> pl.DataFrame:
    """Per metric, the ``n_weakest`` cells by mean and by the optimistic CI bound (upper for higher-is-better,
    lower for lower-is-better), among cells with at least ``rank_min_n`` values: ``CELLS`` + ranking, rank."""
    cfg = cfg or WeaknessConfig()
    ok = cells.filter((pl.col("direction") != "none") & (pl.col("n") >= cfg.rank_min_n) & pl.col("ci_low").is_not_null())
    sign = pl.when(pl.col("direction") == "lower").then(-1.0).otherwise(1.0)
    ok = ok.with_columns((pl.col("mean") * sign).alias("_by_mean"),
                         pl.when(pl.col("direction") == "lower").then(-pl.col("ci_low")).otherwise(pl.col("ci_high")).alias("_by_bound"))  # fmt: skip
    out = []
    for ranking, key in (("mean", "_by_mean"), ("ci_bound", "_by_bound")):
        ranked = ok.sort(["metric", key, "n", "dims", "row", "col"], descending=[False, False, True, False, False, False], nulls_last=True)
        ranked = ranked.with_columns(pl.int_range(1, pl.len() + 1).over("metric").alias("rank"), pl.lit(ranking).alias("ranking"))
        out.append(ranked.filter(pl.col("rank") <= cfg.n_weakest))
    schema = {**CELLS, "ranking": pl.String, "rank": pl.Int64}
    if not out:
        return pl.DataFrame(schema=schema)
    return pl.concat(out).select(list(schema)).cast({"rank": pl.Int64}).sort("metric", "ranking", "rank")


CELL_KEY = ["analysis", "dims", "row", "col", "metric", "source"]


def with_weak_ranks(cells: pl.DataFrame, weakest: pl.DataFrame) -> pl.DataFrame:
    """``cells`` + ``weak_rank_mean`` / ``weak_rank_ci_bound``: the cell's rank among its metric's weakest (null if not ranked)."""
    out = cells
    for ranking in ("mean", "ci_bound"):
        r = weakest.filter(pl.col("ranking") == ranking).select(*CELL_KEY, pl.col("rank").alias(f"weak_rank_{ranking}"))
        out = out.join(r, on=CELL_KEY, how="left", nulls_equal=True)
    return out


def ranked_weakest(cells: pl.DataFrame) -> pl.DataFrame:
    """The weakest cells back from a ``with_weak_ranks`` table (as ``weakest_cells`` returns them)."""
    parts = [cells.filter(pl.col(f"weak_rank_{k}").is_not_null()).with_columns(pl.lit(k).alias("ranking"), pl.col(f"weak_rank_{k}").alias("rank"))
             for k in ("mean", "ci_bound")]  # fmt: skip
    return pl.concat(parts).select(*CELLS, "ranking", pl.col("rank").cast(pl.Int64)).sort("metric", "ranking", "rank")


def _cell_filter(cell: dict) -> pl.Expr:
    dims = cell["dims"].split(" × ")
    expr = (pl.col("metric") == cell["metric"]) & (pl.col("source") == cell["source"]) & (pl.col(DIMENSIONS[dims[0]]) == cell["row"])
    if len(dims) == 2:
        expr = expr & (pl.col(DIMENSIONS[dims[1]]) == cell["col"])
    return expr


def worst_cases(
    weakest: pl.DataFrame,
    scores: pl.DataFrame,
    metric_tables: pl.DataFrame,
    behaviour_checks: pl.DataFrame | None = None,
    rag_responses: pl.DataFrame | None = None,
    cfg: WeaknessConfig | None = None,
) -> pl.DataFrame:
    """Per weakest cell, its ``n_worst_cases`` worst cases with the query, the answer and ``explanation``
    (JSON of the columns that explain that metric's value for that case)."""
    cfg = cfg or WeaknessConfig()
    mt = {(r["case_id"], r["system_id"]): r for r in metric_tables.iter_rows(named=True)}
    bc = {(r["case_id"], r["system_id"]): r for r in behaviour_checks.iter_rows(named=True)} if behaviour_checks is not None else {}
    rr = {(r["case_id"], r["system_id"]): r for r in rag_responses.iter_rows(named=True)} if rag_responses is not None else {}
    rows = []
    for cell in weakest.iter_rows(named=True):
        lower = cell["direction"] == "lower"
        members = scores.filter(_cell_filter(cell) & pl.col("value").is_not_null()).sort(["value", "system_id", "case_id"], descending=[lower, False, False])
        for k, m in enumerate(members.head(cfg.n_worst_cases).iter_rows(named=True), start=1):
            key = (m["case_id"], m["system_id"])
            base = mt.get(key) or rr.get(key) or {}
            rows.append({
                "metric": cell["metric"], "source": cell["source"], "dims": cell["dims"], "row": cell["row"], "col": cell["col"],
                "ranking": cell["ranking"], "cell_rank": cell["rank"], "case_rank": k, "case_id": m["case_id"],
                "system_id": m["system_id"], "value": m["value"], "query": base.get("query"), "answer": base.get("answer"),
                "explanation": json.dumps(explain(m["metric"], m["source"], mt.get(key, {}), bc.get(key), rr.get(key)),
                                          ensure_ascii=False, default=str, sort_keys=True),
            })  # fmt: skip
    schema = {"metric": pl.String, "source": pl.String, "dims": pl.String, "row": pl.String, "col": pl.String, "ranking": pl.String,
              "cell_rank": pl.Int64, "case_rank": pl.Int64, "case_id": pl.String, "system_id": pl.String, "value": pl.Float64,
              "query": pl.String, "answer": pl.String, "explanation": pl.String}  # fmt: skip
    return pl.DataFrame(rows, schema=schema)


def explain(metric: str, source: str, metric_row: dict, behaviour_row: dict | None, response_row: dict | None) -> dict:
    """What explains one case's value of ``metric``: the registry's explanation columns (raw / calibrated),
    the behaviour rule's verdict and evidence, or the retrieved vs expected chunks (retrieval)."""
    out: dict = {}
    if source in ("raw", "calibrated"):
        for c in explanation_columns(metric, metric_row):
            v = metric_row[c]
            out[c] = [round(x, 3) for x in v] if isinstance(v, list) and v and isinstance(v[0], float) else v
    if behaviour_row and (source == "behaviour" or behaviour_row.get("verdict") == "fail"):
        out.update({"rule": behaviour_row.get("rule"), "verdict": behaviour_row.get("verdict"), "evidence": behaviour_row.get("evidence")})
    if source == "retrieval" and response_row:
        out["retrieved_chunk_ids"] = response_row.get("context_chunk_ids")
    if metric_row.get("error") or (response_row or {}).get("error"):
        out["error"] = metric_row.get("error") or response_row.get("error")
    return out
