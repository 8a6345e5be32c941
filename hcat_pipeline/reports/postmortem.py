"""A short postmortem for a night that needs one (golden-eval §9.3: "analyze significant quality incidents, trace root
causes, and recommend preventive measures").

``Night`` holds what one night stored (gate verdicts, behaviour checks, the systems' config hashes, the models that
scored it); ``postmortem(now, before)`` returns the page's sections — or None when the night needs none: no blocking
gate FAILed and no system's release decision flipped since the night before. What changed (systems' configuration,
scoring models, the cases both nights share), which cases moved (pass → fail and back, per system), the likely cause
read from where the moved cases concentrate (category, stratum, variant kind), and the measures that follow.
``render_markdown`` writes it. No Dagster import.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import polars as pl

MOVED_SHOWN = 15  # cases listed per direction and system


@dataclass(frozen=True)
class Night:
    night: str
    gate_verdicts: pl.DataFrame  # gate, system_id, verdict, blocking, reason
    behaviour_checks: pl.DataFrame  # case_id, system_id, verdict (+ category, stratum_label, variant_kind when known)
    config_hashes: dict[str, str]  # system_id → config_hash
    models: dict[str, str]  # what scored the night (embedding, NLI head, judge) → its fingerprint


def release(gates: pl.DataFrame) -> dict[str, str]:
    """system → CLEARED / BLOCKED (a blocking gate that is not PASS or NOT_APPLICABLE blocks)."""
    out = {}
    for sid in sorted(gates["system_id"].drop_nulls().unique().to_list()):
        g = gates.filter((pl.col("system_id") == sid) & pl.col("blocking").fill_null(False))
        out[sid] = "BLOCKED" if g.filter(~pl.col("verdict").is_in(["PASS", "NOT_APPLICABLE"])).height else "CLEARED"
    return out


def triggers(now: Night, before: Night | None) -> list[str]:
    """Why this night needs a postmortem: every blocking gate that FAILed, every release decision that flipped."""
    out = [f"{r['system_id']}: {r['gate']} FAILED — {r['reason']}" for r in now.gate_verdicts.filter(
        pl.col("blocking").fill_null(False) & (pl.col("verdict") == "FAIL")).sort("system_id", "gate").iter_rows(named=True)]  # fmt: skip
    if before is not None:
        was, is_ = release(before.gate_verdicts), release(now.gate_verdicts)
        out += [f"{s}: release flipped {was[s]} → {is_[s]} since night {before.night}" for s in sorted(is_) if s in was and was[s] != is_[s]]
    return out


def _diffs(now: Night, before: Night) -> tuple[dict[str, tuple], dict[str, tuple]]:
    """(system → (hash before, hash now), scoring model → (before, now)) for what differs between the two nights."""
    def differ(a: dict, b: dict) -> dict[str, tuple]:
        return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}

    return differ(before.config_hashes, now.config_hashes), differ(before.models, now.models)


def changes(now: Night, before: Night | None) -> list[str]:
    """What differs from the night before: a system's configuration, a scoring model, the cases the systems answered."""
    if before is None:
        return ["no earlier night of this golden-set version: nothing to compare (the first night)"]
    configs, models = _diffs(now, before)
    out = [f"system {sid}: " + ("new" if a is None else "gone" if b is None else f"configuration {a[:10]} → {b[:10]}")
           for sid, (a, b) in configs.items()]  # fmt: skip
    out += [f"{key}: {a or 'none'} → {b or 'none'}" for key, (a, b) in models.items()]
    shared = set(now.behaviour_checks["case_id"].unique().to_list()) & set(before.behaviour_checks["case_id"].unique().to_list())
    out.append(f"cases: {len(shared)} answered both nights (same golden-set version, so the same cases where both nights read them)")
    return out


def moved_cases(now: Night, before: Night | None) -> pl.DataFrame:
    """Per system, the cases whose decided verdict changed (pass → fail: ``regressed``; fail → pass: ``fixed``)."""
    cols = {"system_id": pl.String, "case_id": pl.String, "before": pl.String, "now": pl.String, "direction": pl.String}
    if before is None:
        return pl.DataFrame(schema=cols)
    keep = ("case_id", "system_id", "verdict")
    a = before.behaviour_checks.select(keep).filter(pl.col("verdict").is_in(["pass", "fail"])).unique(["case_id", "system_id"])
    b = now.behaviour_checks.select(keep).filter(pl.col("verdict").is_in(["pass", "fail"])).unique(["case_id", "system_id"])
    j = a.join(b, on=["case_id", "system_id"], suffix="_now").filter(pl.col("verdict") != pl.col("verdict_now"))
    j = j.select("system_id", "case_id", pl.col("verdict").alias("before"), pl.col("verdict_now").alias("now"),
                 pl.when(pl.col("verdict_now") == "fail").then(pl.lit("regressed")).otherwise(pl.lit("fixed")).alias("direction"))  # fmt: skip
    return j.sort("system_id", "direction", "case_id")


