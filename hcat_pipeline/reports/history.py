"""The history page (golden-eval §9.3 dashboards; §7.4 shadow evaluation): one static HTML page with each headline
figure over the nights (golden set) and the days (production traffic), 95 % intervals as bands, gate verdicts and
anomalies marked, the golden set and live traffic of the same service side by side, and the Pareto frontier over time.

Reads the stored tables only (``<warehouse>/metric_tables|gate_verdicts|pareto_frontier/<version>/<night>.parquet``
and ``production_cells/<day>.parquet``); writes ``<reports>/history.html``. matplotlib (Agg) figures as data URIs.
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import matplotlib
import matplotlib.dates

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from hcat_pipeline.common.canary_ids import CANARY_PREFIX  # noqa: E402
from hcat_pipeline.common.images import png_data_uri  # noqa: E402
from hcat_pipeline.common.stats import wilson_interval  # noqa: E402
from hcat_pipeline.golden.coverage import mean_ci  # noqa: E402
from hcat_pipeline.metrics.groundedness import NLI_BOUNDARY  # noqa: E402
from hcat_pipeline.monitoring.signals import rates  # noqa: E402
from hcat_pipeline.reports.campaign_report import environment  # noqa: E402

HEADLINE = ("groundedness_nli", "answer_relevancy")
PRODUCTION_SHOWN = ("ungrounded", "irrelevant", "refused", "error", "negative_feedback")


def _nights(warehouse: Path, table: str) -> pl.DataFrame:
    files = sorted((warehouse / table).glob("*/*.parquet"), key=lambda p: (p.stem, p.parent.name))
    frames = [pl.read_parquet(p).with_columns(pl.lit(p.parent.name).alias("_version"), pl.lit(p.stem).alias("_night")) for p in files]
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def night_series(warehouse: Path) -> pl.DataFrame:
    """night, version, system_id, figure, value, ci_low, ci_high, n: headline means (``golden.coverage.mean_ci``, the t
    interval the nights' summary uses) and the share of
    answers below the groundedness boundary (Wilson) — the golden-set counterpart of production's ``ungrounded``."""
    mt = _nights(warehouse, "metric_tables")
    if mt.is_empty():
        return pl.DataFrame(schema={"night": pl.String, "version": pl.String, "system_id": pl.String, "figure": pl.String,
                                    "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64})  # fmt: skip
    mt = mt.filter(~pl.col("system_id").str.starts_with(CANARY_PREFIX))
    rows = []
    for (night, version, system), part in mt.group_by("_night", "_version", "system_id", maintain_order=True):
        for figure in HEADLINE:
            m = mean_ci(part[figure], bounds=(-1.0, 1.0)) if figure in part.columns else {"n": 0}  # the nights' headline CI
            if m["n"]:
                rows.append((night, version, system, figure, m["mean"], m["ci_low"] if m["ci_low"] is not None else m["mean"],
                             m["ci_high"] if m["ci_high"] is not None else m["mean"], m["n"]))  # fmt: skip
        g = part["groundedness_nli"].drop_nulls() if "groundedness_nli" in part.columns else pl.Series([], dtype=pl.Float64)
        if len(g):
            k = int((g < NLI_BOUNDARY).sum())
            lo, hi = wilson_interval(k, len(g))
            rows.append((night, version, system, "ungrounded", k / len(g), lo, hi, len(g)))
    return pl.DataFrame(rows, schema=["night", "version", "system_id", "figure", "value", "ci_low", "ci_high", "n"], orient="row").sort("night")


def gate_series(warehouse: Path) -> pl.DataFrame:
    gv = _nights(warehouse, "gate_verdicts")
    if gv.is_empty():
        return pl.DataFrame(schema={"night": pl.String, "system_id": pl.String, "FAIL": pl.Int64, "PASS": pl.Int64})
    gv = gv.filter(~pl.col("system_id").str.starts_with(CANARY_PREFIX) & (pl.col("kind") == "hard"))
    return (gv.group_by("_night", "system_id").agg(*(((pl.col("verdict") == v).sum().cast(pl.Int64)).alias(v) for v in ("FAIL", "PASS", "INDETERMINATE")))
            .rename({"_night": "night"}).sort("night", "system_id"))  # fmt: skip


def pareto_series(warehouse: Path) -> pl.DataFrame:
    pf = _nights(warehouse, "pareto_frontier")
    if pf.is_empty() or "on_frontier" not in pf.columns:
        return pl.DataFrame(schema={"night": pl.String, "system_id": pl.String, "quality": pl.Float64, "latency_p50_s": pl.Float64, "on_frontier": pl.Boolean})
    return (pf.filter(~pl.col("system_id").str.starts_with(CANARY_PREFIX))
            .select(pl.col("_night").alias("night"), "system_id", "quality", "latency_p50_s", "on_frontier").sort("night", "system_id"))  # fmt: skip


def production_series(warehouse: Path) -> pl.DataFrame:
    files = sorted((warehouse / "production_cells").glob("*.parquet"))
    return rates(pl.concat([pl.read_parquet(p) for p in files])) if files else rates(pl.DataFrame(
        schema={"day": pl.String, "stratum": pl.Int32, "signal": pl.String, "n": pl.Int64, "k": pl.Int64, "sw": pl.Float64,
                "swy": pl.Float64, "sw2": pl.Float64}))  # fmt: skip


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return png_data_uri(buf.getvalue())


def _dates(days: list[str]) -> list[dt.date]:
    return [dt.date.fromisoformat(d) for d in days]


def _date_axis(ax) -> None:
    """Dates slanted; a single night or day gets a week around it (matplotlib would stretch one date over years)."""
    ax.tick_params(axis="x", rotation=45, labelsize=7)
    lo, hi = ax.get_xlim()
    if hi - lo > 30 and len({round(x) for line in ax.get_lines() for x in matplotlib.dates.date2num(line.get_xdata())}) == 1:
        mid = (lo + hi) / 2
        ax.set_xlim(mid - 3.5, mid + 3.5)


def _band(ax, x, frame: pl.DataFrame, label: str):
    x = _dates(x)
    line = ax.plot(x, frame["value" if "value" in frame.columns else "rate"].to_list(), marker="o", ms=3, label=label)[0]
    ax.fill_between(x, frame["ci_low"].to_list(), frame["ci_high"].to_list(), alpha=0.2, color=line.get_color())
    return line.get_color()


def production_figure(prod: pl.DataFrame, anomalies: list[dict], service: str) -> str | None:
    if prod.is_empty():
        return None
    fig, ax = plt.subplots(figsize=(10, 3.6))
    for signal in PRODUCTION_SHOWN:
        part = prod.filter(pl.col("signal") == signal).sort("day")
        if part.height:
            color = _band(ax, part["day"].to_list(), part, signal)
            for a in [a for a in anomalies if a["signal"] == signal]:
                on = part.filter(pl.col("day").is_in(a["days"]))
                edge = "red" if a["severity"] == "ERROR" else "orange"
                where = "" if a["stratum"] is None else f" (stratum {a['stratum']})"
                ax.scatter(_dates(on["day"].to_list()), on["rate"].to_list(), s=80, marker="o" if a["stratum"] is None else "^",
                           facecolors="none", edgecolors=edge, linewidths=1.8)
                ax.annotate(a["kind"] + where, (_dates([a["start_day"]])[0], float(on["rate"][0]) if on.height else 0.0),
                            textcoords="offset points", xytext=(4, 8), fontsize=7, color=color)
    ax.set_title(f"{service}: live traffic, failure rates a day (95 % CI bands; circled: anomalies of all traffic, triangles: of one stratum)")
    ax.set_ylabel("share of requests")
    _date_axis(ax)
    ax.legend(fontsize=7, ncol=5)
    return _png(fig)


def nights_figure(nights: pl.DataFrame, gates: pl.DataFrame, figure: str) -> str | None:
    part = nights.filter(pl.col("figure") == figure)
    if part.is_empty():
        return None
    fig, ax = plt.subplots(figsize=(10, 3.2))
    for system in sorted(part["system_id"].unique().to_list()):
        s = part.filter(pl.col("system_id") == system).sort("night")
        color = _band(ax, s["night"].to_list(), s, system)
        failed = gates.filter((pl.col("system_id") == system) & (pl.col("FAIL") > 0))
        on = s.filter(pl.col("night").is_in(failed["night"].to_list()))
        ax.scatter(_dates(on["night"].to_list()), on["value"].to_list(), marker="x", s=60, color=color)
    ax.set_title(f"golden set: {figure} a night (95 % CI bands; ×: a hard gate failed)")
    _date_axis(ax)
    ax.legend(fontsize=7)
    return _png(fig)


def side_by_side(nights: pl.DataFrame, prod: pl.DataFrame, system_id: str | None) -> str | None:
    """Shadow evaluation (§7.4): the same service's ungrounded share on the golden set (nights) and on live traffic (days)."""
    golden = nights.filter((pl.col("figure") == "ungrounded") & (pl.col("system_id") == (system_id or ""))).sort("night")
    live = prod.filter(pl.col("signal") == "ungrounded").sort("day")
    if golden.is_empty() or live.is_empty():
        return None
    fig, ax = plt.subplots(figsize=(10, 3.2))
    _band(ax, golden["night"].to_list(), golden, f"golden set ({system_id})")
    _band(ax, live["day"].to_list(), live, "live traffic")
    ax.set_title("shadow evaluation: ungrounded answers, golden set vs live traffic (95 % CI bands)")
    _date_axis(ax)
    ax.legend(fontsize=7)
    return _png(fig)


def latency_series(warehouse: Path) -> pl.DataFrame:
    """Per stored day of production_logs: latency n, median and p95 with their 99 % intervals (``monitoring.continuous``)."""
    from hcat_pipeline.monitoring.continuous import day_summary

    rows = []
    for p in sorted((warehouse / "production_logs").glob("*.parquet")):
        lat = pl.read_parquet(p, columns=["latency_ms"])["latency_ms"].drop_nulls().to_numpy() if "latency_ms" in pl.read_parquet_schema(p) else []
        if (s := day_summary(lat)) is not None:
            rows.append({"day": p.stem, **s})
    return pl.DataFrame(rows) if rows else pl.DataFrame(schema={"day": pl.String})


def latency_figure(lat: pl.DataFrame) -> str | None:
    """The days' latency median and p95, each with its 99 % interval as a band."""
    if lat.is_empty() or "p50" not in lat.columns:
        return None
    fig, ax = plt.subplots(figsize=(10, 3.2))
    x = _dates(lat["day"].to_list())
    for q in ("p50", "p95"):
        ax.plot(x, lat[q].to_list(), marker="o", label=f"latency {q} (ms)")
        ax.fill_between(x, lat[f"{q}_low"].to_list(), lat[f"{q}_high"].to_list(), alpha=0.2)
    ax.set_title("live traffic: latency median and p95 a day (99 % intervals, order statistics)")
    _date_axis(ax)
    ax.legend(fontsize=7)
    return _png(fig)


def render_history(path: Path, warehouse: Path, *, service: str = "", system_id: str | None = None, anomalies: list[dict] | None = None) -> Path:
    """Write the history page from the stored tables; ``system_id``: the campaign system that is the monitored service."""
    nights, gates, pareto, prod = night_series(warehouse), gate_series(warehouse), pareto_series(warehouse), production_series(warehouse)
    figures = [(t, uri) for t, uri in [
        ("Live traffic", production_figure(prod, anomalies or [], service or "service")),
        ("Live traffic: latency", latency_figure(latency_series(warehouse))),
        ("Golden set vs live traffic", side_by_side(nights, prod, system_id)),
        *((f"Golden set: {f}", nights_figure(nights, gates, f)) for f in (*HEADLINE, "ungrounded")),
    ] if uri]  # fmt: skip
    html = environment().get_template("history.html.j2").render(
        service=service, figures=figures, gates=gates.to_dicts(), pareto=pareto.to_dicts(), anomalies=anomalies or [],
        n_nights=nights["night"].n_unique() if nights.height else 0, n_days=prod["day"].n_unique() if prod.height else 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
