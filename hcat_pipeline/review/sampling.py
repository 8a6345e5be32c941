"""The curate page's review by sample (issue 68 item 1): the plan per kind of case, fixed before any case is read, kept
beside the decisions as ``<curation_dir>/<base version>.samples.json`` — the tolerance and confidence it was drawn for,
the seed, each kind's sample, who drew it and when; on freezing, who signed and each kind's state and bound.

The decisions themselves stay in the curation log (``review.curation``): a sampled case is accepted, edited or rejected
like any other, and the edits and rejections apply. ``sample_order`` is what the case screen asks next: the undecided
cases of every kind's sample, then every case of a kind whose sample failed; a kind accepted by sample asks nothing
more, and freezing stamps its unsampled cases ``accepted_by_sample`` with the kind's bound (``golden.sample_review``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from hcat_pipeline.common.locks import file_lock
from hcat_pipeline.golden.review import REVIEW_VERDICTS
from hcat_pipeline.golden.sample_review import (
    KindPlan,
    KindStatus,
    bases_of,
    kind_status,
    plan_kinds,
    sample_stamps,
    with_base_gone,
    with_kinds,
)

BASES = "(bases)"  # the cases variants were derived from: reviewed case by case before any kind is drawn


class SampleRecord:
    def __init__(self, curation_dir: str | Path, base_version: str):
        self.dir = Path(curation_dir)
        self.path = self.dir / f"{base_version}.samples.json"

    def exists(self) -> bool:
        return self.path.is_file()

    def read(self) -> dict:
        return json.loads(self.path.read_text(encoding="utf-8"))

    def plans(self) -> dict[str, KindPlan]:
        return {k: KindPlan(**p) for k, p in self.read()["kinds"].items()} if self.exists() else {}

    def bases(self) -> list[str]:
        return list(self.read().get("bases") or []) if self.exists() else []

    def start(self, frame: pl.DataFrame, rater: str, tolerance: float, confidence: float, acceptance: int = 0, seed: int = 0) -> dict:
        """Write the record: the bases to review first (their variants leave with a rejected one), the kinds' plans drawn
        once the bases are decided (``draw_kinds``); a record that exists is kept as it is (a plan is never redrawn)."""
        if not 0 < tolerance < 1 or not 0.5 <= confidence < 1:
            raise ValueError(f"tolerance {tolerance} must be in (0, 1) and confidence {confidence} in [0.5, 1)")
        with file_lock(self.dir / ".lock"):
            if self.exists():
                return self.read()
            record = {"tolerance": tolerance, "confidence": confidence, "acceptance": acceptance, "seed": seed, "drawn_by": rater,
                      "drawn_at": datetime.now(UTC).isoformat(timespec="seconds"), "bases": bases_of(frame), "kinds": {},
                      "left_out": {}, "signed": None}  # fmt: skip
            self.dir.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(record, indent=1), encoding="utf-8")
        return self.draw_kinds(frame, {})

    def draw_kinds(self, frame: pl.DataFrame, actions: dict[str, str]) -> dict:
        """Once every base is decided: each kind's plan over the cases that remain (not a base, not gone with a rejected
        base), fixed before any of them is read; written once."""
        with file_lock(self.dir / ".lock"):
            record = self.read()
            if record["kinds"] or any(b not in actions for b in record["bases"]):
                return record
            gone = with_base_gone(frame, {b for b in record["bases"] if actions.get(b) == "reject"})
            plans = plan_kinds(frame, record["tolerance"], record["confidence"], record["acceptance"], record["seed"],
                               exclude=set(record["bases"]) | gone)  # fmt: skip
            record["kinds"] = {k: p.as_dict() for k, p in plans.items()}
            record["kinds_drawn_at"] = datetime.now(UTC).isoformat(timespec="seconds")
            self.path.write_text(json.dumps(record, indent=1), encoding="utf-8")
            return record

    def leave_out(self, kind: str, rater: str, reason: str) -> dict:
        """The reviewer leaves a kind out of the signed set (its cases are rejected through the curation log)."""
        with file_lock(self.dir / ".lock"):
            record = self.read()
            record["left_out"][kind] = {"by": rater, "at": datetime.now(UTC).isoformat(timespec="seconds"), "reason": reason}
            self.path.write_text(json.dumps(record, indent=1), encoding="utf-8")
            return record

    def sign(self, frame: pl.DataFrame, actions: dict[str, str], rater: str) -> dict:
        """Record who signed the set and each kind's state and bound as they stood (at freezing)."""
        record = self.read()
        record["signed"] = {"by": rater, "at": datetime.now(UTC).isoformat(timespec="seconds"),
                            "kinds": {s.kind: {"state": s.state, "n_unsound": s.n_unsound, "n_sample": s.n_sample, "bound": s.bound}
                                      for s in statuses(frame, self.plans(), actions)}}  # fmt: skip
        self.path.write_text(json.dumps(record, indent=1), encoding="utf-8")
        return record


