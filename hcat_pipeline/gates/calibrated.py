"""Human labels in the gates (HCAT §1.2 step 6, §5; golden-eval §6.2), pure core.

Every gate row says what its verdict rests on (``evidence``):

* ``human_calibrated`` — the gate's dimension has the campaign's own labels in sufficient number (its active calibrator
  is fitted on ``campaign`` labels, ``calibration.sufficiency``). A raw-score gate then takes its threshold from the
  calibrator: the raw score at which P(human pass) reaches ``level`` (``calibration.ppi.crossing_score``), stored beside
  the declared one; and the row carries the night's **human-pass rate by active inference** (``calibration.active``: the
  cross-fitted P(human pass) of every answer in scope, corrected by the labels the night's labelling design drew, each
  weighted by the inverse of its inclusion probability; an anytime-valid interval). Labels from outside the design train
  the calibrator and never enter the rate; the row says how many labels it used, how many it left out, and why. A gate
  with ``human_pass_at_least`` is decided on that rate too: certified above → PASS, below → FAIL, else INDETERMINATE
  with about how many more labels would decide it.
* ``borrowed_labels`` — only a shipped reference set calibrates the dimension (FaithDial, ToxiGen …): the verdict stays
  on the declared threshold, and says the evidence is borrowed from another corpus.
* ``uncalibrated`` — no human label speaks to this gate's dimension.

``human_calibrations(active, calibrated, labels)`` builds one ``HumanCalibration`` per dimension;
``dimension_of(gate, calibrations)`` names the one a gate reads (a metric's, or ``behaviour_<rule>``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from hcat_pipeline.calibration.active import (
    MIN_LABELS_TO_DECIDE,
    ActiveEstimate,
    active_ppi,
    cross_fit,
    folds_of,
    processed_prefix,
)
from hcat_pipeline.calibration.agreement import consensus_labels
from hcat_pipeline.calibration.design import design_uniforms, drawn_seconds
from hcat_pipeline.calibration.fitting import CalibrationResult
from hcat_pipeline.calibration.ppi import crossing_score
from hcat_pipeline.gates.spec import GateSpec

Evidence = str  # "human_calibrated" | "borrowed_labels" | "uncalibrated"
DEFAULT_LEVEL = 0.5  # P(human pass) at which a calibrated threshold sits
#: what a verdict rests on, as the report's first screen and the console say it
EVIDENCE_TEXT = {"human_calibrated": "your human labels", "borrowed_labels": "borrowed labels only", "uncalibrated": "no human labels"}


def uncalibrated_columns(gate: GateSpec) -> dict:
    """A gate row's evidence columns when no human label speaks to it (the declared threshold, no PPI rate)."""
    return {"evidence": "uncalibrated", "threshold_declared": float(gate.threshold), "threshold_source": "declared in the gates file",
            "human_pass_rate": None, "human_pass_ci_low": None, "human_pass_ci_high": None, "n_labelled": 0,
            "label_design": None, "n_labels_excluded": 0, "labels_note": None, "human_pass_decision": None,
            "labels_to_decide": None}  # fmt: skip


@dataclass(frozen=True)
class HumanCalibration:
    dimension: str
    metric: str
    label_source: str  # campaign | reference:<set>
    level: float
    threshold: float | None  # raw score where P(human pass) reaches ``level`` (None: never, or not a raw score)
    probs: pl.DataFrame  # case_id, system_id, p, raw: this night's calibrated P(human pass) and raw score
    labels: pl.DataFrame  # case_id, system_id, y, labelled_at: consensus labels (1 = pass; a tie between raters 0.5), latest time
    design: pl.DataFrame | None = None  # case_id, system_id, inclusion_probability, design_order, queued, design_seed
    method: str = "platt"  # the calibrator cross-fitted for the rate (platt | isotonic; ordinal scales read as platt)

    @property
    def evidence(self) -> Evidence:
        return "human_calibrated" if self.label_source == "campaign" else "borrowed_labels"


def _pass_probability(res: CalibrationResult):
    passing = sorted(res.passing)
    return lambda xs: res.predict(xs)[0][:, passing].sum(axis=1)


