"""Anomaly detection over the days' cell sums (golden-eval §7.3), each anomaly with its verdict and evidence.

* **acute** — a day's failure rate against its baseline (the previous ``baseline_days`` days that were not
  anomalous; trend-aware: the Sen-slope projection when it is higher), exact binomial at the effective n: significant
  at ``alpha`` *and* at least ``min_relative_increase`` and ``min_absolute_increase`` above — so one bad day of 30
  answers is not an alarm and one of 3,000 is; its first day must also jump over the day before (``onset_alpha``): a
  ramp is a drift, not an acute regression. Later days continue the run while they stay above the baseline.
* **category** — the same test per topic stratum, Benjamini-Hochberg over the strata at ``category_alpha``, and the
  stratum significantly worse than the rest of the same day (Fisher exact, Benjamini-Hochberg too): a failure concentrated in a stratum. A
  stratum's failing cells are left out of the day's overall test, so a category failure is reported once.
* **drift** — over the last ``window_days`` days (anomalous days left out): Mann-Kendall trend at ``drift_alpha``
  (Holm over the signals), Sen's slope over the window at least ``min_drift_change``, the start day by a hinge fit.
* **input_drift** — the day's mix of topic strata against the baseline days' (χ²) with a total-variation distance of
  at least ``min_mix_shift``.

Anomalous days at most ``run_gap_days`` apart are one anomaly (start_day … end_day, the days flagged).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl
from scipy import stats

from hcat_pipeline.monitoring.signals import SAMPLE_SIGNALS, SIGNALS, weighted_rate
from hcat_pipeline.monitoring.trend import hinge_start, mann_kendall, sen_slope
from hcat_pipeline.schemas import PRODUCTION_ANOMALIES

Kind = Literal["acute", "category", "drift", "input_drift"]
FEEDBACK_SIGNALS = ("negative_feedback",)
SEVERITY = {"acute": "ERROR", "category": "ERROR", "drift": "WARN", "input_drift": "WARN", "novel": "WARN"}


@dataclass(frozen=True)
class AnomalyConfig:
    alpha: float = field(default=0.001, metadata={"gt": 0, "lt": 1, "description": "acute: one-sided exact binomial level"})
    onset_alpha: float = field(default=0.01, metadata={"gt": 0, "lt": 1, "description": "acute: the first day of a run must also "
                                                          "jump over the day before (Fisher exact) — a ramp is a drift, not an acute regression"})
    run_gap_days: int = field(default=2, metadata={"ge": 0, "description": "a failure that pauses for at most this many days (a small "
                                                    "day's sample) is the same run, not a new onset"})
    category_alpha: float = field(default=0.01, metadata={"gt": 0, "lt": 1, "description": "per stratum: Benjamini-Hochberg level"})
    drift_alpha: float = field(default=0.01, metadata={"gt": 0, "lt": 1, "description": "drift: Mann-Kendall level, Holm over signals"})
    baseline_days: int = field(default=7, metadata={"ge": 1, "description": "days before a day that make its baseline"})
    min_baseline_days: int = field(default=2, metadata={"ge": 1, "description": "a day is tested once this many baseline days exist"})
    min_relative_increase: float = field(default=0.5, metadata={"ge": 0, "description": "acute: the rate at least (1 + this) × baseline"})
    min_absolute_increase: float = field(default=0.03, metadata={"ge": 0, "description": "acute: and this many points above it"})
    window_days: int = field(default=14, metadata={"ge": 3, "description": "drift: the days the trend is read over"})
    min_drift_days: int = field(default=5, metadata={"ge": 3, "description": "drift: tested once this many days exist"})
    min_drift_change: float = field(default=0.03, metadata={"ge": 0, "description": "drift: Sen's slope × window span at least this"})
    min_mix_shift: float = field(default=0.10, metadata={"ge": 0, "le": 1, "description": "input drift: total variation distance of the stratum mix"})


@dataclass
class _Rate:
    rate: float
    n_eff: float
    n: int

    @classmethod
    def of(cls, cells: list[tuple]) -> _Rate | None:
        sw, swy, sw2, n = (sum(c[i] for c in cells) for i in range(4))
        rate, n_eff = weighted_rate(sw, swy, sw2)
        return cls(rate, n_eff, int(n)) if rate is not None and n_eff > 0 else None

    def counts(self) -> tuple[int, int]:
        n = max(1, round(self.n_eff))
        return min(n, round(self.rate * n)), n

    def worse_than(self, other: _Rate) -> float:
        """One-sided Fisher exact p that this rate is above ``other`` (effective counts)."""
        (k1, n1), (k2, n2) = self.counts(), other.counts()
        return float(stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]], alternative="greater")[1])


class _Cube:
    """cells[signal][day][stratum] = (sw, swy, sw2, n)."""

    def __init__(self, cells: pl.DataFrame):
        self.cells: dict = defaultdict(lambda: defaultdict(dict))
        for day, stratum, signal, n, sw, swy, sw2 in cells.select("day", "stratum", "signal", "n", "sw", "swy", "sw2").iter_rows():
            self.cells[signal][day][stratum] = (sw, swy, sw2, n)
        self.days = sorted(cells["day"].unique().to_list())

    def rate(self, signal: str, day: str, only=None, without=()) -> _Rate | None:
        row = self.cells[signal].get(day, {})
        keep = [v for g, v in row.items() if (only is None or g == only) and g not in without]
        return _Rate.of(keep)

    def strata(self, signal: str) -> list[int]:
        return sorted({g for d in self.cells[signal].values() for g in d})


def _baseline(cube: _Cube, signal: str, day: str, flagged: set, config: AnomalyConfig, only=None, skip_cells=None) -> tuple[float, float, int] | None:
    """(p0, baseline n_eff, days) from the previous non-flagged days; the Sen-slope projection when it is higher."""
    before = [d for d in cube.days if d < day and (d, only) not in flagged][-config.baseline_days:]
    rates = [(i, r) for i, d in enumerate(before)
             if (r := cube.rate(signal, d, only, (skip_cells or {}).get((signal, d), ()))) is not None]  # fmt: skip
    if len(rates) < config.min_baseline_days:
        return None
    total = sum(r.n_eff for _, r in rates)
    p0 = sum(r.rate * r.n_eff for _, r in rates) / total
    if len(rates) >= 4:
        t, x = np.array([i for i, _ in rates], float), np.array([r.rate for _, r in rates])
        slope = sen_slope(t, x)
        p0 = max(p0, float(np.median(x - slope * t)) + slope * len(before))
    return min(max(p0, 0.5 / (total + 1)), 0.999), total, len(rates)


def _excess(r: _Rate, base: tuple[float, float, int], config: AnomalyConfig) -> float:
    """One-sided p of the day's rate over the baseline, or 1 when the rise is below the minimum effect."""
    p0 = base[0]
    if r.rate < p0 * (1 + config.min_relative_increase) or r.rate - p0 < config.min_absolute_increase:
        return 1.0
    k, n = r.counts()
    return float(stats.binom.sf(k - 1, n, p0))


