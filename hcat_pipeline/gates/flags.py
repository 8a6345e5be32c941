"""Counted failures a reviewer can see and contest (issue 57; golden-eval §6.5: a blocking verdict names its evidence),
pure core.

A count gate (zero tolerance: ``count <= 0``, or any ``count`` / ``any`` / ``sum`` of 0/1 flags) fails on answers a
detector flagged. Each flagged answer is a **flag**: the gate, the answer (case, system), the detector that raised it,
the span it read (the entity, the sentence, the rule's evidence) and a ``flag_id`` (a hash of gate, case, system and
span: the same false positive on a later night is the same flag). A person reviews a flag once:

* ``confirmed`` — it is a failure: it keeps counting, and the gate's FAIL rests on confirmed evidence;
* ``overturned`` — "not a failure" (who, when, why recorded): it leaves the count.

A flag nobody reviewed yet is ``unconfirmed``: it counts (the detector's word stands until a person speaks) and a FAIL
that rests on unconfirmed flags only is "pending confirmation" in the release decision. Where a second independent
signal speaks to the same answer (the judge calling it safe), an unconfirmed flag it contradicts is marked so.

``FlagReview`` rows are stored as JSON lines (``review.flags`` writes them; ``read_flag_reviews`` reads them); the
latest review of a flag wins. ``detector_precision`` turns the reviews across nights into each detector's
false-positive rate among reviewed flags with its exact interval.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import polars as pl

from hcat_pipeline.gates.certificate import clopper_pearson
from hcat_pipeline.gates.spec import GateSpec

FlagDecision = Literal["confirmed", "overturned"]
FLAG_DECISIONS: tuple[FlagDecision, ...] = ("confirmed", "overturned")
#: count statistics whose failures are single answers a person can review
COUNT_STATISTICS = ("count", "any", "sum")
FLAG_REVIEW_GLOB = "flag-reviews_*.jsonl"
SPAN_CHARS = 200
#: the detector behind each flagged metric (behaviour rules are named by their rule)
DETECTORS = {
    "pii_leak": "pii: presidio + spaCy NER and contextual patterns (resources.pii)",
    "pii_disclosed": "pii: presidio + spaCy NER and contextual patterns (resources.pii)",
    "toxicity": "toxicity model (metrics.toxicity)",
    "toxicity_abuse": "toxicity model: insult / threat / profanity (metrics.toxicity)",
}
#: gates a judge calling the answer safe contradicts (the judge reads harm, not personal data)
JUDGE_CONTRADICTS = ("toxicity", "toxicity_abuse")


@dataclass(frozen=True)
class FlagReview:
    flag_id: str
    gate: str
    case_id: str
    system_id: str
    decision: FlagDecision
    reviewer: str
    reviewed_at: str  # ISO 8601, UTC
    reason: str
    detector: str = ""
    span: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def counts_answers(gate: GateSpec) -> bool:
    """Whether the gate counts flagged answers (its failures can be reviewed one by one)."""
    return gate.statistic in COUNT_STATISTICS and gate.direction in ("<=", "<") and not gate.positive_when


def detector_of(gate: GateSpec) -> str:
    if gate.table == "behaviour_checks":
        return f"behaviour rule {gate.where.get('rule', gate.metric)} (behaviour.checks)"
    return DETECTORS.get(gate.metric, f"{gate.table}.{gate.metric}")


def _span(row: Mapping, gate: GateSpec) -> str:
    """What the detector read in the answer: the entities, the flagged sentence or the rule's evidence."""
    if gate.metric in ("pii_leak", "pii_disclosed") and row.get("pii_leaks"):
        return "; ".join(f"{e['type']}: {e['text']}" for e in row["pii_leaks"])
    if gate.metric == "toxicity_abuse" and row.get("toxicity_attribute_reasons"):
        abuse = [r for r in row["toxicity_attribute_reasons"] if r.split(" ", 1)[0] in ("INSULT", "THREAT", "PROFANITY")]
        return " | ".join(abuse or row["toxicity_attribute_reasons"])
    if gate.metric == "toxicity" and row.get("toxicity_top_sentence"):
        return str(row["toxicity_top_sentence"])  # the score is the flag's ``score``: a re-scored night keeps the flag id
    if row.get("evidence"):
        return str(row["evidence"])
    return str(row.get("answer") or "")


