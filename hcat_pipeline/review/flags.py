"""The review page's flag screen: every answer a count gate counts as a failure, for a person to confirm or overturn
(``gates.flags``), and what the human-calibrated gates still need (stop asking when decided). Plain dicts for the
templates; no web framework here.

A review is one JSON line in ``<labels_dir>/flag-reviews_<reviewer>.jsonl`` (who, when, why); the next run of
``gate_verdicts`` reads them (``gates.flags.read_flag_reviews``): an overturned flag leaves its gate's count, a confirmed
one makes the FAIL rest on confirmed evidence.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from hcat_pipeline.gates.flags import FLAG_DECISIONS, FlagReview, detector_precision, read_flag_reviews
from hcat_pipeline.review.labelling import RATER_RE

GATE_TABLE = "gate_verdicts"


def latest_verdicts(warehouse: Path, version: str | None = None, night: str | None = None) -> tuple[pl.DataFrame | None, str]:
    """The stored ``gate_verdicts`` of ``version`` / ``night`` (None: the latest night of the latest version written) and
    its name ``<version>/<night>``; ``(None, "")`` before any night ran."""
    base = Path(warehouse) / GATE_TABLE
    files = sorted(base.glob("*/*.parquet"), key=lambda p: (p.stat().st_mtime_ns, p.parent.name, p.stem)) if base.is_dir() else []
    if version is not None:
        files = [p for p in files if p.parent.name == version and (night is None or p.stem == night)]
    if not files:
        return None, ""
    path = files[-1]
    return pl.read_parquet(path), f"{path.parent.name}/{path.stem}"


def _flags(verdicts: pl.DataFrame) -> list[dict]:
    """Every flag of the night's rows, each once (a flag shows in every scope group of its gate), unreviewed first."""
    seen, out = set(), []
    for row in verdicts.filter(pl.col("flagged").is_not_null()).sort("gate", "system_id").iter_rows(named=True):
        for fl in json.loads(row["flagged"]):
            if fl["flag_id"] in seen:
                continue
            seen.add(fl["flag_id"])
            out.append({**fl, "kind": row["kind"], "verdict": row["verdict"]})
    return out


def _unreviewed_first(flags: list[dict]) -> list[dict]:
    return sorted(flags, key=lambda f: (f["status"] != "unconfirmed", f["kind"] != "hard", f["gate"], f["system_id"], f["case_id"]))


def open_flags(warehouse: Path, labels_dir: Path) -> int:
    """How many flags of the latest night nobody reviewed yet (they go first: ``/`` opens the flag screen)."""
    verdicts, _ = latest_verdicts(warehouse)
    if verdicts is None or "flagged" not in verdicts.columns:
        return 0
    reviewed = read_flag_reviews(labels_dir)
    return sum(f["flag_id"] not in reviewed for f in _flags(verdicts))


def undecided_gates(verdicts: pl.DataFrame | None) -> list[dict]:
    """Per human-calibrated gate and system with a required human-pass rate: decided, or about how many more labels
    would decide it (``gates.calibrated``)."""
    if verdicts is None or "human_pass_decision" not in verdicts.columns:
        return []
    rows = verdicts.filter(pl.col("human_pass_decision").is_not_null()).sort("gate", "system_id", "group")
    return [{"gate": r["gate"], "system_id": r["system_id"], "group": r["group"], "decision": r["human_pass_decision"],
             "rate": r["human_pass_rate"], "low": r["human_pass_ci_low"], "high": r["human_pass_ci_high"], "n": r["n_labelled"],
             "more": r["labels_to_decide"], "note": r["labels_note"]} for r in rows.iter_rows(named=True)]  # fmt: skip


def decided_items(verdicts: pl.DataFrame | None) -> set[tuple[str, str]]:
    """(system_id, dimension) whose every human-calibrated gate with a required rate is decided: labels of those answers
    can no longer move a verdict, so the labelling queue stops asking for them (the design stays valid: the decided
    gate's interval holds at the moment it stopped, the others keep their own order)."""
    from hcat_pipeline.calibration.campaign import DIMENSION_METRICS

    if verdicts is None or "human_pass_decision" not in verdicts.columns:
        return set()
    of_metric = {m: d for d, m in DIMENSION_METRICS.items()}
    rows = verdicts.filter(pl.col("human_pass_decision").is_not_null() & (pl.col("table") == "metric_tables"))
    out: dict[tuple[str, str], bool] = {}
    for r in rows.iter_rows(named=True):
        dim = of_metric.get(r["metric"])
        if dim is not None:
            key = (r["system_id"], dim)
            out[key] = out.get(key, True) and r["human_pass_decision"] != "undecided"
    return {k for k, done in out.items() if done}


def flags_view(warehouse: Path, labels_dir: Path, version: str | None = None, night: str | None = None) -> dict:
    verdicts, name = latest_verdicts(warehouse, version, night)
    reviews = read_flag_reviews(labels_dir)
    flags = [] if verdicts is None or "flagged" not in verdicts.columns else _flags(verdicts)
    for f in flags:  # a review saved since the night ran shows at once
        rev = reviews.get(f["flag_id"])
        if rev is not None:
            f.update(status=rev.decision, reviewer=rev.reviewer, reviewed_at=rev.reviewed_at, reason=rev.reason)
    flags = _unreviewed_first(flags)
    return {"run": name, "flags": flags, "open": sum(f["status"] == "unconfirmed" for f in flags),
            "precision": detector_precision(reviews.values()).to_dicts(), "gates": undecided_gates(verdicts)}  # fmt: skip


class FlagLog:
    """Appends people's reviews of flags, one JSON line each, to ``<labels_dir>/flag-reviews_<reviewer>.jsonl``."""

    def __init__(self, labels_dir: Path):
        self.labels_dir = Path(labels_dir)

    def record(self, flag: dict, reviewer: str, decision: str, reason: str) -> FlagReview:
        """One review of ``flag`` (a flag of ``flags_view``); "not a failure" needs its reason."""
        if not RATER_RE.match(reviewer or ""):
            raise ValueError("set your rater name first (top right)")
        if decision not in FLAG_DECISIONS:
            raise ValueError(f"decision must be one of {', '.join(FLAG_DECISIONS)}, got {decision!r}")
        if decision == "overturned" and not reason.strip():
            raise ValueError("say why it is not a failure (the reason is recorded with your name)")
        rev = FlagReview(flag_id=flag["flag_id"], gate=flag["gate"], case_id=flag["case_id"], system_id=flag["system_id"],
                         decision=decision, reviewer=reviewer, reviewed_at=datetime.now(UTC).isoformat(timespec="seconds"),
                         reason=reason.strip(), detector=flag.get("detector", ""), span=flag.get("span", ""))  # fmt: skip
        self.labels_dir.mkdir(parents=True, exist_ok=True)
        with open(self.labels_dir / f"flag-reviews_{reviewer}.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rev.as_dict(), ensure_ascii=False) + "\n")
        return rev
