"""Human labels in the gates (HCAT §1.2 step 6, §5; golden-eval §6.2), pure core.

Every gate row says what its verdict rests on (``evidence``):

* ``human_calibrated`` — the gate's dimension has the campaign's own labels in sufficient number (its active calibrator
  is fitted on ``campaign`` labels, ``calibration.sufficiency``). A raw-score gate then takes its threshold from the
  calibrator: the raw score at which P(human pass) reaches ``level`` (``calibration.ppi.crossing_score``), stored beside
  the declared one; and the row carries the night's **human-pass rate by prediction-powered inference** (the calibrated
  probability of every answer in scope, corrected by the human labels among them: ``calibration.ppi.ppi_mean``).
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

from hcat_pipeline.calibration.agreement import consensus_labels
from hcat_pipeline.calibration.fitting import CalibrationResult
from hcat_pipeline.calibration.ppi import PPIEstimate, crossing_score, ppi_mean
from hcat_pipeline.gates.spec import GateSpec

Evidence = str  # "human_calibrated" | "borrowed_labels" | "uncalibrated"
DEFAULT_LEVEL = 0.5  # P(human pass) at which a calibrated threshold sits
#: what a verdict rests on, as the report's first screen and the console say it
EVIDENCE_TEXT = {"human_calibrated": "your human labels", "borrowed_labels": "borrowed labels only", "uncalibrated": "no human labels"}


def uncalibrated_columns(gate: GateSpec) -> dict:
    """A gate row's evidence columns when no human label speaks to it (the declared threshold, no PPI rate)."""
    return {"evidence": "uncalibrated", "threshold_declared": float(gate.threshold), "threshold_source": "declared in the gates file",
            "human_pass_rate": None, "human_pass_ci_low": None, "human_pass_ci_high": None, "n_labelled": 0}  # fmt: skip


@dataclass(frozen=True)
class HumanCalibration:
    dimension: str
    metric: str
    label_source: str  # campaign | reference:<set>
    level: float
    threshold: float | None  # raw score where P(human pass) reaches ``level`` (None: never, or not a raw score)
    probs: pl.DataFrame  # case_id, system_id, p: this night's calibrated P(human pass)
    labels: pl.DataFrame  # case_id, system_id, y: the campaign's consensus labels (1 = pass)

    @property
    def evidence(self) -> Evidence:
        return "human_calibrated" if self.label_source == "campaign" else "borrowed_labels"


def _pass_probability(res: CalibrationResult):
    passing = sorted(res.passing)
    return lambda xs: res.predict(xs)[0][:, passing].sum(axis=1)


def human_calibrations(active: Sequence[CalibrationResult], calibrated: pl.DataFrame | None, labels: pl.DataFrame | None,
                       level: float = DEFAULT_LEVEL) -> dict[str, HumanCalibration]:  # fmt: skip
    """One ``HumanCalibration`` per dimension with an active fitted calibrator."""
    out: dict[str, HumanCalibration] = {}
    cons = consensus_labels(labels).filter(~pl.col("tie")) if labels is not None and labels.height else None
    for res in active:
        if res.status != "fitted" or res.calibrator is None:
            continue
        raw = not res.dimension.startswith("behaviour_")
        threshold = crossing_score(_pass_probability(res), level) if raw else None
        probs = pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "p": pl.Float64})
        if calibrated is not None and calibrated.height:
            probs = calibrated.filter((pl.col("dimension") == res.dimension) & pl.col("calibrated_probability").is_not_null()).select(
                "case_id", "system_id", pl.col("calibrated_probability").alias("p"))  # fmt: skip
        ys = pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "y": pl.Float64})
        if cons is not None and res.label_source == "campaign":
            mine = cons.filter(pl.col("dimension") == res.dimension)
            ys = mine.select("case_id", "system_id", pl.col("label_index").is_in(sorted(res.passing)).cast(pl.Float64).alias("y"))
        out[res.dimension] = HumanCalibration(res.dimension, res.metric, res.label_source, level, threshold, probs, ys)
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


def ppi_of(cal: HumanCalibration, part: pl.DataFrame) -> PPIEstimate | None:
    """The human-pass rate of the answers in ``part`` (case_id, system_id) by PPI; None with fewer than 2 labelled or no
    unlabelled answer among them."""
    keys = part.select("case_id", "system_id").unique()
    scored = keys.join(cal.probs, on=["case_id", "system_id"], how="inner")
    both = scored.join(cal.labels, on=["case_id", "system_id"], how="inner")
    rest = scored.join(cal.labels, on=["case_id", "system_id"], how="anti")
    if both.height < 2 or rest.height < 1:
        return None
    return ppi_mean(both["y"].to_numpy(), both["p"].to_numpy(), rest["p"].to_numpy())


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
    est = ppi_of(cal, part)
    if est is not None:
        cols.update(human_pass_rate=est.estimate, human_pass_ci_low=est.ci_low, human_pass_ci_high=est.ci_high, n_labelled=est.n_labelled)
    if raw_score_gate(gate) and cal.threshold is not None and gate.higher_is_better:
        cols["threshold_source"] = (f"calibrator ({cal.dimension}, campaign labels): P(human pass) = {cal.level:g} at raw "
                                    f"{cal.threshold:.3g} (declared {gate.threshold:g})")  # fmt: skip
        return gate.model_copy(update={"threshold": float(np.round(cal.threshold, 6))}), cols
    return gate, cols
