"""The curate screen one case at a time (golden-eval §2.4-2.5): what a reviewer needs to accept, reject or edit a case in
about ten seconds without scrolling — the question, the reference, the source passage with the reference sentence
marked, the validator's verdict and reasons, the case's review record — in the order ``golden.review.review_order``
gives (cases nobody reviewed first, the likeliest unsound first)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from hcat_pipeline.common.sentences import sentences
from hcat_pipeline.golden.cases import latest_version, list_versions, load_version
from hcat_pipeline.golden.composition import TARGET_SIZE
from hcat_pipeline.golden.review import REVIEW_VERDICTS, measured_difficulty, review_order, with_review_columns
from hcat_pipeline.golden.review_order import learnt_order, still_missing
from hcat_pipeline.review.curation import CurationLog, apply_decisions
from hcat_pipeline.review.items import Flag, highlight
from hcat_pipeline.review.repairs import proposal_counts, propose
from hcat_pipeline.review.sampling import SampleRecord, actions_of, walk

__all__ = ["case_screen_view", "reference_marks", "source_passages"]

_LEAD = re.compile(r"^(?:yes|no)[.,]\s*", re.I)
_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def reference_marks(passage: str, reference: str) -> list[Flag]:
    """The passage's sentences that the reference states: each reference sentence found in the passage (whitespace-
    insensitive; a "Yes." / "No." lead dropped) is marked "the reference sentence"; a reference found nowhere marks the
    passage sentence that shares most of its words (at least 60 %) as "closest to the reference"."""
    refs = [_LEAD.sub("", s).strip().rstrip(".") for s in re.split(r"(?<=[.!?])\s+", (reference or "").strip())]
    refs = [r for r in refs if r]
    found = []
    for r in refs:  # the passage's own words (case and spacing as the passage has them), so ``highlight`` finds them
        m = re.search(r"\s+".join(re.escape(w) for w in r.split()), passage, re.I)
        if m:
            found.append(Flag(m.group(0), "passages", "the reference sentence"))
    if found or not refs:
        return found
    want = _words(" ".join(refs))
    shared = {s: len(want & _words(s)) / max(len(want), 1) for s in sentences(passage)}
    best = max(shared, key=shared.get, default=None)
    return [Flag(best, "passages", "closest to the reference (not word for word)")] if best and shared[best] >= 0.6 else []


def source_passages(case: dict, chunk_text: dict[str, str]) -> list[dict]:
    """The case's source chunks, each cut into ``highlight`` segments with the reference sentence(s) marked; a chunk the
    table does not hold says so."""
    out = []
    for cid in case.get("source_chunk_ids") or []:
        text = chunk_text.get(cid)
        if text is None:
            out.append({"chunk_id": cid, "segments": [{"text": "(this chunk is not in the chunks table any more)", "why": None}], "marked": False})
            continue
        marks = reference_marks(text, case.get("reference_answer") or "")
        out.append({"chunk_id": cid, "segments": highlight(text, marks), "marked": bool(marks)})
    return out


def _chunk_text(path: Path, ids: list[str]) -> dict[str, str]:
    if not ids or not Path(path).is_file():
        return {}
    return dict(pl.read_parquet(path, columns=["chunk_id", "text"]).filter(pl.col("chunk_id").is_in(ids)).iter_rows())


def _behaviour_checks(warehouse: Path | None, version: str) -> pl.DataFrame:
    """Every night's behaviour_checks of ``version`` (case_id, system_id, verdict); empty when none is stored."""
    files = sorted(Path(warehouse, "behaviour_checks", version).glob("*.parquet")) if warehouse else []
    cols = ["case_id", "system_id", "verdict"]
    return pl.concat([pl.read_parquet(f, columns=cols) for f in files]) if files else pl.DataFrame(schema=dict.fromkeys(cols, pl.String))


_VECTORS: dict[tuple, np.ndarray] = {}  # (version, chunks file, its mtime) → the cases' embeddings, computed once a version


def _vectors(frame: pl.DataFrame, chunks: Path, version: str, embed) -> np.ndarray:
    """MiniLM embeddings of each case's question, reference and source passage, side by side (cached per version)."""
    key = (version, str(chunks), Path(chunks).stat().st_mtime_ns if Path(chunks).is_file() else 0, frame.height)
    if key not in _VECTORS:
        ids = sorted({c for cs in frame["source_chunk_ids"].to_list() for c in (cs or [])})
        text = _chunk_text(chunks, ids)
        src = [" ".join(text.get(c, "") for c in (cs or []))[:2000] for cs in frame["source_chunk_ids"].to_list()]
        _VECTORS[key] = np.hstack([embed(frame["query"].fill_null("").to_list()), embed(frame["reference_answer"].fill_null("").to_list()), embed(src)])
    return _VECTORS[key]


