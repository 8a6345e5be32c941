"""Per system × behaviour rule: how often the rule passed, with its Wilson interval (the ``behaviour_checks`` summary)."""

from __future__ import annotations

import polars as pl

from hcat_pipeline.schemas import BEHAVIOUR_SUMMARY

NO_ANSWER = "no answer: "  # the evidence prefix of a failed response: behaviour.checks writes it, the summary counts it


def behaviour_summary(table: pl.DataFrame, confidence: float = 0.95) -> pl.DataFrame:
    """Per system × rule: n, pass / fail / unsure / no_answer counts, pass_rate = pass / n (unsure and
    unanswered count as not passed) with its Wilson interval (scipy), decided_pass_rate = pass / (pass + fail)."""
    from scipy.stats import binomtest

    if table.height == 0:
        return pl.DataFrame(schema=BEHAVIOUR_SUMMARY)
    g = (
        table.group_by(["system_id", "rule"])
        .agg(pl.len().alias("n"), *[(pl.col("verdict") == v).sum().alias(v) for v in ("pass", "fail", "unsure")],
             pl.col("evidence").str.starts_with(NO_ANSWER).sum().alias("no_answer"))  # fmt: skip
        .sort(["system_id", "rule"])
    )
    recs = []
    for r in g.to_dicts():
        ci = binomtest(int(r["pass"]), int(r["n"])).proportion_ci(confidence_level=confidence, method="wilson")
        decided = r["pass"] + r["fail"]
        recs.append({**r, "pass_rate": r["pass"] / r["n"], "pass_rate_ci_low": float(ci.low), "pass_rate_ci_high": float(ci.high),
                     "decided_pass_rate": r["pass"] / decided if decided else None})  # fmt: skip
    return pl.DataFrame(recs, schema=BEHAVIOUR_SUMMARY)

