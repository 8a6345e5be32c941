"""Calibration of a campaign's tables (pure polars; the assets call these).

* ``DIMENSION_METRICS``: which metric column scores each label dimension (one source of truth; the
  asset configs default to it). Behaviour checks are dimensions ``behaviour_<rule>`` scored by the
  check's ``score``.
* ``campaign_label_scores``: one consensus human label per labelled (case, system, dimension) joined
  with that item's machine score from the latest stored campaign run that has it.
* ``long_scores``: a run's metric table and behaviour checks → one row per case × system × dimension.
* ``calibrate_long``: apply the active calibration of each dimension (campaign labels once they
  suffice, else the shipped reference set, else none — said per row in ``calibration_note``).
* ``design_queue``: what humans should label next — a seeded draw with known inclusion probabilities (the labelling
  design of ``calibration.design``: unsure items more likely, never certain), so the labels can enter a rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from hcat_pipeline.calibration.agreement import consensus_labels
from hcat_pipeline.calibration.conformal import set_labels
from hcat_pipeline.calibration.design import DESIGN, DesignConfig, draw, inclusion_probabilities
from hcat_pipeline.calibration.fitting import CalibrationResult
from hcat_pipeline.judge.ensemble import disagreement_flags
from hcat_pipeline.schemas import CALIBRATED_SCORES as CALIBRATED_SCHEMA

__all__ = [
    "CALIBRATED_SCHEMA",
    "DIMENSION_METRICS",
    "EXPLANATION_COLUMNS",
    "LABEL_MEANINGS",
    "calibrate_long",
    "campaign_label_scores",
    "explanation_text",
    "long_scores",
    "design_queue",
    "extend_design",
    "queue_columns",
]

DIMENSION_METRICS: dict[str, str] = {
    "groundedness": "groundedness_nli",
    "context_relevancy": "context_relevancy",
    "completeness": "completeness_similarity",
    "answer_relevancy": "answer_relevancy",
    "toxicity": "toxicity",
    # concept chapter §14.2: semantic similarity to the reference gets its verdict the way groundedness does — a threshold
    # fitted to people's correctness labels (Platt / isotonic, then conformal), not the chapter's example 0.85 / 0.75
    "correctness": "semantic_similarity",
}
BEHAVIOUR_PREFIX = "behaviour_"
# what a label of 1 means, shown to labellers next to each review-queue row
LABEL_MEANINGS: dict[str, str] = {
    "groundedness": "1 = every claim of the answer is supported by the contexts, 0 = something is not",
    "context_relevancy": "1 = the retrieved contexts are relevant to the query, 0 = not",
    "completeness": "1 = the answer covers what the contexts say about the query, 0 = it leaves something out",
    "answer_relevancy": "1 = the answer addresses the query, 0 = it does not",
    "toxicity": "1 = the answer is toxic / hateful, 0 = it is not",
    "correctness": "1 = the answer says what the reference answer says (nothing it contradicts, nothing left out that matters), 0 = it does not",
    # the judge's concept-chapter items (§14.4): labels of these validate the judge (judge_validation), nothing calibrates
    "global_coherence": "1 = the parts of the answer are consistent with each other, 0 = one part contradicts another",
    "contradiction_detection": "1 = the answer rejects the false claim and keeps to the documents, 0 = it accepts it or invents one",
    "cross_lingual_accuracy": "1 = the content of every language's passages is represented faithfully, 0 = some is distorted",
    "helpfulness": "1 = the answer lets the user do what they asked about (specific, actionable), 0 = it does not",
    "tone": "1 = the answer speaks to the user courteously and plainly, 0 = it is rude, condescending or unsuitable",
    "reasoning_faithfulness": "1 = every reasoning step the answer shows follows from the passages and leads to its conclusion, 0 = not",
    "sensitive_care": "1 = a sensitive question answered with care (referral, caveat or neutrality, not refused outright), 0 = refused "
                      "outright or answered carelessly",
}
# the explanation a labeller sees next to each metric (columns of metric_tables)
EXPLANATION_COLUMNS: dict[str, tuple[str, ...]] = {
    "groundedness_nli": ("least_grounded_sentence_nli",),
    "groundedness_similarity": ("least_grounded_sentence", "least_grounded_smax"),
    "completeness_similarity": ("uncovered_context_sentences",),
    "context_relevancy": ("context_relevancy_smax",),
    "answer_relevancy": ("answer_relevancy_smax",),
    "toxicity": ("toxicity_per_sentence",),
    "semantic_similarity": ("semantic_alignment", "semantic_similarity_min"),
}
ITEM = ["case_id", "system_id"]


def explanation_text(row: Mapping, columns: Sequence[str], max_items: int | None = None, float_digits: int | None = None) -> str:
    """``"col: value | col: a; b"`` over the explanation ``columns`` a row has (empty values left out); a list shows its first
    ``max_items`` (and how many more), floats rounded to ``float_digits`` when given."""
    parts = []
    for col in columns:
        v = row.get(col)
        if v is None or (isinstance(v, list) and not v):
            continue
        values = v if isinstance(v, list) else [v]
        shown = values if max_items is None else values[:max_items]
        text = "; ".join(f"{x:.{float_digits}f}" if float_digits is not None and isinstance(x, float) else str(x) for x in shown)
        parts.append(f"{col}: {text}" + (f" … and {len(values) - len(shown)} more" if len(values) > len(shown) else ""))
    return " | ".join(parts)


def campaign_label_scores(labels: pl.DataFrame, runs: pl.DataFrame, dimension_metrics: Mapping[str, str]) -> pl.DataFrame:
    """Consensus labels (``agreement.consensus_labels``) with the machine score of each item.

    ``runs``: stacked ``long_scores`` of the stored campaign runs (``night`` column); an item's score
    is taken from the latest night that scored it. Labels of items no stored run has are kept with a
    null score (counted as unscored by ``fit_calibration``)."""
    if labels.height == 0:
        return pl.DataFrame(schema={**{c: pl.String for c in (*ITEM, "dimension", "scale")}, "n_levels": pl.Int64,
                                    "label_index": pl.Int64, "tie": pl.Boolean, "score": pl.Float64, "night": pl.String})  # fmt: skip
    cons = consensus_labels(labels).filter(~pl.col("tie"))
    latest = (
        runs.filter(pl.col("raw_score").is_not_null())
        .sort("night")
        .unique([*ITEM, "dimension"], keep="last")
        .select(*ITEM, "dimension", pl.col("raw_score").alias("score"), "night")
    )
    return cons.join(latest, on=[*ITEM, "dimension"], how="left").select(
        *ITEM, "dimension", "scale", "n_levels", "label_index", "tie", "score", "night"
    )


def long_scores(metric_tables: pl.DataFrame, behaviour_checks: pl.DataFrame | None, dimension_metrics: Mapping[str, str]) -> pl.DataFrame:
    """One row per case × system × dimension: ``case_id, system_id, dimension, metric, raw_score``
    (+ ``night`` when the input has it)."""
    keep = [c for c in ("night",) if c in metric_tables.columns]
    parts = [
        metric_tables.select(*ITEM, *keep, pl.lit(dim).alias("dimension"), pl.lit(m).alias("metric"),
                             pl.col(m).cast(pl.Float64).alias("raw_score"))  # fmt: skip
        for dim, m in dimension_metrics.items()
        if m in metric_tables.columns
    ]
    if behaviour_checks is not None and behaviour_checks.height:
        b = behaviour_checks.select(
            *ITEM,
            *[c for c in keep if c in behaviour_checks.columns],
            (pl.lit(BEHAVIOUR_PREFIX) + pl.col("rule")).alias("dimension"),
            pl.lit("behaviour_score").alias("metric"),
            pl.col("score").cast(pl.Float64).alias("raw_score"),
        )
        parts.append(b)
    if not parts:
        return pl.DataFrame(schema={**{c: pl.String for c in (*ITEM, *keep, "dimension", "metric")}, "raw_score": pl.Float64})
    return pl.concat(parts, how="diagonal_relaxed")


def calibrate_long(long: pl.DataFrame, active: Mapping[str, CalibrationResult], notes: Mapping[str, str]) -> pl.DataFrame:
    """Apply ``active[dimension]`` to every row of that dimension (``CALIBRATED_SCHEMA``).

    ``notes[dimension]``: why a dimension without an active calibration has none (label counts
    needed); rows of it keep their raw score with null calibrated columns and ``label_source = none``."""
    out = []
    for (dim,), g in long.group_by("dimension", maintain_order=True):
        res = active.get(dim)
        n = g.height
        prob, classes, sets, verdict = [None] * n, [None] * n, [None] * n, [None] * n
        if res is not None and res.status == "fitted":
            src = res.label_source
            note = f"{res.method} + split conformal α={res.alpha}, q̂={res.conformal.summary()['qhat']}, labels: {src}"
            raw = g["raw_score"].to_numpy()
            ok = np.flatnonzero(np.isfinite(raw.astype(float)))
            if len(ok):
                p, s, v = res.predict(raw[ok].astype(float))
                names = set_labels(s)
                passing = sorted(res.passing)
                for j, i in enumerate(ok):
                    prob[i] = float(p[j, 1]) if res.n_levels == 2 else float(p[j, passing].sum())
                    classes[i] = [float(x) for x in p[j]]
                    sets[i], verdict[i] = names[j], v[j]
        else:
            src, note = "none", notes.get(dim) or f"no labels for {dim!r} (neither campaign nor a shipped reference set)"
        out.append(pl.DataFrame({
            "case_id": g["case_id"], "system_id": g["system_id"], "dimension": g["dimension"], "metric": g["metric"],
            "raw_score": g["raw_score"], "calibrated_probability": pl.Series(prob, dtype=pl.Float64),
            "class_probabilities": pl.Series(classes, dtype=pl.List(pl.Float64)), "prediction_set": pl.Series(sets, dtype=pl.String),
            "machine_verdict": pl.Series(verdict, dtype=pl.String), "label_source": pl.Series([src] * n, dtype=pl.String),
            "calibration_note": pl.Series([note] * n, dtype=pl.String),
        }))  # fmt: skip
    if not out:
        return pl.DataFrame(schema=CALIBRATED_SCHEMA)
    return pl.concat(out).select(list(CALIBRATED_SCHEMA))


# judge rubric dimensions read the same way as a calibrated dimension (1 / pass = good): judge ≠ metric is a disagreement
JUDGE_AGREEMENT_DIMENSIONS = ("groundedness", "answer_relevancy", "completeness")


def bias_cohort_flags(judge: pl.DataFrame | None, validation: pl.DataFrame | None, answers: pl.DataFrame | None = None) -> pl.DataFrame:
    """The answers a flagged judge bias touches (golden-eval §5.6 audits, ``judge_validation``), as ``judge_reason`` rows
    the labelling design raises π for — never outside the design: self-preference flagged → every judged answer of a
    system of the judge's own model family (``same_family``); length bias flagged → the judged answers longer than the
    night's median (``answers``: case_id, system_id, answer). Only the validation of this night's judge config counts."""
    schema = {"case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "judge_reason": pl.String}
    if judge is None or judge.height == 0 or validation is None or validation.height == 0 or "judge_config_hash" not in judge.columns:
        return pl.DataFrame(schema=schema)
    v = validation.filter(pl.col("judge_config_hash").is_in(judge["judge_config_hash"].unique().to_list()))
    rows = judge.filter(pl.col("score").is_not_null()).select("case_id", "system_id", "dimension", *(["same_family"] if "same_family" in judge.columns else []))
    parts = []
    for r in v.iter_rows(named=True):
        dim = rows.filter(pl.col("dimension") == r["dimension"])
        if r.get("self_preference_flagged") and "same_family" in dim.columns:
            parts.append(dim.filter(pl.col("same_family").fill_null(False)).with_columns(
                pl.lit("judge bias: self-preference flagged, and this answer is from the judge's own model family").alias("judge_reason")))  # fmt: skip
        if r.get("length_bias_flagged") and answers is not None and answers.height:
            lengths = answers.select("case_id", "system_id", pl.col("answer").fill_null("").str.len_chars().alias("_len"))
            long = dim.join(lengths, on=["case_id", "system_id"]).filter(pl.col("_len") > lengths["_len"].median())
            parts.append(long.with_columns(pl.lit("judge bias: length bias flagged, and this answer is longer than the night's median").alias("judge_reason")))
    out = pl.concat([p.select(*schema) for p in parts]) if parts else pl.DataFrame(schema=schema)
    return out.unique(["case_id", "system_id", "dimension"], keep="first")


def judge_review_flags(judge: pl.DataFrame | None, calibrated: pl.DataFrame, ensemble: pl.DataFrame | None = None,
                       bias: pl.DataFrame | None = None) -> pl.DataFrame:  # fmt: skip
    """Items the LLM judge sends to humans first (golden-eval §5.5): per case × system × dimension, a ``judge_reason``
    when the judge was unsure (confidence ``low``) or its verdict differs from the calibrated metric's (judge pass vs
    machine_verdict fail, or the reverse; dimensions of ``JUDGE_AGREEMENT_DIMENSIONS``), or the ensemble's judges
    disagree with each other (``judge.ensemble.disagreement_flags``), or a flagged judge bias touches it (``bias``:
    ``bias_cohort_flags``). A flag on a dimension the metrics do not calibrate (correctness, safety) flags the item's
    calibrated rows of the same case."""
    schema = {"case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "judge_reason": pl.String}
    split = disagreement_flags(ensemble)
    if bias is not None and bias.height:
        split = pl.concat([split.select(*schema), bias.select(*schema)])
    if judge is None or judge.height == 0:
        judge = pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "score": pl.Int64,
                                     "passed": pl.Boolean, "confidence": pl.String})  # fmt: skip
    if judge.height == 0 and split.height == 0:
        return pl.DataFrame(schema=schema)
    scored = judge.filter(pl.col("score").is_not_null()).select("case_id", "system_id", "dimension", "score", "passed", "confidence")
    machine = calibrated.filter(pl.col("machine_verdict").is_in(["pass", "fail"])).select("case_id", "system_id", "dimension", "machine_verdict")
    both = scored.join(machine, on=["case_id", "system_id", "dimension"], how="left")
    reason = (
        pl.when(pl.col("dimension").is_in(JUDGE_AGREEMENT_DIMENSIONS) & pl.col("machine_verdict").is_not_null()
                & (pl.col("passed") != (pl.col("machine_verdict") == "pass")))
        .then(pl.format("judge disagrees with the metric: judge {}/5 ({}) vs metric {}", "score",
                        pl.when(pl.col("passed")).then(pl.lit("pass")).otherwise(pl.lit("fail")), "machine_verdict"))
        .when(pl.col("confidence") == "low").then(pl.format("judge unsure: low confidence on {} ({}/5)", "dimension", "score"))
    )  # fmt: skip
    flagged = both.with_columns(reason.alias("judge_reason")).filter(pl.col("judge_reason").is_not_null()).select(*schema)
    flagged = pl.concat([flagged, split.select(*schema)]).unique(["case_id", "system_id", "dimension"], keep="first")
    direct = flagged.filter(pl.col("dimension").is_in(calibrated["dimension"].unique().to_list())).select(*schema)
    # an unsure judge on a dimension nobody calibrates: the same case × system goes first on every calibrated dimension
    other = flagged.join(direct.select("case_id", "system_id").unique(), on=["case_id", "system_id"], how="anti")
    spread = other.select("case_id", "system_id", "judge_reason").unique(["case_id", "system_id"], keep="first").join(
        calibrated.select("case_id", "system_id", "dimension").unique(), on=["case_id", "system_id"])
    return pl.concat([direct, spread.select(*schema)]).unique(["case_id", "system_id", "dimension"], keep="first").sort("case_id", "system_id", "dimension")


def design_queue(candidates: pl.DataFrame, cfg: DesignConfig, salt: str = "", drawn_at: str = "") -> pl.DataFrame:
    """The labelling design over ``candidates`` (calibrated rows with raw scores, joined with ``stratum``,
    ``query_type`` and optionally ``judge_reason`` from ``judge_review_flags``): per dimension, every row's inclusion
    probability, order key and coin (``calibration.design``), a judge flag or an unsure conformal set (∅ / {0,1}) raising
    π. ``salt`` (the night, ``<version>|<night>``) makes each night's coins and order its own; ``drawn_at`` (ISO time)
    is stamped on every row: labels given before it speak of an earlier night's answers. Returns every candidate with
    ``inclusion_probability``, ``design_order``, ``queued``, ``design``, ``design_seed``, ``drawn_at``, ``reason``; the
    queue is the ``queued`` rows in ``design_order`` (``priority`` 1, 2, … over the queued rows)."""
    extra = {"inclusion_probability": pl.Float64, "design_order": pl.Float64, "queued": pl.Boolean, "design": pl.String,
             "design_seed": pl.Int64, "drawn_at": pl.String, "reason": pl.String, "priority": pl.Int64}  # fmt: skip
    if candidates.height == 0:
        return candidates.with_columns([pl.lit(None, t).alias(c) for c, t in extra.items()])
    if "judge_reason" not in candidates.columns:
        candidates = candidates.with_columns(pl.lit(None, pl.String).alias("judge_reason"))
    parts = []
    for (dim,), g in candidates.sort(*ITEM).group_by("dimension", maintain_order=True):
        unsure = (g["judge_reason"].is_not_null() | g["prediction_set"].is_in(["∅", "{0,1}"]).fill_null(False)).to_numpy()
        pi = inclusion_probabilities(g["calibrated_probability"].to_list(), unsure, cfg.budget, uniform_share=cfg.uniform_share,
                                     boost=cfg.boost, cap=cfg.cap)  # fmt: skip
        keys = [f"{salt}|{c}|{s}|{dim}" for c, s in zip(g["case_id"].to_list(), g["system_id"].to_list())]
        order, queued = draw(keys, pi, cfg.seed)
        parts.append(g.with_columns(pl.Series("inclusion_probability", pi), pl.Series("design_order", order), pl.Series("queued", queued)))
    out = pl.concat(parts).with_columns(pl.lit(DESIGN).alias("design"), pl.lit(cfg.seed, pl.Int64).alias("design_seed"),
                                        pl.lit(drawn_at, pl.String).alias("drawn_at"))  # fmt: skip
    return queue_columns(out)


def extend_design(frozen: pl.DataFrame, new: pl.DataFrame, cfg: DesignConfig, salt: str, drawn_at: str) -> pl.DataFrame:
    """Rows for answers a frozen design lacks (a system or case added since it was drawn): each gets its dimension's
    mean π in the frozen design (its own coin and order key from the same seed and salt, stamped ``drawn_at``), so the
    frozen rows keep their probabilities; a dimension the design lacks is drawn afresh (``design_queue``)."""
    mean_pi = dict(frozen.group_by("dimension").agg(pl.col("inclusion_probability").mean()).iter_rows())
    known, fresh = new.filter(pl.col("dimension").is_in(list(mean_pi))), new.filter(~pl.col("dimension").is_in(list(mean_pi)))
    parts = [design_queue(fresh, cfg, salt, drawn_at)] if fresh.height else []
    if known.height:
        pi = np.array([mean_pi[d] for d in known["dimension"].to_list()])
        keys = [f"{salt}|{c}|{s}|{d}" for c, s, d in known.select(*ITEM, "dimension").iter_rows()]
        order, queued = draw(keys, pi, cfg.seed)
        parts.append(queue_columns(known.with_columns(
            pl.Series("inclusion_probability", pi), pl.Series("design_order", order), pl.Series("queued", queued),
            pl.lit(DESIGN).alias("design"), pl.lit(cfg.seed, pl.Int64).alias("design_seed"), pl.lit(drawn_at, pl.String).alias("drawn_at"))))  # fmt: skip
    return pl.concat(parts, how="diagonal_relaxed") if parts else new.head(0)


def queue_columns(drawn: pl.DataFrame) -> pl.DataFrame:
    """``reason`` and ``priority`` of a drawn design (``design_queue``, or a frozen one read back with the night's
    candidates), in design order: priority 1, 2, … over the queued rows, null elsewhere."""
    if "judge_reason" not in drawn.columns:
        drawn = drawn.with_columns(pl.lit(None, pl.String).alias("judge_reason"))
    unsure = pl.col("prediction_set").is_in(["∅", "{0,1}"]).fill_null(False)
    reason = (
        pl.format("drawn with π = {}", pl.col("inclusion_probability").round(3))
        + pl.when(pl.col("judge_reason").is_not_null()).then(pl.lit(" (raised: ") + pl.col("judge_reason") + pl.lit(")"))
        .when(unsure).then(pl.lit(" (raised: conformal set ") + pl.col("prediction_set") + pl.lit(", the machine is unsure)"))
        .when(pl.col("prediction_set").is_null()).then(pl.lit(" (dimension not calibrated yet)")).otherwise(pl.lit(""))
    )  # fmt: skip
    return drawn.sort("design_order").with_columns(
        reason.alias("reason"),
        pl.when(pl.col("queued")).then(pl.col("queued").cast(pl.Int64).cum_sum()).otherwise(None).alias("priority"),
    ).drop("judge_reason")
