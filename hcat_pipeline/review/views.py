"""What each screen of the review page shows, as plain dicts for the templates (no web framework here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from hcat_pipeline.calibration.agreement import agreement, disagreements
from hcat_pipeline.calibration.campaign import DIMENSION_METRICS, LABEL_MEANINGS
from hcat_pipeline.golden.cases import latest_version, list_versions, load_version
from hcat_pipeline.golden.review import with_review_columns
from hcat_pipeline.golden.sample_review import DEFAULT_CONFIDENCE, DEFAULT_TOLERANCE
from hcat_pipeline.review.curation import CurationLog, apply_decisions
from hcat_pipeline.review.flags import decided_items, latest_verdicts
from hcat_pipeline.review.items import (
    Item,
    QueueError,
    build_items,
    find_queue,
    highlight,
    load_queue,
    metric_tables_for,
    paired_answers,
    scale_choices,
    stored_queue,
)
from hcat_pipeline.review.labelling import PageLabels, progress, stratum_coverage
from hcat_pipeline.review.sampling import SampleRecord, actions_of, stamps_for, walk

__all__ = ["ReviewSettings", "Queue", "find_item", "label_view", "agreement_view", "curate_view", "progress_view"]


@dataclass
class ReviewSettings:
    labels_dir: Path
    warehouse: Path
    golden_dir: Path
    curation_dir: Path
    store_dir: Path | None = None
    queue: Path | None = None  # None: the latest stored review_queue
    rater: str = ""
    extra_dimensions: tuple[str, ...] = ()  # offered (optional, binary unless stored otherwise) on every screen: e.g. judge rubric items
    check_factory: Callable[[], Callable] | None = None  # the validity check for freezing (built on first use)
    chunks: Path | None = None  # the chunks table the curate screen shows source passages from (None: <warehouse>/chunks.parquet)
    reports_dir: Path | None = None  # where production monitoring's review queues are (None: HCAT_REPORTS_DIR / data/reports)
    needs: dict[str, int] | None = None  # what a signable set holds (golden.review_order.needs_of, from the campaign file)
    learn_order: bool = True  # the curate screen's order learnt from the decisions (golden.review_order); False: the validator's
    release_dir: Path | None = None  # the nights' plans and bundles, the sign-off log's parent (None: <data dir>/release)
    gates_file: Path | None = None  # the gates file in force (None: HCAT_GATES_FILE or gates.yaml)
    roles: tuple[str, ...] = ("validator",)  # the roles a release needs (the sign-off screen)
    review_tolerance: float = DEFAULT_TOLERANCE  # review by sample: the unsound share a kind accepted by sample may hold at most
    review_confidence: float = DEFAULT_CONFIDENCE  # … at this confidence (the campaign file's review_tolerance / review_confidence)

    @property
    def release_root(self) -> Path:
        from hcat_pipeline.paths import DATA_DIR

        return self.release_dir or DATA_DIR / "release"

    @property
    def gates(self) -> Path:
        from hcat_pipeline.gates.spec import DEFAULT_GATES_FILE

        return self.gates_file or Path(DEFAULT_GATES_FILE)

    @property
    def reports(self) -> Path:
        from hcat_pipeline.paths import REPORTS_DIR

        return self.reports_dir or REPORTS_DIR

    @property
    def labels(self) -> PageLabels:
        return PageLabels(self.labels_dir, self.store_dir)


@dataclass
class Queue:
    path: Path
    frame: pl.DataFrame
    items: list[Item]
    skipped: int = 0  # queued labels no longer asked for: every gate they could move is decided

    @staticmethod
    def resolve(settings: ReviewSettings, name: str | None = None) -> Path:
        """``name`` (``<version>/<night>``) picks a stored run's queue; else ``--queue`` or the latest stored one."""
        path = stored_queue(settings.warehouse, name) if name else settings.queue or find_queue(settings.warehouse)
        if path is None:
            raise QueueError(f"no stored review queue under {settings.warehouse}/review_queue: run a campaign first, or pass --queue FILE")
        return Path(path)

    @classmethod
    def load(cls, settings: ReviewSettings, path: Path) -> Queue:
        """The queue, less the answers whose gates are decided (``review.flags.decided_items``: nobody is asked for a
        label that can no longer move a verdict; ``skipped`` counts them)."""
        frame = load_queue(path)
        decided: set[tuple[str, str]] = set()
        if path.suffix == ".parquet":
            verdicts, _ = latest_verdicts(settings.warehouse, path.parent.name, path.stem)
            decided = decided_items(verdicts)
        done = pl.DataFrame(sorted(decided), schema={"system_id": pl.String, "dimension": pl.String}, orient="row")
        keep = frame.join(done, on=["system_id", "dimension"], how="anti") if decided else frame
        queue = cls(path, keep, build_items(keep, metric_tables_for(path, settings.warehouse), paired_answers(path, settings.warehouse)))
        queue.skipped = frame.height - keep.height
        return queue

    @property
    def param(self) -> str:
        """The ``?queue=`` value naming this queue in links ("" for the default one)."""
        return self.name if self.path.suffix == ".parquet" else ""

    @property
    def name(self) -> str:
        return f"{self.path.parent.name}/{self.path.stem}" if self.path.suffix == ".parquet" else self.path.name