def _sudden(cube: _Cube, signal: str, day: str, r: _Rate, flagged: set, config: AnomalyConfig, only=None, without=()) -> float:
    """p of the day's rate over the previous day's (Fisher exact): an acute regression is a jump, a drift is not. 0 when one
    of the last ``run_gap_days`` + 1 days was already anomalous (the run continues) or there is none to compare with."""
    before = [d for d in cube.days if d < day]
    if not before or any((d, only) in flagged for d in before[-(config.run_gap_days + 1):]):
        return 0.0
    prev = cube.rate(signal, before[-1], only, without)
    return 0.0 if prev is None else r.worse_than(prev)


def _evidence(r: _Rate, base, p: float) -> dict:
    return {"rate": round(r.rate, 4), "n": r.n, "n_eff": round(r.n_eff, 1), "baseline_rate": round(base[0], 4),
            "baseline_n_eff": round(base[1], 1), "baseline_days": base[2], "p_value": float(f"{p:.3g}")}  # fmt: skip


def _category_flags(cube: _Cube, signal: str, day: str, flagged: set, config: AnomalyConfig) -> dict[int, dict]:
    tested = {}
    for g in cube.strata(signal):
        r = cube.rate(signal, day, only=g)
        base = _baseline(cube, signal, day, flagged, config, only=g) if r is not None else None
        if base is not None:
            tested[g] = (r, base, _excess(r, base, config))
    if not tested:
        return {}
    ps = [t[2] for t in tested.values()]
    adjusted = stats.false_discovery_control(ps, method="bh")
    versus = {}
    for g, (r, _, _) in tested.items():
        rest = cube.rate(signal, day, without=(g,))
        if rest is not None:
            versus[g] = (rest, r.worse_than(rest))
    q_rest = dict(zip(versus, stats.false_discovery_control([v[1] for v in versus.values()], method="bh"))) if versus else {}
    out = {}
    for (g, (r, base, p)), q in zip(tested.items(), adjusted):
        if (q < config.category_alpha and q_rest.get(g, 1.0) < config.category_alpha
                and _sudden(cube, signal, day, r, flagged, config, only=g) < config.onset_alpha):  # the families: every stratum tested
            rest, p_rest = versus[g]
            out[g] = _evidence(r, base, p) | {"q_value": float(f"{q:.3g}"), "rest_rate": round(rest.rate, 4),
                                              "p_vs_rest": float(f"{p_rest:.3g}"), "q_vs_rest": float(f"{q_rest[g]:.3g}")}  # fmt: skip
    return out