def likely_cause(now: Night, moved: pl.DataFrame, failed_now: pl.DataFrame) -> list[str]:
    """Where the regressed cases (or, on a first night, the failed ones) concentrate, per system."""
    info = now.behaviour_checks.unique("case_id").select([c for c in ("case_id", "category", "stratum_label", "variant_kind", "rule")
                                                          if c in now.behaviour_checks.columns])  # fmt: skip
    base = moved.filter(pl.col("direction") == "regressed") if moved.height else failed_now
    out = []
    for sid in sorted(base["system_id"].unique().to_list()):
        ids = base.filter(pl.col("system_id") == sid)["case_id"].to_list()
        rows = info.filter(pl.col("case_id").is_in(ids))
        parts = []
        for col in ("rule", "category", "variant_kind", "stratum_label"):
            if col in rows.columns and rows.height:
                (top, k), = Counter(str(v) for v in rows[col].to_list() if v is not None).most_common(1) or [(None, 0)]
                if top is not None and k >= max(2, len(ids) // 2):
                    parts.append(f"{col} {top!r} ({k} of {len(ids)})")
        what = "regressed" if moved.height else "failed"
        out.append(f"{sid}: {len(ids)} case(s) {what}" + (", concentrated in " + ", ".join(parts) if parts else ", spread over the set"))
    return out or ["no case moved: the change is in a gate's aggregate, not in single cases"]


def postmortem(now: Night, before: Night | None) -> dict | None:
    """The page's sections, or None when the night needs no postmortem (see the module docstring)."""
    why = triggers(now, before)
    if not why:
        return None
    moved = moved_cases(now, before)
    failed_now = now.behaviour_checks.filter(pl.col("verdict") == "fail").select("system_id", "case_id")
    configs, models = _diffs(now, before) if before is not None else ({}, {})
    measures = ["add the regressed cases to the regression suite the next nights must pass (they are in this version: "
                "gate on them with `gates_read` or a curated version)"] if moved.filter(pl.col("direction") == "regressed").height else []
    if any(a is not None and b is not None for a, b in configs.values()):
        measures.append("revert or bisect the configuration change of the system(s) above before the next release")
    if models:
        measures.append("a scoring model changed: compare on the same model first (a trend across models is flagged, never trusted)")
    measures.append("label the failed answers on the review page: a verdict a person confirms is the evidence a reviewer signs")
    cause = likely_cause(now, moved, failed_now)
    failed_gates = now.gate_verdicts.filter(pl.col("blocking").fill_null(False) & (pl.col("verdict") == "FAIL"))
    for sid in sorted(set(failed_gates["system_id"].to_list()) - {c.split(":", 1)[0] for c in cause}):
        names = ", ".join(sorted(failed_gates.filter(pl.col("system_id") == sid)["gate"].to_list()))
        cause.append(f"{sid}: no case moved or failed its behaviour checks; {names} read(s) another table (the report's gate table has the evidence)")
    return {"night": now.night, "before": before.night if before else None, "why": why, "changes": changes(now, before),
            "moved": moved, "cause": cause, "measures": measures}  # fmt: skip


def render_markdown(pm: dict, version: str) -> str:
    lines = [f"# Postmortem — golden-set version {version}, night {pm['night']}", "",
             "Why this page (golden-eval §9.3):", *[f"- {w}" for w in pm["why"]], "",
             f"## What changed since {'night ' + pm['before'] if pm['before'] else 'the night before'}", *[f"- {c}" for c in pm["changes"]], "",
             "## Which cases moved"]  # fmt: skip
    moved = pm["moved"]
    if moved.height == 0:
        lines.append("- none (no earlier night, or no decided verdict changed)")
    for (sid, direction), grp in moved.group_by("system_id", "direction", maintain_order=True):
        ids = grp["case_id"].to_list()
        more = f" … and {len(ids) - MOVED_SHOWN} more" if len(ids) > MOVED_SHOWN else ""
        lines.append(f"- {sid} {direction} ({len(ids)}): " + ", ".join(ids[:MOVED_SHOWN]) + more)
    lines += ["", "## Likely cause (where the cases concentrate)", *[f"- {c}" for c in pm["cause"]], "",
              "## Preventive measures", *[f"- {m}" for m in pm["measures"]], ""]  # fmt: skip
    return "\n".join(lines)
