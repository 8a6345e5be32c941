"""Model stochasticity (golden-eval §6.6): the share of verdicts that change when the same cases are asked again.

A seeded subset of the night's happy-path cases (``stochasticity_cases``: decided ``answer_correct`` verdicts every real
system has) is re-asked ``repeats`` times, each time with the next sampling seed (``seed + r``) — what a production
system that samples anew on every request would do. ``flip_table`` compares each re-asked verdict with the night's:
per system, the flips over the decided pairs with a Wilson 95 % interval and n, and how many answers changed at all. A
greedy (temperature 0) local system repeats itself exactly: 0 flips by construction, said so; a sampling system or a
user's service shows its own variance. No Dagster import.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import polars as pl

from hcat_pipeline.common.canary_ids import drop_canaries
from hcat_pipeline.common.stats import wilson_interval
from hcat_pipeline.schemas import VERDICT_STOCHASTICITY

STOCHASTIC_RULE = "answer_correct"
DECIDED = ("pass", "fail")
FLIP_SCHEMA = VERDICT_STOCHASTICITY


@dataclass(frozen=True)
class StochasticityParams:
    """How the night measures model stochasticity (the ``verdict_stochasticity`` asset's config is derived from it)."""

    n_cases: int = field(default=4, metadata={"description": "happy-path cases re-asked (0: not measured)", "ge": 0})
    repeats: int = field(default=2, metadata={"description": "times each is asked again, each with the next sampling seed", "ge": 1})
    seed: int = field(default=0, metadata={"description": "which cases (seeded choice)"})
    ask_http: bool = field(default=False, metadata={"description": "re-ask the user's HTTP services too (extra calls to their "
                                                                   "service every night; off: the reference systems only)"})


def stochasticity_cases(checks: pl.DataFrame, n: int, seed: int = 0) -> list[str]:
    """``n`` case ids (seeded) whose ``answer_correct`` verdict is decided for every real system (canaries aside)."""
    if n <= 0 or checks.height == 0:
        return []
    real = drop_canaries(checks).filter((pl.col("rule") == STOCHASTIC_RULE) & pl.col("verdict").is_in(DECIDED))
    systems = real["system_id"].unique().to_list()
    per = real.group_by("case_id").agg(pl.col("system_id").n_unique().alias("k")).filter(pl.col("k") == len(systems))
    ids = sorted(per["case_id"].to_list())
    random.Random(f"{seed}:stochasticity").shuffle(ids)
    return sorted(ids[:n])


def reasked_verdicts(records: list[dict], judge) -> pl.DataFrame:
    """(case_id, system_id, repeat, verdict, answer) of re-asked ``records`` (each with its ``repeat``): ``judge(records)``
    returns the behaviour rows (case_id, system_id, verdict; in any order) of one repeat's records, where (case, system)
    is a key — each repeat is judged apart and its answers joined back by that key."""
    parts = []
    for r in sorted({x["repeat"] for x in records}):
        mine = [x for x in records if x["repeat"] == r]
        answers = pl.DataFrame([{"case_id": x["case_id"], "system_id": x["system_id"], "answer": x.get("answer")} for x in mine],
                               schema={"case_id": pl.String, "system_id": pl.String, "answer": pl.String})  # fmt: skip
        parts.append(judge(mine).select("case_id", "system_id", "verdict").join(answers, on=["case_id", "system_id"])
                     .with_columns(pl.lit(r, dtype=pl.Int64).alias("repeat")))  # fmt: skip
    return pl.concat(parts) if parts else pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "verdict": pl.String,
                                                                "answer": pl.String, "repeat": pl.Int64})


def flip_table(original: pl.DataFrame, reasked: pl.DataFrame, temperatures: dict[str, float] | None = None) -> pl.DataFrame:
    """``FLIP_SCHEMA`` per system. ``original``: the night's rows (case_id, system_id, verdict, answer) of the rule;
    ``reasked``: the re-asked rows (case_id, system_id, repeat, verdict, answer)."""
    base = original.select("case_id", "system_id", pl.col("verdict").alias("v0"), pl.col("answer").alias("a0"))
    pairs = reasked.join(base, on=["case_id", "system_id"], how="inner")
    out = []
    for sid in sorted(pairs["system_id"].unique().to_list()):
        mine = pairs.filter(pl.col("system_id") == sid)
        decided = mine.filter(pl.col("verdict").is_in(DECIDED) & pl.col("v0").is_in(DECIDED))
        flips = int((decided["verdict"] != decided["v0"]).sum())
        n = decided.height
        lo, hi = wilson_interval(flips, n) if n else (None, None)
        changed = int(sum(" ".join(str(a or "").split()) != " ".join(str(b or "").split()) for a, b in zip(mine["answer"], mine["a0"])))
        out.append({"system_id": sid, "n_cases": mine["case_id"].n_unique(), "repeats": int(mine["repeat"].max()), "n_pairs": n,
                    "flips": flips, "flip_share": flips / n if n else None, "ci_low": lo, "ci_high": hi, "answers_changed": changed,
                    "temperature": (temperatures or {}).get(sid)})  # fmt: skip
    return pl.DataFrame(out, schema=FLIP_SCHEMA) if out else pl.DataFrame(schema=FLIP_SCHEMA)


def flip_text(row: dict | None) -> str:
    """The uncertainty table's words for one system's row (None: not measured this night)."""
    if row is None:
        return ("not measured this night (verdict_stochasticity re-asks the reference systems; an HTTP service only with "
                "ask_http: it costs the service calls)")
    if not row["n_pairs"]:
        return f"not estimated: none of {row['n_cases']} re-asked case(s) had a decided verdict both times"
    share = f"{row['flips']} of {row['n_pairs']} verdicts flipped ({row['flip_share']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}])"
    how = f"{row['n_cases']} cases re-asked {row['repeats']}× with new sampling seeds; {row['answers_changed']} answers changed"
    greedy = "; temperature 0: greedy decoding repeats itself" if row.get("temperature") == 0 else ""
    return f"{share}, {how}{greedy}"
