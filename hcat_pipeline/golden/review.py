"""A case's review record (golden-eval §2.4-2.5): who read it, when, what they decided, how hard it is, how to score it.

Every case of a frozen version may carry ``REVIEW`` columns (``schemas.REVIEW``): a person's ``accept`` or ``edit`` on
the review page's curate screen stamps ``reviewed_by`` / ``reviewed_at`` / ``review_verdict`` (a rejected case leaves
the version), with the reviewer's ``difficulty`` and ``scoring_notes`` when given. A case nobody read has them null —
generated is not reviewed. The campaign file's ``gates_read`` chooses whether the release gates read every case of the
version (``all``) or only the reviewed ones (``reviewed``); the report's first screen says which, and how many.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

import polars as pl

from hcat_pipeline.common.canary_ids import drop_canaries
from hcat_pipeline.schemas import REVIEW

__all__ = ["DIFFICULTIES", "GatesRead", "REVIEW_VERDICTS", "SAMPLE_VERDICT", "gate_cases", "sampled_ids", "gate_tables", "review_fields", "review_order", "review_summary",
           "reviewed_ids", "with_review_columns"]

REVIEW_VERDICTS = ("accept", "edit")  # a person read the case
SAMPLE_VERDICT = "accepted_by_sample"  # nobody read it: its kind's sample was (golden.sample_review), never "reviewed"
Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[str, ...] = Difficulty.__args__
GatesRead = Literal["all", "reviewed", "signed"]  # signed: reviewed by case or accepted by sample


def with_review_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every ``REVIEW`` column (null where a version frozen before them has none)."""
    missing = [pl.lit(None, dtype=t).alias(c) for c, t in REVIEW.items() if c not in frame.columns]
    return frame.with_columns(missing) if missing else frame


def iso_date_problem(value: str | None, name: str, problems: list[str]) -> None:
    """Append why ``value`` (a case's date field; None: absent) is not an ISO date."""
    if value is None:
        return
    try:
        dt.date.fromisoformat(value[:10])
    except ValueError:
        problems.append(f"{name} {value!r} is not an ISO date")


def review_fields(row: dict, problems: list[str]) -> dict:
    """The review columns of an imported row, normalised; what is wrong appended to ``problems``."""
    out = {c: (None if row.get(c) in (None, "") else str(row[c]).strip() or None) for c in REVIEW if c != "sample_bound"}
    try:
        out["sample_bound"] = None if row.get("sample_bound") in (None, "") else float(row["sample_bound"])
    except (TypeError, ValueError):
        problems.append(f"sample_bound {row['sample_bound']!r} is not a number")
        out["sample_bound"] = None
    if out["review_verdict"] is not None and out["review_verdict"] not in (*REVIEW_VERDICTS, SAMPLE_VERDICT):
        problems.append(f"review_verdict {out['review_verdict']!r} is not one of {[*REVIEW_VERDICTS, SAMPLE_VERDICT]} (a rejected case is removed)")
    if (out["review_verdict"] == SAMPLE_VERDICT) != (out["sample_bound"] is not None):
        problems.append("accepted_by_sample carries its kind's sample_bound (and only it does)")
    if out["difficulty"] is not None and out["difficulty"] not in DIFFICULTIES:
        problems.append(f"difficulty {out['difficulty']!r} is not one of {list(DIFFICULTIES)}")
    iso_date_problem(out["reviewed_at"], "reviewed_at", problems)
    if (out["review_verdict"] is None) != (out["reviewed_by"] is None) or (out["review_verdict"] is None) != (out["reviewed_at"] is None):
        problems.append("a review needs all of reviewed_by, reviewed_at and review_verdict (or none of them)")
    return out


def reviewed_ids(frame: pl.DataFrame) -> set[str]:
    """Cases a person accepted or edited."""
    if "review_verdict" not in frame.columns:
        return set()
    return set(frame.filter(pl.col("review_verdict").is_in(REVIEW_VERDICTS))["case_id"].to_list())


