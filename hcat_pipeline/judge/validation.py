"""Run the judge on human-labelled items and decide, per dimension, whether it may be used for gates.

``validate_judge`` asks the judge (``judge.scoring.llm_judge``) on labelled items of the dimensions they
are labelled for, asks the position-bias pairs in both orders, and returns:

* ``validation``: one row per judge dimension (``VALIDATION_SCHEMA``): κ vs human with its CI and n,
  ``validated`` (κ ≥ floor and enough items; False with ``reason`` for a dimension with no human
  labels at all), the label source, error / skip counts, and the three bias audits' figures;
* ``scores``: the judged items (judge score, verdict, human label, answer length, system family) —
  what the figures are drawn from;
* ``pairs``: the position-bias verdicts in both orders.

A bias flag does not change ``validated`` by itself (κ is the gate); it is reported next to it, and
the methodology's remedy — human re-scoring of the affected dimension — is for the reviewer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from hcat_pipeline.judge.audit import judge_agreement, length_bias, position_bias, self_preference
from hcat_pipeline.judge.data import LabelledItem
from hcat_pipeline.judge.scoring import JudgeConfig, JudgeItem, judge_config_hash, judge_pair_both_orders, llm_judge, model_family
from hcat_pipeline.schemas import JUDGE_VALIDATION as VALIDATION_SCHEMA

__all__ = ["VALIDATION_SCHEMA", "AuditThresholds", "validate_judge"]



@dataclass(frozen=True)
class AuditThresholds:
    """The floors and bias thresholds (one place; the judge_validation asset's config is derived from it)."""

    kappa_floor: float = 0.4  # "moderate" agreement (Landis & Koch); below it the judge decides no gate
    min_items: int = 20
    rule: Literal["point", "ci_low"] = "point"  # kappa's point estimate or its CI's lower bound against the floor
    max_flip_rate: float = 0.2
    max_abs_length_rho: float = 0.3
    max_self_preference_gap: float = 0.5  # on the 1-5 scale


def validate_judge(
    llm,
    items: Sequence[LabelledItem],
    pairs: Sequence[dict] = (),
    config: JudgeConfig = JudgeConfig(),
    model_fingerprint: str | None = None,
    pair_dimension: str = "groundedness",
    kappa_floor: float = AuditThresholds.kappa_floor,
    min_items: int = AuditThresholds.min_items,
    rule: Literal["point", "ci_low"] = AuditThresholds.rule,
    max_flip_rate: float = AuditThresholds.max_flip_rate,
    max_abs_length_rho: float = AuditThresholds.max_abs_length_rho,
    max_self_preference_gap: float = AuditThresholds.max_self_preference_gap,
    seed: int = 42,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, pl.DataFrame | dict]:
    fingerprint = model_fingerprint or (llm.fingerprint() if hasattr(llm, "fingerprint") else type(llm).__name__)
    cfg_hash = judge_config_hash(config, fingerprint)
    judge_fam = model_family(fingerprint)
    score_rows: list[dict] = []
    for dim in config.dimensions:
        dim_items = [i for i in items if i.dimension == dim]
        if not dim_items:
            continue
        judged = llm_judge([JudgeItem(i.item_id, i.answer, i.query, i.contexts, claims=i.claims, languages=i.languages) for i in dim_items], llm, config,
                           model_fingerprint=fingerprint, dimensions=[dim], progress=progress)  # fmt: skip
        for item, row in zip(dim_items, judged, strict=True):
            score_rows.append({**row, "human_label": item.label, "answer_words": len(item.answer.split()), "system": item.system,
                               "system_family": model_family(item.system), "label_source": item.source.split("/")[0],
                               "split": item.split})  # fmt: skip
    scores = pl.DataFrame(score_rows) if score_rows else pl.DataFrame()
    pair_rows = judge_pair_both_orders(pairs, llm, pair_dimension, config) if pairs else []
    pos = position_bias(pair_rows, max_flip_rate=max_flip_rate) if pair_rows else None

    rows = []
    for dim in config.dimensions:
        s = scores.filter(pl.col("dimension") == dim) if scores.height else scores
        row = dict.fromkeys(VALIDATION_SCHEMA)
        row.update(judge_config_hash=cfg_hash, judge_model=fingerprint, dimension=dim, validated=False, kappa_floor=kappa_floor)
        if dim == pair_dimension and pos:
            lo, hi = pos["flip_rate_ci"]
            row.update(position_flip_rate=pos["flip_rate"], position_flip_ci_low=lo, position_flip_ci_high=hi,
                       position_n_pairs=pos["n"], position_bias_flagged=pos["flagged"])  # fmt: skip
        if not s.height:
            row.update(reason="no human labels for this dimension: not validated", n=0, n_errors=0, n_skipped=0)
            rows.append(row)
            continue
        verdicts = [None if v is None else int(v) for v in s["passed"].to_list()]
        agree = judge_agreement(verdicts, s["human_label"].to_list(), "binary", kappa_floor, min_items, rule, seed=seed)
        lb = length_bias(s["score"].to_list(), s["answer_words"].to_list(), s["human_label"].to_list(), max_abs_length_rho, seed)
        sp = self_preference(s["score"].to_list(), s["human_label"].to_list(), s["system_family"].to_list(), judge_fam,
                             max_self_preference_gap, seed)  # fmt: skip
        row.update(
            validated=agree["validated"], reason=agree["reason"], kappa=agree["kappa"], kappa_ci_low=agree["ci_low"],
            kappa_ci_high=agree["ci_high"], kappa_method=agree["method"], n=agree["n"], accuracy=agree["accuracy"],
            n_errors=int(s["error"].is_not_null().sum()), n_skipped=int(s["skipped_reason"].is_not_null().sum()),
            label_source=",".join(sorted(set(s["label_source"].to_list()))),
            length_rho=lb["rho"], length_rho_ci_low=lb["ci_low"], length_rho_ci_high=lb["ci_high"], length_bias_flagged=lb["flagged"],
            self_preference_gap=sp["gap"], self_preference_ci_low=sp["ci_low"], self_preference_ci_high=sp["ci_high"],
            self_preference_flagged=sp["flagged"], self_preference_note=sp["reason"],
        )  # fmt: skip
        rows.append(row)
    validation = pl.DataFrame(rows, schema=VALIDATION_SCHEMA)
    return {"validation": validation, "scores": scores, "pairs": pl.DataFrame(pair_rows) if pair_rows else pl.DataFrame(),
            "position_bias": pos or {}, "judge_family": judge_fam}  # fmt: skip
