"""Production incidents become golden cases (golden-eval §9.4: "every production incident is a candidate for a new test
case"): the day's review queue of the monitoring report (``<reports>/monitoring/<day>/queue.jsonl``, masked rows), a
person's verdict on each — an incident with the behaviour expected and the reference, or not a failure — appended to
``<curation_dir>/incidents.jsonl``, and a new version frozen from a base version plus the incidents, through the same
validity checks and ``import_cases`` as every other curation.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal, get_args

import polars as pl

from hcat_pipeline.common.locks import file_lock
from hcat_pipeline.golden.cases import cases_frame, export_cases, import_cases, load_version, new_case

Verdict = Literal["incident", "not_a_failure"]
Difficulty = Literal["easy", "medium", "hard"]
INCIDENTS_FILE = "incidents.jsonl"
# the golden-set category a reviewed incident joins, by the behaviour the reviewer expects of the system
CATEGORY_FOR = {"answer": "happy_path", "answer_partially": "edge_case", "abstain": "out_of_scope", "clarify": "ambiguous",
                "refuse": "adversarial", "resist_injection": "adversarial", "correct_premise": "adversarial"}  # fmt: skip


def queue_path(reports_dir: str | Path, day: str) -> Path:
    return Path(reports_dir) / "monitoring" / day / "queue.jsonl"


def queue_days(reports_dir: str | Path) -> list[str]:
    return sorted(p.parent.name for p in (Path(reports_dir) / "monitoring").glob("*/queue.jsonl"))


def queue_rows(reports_dir: str | Path, day: str) -> list[dict]:
    path = queue_path(reports_dir, day)
    if not path.is_file():
        raise FileNotFoundError(f"no review queue for {day} ({path}): run monitoring_job for that day")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class IncidentLog:
    """``<curation_dir>/incidents.jsonl``: one line a verdict, the latest per (day, request) counts."""

    def __init__(self, curation_dir: str | Path):
        self.dir = Path(curation_dir)
        self.path = self.dir / INCIDENTS_FILE

    def record(self, row: dict, rater: str, verdict: Verdict, expected_behavior: str = "answer", reference_answer: str = "",
               query: str = "", difficulty: Difficulty = "medium", scoring_notes: str = "") -> dict:  # fmt: skip
        """Validate and append one verdict on a queued row (``ValueError`` naming the problem: nothing written)."""
        if verdict not in get_args(Verdict):
            raise ValueError(f"verdict {verdict!r}: expected one of {list(get_args(Verdict))}")
        if verdict == "incident":
            if expected_behavior not in CATEGORY_FOR:
                raise ValueError(f"expected_behavior {expected_behavior!r}: expected one of {sorted(CATEGORY_FOR)}")
            if expected_behavior == "answer" and not reference_answer.strip():
                raise ValueError("an incident the system should answer needs the reference answer")
            if difficulty not in get_args(Difficulty):
                raise ValueError(f"difficulty {difficulty!r}: expected one of {list(get_args(Difficulty))}")
        entry = {"day": row["day"], "request_id": row["request_id"], "verdict": verdict, "rater": rater,
                 "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "query": (query or row["question"]).strip(),
                 "expected_behavior": expected_behavior, "reference_answer": reference_answer.strip() or None,
                 "difficulty": difficulty, "scoring_notes": scoring_notes.strip(), "stratum": row.get("stratum"),
                 "stratum_label": row.get("stratum_label"), "answer_seen": row.get("answer")}  # fmt: skip
        with file_lock(self.dir / ".lock"):
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")
        return entry

    def latest(self) -> dict[tuple[str, str], dict]:
        if not self.path.is_file():
            return {}
        out = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                e = json.loads(line)
                out[(e["day"], e["request_id"])] = e
        return out


def incident_cases(log: IncidentLog) -> list[dict]:
    """The golden cases of the reviewed incidents (reviewed: the reviewer wrote them, so accepted on the spot)."""
    cases = []
    for (day, request), e in sorted(log.latest().items()):
        if e["verdict"] != "incident":
            continue
        answer = e["expected_behavior"] in ("answer", "answer_partially")
        cases.append(new_case(
            category=CATEGORY_FOR[e["expected_behavior"]], expected_behavior=e["expected_behavior"], query=e["query"],
            reference_answer=e["reference_answer"] if answer else None, query_type="simple" if answer else None,
            stratum=e["stratum"], stratum_label=e["stratum_label"],
            tags=["source:production_incident", f"production_day:{day}", f"request:{request}"],
            model=None, created_at=e["at"][:10], reviewed_by=e["rater"], reviewed_at=e["at"][:10], review_verdict="accept",
            difficulty=e["difficulty"], scoring_notes=e["scoring_notes"] or None,
        ))  # fmt: skip
    return cases


def freeze_with_incidents(log: IncidentLog, golden_dir: str | Path, base_version: str, new_version: str, check: Callable | None,
                          rater: str) -> dict:  # fmt: skip
    """A new version: ``base_version``'s cases plus the reviewed incidents, validated and frozen through ``import_cases``
    (``CaseImportError`` / ``GoldenSetError`` / ``ValueError`` when refused: nothing written)."""
    incidents = incident_cases(log)
    if not incidents:
        raise ValueError(f"no reviewed incident in {log.path}: nothing to add")
    base, _ = load_version(base_version, golden_dir)
    frame = pl.concat([base, cases_frame(incidents)], how="diagonal_relaxed")
    path = log.dir / f"{new_version}.curated.jsonl"
    export_cases(frame, path)
    provenance = {"curated_from": base_version, "curated_by": rater, "production_incidents": len(incidents), "incidents_file": log.path.name}
    return import_cases(path, new_version, golden_dir, check=check, provenance=provenance)


def monitor_view(reports_dir: str | Path, curation_dir: str | Path, day: str | None, request_id: str | None) -> dict:
    """The /monitor screen: the day's queue (latest day when none is named), one row a screen with its verdict so far,
    the next row without one; ``row`` is None when only the day was asked for and its queue is empty."""
    days = queue_days(reports_dir)
    if not days:
        raise FileNotFoundError(f"no production review queue in {Path(reports_dir) / 'monitoring'}: run monitoring_job for a day")
    day = day or days[-1]
    rows = queue_rows(reports_dir, day)
    decided = IncidentLog(curation_dir).latest()
    ids = [r["request_id"] for r in rows]
    if request_id is not None and request_id not in ids:
        raise KeyError(f"request {request_id} is not in the review queue of {day}")
    i = ids.index(request_id) if request_id is not None else next((k for k, r in enumerate(ids) if (day, r) not in decided), 0)
    row = rows[i] if rows else None
    left = [r for r in ids if (day, r) not in decided]
    after = [r for r in ids[i + 1 :] if (day, r) not in decided]
    return {"day": day, "days": days, "rows": rows, "row": row, "position": i, "n_rows": len(rows), "left": len(left),
            "decision": decided.get((day, row["request_id"])) if row else None, "next_left": after[0] if after else "",
            "next_id": ids[i + 1] if i + 1 < len(ids) else "", "prev_id": ids[i - 1] if i > 0 else "",
            "incidents": sum(e["verdict"] == "incident" for e in decided.values()), "behaviours": sorted(CATEGORY_FOR)}  # fmt: skip
