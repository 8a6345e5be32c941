"""The daily monitoring report (golden-eval §7.3, §9.3): one static HTML page a day — what was read, the day's
failure rates with their CIs against the baseline, the anomalies with their evidence, the strata, and the rows
queued for a person. Only masked text reaches it (``monitoring.day.mask_frame``)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from hcat_pipeline.monitoring.signals import DESCRIPTIONS, SIGNALS
from hcat_pipeline.reports.campaign_report import environment

KIND_TITLES = {"acute": "acute regression", "category": "category-specific failure", "drift": "gradual drift",
               "input_drift": "input drift (topic mix)", "novel": "novel failure mode"}  # fmt: skip


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def evidence_text(ev: dict) -> str:
    """The evidence as a reviewer reads it: the rate against its baseline with n and p, the trend with its p; the rest as
    key = value."""
    parts, rest = [], {k: v for k, v in ev.items() if k not in ("corroborated_by",)}
    if "rate" in rest and "baseline_rate" in rest:
        parts.append(f"{_pct(rest.pop('rate'))} of effective n {rest.pop('n_eff')} (n {rest.pop('n')}) vs baseline {_pct(rest.pop('baseline_rate'))} "
                     f"over {rest.pop('baseline_days')} day(s), effective n {rest.pop('baseline_n_eff')}; p = {rest.pop('p_value')}")
    if "rest_rate" in rest:
        parts.append(f"rest of the day {_pct(rest.pop('rest_rate'))} (p = {rest.pop('p_vs_rest')}, q = {rest.pop('q_vs_rest')})")
    if "mann_kendall_p" in rest:
        parts.append(f"{_pct(rest.pop('first_rate'))} → {_pct(rest.pop('last_rate'))} over {rest.pop('days_read')} day(s), "
                     f"Sen change {_pct(rest.pop('change_over_window'))}; Mann-Kendall p = {rest.pop('mann_kendall_p')} (Holm)")
    parts += [f"{k} = {v}" for k, v in rest.items() if v not in ([], None)]
    return "; ".join(parts)


def anomaly_rows(anomalies: pl.DataFrame, labels: dict[int, str]) -> list[dict]:
    out = []
    for a in anomalies.iter_rows(named=True):
        ev = json.loads(a["evidence"]) if isinstance(a["evidence"], str) else a["evidence"]
        where = "all traffic" if a["stratum"] is None else f"stratum {a['stratum']} ({labels.get(a['stratum'], '?')})"
        days = a["start_day"] if a["start_day"] == a["end_day"] else f"{a['start_day']} → {a['end_day']}"
        out.append({"severity": a["severity"], "kind": KIND_TITLES.get(a["kind"], a["kind"]), "signal": a["signal"], "where": where,
                    "days": days, "evidence": evidence_text(ev),
                    "corroborated": ", ".join(ev.get("corroborated_by", {}))})  # fmt: skip
    return out


def rate_rows(today: pl.DataFrame, baseline: pl.DataFrame) -> list[dict]:
    base = {r["signal"]: r for r in baseline.iter_rows(named=True)}
    rows = []
    for r in sorted(today.iter_rows(named=True), key=lambda r: SIGNALS.index(r["signal"]) if r["signal"] in SIGNALS else 99):
        b = base.get(r["signal"], {})
        rows.append({"signal": r["signal"], "what": DESCRIPTIONS.get(r["signal"], ""), "rate": _pct(r["rate"]),
                     "ci": f"{_pct(r['ci_low'])} – {_pct(r['ci_high'])}", "n": r["n"], "n_eff": r["n_eff"],
                     "baseline": _pct(b.get("rate")), "baseline_n": b.get("n", 0)})  # fmt: skip
    return rows


def distribution_rows(series: dict[str, dict[str, list[float]]], day: str) -> list[dict]:
    """Per continuous signal with values today: n, median and p95 with their 99 % intervals, the median of the days
    before (``monitoring.continuous.day_summary``)."""
    import numpy as np

    from hcat_pipeline.monitoring.continuous import day_summary

    out = []
    for signal, by_day in series.items():
        s = day_summary(np.asarray(by_day.get(day, []), dtype=float))
        if s is None:
            continue
        before = [v for d, vs in by_day.items() if d < day for v in vs]
        b = float(np.median(before)) if before else None
        out.append({"signal": signal, "n": s["n"], "p50": f"{s['p50']:.4g} [{s['p50_low']:.4g}, {s['p50_high']:.4g}]",
                    "p95": f"{s['p95']:.4g} [{s['p95_low']:.4g}, {s['p95_high']:.4g}]", "baseline": "–" if b is None else f"{b:.4g}"})
    return out


def render_monitoring_report(path: Path, *, service: str, day: str, read: dict, today: pl.DataFrame, baseline: pl.DataFrame,
                             strata: pl.DataFrame, anomalies: pl.DataFrame, queue: pl.DataFrame, labels: dict[int, str],
                             review_url: str, history_href: str, distributions: list[dict] = ()) -> Path:  # fmt: skip
    """Write the day's report; ``read``: rows, rejected (with reasons), screened, sampled, masked; ``distributions``:
    the continuous signals' rows (``distribution_rows``)."""
    q = [{"request_id": r["request_id"], "reason": r["queue_reason"], "stratum": labels.get(r["stratum"], str(r["stratum"])),
          "question": r["question"], "answer": r["answer"] or f"(error: {r.get('error')})", "failed": r["signals_failed"], "judge": r.get("judge"),
          "link": f"{review_url}/monitor/case?day={day}&request={r['request_id']}"} for r in queue.iter_rows(named=True)]  # fmt: skip
    html = environment().get_template("monitoring_report.html.j2").render(
        service=service, day=day, read=read, rates=rate_rows(today, baseline), anomalies=anomaly_rows(anomalies, labels),
        strata=strata.to_dicts(), queue=q, history_href=history_href, review_url=review_url, distributions=list(distributions))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
