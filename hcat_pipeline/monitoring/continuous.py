"""Continuous signals watched by their distribution (issue 60 item 2): latency, tokens, answer length.

A service-level breach rate sees a latency ramp only once it crosses the SLO, and then as an acute regression on the
wrong day. Here each day's values are summarised by their median and 95th percentile with distribution-free 99 %
intervals (binomial order statistics, ``quantile_ci``), and a day is **elevated** when its median's interval lies above
the baseline's (the days before, pooled) by at least ``min_relative_change``:

* ``consecutive`` (2) or more elevated days in a row whose medians keep rising are a **drift** (kind ``drift``) from
  the first of them — a ramp, named with its start the second day it shows, never an acute regression;
* one elevated day followed by a day back at the baseline is an **acute** spike (said the day after, when it is known
  not to go on); an elevated last day waits for the next one (``pending`` in its evidence, not raised).

``slo_consequence`` folds the acute breach-rate anomalies of the matching rate signal (``slow`` for latency) that fall
inside a drift into that drift's evidence: the SLO crossing is the consequence of the drift, reported with it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

CONTINUOUS = ("latency_ms", "output_tokens", "answer_chars")
RATE_OF = {"latency_ms": "slow"}  # the breach-rate signal a continuous signal's SLO makes


@dataclass(frozen=True)
class ContinuousConfig:
    confidence: float = field(default=0.99, metadata={"gt": 0, "lt": 1, "description": "the quantiles' interval level"})
    min_relative_change: float = field(default=0.05, metadata={"ge": 0, "description": "a day's median at least this much above the baseline's"})
    baseline_days: int = field(default=7, metadata={"ge": 1, "description": "days before an elevated run that make its baseline"})
    min_baseline_days: int = field(default=2, metadata={"ge": 1, "description": "a day is tested once this many baseline days exist"})
    consecutive: int = field(default=2, metadata={"ge": 2, "description": "elevated days in a row, rising, that make a drift"})
    min_rows: int = field(default=30, metadata={"ge": 5, "description": "values a day needs to be summarised"})


def quantile_ci(x: np.ndarray, q: float, confidence: float) -> tuple[float, float, float]:
    """(estimate, low, high) of the ``q`` quantile: the order statistics whose ranks bound it with ``confidence``
    (binomial, distribution-free); the extremes where the sample is too small to bound it."""
    x = np.sort(np.asarray(x, dtype=float))
    n = len(x)
    a = (1 - confidence) / 2
    lo = int(stats.binom.ppf(a, n, q))
    hi = int(stats.binom.ppf(1 - a, n, q))
    return float(np.quantile(x, q)), float(x[max(lo - 1, 0)]), float(x[min(hi, n - 1)])


def day_summary(values: np.ndarray, config: ContinuousConfig = ContinuousConfig()) -> dict | None:
    """{n, p50, p50_low, p50_high, p95, p95_low, p95_high} of one day's values; None under ``min_rows``."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if len(v) < config.min_rows:
        return None
    p50, p95 = quantile_ci(v, 0.5, config.confidence), quantile_ci(v, 0.95, config.confidence)
    return {"n": len(v), "p50": p50[0], "p50_low": p50[1], "p50_high": p50[2], "p95": p95[0], "p95_low": p95[1], "p95_high": p95[2]}


def _elevated(day: np.ndarray, base: np.ndarray, config: ContinuousConfig) -> tuple[bool, dict, dict]:
    d, b = day_summary(day, config), day_summary(base, config)
    if d is None or b is None:
        return False, d or {}, b or {}
    up = d["p50_low"] > b["p50_high"] and d["p50"] >= (1 + config.min_relative_change) * b["p50"]
    return up, d, b


def continuous_anomalies(series: Mapping[str, Mapping[str, Sequence[float]]], config: ContinuousConfig = ContinuousConfig()) -> list[dict]:
    """Drifts and spikes of each continuous signal (module doc). ``series``: signal → day (ISO) → the day's values."""
    out = []
    for signal, by_day in series.items():
        days = sorted(by_day)
        run: list[str] = []
        stats_of: dict[str, dict] = {}
        base_days: list[str] = []
        for day in days:
            base_days = [d for d in days if d < (run[0] if run else day)][-config.baseline_days:]
            if len(base_days) < config.min_baseline_days:
                continue
            base = np.concatenate([np.asarray(by_day[d], dtype=float) for d in base_days])
            up, s, b = _elevated(np.asarray(by_day[day], dtype=float), base, config)
            rising = not run or s.get("p50", 0) >= stats_of[run[-1]]["p50"]
            if up and rising:
                run.append(day)
                stats_of[day] = s | {"baseline_p50": b["p50"], "baseline_days": base_days, "baseline_by_day": _medians(by_day, base_days)}
                continue
            out += _close(signal, run, stats_of, config, pending=False, known_on=day)
            run = []
            if up:  # elevated but lower than the day before: a new run starts here
                run, stats_of[day] = [day], s | {"baseline_p50": b["p50"], "baseline_days": base_days, "baseline_by_day": _medians(by_day, base_days)}
        out += _close(signal, run, stats_of, config, pending=True)
    return out