def review_summary(frame: pl.DataFrame, gates_read: GatesRead = "all") -> dict:
    """What the gates read of this version: ``gates_read``, cases, reviewed cases, cases accepted by sample, reviewers,
    last review date, and a sentence for the report's first screen."""
    f = with_review_columns(frame)
    done = f.filter(pl.col("review_verdict").is_in(REVIEW_VERDICTS))
    n, k, s = f.height, done.height, int((f["review_verdict"] == SAMPLE_VERDICT).sum())
    out = {"gates_read": gates_read, "n_cases": n, "n_reviewed": k, "n_accepted_by_sample": s,
           "reviewers": sorted(set(done["reviewed_by"].drop_nulls().to_list())), "last_reviewed_at": done["reviewed_at"].max()}  # fmt: skip
    by = f" (by {', '.join(out['reviewers'])}, on {out['last_reviewed_at']})" if out["reviewers"] else ""
    sampled = f" and {s} accepted by sample (unread: their kind's sample was)" if s else ""
    if gates_read == "reviewed":
        out["text"] = f"the gates read the {k} reviewed case(s){by} of {n} (campaign file gates_read: reviewed)"
    elif gates_read == "signed":
        out["text"] = f"the gates read the {k} reviewed case(s){by}{sampled} of {n} (campaign file gates_read: signed)"
    else:
        out["text"] = (f"the gates read all {n} case(s), {k} of them reviewed by a person{by}{sampled}" if k or s else
                       f"the gates read all {n} case(s), none reviewed by a person (generated and checked by rule only)")
    return out


def gate_cases(frame: pl.DataFrame, gates_read: GatesRead) -> pl.DataFrame:
    """The cases the release gates read: all, only the reviewed ones, or the reviewed and the accepted by sample."""
    if gates_read == "all":
        return frame
    keep = reviewed_ids(frame) | (sampled_ids(frame) if gates_read == "signed" else set())
    return frame.filter(pl.col("case_id").is_in(sorted(keep)))


def sampled_ids(frame: pl.DataFrame) -> set[str]:
    """Cases accepted by sample (unread; their kind's sample was)."""
    if "review_verdict" not in frame.columns:
        return set()
    return set(frame.filter(pl.col("review_verdict") == SAMPLE_VERDICT)["case_id"].to_list())


def review_order(frame: pl.DataFrame, decided: set[str] = frozenset()) -> list[str]:
    """Case ids in the order a reviewer should read them: not yet reviewed (nor decided on the page) first, then by how
    likely the validator thinks each is unsound (lowest ``validity_score`` first; a case it did not score after the
    scored ones), then by id."""
    f = with_review_columns(frame)
    rows = f.select("case_id", "validity_score", "review_verdict").iter_rows(named=True)

    def key(r: dict):
        done = r["review_verdict"] in REVIEW_VERDICTS or r["case_id"] in decided
        score = r["validity_score"]
        return (done, score is None, score if score is not None else 0.0, r["case_id"])

    return [r["case_id"] for r in sorted(rows, key=key)]


def gate_tables(tables: dict[str, pl.DataFrame | None], frame: pl.DataFrame, gates_read: GatesRead) -> dict[str, pl.DataFrame | None]:
    """The tables the release gates read, restricted to ``gate_cases`` (rows of a table without ``case_id`` stay)."""
    if gates_read == "all":
        return tables
    keep = gate_cases(frame, gates_read)["case_id"].to_list()
    return {k: (t.filter(pl.col("case_id").is_in(keep)) if t is not None and "case_id" in t.columns else t) for k, t in tables.items()}


def measured_difficulty(checks: pl.DataFrame, case_id: str) -> dict | None:
    """The difficulty the systems' results suggest for ``case_id`` (golden-eval §2.4 "difficulty rating"), from
    ``behaviour_checks`` rows of any nights (case_id, system_id, verdict): {failed, answers, rate, suggested} — easy
    below a third failed, hard from two thirds, medium between; None when no system has answered it (a decided verdict:
    pass or fail; unsure is left out). Planted-fault canaries are not systems."""
    rows = drop_canaries(checks.filter((pl.col("case_id") == case_id) & pl.col("verdict").is_in(["pass", "fail"])))
    if rows.height == 0:
        return None
    failed = int((rows["verdict"] == "fail").sum())
    rate = failed / rows.height
    suggested = "easy" if rate < 1 / 3 else "hard" if rate >= 2 / 3 else "medium"
    return {"failed": failed, "answers": rows.height, "rate": round(rate, 3), "suggested": suggested}