def _consensus_with_time(labels: pl.DataFrame) -> pl.DataFrame:
    """``consensus_labels`` (ties kept: a rate reads a tie between raters as 0.5) with each item's latest ``labelled_at``
    (seconds since 1970, null when unknown): a label counts for a night's design only when given after the design was
    drawn."""
    cons = consensus_labels(labels)
    if "labelled_at" not in labels.columns or labels["labelled_at"].dtype == pl.Null:
        return cons.with_columns(pl.lit(None, pl.Float64).alias("labelled_at"))
    when = labels.group_by("case_id", "system_id", "dimension").agg(
        (pl.col("labelled_at").max().dt.epoch("ms") / 1000.0).alias("labelled_at"))  # seconds since 1970, UTC
    return cons.join(when, on=["case_id", "system_id", "dimension"], how="left")


def human_calibrations(active: Sequence[CalibrationResult], calibrated: pl.DataFrame | None, labels: pl.DataFrame | None,
                       level: float = DEFAULT_LEVEL, design: pl.DataFrame | None = None) -> dict[str, HumanCalibration]:  # fmt: skip
    """One ``HumanCalibration`` per dimension with an active fitted calibrator; ``design``: the night's frozen labelling
    design (``calibration.design.design_file``), None before one was drawn."""
    out: dict[str, HumanCalibration] = {}
    cons = _consensus_with_time(labels) if labels is not None and labels.height else None
    for res in active:
        if res.status != "fitted" or res.calibrator is None:
            continue
        raw = not res.dimension.startswith("behaviour_")
        threshold = crossing_score(_pass_probability(res), level) if raw else None
        probs = pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "p": pl.Float64, "raw": pl.Float64})
        if calibrated is not None and calibrated.height:
            probs = calibrated.filter((pl.col("dimension") == res.dimension) & pl.col("calibrated_probability").is_not_null()
                                      & pl.col("raw_score").is_not_null()).select(
                "case_id", "system_id", pl.col("calibrated_probability").alias("p"), pl.col("raw_score").cast(pl.Float64).alias("raw"))  # fmt: skip
        ys = pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "y": pl.Float64, "labelled_at": pl.Float64})
        if cons is not None and res.label_source == "campaign":
            mine = cons.filter(pl.col("dimension") == res.dimension)
            ys = mine.select("case_id", "system_id",
                             pl.when(pl.col("tie")).then(0.5).otherwise(pl.col("label_index").is_in(sorted(res.passing)).cast(pl.Float64)).alias("y"),
                             "labelled_at")  # fmt: skip
        mine_design = None if design is None else design.filter(pl.col("dimension") == res.dimension).drop("dimension")
        method = res.method if res.method in ("platt", "isotonic") else "platt"
        out[res.dimension] = HumanCalibration(res.dimension, res.metric, res.label_source, level, threshold, probs, ys,
                                              mine_design, method)  # fmt: skip
    return out


def dimension_of(gate: GateSpec, calibrations: dict[str, HumanCalibration]) -> HumanCalibration | None:
    """The calibration of the dimension ``gate`` reads: ``behaviour_<rule>`` for a behaviour gate on one rule, else the
    dimension whose metric is the gate's."""
    if gate.table == "behaviour_checks":
        rule = gate.where.get("rule")
        return calibrations.get(f"behaviour_{rule}") if isinstance(rule, str) else None
    if gate.table != "metric_tables":
        return None
    return next((c for c in calibrations.values() if c.metric == gate.metric and not c.dimension.startswith("behaviour_")), None)


def raw_score_gate(gate: GateSpec) -> bool:
    """A gate on the raw score itself (not a yes/no transform of it): its threshold can come from the calibrator."""
    return gate.equals is None and gate.at_least is None and gate.statistic not in ("count", "any", "sum")


@dataclass(frozen=True)
class RateOfLabels:
    """The human-pass rate of a gate's answers and what its labels were: used, left out, why."""

    estimate: ActiveEstimate | None
    n_excluded: int
    note: str