def _fmt(v) -> str:
    return "–" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def find_item(queue: Queue, case_id: str, system_id: str | None) -> int | None:
    """The screen of an answer (the first of the case when no system is given), or None."""
    return next((i for i, it in enumerate(queue.items) if it.case_id == case_id and system_id in (None, it.system_id)), None)


def _dimension_rows(it: Item, latest: dict, labels: pl.DataFrame, asked: tuple[str, ...] = ()) -> list[dict]:
    """The screen's dimensions: the queued ones, then the calibrators' other dimensions whose metric scored this answer (a label
    calibrates a score: none without one — e.g. no passages, no groundedness), then the ``asked`` extra ones (``hcat review
    --dimension``: labels that validate the judge's rubric items) (optional, never required to move on);
    each on the scale the label store holds for it (a dimension stored on a three-point scale is labelled on it)."""
    stored = dict(labels.select("dimension", "scale").unique("dimension").iter_rows()) if labels.height else {}
    queued = {r["dimension"] for r in it.rows}
    extra = [{"dimension": d, "scale": stored.get(d, "binary"), "label_meaning": LABEL_MEANINGS.get(d, ""), "reason": "optional: not queued",
              "metric": m, "raw_score": it.scores.get(m), "calibrated_probability": None, "prediction_set": None}
             for d, m in DIMENSION_METRICS.items() if d not in queued and it.scores.get(m) is not None]  # fmt: skip
    extra += [{"dimension": d, "scale": stored.get(d, "binary"), "label_meaning": LABEL_MEANINGS.get(d, ""), "reason": "optional: asked for",
               "metric": None, "raw_score": None, "calibrated_probability": None, "prediction_set": None}
              for d in dict.fromkeys(asked) if d not in queued and d not in {e["dimension"] for e in extra}]  # fmt: skip
    out = []
    for r in [*it.rows, *extra]:
        scale = stored.get(r["dimension"], r["scale"])
        cur = latest.get((it.case_id, it.system_id, r["dimension"]))
        out.append({**r, "scale": scale, "choices": scale_choices(scale, r["dimension"]), "optional": r["dimension"] not in queued,
                    "current": None if cur is None else cur["label"], "seen": "" if cur is None else cur["row_hash"],
                    "comment": "" if cur is None else (cur["comment"] or ""), "raw_score_text": _fmt(r["raw_score"]),
                    "calibrated_text": _fmt(r["calibrated_probability"])})  # fmt: skip
    return out