def ordered(frame: pl.DataFrame, decisions: dict, chunks: Path, version: str, embed, target: int) -> tuple[list[str], dict | None]:
    """The screen's order: learnt from this reviewer's decisions (``golden.review_order.learnt_order``) when an
    ``embed`` is given, else the validator's static order; cases reviewed in an earlier version count as accepted."""
    if embed is None:
        return review_order(frame, decided=set(decisions)), None
    labels = {c: int(d["action"] in ("accept", "edit")) for c, d in decisions.items()}
    labels |= {c: 1 for c in frame.filter(pl.col("review_verdict").is_in(REVIEW_VERDICTS))["case_id"].to_list() if c not in labels}
    return learnt_order(frame["case_id"].to_list(), frame["validity_score"].to_list(), _vectors(frame, chunks, version, embed), labels, target)


def case_screen_view(golden_dir: Path, curation_dir: Path, chunks: Path, version: str | None, case_id: str | None,
                     warehouse: Path | None = None, embed=None, target: int | None = None, needs: dict[str, int] | None = None) -> dict:
    """One case of ``version`` (default: the latest; the case: ``case_id``, else the first nobody decided yet); source
    passages from the ``chunks`` table; the difficulty the systems' answers suggest from ``warehouse``'s behaviour_checks.
    ``embed`` (texts → vectors): the order is learnt from the decisions so far (``ordered``), toward ``target`` accepted
    cases (default: the version's size, at most the methodology's 200); ``needs`` (kind → cases, ``review_order.needs_of``):
    what is still missing for a signable set."""
    version = version or latest_version(golden_dir)
    view = {"versions": list_versions(golden_dir), "version": version, "case": None, "position": 0, "n_cases": 0, "left": 0,
            "learnt": None, "missing": None, "kinds": None}
    if version is None:
        return view
    frame, _ = load_version(version, golden_dir)
    frame = with_review_columns(frame)
    decisions = CurationLog(curation_dir, version).decisions()
    record = SampleRecord(curation_dir, version)
    if record.exists():  # review by sample: the bases, each kind's sample, then the kinds whose sample failed, case by case
        walked = walk(frame, record, actions_of(decisions, frame))
        order, learnt, view["kinds"], pending = walked["order"], None, walked["kinds"], walked["pending"]
    else:
        order, learnt = ordered(frame, decisions, chunks, version, embed, target or min(frame.height, TARGET_SIZE))
        pending = 0
    view["learnt"] = learnt and {k: v for k, v in learnt.items() if k != "p"}
    if needs:  # what a signable set still lacks, per kind, against the campaign file's needs
        ok = {c for c, d in decisions.items() if d["action"] in ("accept", "edit")}
        ok |= set(frame.filter(pl.col("review_verdict").is_in(REVIEW_VERDICTS))["case_id"].to_list())
        view["missing"] = still_missing(frame.filter(pl.col("case_id").is_in(sorted(ok))).to_dicts(), needs)
    done = set(decisions) | set(frame.filter(pl.col("review_verdict").is_in(REVIEW_VERDICTS))["case_id"].to_list())
    left = [c for c in order if c not in done]
    case_id = case_id if case_id in order else (left[0] if left else order[0] if order else None)
    view.update(n_cases=len(order), left=len(left), summary=apply_decisions(frame, decisions).summary)
    if case_id is None:
        return view
    i = order.index(case_id)
    row = frame.row(by_predicate=pl.col("case_id") == case_id, named=True)
    view.update(position=i, prev_id=order[i - 1] if i > 0 else None, next_id=order[i + 1] if i + 1 < len(order) else None,
                next_left=next((c for c in order[i + 1:] if c not in done), None),
                others_left=sum(c != case_id for c in left) + pending)  # after a decision the page asks for the refit order's first  # fmt: skip
    view["case"] = {
        **{k: row.get(k) for k in ("case_id", "category", "query_type", "expected_behavior", "stratum_label", "variant_kind", "base_case_id",
                                   "distractor_passage", "reviewed_by", "reviewed_at", "review_verdict", "difficulty", "scoring_notes")},
        "query": row["query"], "reference_answer": row["reference_answer"] or "", "options": row.get("options") or [],
        "history": row.get("history") or [], "constraints": row.get("constraints") or [],
        "verdict": row["validity_verdict"] or "not checked", "score": "–" if row["validity_score"] is None else f"{row['validity_score']:.2f}",
        "reasons": row["validity_reasons"] or [], "decision": decisions.get(case_id),
        "passages": source_passages(row, _chunk_text(chunks, list(row.get("source_chunk_ids") or []))),
        "measured_difficulty": measured_difficulty(_behaviour_checks(warehouse, version), case_id),
    }  # fmt: skip
    view["case"]["proposal"] = propose(row, ["".join(seg["text"] for seg in p["segments"]) for p in view["case"]["passages"]])
    view["proposals"] = proposal_counts(CurationLog(curation_dir, version).entries())
    return view