def _runs(hits: dict[tuple, dict[str, dict]], kind: Kind, days: list[str], gap: int) -> list[dict]:
    """The anomalous days of one (signal, stratum) as runs: days at most ``gap`` unflagged days apart are one anomaly."""
    out = []
    position = {d: i for i, d in enumerate(days)}
    for (signal, stratum), by_day in sorted(hits.items(), key=lambda kv: (kv[0][0], kv[0][1] if kv[0][1] is not None else -9)):
        flagged = sorted(by_day, key=position.get)
        runs = [[flagged[0]]]
        for d in flagged[1:]:
            if position[d] - position[runs[-1][-1]] <= gap + 1:
                runs[-1].append(d)
            else:
                runs.append([d])
        out += [{"kind": kind, "signal": signal, "stratum": stratum, "start_day": run[0], "end_day": run[-1], "days": run,
                 "severity": SEVERITY[kind], "evidence": by_day[run[-1]]} for run in runs]  # fmt: skip
    return out


def detect(cells: pl.DataFrame, config: AnomalyConfig = AnomalyConfig(), signals: tuple[str, ...] = SIGNALS) -> list[dict]:
    """Every anomaly in the days of ``cells`` (``signals.cell_sums`` of each day, concatenated), oldest first."""
    if cells.is_empty():
        return []
    cube = _Cube(cells)
    acute, category = {}, {}
    skip: dict[tuple[str, str], tuple] = {}
    for signal in [s for s in signals if s in cube.cells]:
        flagged: set = set()  # (day, stratum-or-None)
        for day in cube.days:
            for g, ev in _category_flags(cube, signal, day, flagged, config).items():
                category.setdefault((signal, g), {})[day] = ev
                flagged.add((day, g))
            skip[(signal, day)] = tuple(g for (d, g) in flagged if d == day and g is not None)
            r = cube.rate(signal, day, without=skip[(signal, day)])
            base = _baseline(cube, signal, day, flagged, config, skip_cells=skip) if r is not None else None
            if (base is not None and (p := _excess(r, base, config)) < config.alpha
                    and _sudden(cube, signal, day, r, flagged, config, without=skip[(signal, day)]) < config.onset_alpha):
                acute.setdefault((signal, None), {})[day] = _evidence(r, base, p) | {"strata_excluded": list(skip[(signal, day)])}
                flagged.add((day, None))
    gap = config.run_gap_days
    out = _folded(_runs(acute, "acute", cube.days, gap), _runs(category, "category", cube.days, gap))
    out += drift(cube, signals, acute, skip, config) + input_drift(cube, config)
    return sorted(corroborated(out), key=lambda a: (a["start_day"], a["kind"], a["signal"], str(a["stratum"])))


def _folded(acute: list[dict], category: list[dict]) -> list[dict]:
    """A stratum worse than the rest only within the days of an acute regression of the same signal is part of that
    regression (``evidence.strata_most_affected``), not a category failure of its own."""
    keep = []
    for c in category:
        host = next((a for a in acute if a["signal"] == c["signal"] and set(c["days"]) <= set(a["days"])), None)
        if host is None:
            keep.append(c)
        else:
            host["evidence"] = {**host["evidence"], "strata_most_affected": [*host["evidence"].get("strata_most_affected", []), c["stratum"]]}
    return acute + keep


def corroborated(anomalies: list[dict]) -> list[dict]:
    """Users' feedback moving with a measured failure is its corroboration, not a second anomaly: a feedback anomaly
    overlapping the days of a measured one is attached to it (``evidence.corroborated_by``); alone it stands (users
    complain about something no metric measures — a novel failure mode)."""
    keep = [a for a in anomalies if a["signal"] not in FEEDBACK_SIGNALS]
    for fb in [a for a in anomalies if a["signal"] in FEEDBACK_SIGNALS]:
        overlap = [a for a in keep if a["kind"] != "input_drift" and set(a["days"]) & set(fb["days"])]
        host = [a for a in overlap if a["stratum"] == fb["stratum"]] or overlap
        if not host:
            keep.append(fb)
        for a in host:
            a["evidence"] = {**a["evidence"], "corroborated_by": {fb["signal"]: fb["evidence"]}}
    return keep