def label_view(queue: Queue, labels: pl.DataFrame, rater: str, index: int | None, asked: tuple[str, ...] = ()) -> dict:
    """The labelling screen: item ``index`` (default the first with a dimension ``rater`` has not labelled); ``asked``: extra
    dimensions offered on every screen (``ReviewSettings.extra_dimensions``)."""
    mine = labels.filter(pl.col("rater") == rater) if labels.height else labels
    latest = {} if not mine.height else {
        (r["case_id"], r["system_id"], r["dimension"]): r for r in mine.sort("labelled_at").iter_rows(named=True)
    }  # fmt: skip
    todo = [i for i, it in enumerate(queue.items) if any((it.case_id, it.system_id, r["dimension"]) not in latest for r in it.rows)]
    if index is None:
        index = todo[0] if todo else 0
    index = max(0, min(index, len(queue.items) - 1)) if queue.items else 0
    view = {"queue": queue.name, "queue_param": queue.param, "n_items": len(queue.items), "index": index, "todo": len(todo), "item": None, "rater": rater,
            "progress": progress(queue.frame, labels, rater), "skipped": queue.skipped}  # fmt: skip
    if not queue.items:
        return view
    it = queue.items[index]
    answer_flags = [f for f in it.flags if f.where == "answer"]
    passage_flags = [f for f in it.flags if f.where == "passages"]
    dims = _dimension_rows(it, latest, labels, asked)
    view["item"] = {
        "case_id": it.case_id, "system_id": it.system_id, "priority": it.priority, "stratum": it.stratum, "query_type": it.query_type,
        "query": it.query, "reference": it.reference, "paired": it.paired, "reference_open": any(r["dimension"] == "behaviour_answer_correct" for r in it.rows),
        "answer": highlight(it.answer, answer_flags), "passages": [highlight(p, passage_flags) for p in it.passages],
        "flags": [{"sentence": f.sentence, "where": f.where, "why": f.why} for f in it.flags],
        "scores": [{"metric": k, "score": _fmt(v), "explanation": it.explanations.get(k, "")} for k, v in it.scores.items()]
        or [{"metric": k, "score": "", "explanation": v} for k, v in it.explanations.items()],
        "dimensions": dims,
    }  # fmt: skip
    return view


def progress_view(queue: Queue, labels: pl.DataFrame, rater: str) -> dict:
    return {"queue": queue.name, "rater": rater, "progress": progress(queue.frame, labels, rater),
            "coverage": stratum_coverage(queue.frame, labels)}  # fmt: skip


def agreement_view(labels: pl.DataFrame) -> dict:
    if not labels.height:
        return {"rows": [], "disagreements": [], "raters": []}
    rows = [{k: _fmt(v) if isinstance(v, float) else v for k, v in r.items()} for r in agreement(labels).iter_rows(named=True)]
    return {"rows": rows, "disagreements": disagreements(labels).to_dicts(), "raters": sorted(set(labels["rater"].to_list()))}


def curate_view(settings: ReviewSettings, version: str | None, verdict: str | None) -> dict:
    versions = list_versions(settings.golden_dir)
    version = version or latest_version(settings.golden_dir)
    view = {"versions": versions, "version": version, "cases": [], "verdict": verdict or "", "summary": None}
    if version is None:
        return view
    frame, manifest = load_version(version, settings.golden_dir)
    log = CurationLog(settings.curation_dir, version)
    decisions = log.decisions()
    record = SampleRecord(settings.curation_dir, version)
    actions = actions_of(decisions, with_review_columns(frame))
    curated = apply_decisions(frame, decisions, stamps_for(frame, record, actions), "(on freezing)", "")
    view["summary"] = curated.summary
    view |= {"tolerance": settings.review_tolerance, "confidence": settings.review_confidence, "kinds": None, "sampling": None}
    if record.exists():
        view["sampling"] = {k: v for k, v in record.read().items() if k != "kinds"}
        view["kinds"] = walk(frame, record, actions)["kinds"]
    view["source"] = manifest.get("source")
    counts = frame.group_by("validity_verdict").len().sort("validity_verdict").to_dicts()
    view["verdict_counts"] = [{"verdict": r["validity_verdict"] or "not checked", "n": r["len"]} for r in counts]
    order = {"invalid": 0, "unsure": 1, None: 2, "valid": 3}
    rows = sorted(frame.iter_rows(named=True), key=lambda r: (order.get(r["validity_verdict"], 2), r["validity_score"] or 0, r["case_id"]))
    for r in rows:
        if verdict and (r["validity_verdict"] or "not checked") != verdict:
            continue
        view["cases"].append({
            "case_id": r["case_id"], "category": r["category"], "query_type": r["query_type"], "query": r["query"],
            "reference_answer": r["reference_answer"] or "", "expected_behavior": r["expected_behavior"],
            "verdict": r["validity_verdict"] or "not checked", "score": _fmt(r["validity_score"]), "reasons": r["validity_reasons"] or [],
            "base_case_id": r["base_case_id"], "decision": decisions.get(r["case_id"]), "cascaded": curated.cascaded.get(r["case_id"]),
            "new_id": curated.renamed.get(r["case_id"]),
        })  # fmt: skip
    return view