def ppi_of(cal: HumanCalibration, part: pl.DataFrame) -> RateOfLabels:
    """The human-pass rate of the answers in ``part`` (case_id, system_id) by active inference over the night's design
    (module doc); its estimate is None with no design yet, no design label yet, or fewer than 2 answers worked through.
    A label given before the design was drawn (``drawn_at``) speaks of an earlier night's answer: it trains the
    calibrator and the queued answer waits for a label of tonight's."""
    keys = part.select("case_id", "system_id").unique()
    scored = keys.join(cal.probs, on=["case_id", "system_id"], how="inner").join(cal.labels, on=["case_id", "system_id"], how="left")
    n_labels = int(scored["y"].is_not_null().sum())
    if cal.design is None or cal.design.height == 0:
        return RateOfLabels(None, n_labels, f"no labelling design drawn for this night yet: {n_labels} label(s) train the "
                                            "calibrator and enter no rate")  # fmt: skip
    both = scored.join(cal.design, on=["case_id", "system_id"], how="inner").sort("design_order")
    outside_population = scored.height - both.height
    if both.height < 2:
        return RateOfLabels(None, n_labels, f"{both.height} of the gate's {scored.height} answer(s) in the night's design")
    drawn_at = drawn_seconds(both["drawn_at"][0] if "drawn_at" in both.columns else None)
    y_any = both["y"].fill_null(float("nan")).to_numpy()
    stale = np.isfinite(y_any) & (both["labelled_at"].fill_null(float("inf")).to_numpy() < drawn_at)
    y = np.where(stale, np.nan, y_any)  # a label of an earlier night's answer is no label of tonight's
    queued, order = both["queued"].to_numpy(), both["design_order"].to_numpy()
    _, counted = processed_prefix(order, queued, np.isfinite(y))
    labelled = np.isfinite(y_any)
    after_gap = int((np.isfinite(y) & queued & ~counted).sum())
    earlier = int((stale & queued).sum())
    outside = int((labelled & ~queued).sum()) + int(scored.join(both.select("case_id", "system_id"), on=["case_id", "system_id"],
                                                                 how="anti")["y"].is_not_null().sum())  # fmt: skip
    keys_ = [f"{c}|{s_}|{cal.dimension}" for c, s_ in zip(both["case_id"].to_list(), both["system_id"].to_list())]
    folds = folds_of(design_uniforms(keys_, int(both["design_seed"][0]), "fold"))
    trainable = labelled & np.isin(y_any, (0.0, 1.0))  # every 0/1 label trains the other folds' calibrators; ties do not
    f = cross_fit(both["raw"].to_numpy(), folds, trainable, np.nan_to_num(y_any), cal.method)
    est = active_ppi(f, both["inclusion_probability"].to_numpy(), order, queued, y)
    why = [f"{outside} outside the design (not drawn by it: they train the calibrator only)" if outside else "",
           f"{after_gap} after an unanswered queued item (they count once it is labelled)" if after_gap else "",
           f"{earlier} given before tonight's design was drawn (an earlier answer: label it again)" if earlier else "",
           f"{outside_population} answer(s) not in the design's population" if outside_population else ""]  # fmt: skip
    used = 0 if est is None else est.n_labelled
    note = f"{used} design label(s) used" + ("; left out: " + "; ".join(w for w in why if w) if any(why) else "")
    return RateOfLabels(est, outside + after_gap + earlier, note)


def calibrated_columns(gate: GateSpec, cal: HumanCalibration | None, part: pl.DataFrame) -> tuple[GateSpec, dict]:
    """The gate as it applies to ``part`` (threshold from the calibrator where the campaign's labels allow) and the
    row's evidence columns."""
    cols = uncalibrated_columns(gate)
    if cal is None:
        return gate, cols
    cols["evidence"] = cal.evidence
    if cal.evidence != "human_calibrated":
        cols["threshold_source"] = f"the gates file, as declared (the dimension {cal.dimension} is calibrated on borrowed labels ({cal.label_source}) only)"
        return gate, cols
    rate = ppi_of(cal, part)
    est = rate.estimate
    cols.update(n_labels_excluded=rate.n_excluded, labels_note=rate.note,
                label_design=None if cal.design is None or cal.design.height == 0 else "active inference (sequential Poisson design)")
    if est is not None:
        cols.update(human_pass_rate=est.estimate, human_pass_ci_low=est.ci_low, human_pass_ci_high=est.ci_high, n_labelled=est.n_labelled)
    if gate.human_pass_at_least is not None:
        level = gate.human_pass_at_least
        cols.update(human_pass_decision="undecided" if est is None else est.decision(level),
                    labels_to_decide=MIN_LABELS_TO_DECIDE if est is None else est.labels_to_decide(level))
        if est is None and (cal.design is None or cal.design.height == 0):
            cols.update(human_pass_decision=None, labels_to_decide=None)  # no design yet: nothing to judge, nothing to ask
    if raw_score_gate(gate) and cal.threshold is not None and gate.higher_is_better:
        cols["threshold_source"] = (f"calibrator ({cal.dimension}, campaign labels): P(human pass) = {cal.level:g} at raw "
                                    f"{cal.threshold:.3g} (declared {gate.threshold:g})")  # fmt: skip
        return gate.model_copy(update={"threshold": float(np.round(cal.threshold, 6))}), cols
    return gate, cols
