"""Curating a golden-set version on the review page: accept / reject with a reason / edit, then freeze.

Decisions are appended to ``<curation_dir>/<base version>.decisions.jsonl`` (who, when, what; the latest
decision on a case counts), so a half-done curation survives a closed tab and two reviewers see each
other's calls. Freezing applies them to the base version and hands the result to ``cases.import_cases``
— the path ``hcat import-cases`` takes: the same format and validity checks, all or nothing, a new
frozen version directory (``source: curated``) that the ``golden_set_version_sensor`` picks up.

- a rejected case leaves; so do its variants (a variant without its base is not a case), listed;
- an edited question or reference makes a new case (a new ``case_id`` from its content: labels and
  scores of the old case never attach to the new one); its variants follow it to the new id;
- an accepted or edited case carries its review (``golden.review``): who, the date, accept / edit, and the reviewer's
  difficulty and scoring notes when given; a case nobody decided keeps what an earlier curation stamped (or none);
- the curated file is kept next to the decisions (``<new version>.curated.jsonl``) for the record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import polars as pl

from hcat_pipeline.common.locks import file_lock
from hcat_pipeline.golden.cases import case_id_for, export_cases, import_cases, load_version
from hcat_pipeline.golden.review import DIFFICULTIES, REVIEW_VERDICTS, SAMPLE_VERDICT, with_review_columns
from hcat_pipeline.golden.sample_review import with_base_gone
from hcat_pipeline.review.sampling import SampleRecord, actions_of, stamps_for

__all__ = ["Action", "CurationLog", "Curated", "apply_decisions", "freeze_curated"]

Action = Literal["accept", "reject", "edit", "undo"]
ACTIONS: tuple[str, ...] = Action.__args__
EDITABLE = ("query", "reference_answer", "options")
VALIDITY_COLUMNS = ("validity_score", "validity_verdict", "validity_reasons")


def _edited(field: str, value) -> str | list[str]:
    """An edited field as stored: text stripped; the options a list of stripped, non-empty lines."""
    if field == "options":
        lines = value.splitlines() if isinstance(value, str) else list(value or [])
        return [" ".join(str(o).split()) for o in lines if str(o).strip()]
    return (value or "").strip()


class CurationLog:
    """The decisions on one base version (append-only JSONL, one line per decision)."""

    def __init__(self, curation_dir: str | Path, base_version: str):
        self.dir = Path(curation_dir)
        self.base_version = base_version
        self.path = self.dir / f"{base_version}.decisions.jsonl"

    def _locked(self):
        return file_lock(self.dir / ".lock")

    def record(self, case_id: str, action: str, rater: str, reason: str = "", edits: dict | None = None, known: set[str] | None = None,
               difficulty: str | None = None, scoring_notes: str = "", proposal: dict | None = None) -> dict:
        """Append a decision; ValueError saying what is wrong (nothing written). ``difficulty`` (easy / medium / hard) and
        ``scoring_notes`` go with an accept or an edit onto the case's review record; ``proposal`` (``review.repairs``: the
        repair the screen offered) is recorded with whether the decision took it as is."""
        reason, edits = (reason or "").strip(), {k: _edited(k, v) for k, v in (edits or {}).items()}
        difficulty, scoring_notes = (difficulty or "").strip() or None, (scoring_notes or "").strip() or None
        if difficulty is not None and difficulty not in DIFFICULTIES:
            raise ValueError(f"difficulty {difficulty!r} is not one of {list(DIFFICULTIES)}")
        if action not in ACTIONS:
            raise ValueError(f"action {action!r} is not one of {list(ACTIONS)}")
        if known is not None and case_id not in known:
            raise ValueError(f"case {case_id!r} is not in version {self.base_version}")
        if action == "reject" and not reason:
            raise ValueError("a rejection needs a reason (what is wrong with the case)")
        if action == "edit":
            if set(edits) - set(EDITABLE) or not edits:
                raise ValueError(f"an edit changes {' and/or '.join(EDITABLE)}, got {sorted(edits)}")
            if "query" in edits and not edits["query"]:
                raise ValueError("the edited question is empty")
            if "options" in edits and (len(edits["options"]) < 2 or len(set(edits["options"])) != len(edits["options"])):
                raise ValueError(f"the edited options must be 2 or more distinct options, got {edits['options']}")
        entry = {"case_id": case_id, "action": action, "reason": reason or None, "edits": edits if action == "edit" else {},
                 "rater": rater, "at": datetime.now(UTC).isoformat(timespec="microseconds"),
                 **({"difficulty": difficulty, "scoring_notes": scoring_notes} if action in ("accept", "edit") else {}),
                 **({"proposal_offered": proposal["kind"], "as_proposed": action == "edit" and edits == proposal["edits"]}
                    if proposal else {})}  # fmt: skip
        with self._locked(), self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return entry

    def entries(self) -> list[dict]:
        if not self.path.is_file():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def decisions(self) -> dict[str, dict]:
        """The latest decision per case (an ``undo`` removes it)."""
        out: dict[str, dict] = {}
        for e in self.entries():
            if e["action"] == "undo":
                out.pop(e["case_id"], None)
            else:
                out[e["case_id"]] = e
        return out


@dataclass
class Curated:
    frame: pl.DataFrame
    rejected: dict[str, str] = field(default_factory=dict)  # case_id → reason
    cascaded: dict[str, str] = field(default_factory=dict)  # variant case_id → why it left with its base
    renamed: dict[str, str] = field(default_factory=dict)  # edited case: old id → new id
    accepted: int = 0

    @property
    def summary(self) -> dict:
        verdicts = self.frame["review_verdict"] if "review_verdict" in self.frame.columns else pl.Series([], dtype=pl.String)
        return {"cases": self.frame.height, "accepted": self.accepted, "rejected": len(self.rejected),
                "left_with_their_base": len(self.cascaded), "edited": len(self.renamed),
                "reviewed": int(verdicts.is_in(REVIEW_VERDICTS).sum()), "accepted_by_sample": int((verdicts == SAMPLE_VERDICT).sum())}  # fmt: skip


def _stamp(row: dict, decision: dict) -> dict:
    """The row with the decision's review record (the reviewer's difficulty / notes, else what the case had)."""
    return {**row, "reviewed_by": decision["rater"], "reviewed_at": decision["at"][:10], "review_verdict": decision["action"], "sample_bound": None,
            "difficulty": decision.get("difficulty") or row.get("difficulty"),
            "scoring_notes": decision.get("scoring_notes") or row.get("scoring_notes")}  # fmt: skip


def apply_decisions(frame: pl.DataFrame, decisions: dict[str, dict], stamps: dict[str, float] | None = None, signer: str = "",
                    at: str = "") -> Curated:  # fmt: skip
    """The base version's cases with the decisions applied (see the module docstring); ``stamps`` (case_id → its kind's
    bound, ``review.sampling.stamps_for``): undecided cases of kinds accepted by sample, stamped ``accepted_by_sample``
    by ``signer`` on ``at`` with the bound — never as reviewed."""
    stamps = stamps or {}
    frame = with_review_columns(frame)
    rows = frame.to_dicts()
    rejected = {cid: d["reason"] for cid, d in decisions.items() if d["action"] == "reject"}
    gone = with_base_gone(frame, set(rejected))  # transitively: a variant of a variant leaves with the rejected base too
    cascaded = {r["case_id"]: f"its base case {r['base_case_id']} was rejected" + ("" if r["base_case_id"] in rejected else " (it left with its own base)")
                for r in rows if r["case_id"] in gone and r["case_id"] not in rejected and r.get("base_case_id")}  # fmt: skip
    renamed: dict[str, str] = {}
    kept = []
    for r in rows:
        if r["case_id"] in rejected or r["case_id"] in cascaded:
            continue
        d = decisions.get(r["case_id"])
        if d and d["action"] == "edit":
            r = {**r, **d["edits"], **dict.fromkeys(VALIDITY_COLUMNS)}
            r["validity_reasons"] = []
            new_id = case_id_for(r)
            renamed[r["case_id"]], r["case_id"] = new_id, new_id
        if d and d["action"] in ("accept", "edit"):
            r = _stamp(r, d)
        elif not d and r["case_id"] in stamps:
            r = {**r, "reviewed_by": signer, "reviewed_at": at[:10], "review_verdict": SAMPLE_VERDICT, "sample_bound": stamps[r["case_id"]]}
        kept.append(r)
    for r in kept:
        if r.get("base_case_id") in renamed:
            r["base_case_id"] = renamed[r["base_case_id"]]
    accepted = sum(1 for d in decisions.values() if d["action"] == "accept")
    out = pl.DataFrame(kept, schema=frame.schema) if kept else frame.clear()
    return Curated(out, rejected, cascaded, renamed, accepted)


def freeze_curated(log: CurationLog, golden_dir: str | Path, new_version: str, check: Callable | None, rater: str) -> dict:
    """Apply the log's decisions to its base version and freeze the result as ``new_version`` through
    ``import_cases`` (``CaseImportError`` / ``GoldenSetError`` / ``ValueError`` when refused: nothing written)."""
    base, base_manifest = load_version(log.base_version, golden_dir)
    decisions, record = log.decisions(), SampleRecord(log.dir, log.base_version)
    generation = (base_manifest.get("provenance") or {}).get("generation")  # why the base is short of its share: the report says it
    stamps = stamps_for(base, record, actions_of(decisions, with_review_columns(base)))
    curated = apply_decisions(base, decisions, stamps, rater, datetime.now(UTC).isoformat())
    if curated.frame.height == 0:
        raise ValueError("every case was rejected: nothing to freeze")
    path = log.dir / f"{new_version}.curated.jsonl"
    export_cases(curated.frame, path)
    if record.exists():  # who signed the set, and each kind's state and bound as they stood
        record.sign(base, actions_of(decisions, with_review_columns(base)), rater)
    provenance = {"curated_from": log.base_version, "curated_by": rater, "curation_decisions": log.path.name, **curated.summary,
                  **({"review_by_sample": record.path.name} if record.exists() else {}),
                  "rejected_reasons": curated.rejected, "left_with_their_base": curated.cascaded, "edited_ids": curated.renamed,
                  **({"generation": generation} if generation else {})}  # fmt: skip
    return import_cases(path, new_version, golden_dir, check=check, provenance=provenance)
