"""Ensemble judging (golden-eval §5.5): several LLM judges score the same answers and their scores are aggregated.

"Ensemble judging uses multiple judges (human and/or LLM) and aggregates their scores. Catches cases where any single
judge is unreliable." Here:

* ``ensemble_rows``: per item × dimension, the **mean** of the members' 1-5 scores (``passed``: mean ≥ the judge's
  pass threshold), how many judged it, and whether the members' verdicts agree — with every member's score named;
* ``agreement_table``: per dimension and pair of judges, Cohen's κ on their pass / fail verdicts with its 95 % CI, the
  share of items they agree on (Wilson CI) and n — what the report shows;
* ``choose_scorer``: per dimension, the ensemble is used only where it **beats each member** on human labels — chosen on
  one half of the labelled items (split by a hash of the item), its κ reported on the other half, which never chose;
* ``disagreement_flags``: items whose judges disagree, with the reason the review queue shows (a judge flag raises an
  item's inclusion probability in the queue's known design, ``calibration.design``);
* ``with_ensemble``: the judge table the gates read — the ensemble's rows instead of the primary judge's for the
  dimensions where it was chosen.

No Dagster import.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from itertools import combinations
from typing import Literal

import polars as pl

from hcat_pipeline.judge.audit import judge_agreement, wilson
from hcat_pipeline.schemas import ENSEMBLE_CHOICE

ENSEMBLE = "ensemble"  # the judge_model of the aggregated rows
Rule = Literal["point", "ci_low"]
NIGHT_KEYS = ("case_id", "system_id", "dimension")
AGREEMENT_SCHEMA = {"dimension": pl.String, "judge_a": pl.String, "judge_b": pl.String, "n": pl.Int64, "agree": pl.Int64,
                    "agree_share": pl.Float64, "agree_ci_low": pl.Float64, "agree_ci_high": pl.Float64, "kappa": pl.Float64,
                    "kappa_ci_low": pl.Float64, "kappa_ci_high": pl.Float64}  # fmt: skip
CHOICE_SCHEMA = {"dimension": pl.String, **ENSEMBLE_CHOICE}


def ensemble_rows(per_judge: pl.DataFrame, pass_threshold: int, keys: Sequence[str] = NIGHT_KEYS) -> pl.DataFrame:
    """``per_judge``: one row per ``keys`` × ``judge_model`` with ``score`` (null: that judge gave none). Returns one row per
    ``keys``: ``score`` (the members' mean, Float64), ``passed``, ``n_judges`` (members that scored), ``judges_agree``
    (every member's verdict the same; null under two members) and ``scores`` ("model 4/5 · model 2/5")."""
    keys = list(keys)
    scored = per_judge.filter(pl.col("score").is_not_null()).sort([*keys, "judge_model"])
    out = scored.group_by(keys, maintain_order=True).agg(
        pl.col("score").cast(pl.Float64).mean().alias("score"), pl.len().cast(pl.Int64).alias("n_judges"),
        (pl.col("score") >= pass_threshold).n_unique().alias("_verdicts"),
        pl.format("{} {}/5", "judge_model", pl.col("score").cast(pl.Int64)).str.join(" · ").alias("scores"))  # fmt: skip
    return out.with_columns(
        (pl.col("score") >= pass_threshold).alias("passed"),
        pl.when(pl.col("n_judges") >= 2).then(pl.col("_verdicts") == 1).otherwise(None).alias("judges_agree"),
    ).drop("_verdicts")


def agreement_table(per_judge: pl.DataFrame, pass_threshold: int, keys: Sequence[str] = NIGHT_KEYS) -> pl.DataFrame:
    """Per dimension × pair of judges (members only, never the ensemble): Cohen's κ of their verdicts [95 % CI], the
    agreeing share [Wilson 95 % CI] and n, over the items both scored."""
    item = [k for k in keys if k != "dimension"]
    rows = []
    members = per_judge.filter((pl.col("judge_model") != ENSEMBLE) & pl.col("score").is_not_null())
    if "passed" in members.columns:  # the verdicts as stored (the judge's own threshold)
        members = members.with_columns(pl.when(pl.col("passed")).then(pass_threshold).otherwise(0).alias("score"))
    for dim in sorted(members["dimension"].unique().to_list()):
        mine = members.filter(pl.col("dimension") == dim)
        for a, b in combinations(sorted(mine["judge_model"].unique().to_list()), 2):
            both = (mine.filter(pl.col("judge_model") == a).select(*item, pl.col("score").alias("a"))
                    .join(mine.filter(pl.col("judge_model") == b).select(*item, pl.col("score").alias("b")), on=item))  # fmt: skip
            va, vb = [int(s >= pass_threshold) for s in both["a"]], [int(s >= pass_threshold) for s in both["b"]]
            agree = sum(x == y for x, y in zip(va, vb))
            k = judge_agreement(va, vb, "binary", min_items=1) if both.height else {}
            lo, hi = wilson(agree, both.height)
            rows.append({"dimension": dim, "judge_a": a, "judge_b": b, "n": both.height, "agree": agree,
                         "agree_share": agree / both.height if both.height else None, "agree_ci_low": lo, "agree_ci_high": hi,
                         "kappa": k.get("kappa"), "kappa_ci_low": k.get("ci_low"), "kappa_ci_high": k.get("ci_high")})  # fmt: skip
    return pl.DataFrame(rows, schema=AGREEMENT_SCHEMA) if rows else pl.DataFrame(schema=AGREEMENT_SCHEMA)


def half(item_id: str) -> str:
    """The labelled item's half: ``choose`` (the scorer is picked here) or ``report`` (its κ is reported here)."""
    return "choose" if hashlib.sha256(f"ensemble-split:{item_id}".encode()).digest()[0] % 2 == 0 else "report"


def _kappa(frame: pl.DataFrame, pass_threshold: int, floor: float, min_items: int, rule: Rule = "point") -> dict:
    verdicts = [None if s is None else int(s >= pass_threshold) for s in frame["score"].to_list()]
    return judge_agreement(verdicts, frame["human_label"].to_list(), "binary", floor, min_items, rule)


def choose_scorer(labelled: pl.DataFrame, pass_threshold: int, kappa_floor: float, min_items: int, rule: Rule = "point") -> pl.DataFrame:
    """``labelled``: one row per ``item_id`` × ``dimension`` × ``judge_model`` (the members) with ``score`` and the
    human's binary ``human_label``. Per dimension (``CHOICE_SCHEMA``): the ensemble is used when, on the ``choose``
    half, its κ beats every member's κ; its κ, CI, n and ``validated`` (κ ≥ floor with ≥ ``min_items``) come from the
    ``report`` half alone, under the judge's own ``rule`` (point κ or its CI's low end against the floor). Fewer than
    two members, or no labels: not used, with the reason."""
    rows = []
    for dim in sorted(labelled["dimension"].unique().to_list()):
        mine = labelled.filter(pl.col("dimension") == dim).with_columns(
            pl.col("item_id").map_elements(half, return_dtype=pl.String).alias("half"))
        members = sorted(mine["judge_model"].unique().to_list())
        ens = ensemble_rows(mine, pass_threshold, ("item_id", "dimension", "half")).join(
            mine.select("item_id", "human_label").unique("item_id"), on="item_id")
        row = {"dimension": dim, "members": ",".join(members), "ensemble_used": False, "ensemble_validated": False}
        if len(members) < 2:
            rows.append({**row, "ensemble_reason": "fewer than two judges: no ensemble", "ensemble_n": 0})
            continue
        pick = {m: _kappa(mine.filter((pl.col("judge_model") == m) & (pl.col("half") == "choose")), pass_threshold, kappa_floor, 1)
                for m in members}  # fmt: skip
        pick_ens = _kappa(ens.filter(pl.col("half") == "choose"), pass_threshold, kappa_floor, 1)
        rep = _kappa(ens.filter(pl.col("half") == "report"), pass_threshold, kappa_floor, min_items, rule)  # the judge's own rule
        said = ", ".join(f"{m} κ {_fmt(pick[m]['kappa'])}" for m in members)
        chosen_on = f"choose half (n {pick_ens['n']}): {said}, ensemble κ {_fmt(pick_ens['kappa'])}"
        # a member whose κ is undefined (every verdict alike) is beaten by any defined κ
        beats = pick_ens["kappa"] is not None and all(p["kappa"] is None or pick_ens["kappa"] > p["kappa"] for p in pick.values())
        used = bool(beats and rep["validated"])
        why = ("beats each judge; " if beats else "does not beat each judge: the primary judge decides; ") + chosen_on
        why += f"; report half (n {rep['n']}): ensemble κ {_fmt(rep['kappa'])}" + ("" if rep["validated"] else f" — {rep['reason']}")
        rows.append({**row, "ensemble_used": used, "ensemble_validated": bool(rep["validated"]), "ensemble_kappa": rep["kappa"],
                     "ensemble_kappa_ci_low": rep["ci_low"], "ensemble_kappa_ci_high": rep["ci_high"], "ensemble_n": rep["n"],
                     "ensemble_reason": why})  # fmt: skip
    return pl.DataFrame(rows, schema=CHOICE_SCHEMA) if rows else pl.DataFrame(schema=CHOICE_SCHEMA)


def _fmt(k: float | None) -> str:
    return "undefined" if k is None else f"{k:.2f}"


def disagreement_flags(ensemble: pl.DataFrame | None) -> pl.DataFrame:
    """Items (case_id, system_id, dimension) whose judges disagree, with the review queue's ``judge_reason``."""
    schema = {"case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "judge_reason": pl.String}
    if ensemble is None or ensemble.height == 0:
        return pl.DataFrame(schema=schema)
    split = ensemble.filter((pl.col("judge_model") == ENSEMBLE) & (pl.col("judges_agree") == False))  # noqa: E712
    return split.select(*NIGHT_KEYS, pl.format("judges disagree: {}", "scores").alias("judge_reason")).sort(NIGHT_KEYS)


def with_ensemble(primary: pl.DataFrame | None, ensemble: pl.DataFrame | None) -> pl.DataFrame | None:
    """The judge rows the gates read: ``primary`` (llm_judge_scores), with the ensemble's rows in place of the primary
    judge's on the dimensions where the ensemble was chosen (``used``), where the judge scored the answer and two judges
    or more did; the mean floored to the 1-5 scale (floor ≥ the threshold exactly when the mean is; a gate reading the
    mean score reads it up to 0.5 low), ``passed`` and ``validated`` the ensemble's own."""
    if primary is None or ensemble is None or ensemble.height == 0:
        return primary
    # only where every reading is an ensemble's: two judges or more (a member alone is not one)
    used = ensemble.filter((pl.col("judge_model") == ENSEMBLE) & pl.col("used") & (pl.col("n_judges") >= 2))
    if used.height == 0:
        return primary
    swap = primary.join(used.select(*NIGHT_KEYS, pl.col("score").alias("_s"), pl.col("passed").alias("_p"),
                                    pl.col("validated").alias("_v"), pl.col("validation_kappa").alias("_k"),
                                    pl.col("validation_reason").alias("_r"), pl.col("scores").alias("_j")), on=list(NIGHT_KEYS), how="left")  # fmt: skip
    hit = pl.col("_s").is_not_null() & pl.col("score").is_not_null()  # a row the judge could not score keeps its error
    return swap.with_columns(
        pl.when(hit).then(pl.col("_s").floor().cast(pl.Int64)).otherwise(pl.col("score")).alias("score"),
        pl.when(hit).then(pl.col("_p")).otherwise(pl.col("passed")).alias("passed"),
        pl.when(hit).then(pl.col("_v")).otherwise(pl.col("validated")).alias("validated"),
        pl.when(hit).then(pl.col("_k")).otherwise(pl.col("validation_kappa")).alias("validation_kappa"),
        pl.when(hit).then(pl.col("_r")).otherwise(pl.col("validation_reason")).alias("validation_reason"),
        pl.when(hit).then(pl.lit(ENSEMBLE)).otherwise(pl.col("judge_model")).alias("judge_model"),
        pl.when(hit).then(pl.format("ensemble of {}", "_j")).otherwise(pl.col("justification")).alias("justification"),
    ).drop("_s", "_p", "_v", "_k", "_r", "_j")