def flag_id(gate: str, case_id: str, system_id: str, span: str) -> str:
    return hashlib.sha1(f"{gate}|{case_id}|{system_id}|{span}".encode()).hexdigest()[:12]


def flags_of(gate: GateSpec, part: pl.DataFrame, values: pl.Series) -> list[dict]:
    """The flags of ``part`` (one gate, one system, one group): rows whose value is 1, with detector and span."""
    if not counts_answers(gate) or part.height == 0 or "case_id" not in part.columns:
        return []
    hit = (values.fill_null(0.0).cast(pl.Float64) > 0).to_list()
    out, detector = [], detector_of(gate)
    for i, row in enumerate(part.iter_rows(named=True)):
        if not hit[i]:
            continue
        span = _span(row, gate)[:SPAN_CHARS]
        score = row.get(gate.metric)
        out.append({"flag_id": flag_id(gate.name, row["case_id"], row["system_id"], span), "gate": gate.name, "row": i,
                    "case_id": row["case_id"], "system_id": row["system_id"], "detector": detector, "span": span,
                    "score": float(score) if isinstance(score, int | float) else None, "answer": str(row.get("answer") or "")[:400]})  # fmt: skip
    return out


def apply_reviews(gate: GateSpec, part: pl.DataFrame, values: pl.Series, reviews: Mapping[str, FlagReview],
                  second: Mapping[tuple[str, str], str] | None = None) -> tuple[pl.Series, dict]:  # fmt: skip
    """``values`` with overturned flags set to 0, and the row's flag columns (``n_flagged`` … ``flagged`` as JSON,
    ``fail_evidence``: confirmed | pending_confirmation | None when nothing counts)."""
    flags = flags_of(gate, part, values)
    detector = detector_of(gate) if counts_answers(gate) else None
    if not flags:
        return values, {"n_flagged": 0, "n_confirmed": 0, "n_unconfirmed": 0, "n_overturned": 0, "n_contradicted": 0,
                        "flagged": None, "fail_evidence": None, "detector": detector}  # fmt: skip
    overturned: set[int] = set()  # rows of ``part`` (a flag is one row: the one a person said is not a failure)
    for fl in flags:
        rev = reviews.get(fl["flag_id"])
        fl["status"] = rev.decision if rev else "unconfirmed"
        if rev:
            fl.update(reviewer=rev.reviewer, reviewed_at=rev.reviewed_at, reason=rev.reason)
        if rev is not None and rev.decision == "overturned":
            overturned.add(fl["row"])
        contra = (second or {}).get((fl["case_id"], fl["system_id"])) if gate.metric in JUDGE_CONTRADICTS else None
        fl["contradicted_by"] = contra if fl["status"] == "unconfirmed" else None
    if overturned:
        drop = pl.Series([i in overturned for i in range(part.height)])
        values = pl.select(pl.when(drop).then(0.0).otherwise(values.cast(pl.Float64))).to_series()
    n = {s: sum(f["status"] == s for f in flags) for s in ("confirmed", "unconfirmed", "overturned")}
    counting = n["confirmed"] + n["unconfirmed"]
    evidence = None if counting == 0 else "confirmed" if n["confirmed"] else "pending_confirmation"
    return values, {"n_flagged": len(flags), "n_confirmed": n["confirmed"], "n_unconfirmed": n["unconfirmed"],
                    "n_overturned": n["overturned"], "n_contradicted": sum(f["contradicted_by"] is not None for f in flags),
                    "flagged": json.dumps(flags, ensure_ascii=False), "fail_evidence": evidence, "detector": detector}  # fmt: skip


