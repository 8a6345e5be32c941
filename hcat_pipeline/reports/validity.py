"""Construct validity and uncertainty of the headline figures (golden-eval §3.5, §6.6), pure.

Per headline metric: its claim and proxy (``metrics.constructs``) and the validity level with its evidence —

* HIGH: the user's own human labels (``labelled_set`` not ``reference:*``) give an AUROC whose 95 % CI lower bound is
  ≥ ``HIGH_AUROC``;
* MODERATE: AUROC lower bound ≥ ``MODERATE_AUROC`` on the user's labels, or ≥ ``HIGH_AUROC`` on borrowed labels
  (another corpus: the evidence transfers only in part);
* LOW: labels exist and the AUROC lower bound is below that;
* UNKNOWN: no labels for the metric's dimension (a rule or a metric without a construct definition).

Per headline metric × system: the uncertainty sources this run can estimate, in the metric's units —
*sample size* (the half-width of the bootstrap CI of the mean), *prompt sensitivity* (the largest |mean paired change|
under the paraphrase variants, ``robustness_deltas`` typo / colloquial / paraphrase (the paraphrase groups), counted only when its paired CI excludes 0 —
one pair's change is noise, shown but not compared), *judge disagreement* (only for an LLM-judge
dimension: 1 − κ of the audit, shown, not in metric units), *selection bias* (where monitoring has stored days: the
night's per-topic means re-weighted by live traffic's topic shares, ``live_shares``, against the unweighted mean),
*measurement error* (the human raters' disagreement on doubly-labelled items of the metric's dimension: a per-label error
ε ≈ disagreement / 2 bounds a human-labelled rate's bias), *model stochasticity* (``verdict_stochasticity``: the share of
verdicts that flip when a seeded subset is re-asked with new sampling seeds; shown, not in metric units) — and the
dominant one, with the remedy §6.6 names. The
claim strength (STRONG / MODERATE / WEAK / INSUFFICIENT) is the weakness cell's (``reports``); a gate states its own,
from the gate's sample (``gates.decide``).
"""

from __future__ import annotations

import polars as pl

from hcat_pipeline.behaviour.stochasticity import flip_text
from hcat_pipeline.metrics.constructs import CONSTRUCTS
from hcat_pipeline.reports.campaign_report import Section, fmt
from hcat_pipeline.reports.weakness import topic_label

HIGH_AUROC = 0.8
MODERATE_AUROC = 0.7
PARAPHRASE_KINDS = ("typo", "colloquial", "paraphrase")  # the rewordings of a case, its paraphrase group included
REMEDY = {"sample size": "more cases", "prompt sensitivity": "broader paraphrase coverage / a more robust system",
          "judge disagreement": "recalibrate the judge on human labels",
          "selection bias": "generate cases for the strata live traffic asks about (or read the re-weighted figure)",
          "measurement error": "adjudicate the items raters disagree on; a clearer labelling guide"}  # fmt: skip


def validity_level(metric: str, validity: pl.DataFrame | None) -> tuple[str, str]:
    """(level, evidence) of ``metric`` from the ``metric_validity`` table (module doc)."""
    construct = CONSTRUCTS.get(metric)
    if construct is None:
        return "UNKNOWN", "no construct definition for this metric"
    rows = None if validity is None or "metric" not in validity.columns else validity.filter(pl.col("metric") == metric)
    if rows is None or rows.height == 0 or rows["auroc"].drop_nulls().len() == 0:
        dim = f"dimension {construct.dimension!r}" if construct.dimension else "its construct"
        return "UNKNOWN", f"no human labels validate {dim} (label cases in the review page, then labels_job)"
    r = rows.sort("heldout_n", descending=True).row(0, named=True)
    borrowed = str(r.get("labelled_set") or "").startswith("reference:")
    lo = r.get("auroc_ci_low")
    lo = r["auroc"] if lo is None else lo
    level = ("HIGH" if lo >= HIGH_AUROC else "MODERATE" if lo >= MODERATE_AUROC else "LOW") if not borrowed else \
        ("MODERATE" if lo >= HIGH_AUROC else "LOW")  # fmt: skip
    whose = f"borrowed labels ({r['labelled_set']})" if borrowed else f"your labels ({r['labelled_set']})"
    return level, f"AUROC {fmt(r['auroc'])} [{fmt(lo)}, {fmt(r.get('auroc_ci_high'))}] on {r['heldout_n']} held-out {whose}"


