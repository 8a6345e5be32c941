"""A golden set's size and shares against the campaign file's targets (golden-eval §2.2-2.3).

§2.3: "Start with 200–500 cases"; §2.2: happy-path cases "form the majority of the set — typically 50–60%".
``CompositionTarget`` is what the campaign file declares (``generation: target_size, happy_path_share``);
``happy_path_target`` is how many happy-path cases the generation must keep for the share to hold beside the other
categories (whose attack and critical-failure suites are sized by the gates' ``certify_below``, not by the share);
``composition`` reads a frozen set against the target and says, in words, why it falls short. No Dagster import.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

TARGET_SIZE = 200  # golden-eval §2.3: start with 200-500 cases
HAPPY_PATH_SHARE = 0.5  # golden-eval §2.2: typically 50-60 % of the set
HAPPY_PATH_SHARE_MAX = 0.6


@dataclass(frozen=True)
class CompositionTarget:
    """The size and happy-path share a frozen version should reach (golden-eval §2.2-2.3)."""

    target_size: int = field(default=TARGET_SIZE, metadata={"description": "cases the version should hold (golden-eval §2.3: 200-500)", "ge": 1})
    happy_path_share: float = field(default=HAPPY_PATH_SHARE, metadata={
        "description": "share of happy-path cases the version should hold (golden-eval §2.2: 0.5-0.6)", "ge": 0.0, "le": 0.95})  # fmt: skip


def beside_others(share: float, n_other: int) -> int:
    """Happy-path cases that make ``share`` of a set whose other categories hold ``n_other`` cases."""
    return math.ceil(share / (1.0 - share) * n_other) if share < 1 else 0


def happy_path_target(target: CompositionTarget, n_other: int) -> int:
    """Happy-path cases to keep: the share of the target size, or more when the other categories alone (``n_other``
    cases) would push the share below it — the share of the whole set is what §2.2 asks."""
    return max(math.ceil(target.happy_path_share * target.target_size), beside_others(target.happy_path_share, n_other))


def per_stratum(n_happy: int, n_strata: int) -> int:
    """Happy-path cases each stratum is asked for so the strata together reach ``n_happy`` (spread evenly)."""
    return max(1, math.ceil(n_happy / max(1, n_strata)))


def composition(categories: Sequence[str], target: CompositionTarget, generation: dict | None = None) -> dict:
    """{cases, happy_path, happy_path_share, target_size, target_happy_path_share, meets_target, why_not}: the set's
    ``categories`` (one per case) against ``target``; ``why_not`` names each shortfall and its cause (``generation``:
    the generation's cases_per_stratum / kept_per_stratum / short_strata, when recorded)."""
    n = len(categories)
    happy = sum(c == "happy_path" for c in categories)
    share = happy / n if n else 0.0
    why: list[str] = []
    if n < target.target_size:
        why.append(f"{n} cases < the target {target.target_size}")
    if n and share < target.happy_path_share:
        other = n - happy
        need = beside_others(target.happy_path_share, other)
        line = (f"happy path {happy} of {n} ({share:.0%}) < {target.happy_path_share:.0%}: the other categories hold {other} cases "
                f"(the attack and critical-failure suites are sized by the gates' certify_below), so the share needs {need} "
                f"happy-path cases")  # fmt: skip
        why.append(line + _generation_cause(generation) + _time_cause(generation, need - happy))
    if n and share > max(HAPPY_PATH_SHARE_MAX, target.happy_path_share):
        why.append(f"happy path {happy} of {n} ({share:.0%}) > {HAPPY_PATH_SHARE_MAX:.0%}: too few edge, adversarial and "
                   "out-of-scope cases beside it (golden-eval §2.2)")
    return {"cases": n, "happy_path": happy, "happy_path_share": round(share, 3), "target_size": target.target_size,
            "target_happy_path_share": target.happy_path_share, "meets_target": not why, "why_not": why}  # fmt: skip


def _generation_cause(generation: dict | None) -> str:
    if not generation or "kept_per_stratum" not in generation:
        return ""
    kept, short = generation["kept_per_stratum"], generation.get("short_strata") or {}
    budget = generation.get("cases_per_stratum")
    line = f"; the generation asked {budget} a stratum × {len(kept)} strata and kept {sum(int(v) for v in kept.values())}"
    return line + (f" ({len(short)} strata short: no more signable sentences or the request budget spent)" if short else "")


def _time_cause(generation: dict | None, more: int) -> str:
    """What the missing happy-path cases would cost at this generation's own pace (issue 69 item 5: the share is not
    reached because of the time it takes on this machine, said with the figure)."""
    if not generation or more <= 0 or not generation.get("llm_seconds") or not generation.get("kept_per_stratum"):
        return ""
    kept = sum(int(v) for v in generation["kept_per_stratum"].values())
    if kept <= 0:
        return ""
    per_case = float(generation["llm_seconds"]) / kept
    return (f"; at this generation's {per_case:.0f} s a kept case, the {more} more would add ~{more * per_case / 60:.0f} min of "
            "generation on this machine, so the campaign file's cases_per_stratum holds the main command to its budget")


def describe(comp: dict) -> str:
    """One line for the report: the composition and, when short, why."""
    head = (f"{comp['cases']} cases (target {comp['target_size']}), happy path {comp['happy_path']} "
            f"({comp['happy_path_share']:.0%}; target {comp['target_happy_path_share']:.0%})")  # fmt: skip
    return head + (" — meets the target" if comp["meets_target"] else " — short: " + "; ".join(comp["why_not"]))


# ------------------------------------------------------------------ the suites against what their gates need (issue 58)
def suite_sizes(frame) -> dict[str, int]:
    """Cases per golden-set suite (the kinds ``gates.spec.suite_plan`` plans): attack and category kinds by variant_kind,
    out-of-scope questions, complete counterfactual pairs, the rule-made yes/no questions per reference answer."""
    import polars as pl

    kinds = frame["variant_kind"].value_counts().drop_nulls().iter_rows() if frame.height else []
    out = {str(k): int(n) for k, n in kinds}
    out["ood"] = int((frame["category"] == "out_of_scope").sum()) if frame.height else 0
    pairs = frame.filter(pl.col("pair_id").is_not_null()).group_by("pair_id").len() if frame.height else None
    out["counterfactual_pairs"] = int((pairs["len"] == 2).sum()) if pairs is not None else 0
    tags = frame["tags"].to_list() if frame.height else []
    for key in ("yes", "no"):
        out[f"yes_no_{key}"] = sum("yes_no:rule" in (t or []) and f"answer_key:{key}" in (t or []) for t in tags)
    return out


def suite_record(frame, sized_for: float | None, planned: dict[str, int], failures: list[dict] = ()) -> dict:
    """{sized_for, planned, made, short}: the suites of ``frame`` against the plan they were generated for; ``short``
    names each suite below its plan and why (the generation's failures of that kind, else the corpus ran out)."""
    made = suite_sizes(frame)
    short = {}
    for suite, need in planned.items():
        got = made.get(suite, 0)
        if got < need:
            why = [f["reason"] for f in failures if f.get("kind") == suite][:2]
            short[suite] = f"{got} of {need}" + (": " + "; ".join(why) if why else ": the corpus gave no more (every base tried)")
    return {"sized_for": sized_for, "planned": dict(planned), "made": {k: made.get(k, 0) for k in planned} if planned else made,
            "short": short}  # fmt: skip


def describe_suites(record: dict | None) -> str:
    """One line: the level the suites were sized for and any suite short of its plan."""
    if not record or not record.get("planned"):
        return "not recorded (a version frozen before the suites were sized by the level in force)"
    level = record.get("sized_for")
    head = f"sized for certify_below {level:.0%}" if level is not None else "sized for each gate's own certify_below"
    short = record.get("short") or {}
    return head + (" — every suite holds its plan" if not short else " — short: " + "; ".join(f"{k} {v}" for k, v in short.items()))