def judge_second_signals(judge: pl.DataFrame | None) -> dict[tuple[str, str], str]:
    """(case_id, system_id) → "the judge finds it safe (5/5)" where the LLM judge's ``safety`` dimension passed the
    answer: a second signal an unconfirmed toxicity flag is shown as contradicted by."""
    if judge is None or judge.height == 0 or not {"dimension", "passed", "score"} <= set(judge.columns):
        return {}
    safe = judge.filter((pl.col("dimension") == "safety") & pl.col("passed").fill_null(False))
    return {(c, s): f"the judge finds it safe ({v}/5)" for c, s, v in safe.select("case_id", "system_id", "score").iter_rows()}


def flag_text(row: Mapping) -> str:
    """``k confirmed / m unconfirmed / r overturned`` of a gate row (empty when it flagged nothing)."""
    if not row.get("n_flagged"):
        return ""
    extra = f", {row['n_contradicted']} contradicted by a second signal" if row.get("n_contradicted") else ""
    return f"{row['n_confirmed']} confirmed / {row['n_unconfirmed']} unconfirmed / {row['n_overturned']} overturned{extra}"


def read_flag_reviews(folder: str | Path) -> dict[str, FlagReview]:
    """The latest review of each flag from ``<folder>/flag-reviews_*.jsonl`` (a bad line raises, naming file and line)."""
    latest: dict[str, FlagReview] = {}
    for path in sorted(Path(folder).glob(FLAG_REVIEW_GLOB)) if Path(folder).is_dir() else []:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rev = FlagReview(**json.loads(line))
            except (TypeError, ValueError) as e:
                raise ValueError(f"{path}:{i}: not a flag review ({e})") from e
            if rev.decision not in FLAG_DECISIONS:
                raise ValueError(f"{path}:{i}: decision must be one of {FLAG_DECISIONS}, got {rev.decision!r}")
            if rev.flag_id not in latest or rev.reviewed_at >= latest[rev.flag_id].reviewed_at:
                latest[rev.flag_id] = rev
    return latest


def precision_text(precision: pl.DataFrame) -> dict[str, str]:
    """detector → "false positives 1 of 4 reviewed flags, 0.25 [0.01, 0.81]" (``detector_precision``'s rows)."""
    return {r["detector"]: f"false positives {r['n_overturned']} of {r['n_reviewed']} reviewed flag(s), {r['false_positive_rate']:.2f} "
                           f"[{r['fp_ci_low']:.2f}, {r['fp_ci_high']:.2f}]" for r in precision.iter_rows(named=True)}  # fmt: skip


def detector_precision(reviews: Iterable[FlagReview], confidence: float = 0.95) -> pl.DataFrame:
    """Per detector: flags reviewed, overturned, and the false-positive rate among reviewed flags with its two-sided
    exact (Clopper-Pearson) interval: what a zero-tolerance gate's FAIL on one unconfirmed flag is worth."""
    rows: dict[str, list[int]] = {}
    for r in reviews:
        k = rows.setdefault(r.detector or r.gate, [0, 0])
        k[0] += 1
        k[1] += r.decision == "overturned"
    out = []
    for det, (n, fp) in sorted(rows.items()):
        low, high = clopper_pearson(fp, n, 0.5 + confidence / 2)
        out.append({"detector": det, "n_reviewed": n, "n_overturned": fp, "false_positive_rate": fp / n,
                    "fp_ci_low": low, "fp_ci_high": high})  # fmt: skip
    schema = {"detector": pl.String, "n_reviewed": pl.Int64, "n_overturned": pl.Int64, "false_positive_rate": pl.Float64,
              "fp_ci_low": pl.Float64, "fp_ci_high": pl.Float64}  # fmt: skip
    return pl.DataFrame(out, schema=schema)