def _medians(by_day: Mapping[str, Sequence[float]], days: list[str]) -> dict[str, float]:
    return {d: float(np.median(np.asarray(by_day[d], dtype=float))) for d in days}


def _close(signal: str, run: list[str], stats_of: dict, config: ContinuousConfig, pending: bool, known_on: str | None = None) -> list[dict]:
    if not run:
        return []
    first, last = stats_of[run[0]], stats_of[run[-1]]
    ev = {"baseline_p50": round(first["baseline_p50"], 3), "baseline_days": f"{first['baseline_days'][0]}..{first['baseline_days'][-1]}",
          "p50_by_day": {d: round(stats_of[d]["p50"], 3) for d in run}, "p95_by_day": {d: round(stats_of[d]["p95"], 3) for d in run},
          "change": f"median {last['p50'] / first['baseline_p50'] - 1:+.0%} vs the baseline by {run[-1]}"}  # fmt: skip
    if len(run) >= config.consecutive:
        start = _ramp_start(run, stats_of, first)
        days = [*[d for d in first["baseline_days"] if d >= start], *run] if start < run[0] else list(run)
        ev["first_elevated_day"] = run[0]
        return [{"kind": "drift", "signal": signal, "stratum": None, "start_day": days[0], "end_day": run[-1], "days": days,
                 "severity": "WARN", "evidence": ev | {"test": f"{len(run)} days in a row with the median's "
                                                        f"{config.confidence:.0%} interval above the baseline's, rising"}}]  # fmt: skip
    if pending:  # one elevated day, the last one: the next day says whether it is a spike or the start of a ramp
        return []
    return [{"kind": "acute", "signal": signal, "stratum": None, "start_day": run[0], "end_day": run[0], "days": list(run),
             "severity": "ERROR", "evidence": ev | {"test": "one day with the median's interval above the baseline's, back the day after",
                                               "known_on": known_on}}]  # raised on the day that showed it was a spike


def _ramp_start(run: list[str], stats_of: dict, first: dict) -> str:
    """Where the ramp began: the hinge of the best flat-then-rising fit over the baseline days' and the run's medians
    (``trend.hinge_start``) — a ramp's first day is often inside the noise, before the first elevated day."""
    from hcat_pipeline.monitoring.trend import hinge_start

    base_days = list(first["baseline_days"])
    medians = [first["baseline_by_day"][d] for d in base_days] + [stats_of[d]["p50"] for d in run]
    days = base_days + run
    return min(days[hinge_start(np.arange(len(days), dtype=float), np.array(medians))], run[0])


def slo_consequence(anomalies: list[dict], continuous: list[dict]) -> list[dict]:
    """The acute breach-rate anomalies inside a drift of the signal behind them (``RATE_OF``) leave the list and go into
    that drift's evidence (``slo_crossed``: their days): the SLO crossing is the drift's consequence."""
    keep = list(anomalies)
    for drift in (c for c in continuous if c["kind"] == "drift" and c["signal"] in RATE_OF):
        rate = RATE_OF[drift["signal"]]
        inside = [a for a in keep if a["signal"] == rate and a["kind"] == "acute" and set(a["days"]) <= set(_span(drift, a))]
        if inside:
            drift["evidence"] = {**drift["evidence"], "slo_crossed": sorted(d for a in inside for d in a["days"]),
                                 "slo_note": f"the {rate} rate's rise is the consequence of this drift, not a separate regression"}  # fmt: skip
            keep = [a for a in keep if a not in inside]
    return keep


def _span(drift: dict, other: dict) -> list[str]:
    """The drift's days and every later day of ``other`` (a drift goes on after its last elevated day is read)."""
    return sorted(set(drift["days"]) | {d for d in other["days"] if d >= drift["start_day"]})