def actions_of(decisions: dict[str, dict], frame: pl.DataFrame | None = None) -> dict[str, str]:
    """case_id → the latest action on the page; with ``frame``, a case a person reviewed in an earlier curation (accept or
    edit: as it stands now, it was read and found fit) counts as accepted unless decided again."""
    prior = {}
    if frame is not None and "review_verdict" in frame.columns:
        prior = {c: "accept" for c in frame.filter(pl.col("review_verdict").is_in(REVIEW_VERDICTS))["case_id"].to_list()}
    return prior | {c: d["action"] for c, d in decisions.items()}


def statuses(frame: pl.DataFrame, plans: dict[str, KindPlan], actions: dict[str, str], bases: list[str] | None = None,
             left_out: dict | None = None) -> list[KindStatus]:  # fmt: skip
    """The bases' status first (reviewed by case), then each kind's (a kind left out says so)."""
    kinds = with_kinds(frame)
    out = []
    if bases:
        todo = [b for b in bases if b not in actions]
        unsound = sum(actions.get(b) in ("edit", "reject") for b in bases)
        out.append(KindStatus(BASES, "sampling" if todo else "reviewed_by_case", len(bases), len(bases), len(bases) - len(todo), unsound, None, todo))
    for k, p in sorted(plans.items()):
        s = kind_status(p, kinds.filter(pl.col("review_kind") == k)["case_id"].to_list(), actions)
        out.append(KindStatus(k, "left_out", s.n_cases, s.n_sample, s.n_decided, s.n_unsound, None) if k in (left_out or {}) else s)
    return out


def sample_order(frame: pl.DataFrame, plans: dict[str, KindPlan], actions: dict[str, str], bases: list[str] | None = None,
                 left_out: dict | None = None) -> list[str]:  # fmt: skip
    """The cases the screen walks, in order: the bases, then every kind's sample (decided or not), then every other case
    of a kind whose sample failed (sent case by case); a kind accepted by sample, still sampling or left out adds nothing
    more."""
    kinds = with_kinds(frame)
    out = list(bases or []) + [c for k, p in sorted(plans.items()) if k not in (left_out or {}) for c in p.sample]
    for s in statuses(frame, plans, actions):
        failed = s.n_sample < s.n_cases and s.state in ("case_by_case", "reviewed_by_case") and s.kind not in (left_out or {})
        if failed:
            sample = set(plans[s.kind].sample)
            out += [c for c in sorted(kinds.filter(pl.col("review_kind") == s.kind)["case_id"].to_list()) if c not in sample]
    return out


def stamps_for(frame: pl.DataFrame, record: SampleRecord, actions: dict[str, str]) -> dict[str, float]:
    """case_id → its kind's bound, for the unsampled cases of the kinds accepted by sample (empty without a record)."""
    return sample_stamps(frame, record.plans(), actions) if record.exists() else {}


def walk(frame: pl.DataFrame, record: SampleRecord, actions: dict[str, str]) -> dict:
    """What the screens show of a review by sample: the order to walk, each kind's status (the bases first) and how many
    cases may still join the order (a kind still sampling may fail its sample; the kinds are drawn once the bases are
    decided). Draws the kinds' plans when the last base was just decided."""
    record.draw_kinds(frame, actions)
    data = record.read()
    plans, bases, left_out = record.plans(), data.get("bases") or [], data.get("left_out") or {}
    rows = [vars(s) | {"to_review": len(s.to_review)} for s in statuses(frame, plans, actions, bases, left_out)]
    undrawn = frame.height - len(bases) if not plans else 0  # the kinds not drawn yet: every case may join
    pending = undrawn + sum(k["n_cases"] - k["n_sample"] for k in rows if k["state"] == "sampling" and k["kind"] != BASES)
    return {"order": sample_order(frame, plans, actions, bases, left_out), "kinds": rows, "pending": pending}