def _paraphrase_shift(deltas: pl.DataFrame | None, metric: str, system: str) -> tuple[float | None, str]:
    """(the largest established paraphrase shift |Δ| — its paired CI excludes 0 — or None, what was seen)."""
    if deltas is None or deltas.height == 0:
        return None, "not estimated: no paraphrase pairs"
    d = deltas.filter((pl.col("metric") == metric) & (pl.col("system_id") == system) & pl.col("variant_kind").is_in(PARAPHRASE_KINDS)
                      & pl.col("delta").is_not_null())  # fmt: skip
    if d.height == 0:
        return None, "not estimated: no paraphrase pairs"
    cols = set(d.columns)
    rows = d.to_dicts()
    shown = "; ".join(f"{r['variant_kind']} Δ {r['delta']:+.3f}" + (f" (n_pairs={r['n_pairs']})" if "n_pairs" in cols else "") for r in rows)
    known = [abs(r["delta"]) for r in rows if {"ci_low", "ci_high"} <= cols and r["ci_low"] is not None and r["ci_high"] is not None
             and (r["ci_low"] > 0 or r["ci_high"] < 0)]  # fmt: skip
    if not known:
        return None, f"{shown}: not established (every paired CI includes 0)"
    return max(known), f"±{fmt(max(known))} established ({shown})"


def live_shares(production_cells: pl.DataFrame | None, labels: dict[int, str]) -> dict[str, float] | None:
    """Live traffic's share per topic over the stored monitoring days, keyed as the weakness cells name a topic
    (``reports.weakness.topic_label``: "<stratum>: <label>"): the sample's inverse-probability weights of the ``error``
    signal (every request is screened for it: each counted once) summed per stratum; None without days."""
    if production_cells is None or production_cells.height == 0:
        return None
    per = production_cells.filter((pl.col("signal") == "error") & pl.col("stratum").is_not_null()).group_by("stratum").agg(pl.col("sw").sum())
    total = float(per["sw"].sum()) if per.height else 0.0
    if total <= 0:
        return None
    return {topic_label(int(r["stratum"]), labels.get(int(r["stratum"]))): float(r["sw"]) / total for r in per.iter_rows(named=True)}


def _selection_shift(topics: pl.DataFrame | None, cell: dict, shares: dict[str, float] | None) -> tuple[float | None, str]:
    """(|re-weighted − unweighted| mean, what was seen): the night's per-topic means of this system re-weighted by live
    traffic's topic shares (golden-eval §6.6 selection bias), over the topics both hold."""
    if shares is None:
        return None, "not estimated: no monitoring days (the live strata mix is unknown)"
    part = None if topics is None else topics.filter((pl.col("metric") == cell["metric"]) & (pl.col("row") == cell["row"]) &
                                                     pl.col("col").is_in(list(shares)) & pl.col("mean").is_not_null())  # fmt: skip
    if part is None or part.height == 0:
        return None, "not estimated: no topic of the golden set is in live traffic"
    w = [shares[t] for t in part["col"]]
    weighted = sum(wi * m for wi, m in zip(w, part["mean"])) / sum(w)
    covered = sum(w)
    return abs(weighted - cell["mean"]), (f"re-weighted by live topics {fmt(weighted)} vs {fmt(cell['mean'])} "
                                          f"(|Δ| {fmt(abs(weighted - cell['mean']))}; topics holding {covered:.0%} of live traffic)")


def rater_disagreement(labels: pl.DataFrame | None) -> dict[str, tuple[float, int]]:
    """Per dimension: (share of items two or more raters labelled differently, items labelled by two or more)."""
    if labels is None or labels.height == 0:
        return {}
    order = [c for c in ("labelled_at", "source_file", "source_line") if c in labels.columns]
    latest = (labels.sort(order, nulls_last=False) if order else labels).unique(["dimension", "case_id", "system_id", "rater"], keep="last",
                                                                                  maintain_order=True)  # a rater's relabel replaces, it does not disagree
    per = (latest.group_by("dimension", "case_id", "system_id").agg(pl.col("rater").n_unique().alias("raters"), pl.col("label").n_unique().alias("values"))
           .filter(pl.col("raters") >= 2))  # fmt: skip
    return {d: (float((g["values"] > 1).mean()), g.height) for (d,), g in per.group_by("dimension")}