def drift(cube: _Cube, signals, acute: dict, skip: dict, config: AnomalyConfig) -> list[dict]:
    """Mann-Kendall over the window as of the last day, Holm over the signals tested."""
    window = cube.days[-config.window_days:]
    tested = []
    for signal in [s for s in signals if s in cube.cells]:
        bad = acute.get((signal, None), {})
        series = [(i, d, r) for i, d in enumerate(window) if d not in bad
                  and (r := cube.rate(signal, d, without=skip.get((signal, d), ()))) is not None]  # fmt: skip
        if len(series) < config.min_drift_days:
            continue
        t = np.array([i for i, _, _ in series], float)
        x = np.array([r.rate for _, _, r in series])
        _, p = mann_kendall(x)
        change = sen_slope(t, x) * (t[-1] - t[0])
        tested.append((p, signal, series, change, t, x))
    out = []
    m = len(tested)
    for rank, (p, signal, series, change, t, x) in enumerate(sorted(tested, key=lambda z: z[0])):
        if p * (m - rank) >= config.drift_alpha:
            break  # Holm: the rest are not significant either
        if change < config.min_drift_change:
            continue
        start = series[hinge_start(t, x, np.array([r.n_eff for _, _, r in series]))][1]
        days = [d for _, d, _ in series if d >= start]
        out.append({"kind": "drift", "signal": signal, "stratum": None, "start_day": start, "end_day": series[-1][1], "days": days,
                    "severity": SEVERITY["drift"], "evidence": {"mann_kendall_p": float(f"{p * (m - rank):.3g}"),
                    "change_over_window": round(float(change), 4), "first_rate": round(float(x[0]), 4),
                    "last_rate": round(float(x[-1]), 4),
                    "days_read": len(series)}})  # fmt: skip
    return out


def input_drift(cube: _Cube, config: AnomalyConfig) -> list[dict]:
    """The last day's stratum mix against its baseline days' (screened rows, 'error' applies to every one)."""
    if "error" not in cube.cells or len(cube.days) <= config.min_baseline_days:
        return []
    day = cube.days[-1]
    before = cube.days[:-1][-config.baseline_days:]

    def mix(days):
        totals: dict = defaultdict(float)
        for d in days:
            for g, (sw, _, _, _) in cube.cells["error"].get(d, {}).items():
                totals[g] += sw
        return totals

    now, base = mix([day]), mix(before)
    strata = sorted(set(now) | set(base))
    n = sum(v[3] for v in cube.cells["error"].get(day, {}).values())
    p_now = np.array([now.get(g, 0.0) for g in strata]) / max(sum(now.values()), 1e-9)
    p_base = np.array([base.get(g, 0.0) for g in strata]) / max(sum(base.values()), 1e-9)
    tv = 0.5 * float(np.abs(p_now - p_base).sum())
    keep = p_base * n >= 5
    if tv < config.min_mix_shift or keep.sum() < 2:
        return []
    obs, exp = p_now[keep] * n, p_base[keep] / p_base[keep].sum() * (p_now[keep] * n).sum()
    p = float(stats.chisquare(obs, exp).pvalue)
    if p >= config.alpha:
        return []
    grew = [int(strata[i]) for i in np.argsort(p_base - p_now)[:3] if p_now[i] > p_base[i]]
    return [{"kind": "input_drift", "signal": "stratum_mix", "stratum": None, "start_day": day, "end_day": day, "days": [day],
             "severity": SEVERITY["input_drift"], "evidence": {"total_variation": round(tv, 4), "chi2_p": float(f"{p:.3g}"),
             "strata_grown": grew, "n": int(n)}}]  # fmt: skip


def touches(a: dict, day: str) -> bool:
    """An anomaly is raised on its last day, or on the day that showed what it was (a one-day spike of a continuous
    signal is known the day after: ``evidence.known_on``)."""
    return a["end_day"] == day or (isinstance(a.get("evidence"), dict) and a["evidence"].get("known_on") == day)


def as_frame(anomalies: list[dict], day: str) -> pl.DataFrame:
    """The anomalies as a table; ``raised``: those that touch ``day`` (what the day's checks raise)."""
    rows = [{**a, "evidence": json.dumps(a["evidence"], sort_keys=True), "raised": touches(a, day)} for a in anomalies]
    return pl.DataFrame(rows, schema=PRODUCTION_ANOMALIES)


__all__ = ["SAMPLE_SIGNALS", "AnomalyConfig", "as_frame", "detect", "touches"]