def _measurement(metric: str, raters: dict[str, tuple[float, int]]) -> tuple[float | None, str]:
    """(the per-label error rate ε ≈ disagreement / 2 — two raters erring independently with ε disagree on ≈ 2ε of items —
    which bounds the bias of a human-labelled rate, what was seen)."""
    c = CONSTRUCTS.get(metric)
    dim = c.dimension if c else None
    if not dim or dim not in raters:
        return None, "not estimated: no item of this dimension labelled by two raters"
    d, n = raters[dim]
    return d / 2, f"raters disagree on {d:.0%} of {n} doubly-labelled items: ±{fmt(d / 2)} on a human-labelled rate"


def uncertainty_sources(cell: dict, deltas: pl.DataFrame | None, judge_kappa: float | None, topics: pl.DataFrame | None = None,
                        shares: dict[str, float] | None = None, raters: dict | None = None,
                        stochasticity: str | None = None) -> tuple[dict[str, str], str]:  # fmt: skip
    """({source: what it is}, the dominant source with its remedy) of one system × metric cell: the six of golden-eval §6.6."""
    half = None if cell.get("ci_low") is None else (cell["ci_high"] - cell["ci_low"]) / 2
    shift, shift_text = _paraphrase_shift(deltas, cell["metric"], cell["row"])
    selection, selection_text = _selection_shift(topics, cell, shares)
    error, error_text = _measurement(cell["metric"], raters or {})
    sources = {"sample size": f"±{fmt(half)} (n={cell['n']})" if half is not None else f"no CI (n={cell['n']})",
               "prompt sensitivity": shift_text,
               "model stochasticity": stochasticity or flip_text(None),
               "judge disagreement": f"1 − κ = {fmt(1 - judge_kappa)}" if judge_kappa is not None else "not applicable: not a judge score",
               "selection bias": selection_text, "measurement error": error_text}  # fmt: skip
    sized = {k: v for k, v in (("sample size", half), ("prompt sensitivity", shift), ("selection bias", selection),
                               ("measurement error", error)) if v is not None}  # fmt: skip
    if not sized:
        return sources, "not estimable: too few values"
    top = max(sized, key=sized.get)
    if sized[top] == 0:
        return sources, "none measurable: the figure does not vary over these cases (±0)"
    return sources, f"{top} (remedy: {REMEDY[top]})"


def construct_validity_section(cells: pl.DataFrame, metrics: list[str], validity: pl.DataFrame | None, deltas: pl.DataFrame | None,
                               shares: dict[str, float] | None = None, raters: dict | None = None,
                               stochasticity: pl.DataFrame | None = None) -> tuple[Section, list[str]]:  # fmt: skip
    """One row per headline metric × system: claim, proxy, validity level and evidence, uncertainty sources, the
    dominant one, claim strength; summary lines for metrics whose validity is LOW or UNKNOWN."""
    key, title = "construct_validity", "Construct validity and uncertainty (golden-eval §3.5, §6.6)"
    sys_cells = cells.filter((pl.col("dims") == "system") & pl.col("metric").is_in(metrics))
    if sys_cells.height == 0:
        return Section.missing(key, title, "no headline metric has values this run"), []
    rows, lines = [], []
    topics = cells.filter(pl.col("dims") == "system × topic")
    for metric in [m for m in metrics if m in set(sys_cells["metric"])]:
        level, evidence = validity_level(metric, validity)
        c = CONSTRUCTS.get(metric)
        for cell in sys_cells.filter(pl.col("metric") == metric).sort("row").iter_rows(named=True):
            flips = {r["system_id"]: r for r in stochasticity.iter_rows(named=True)} if stochasticity is not None else {}
            sources, dominant = uncertainty_sources(cell, deltas, None, topics, shares, raters, flip_text(flips.get(cell["row"])))
            rows.append([metric, cell["row"], c.claim if c else "–", c.proxy if c else "–", level, evidence,
                         "; ".join(f"{k}: {v}" for k, v in sources.items()), dominant, str(cell["claim_strength"]).upper()])
        if level in ("LOW", "UNKNOWN"):
            lines.append(f"Validity of {metric}: {level} — {evidence}; read its figures as indicative.")
    note = ("Claim: what the metric is meant to measure; proxy: what it computes (gap in metrics.constructs). Validity "
            f"HIGH: your labels, AUROC lower bound ≥ {HIGH_AUROC}; MODERATE: ≥ {MODERATE_AUROC}, or borrowed labels ≥ {HIGH_AUROC}; "
            "UNKNOWN: no labels. Dominant source: the largest of those in the metric's units.")  # fmt: skip
    return Section(key, title, columns=["metric", "system", "claim", "proxy", "validity", "evidence", "uncertainty sources",
                                        "dominant source", "claim strength"], rows=rows, note=note), lines  # fmt: skip
