"""A small project for the review page's tests: a stored review queue with its metric tables, a frozen golden set
whose cases the validity checks pass, the chunks they cite, and empty label / curation folders."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from hcat_pipeline.golden.cases import cases_frame, freeze_version, new_case

VERSION, NIGHT = "gs-review", "2026-11-27"
SOURCES = {
    "k1": "The pass statement is a null operation: when it is executed, nothing happens.",
    "k2": "The break statement terminates the nearest enclosing for or while loop.",
    "k3": "The continue statement continues with the next iteration of the nearest enclosing loop.",
    "k4": "The del statement removes the binding of a name from the local or global namespace.",
    "k5": "The return statement leaves the current function call and passes back a value.",
}
QUESTIONS = {
    "k1": ("What happens when a pass statement is executed?", "Nothing happens."),
    "k2": ("Which loop does the break statement terminate?", "The nearest enclosing for or while loop."),
    "k3": ("What does the continue statement continue with?", "The next iteration of the nearest enclosing loop."),
    "k4": ("What does the del statement remove?", "The binding of a name from the local or global namespace."),
    "k5": ("What does the return statement leave?", "The current function call."),
}
SYSTEMS = ("hybrid", "oracle")


@dataclass
class ReviewProject:
    root: Path
    warehouse: Path
    golden_dir: Path
    labels_dir: Path
    curation_dir: Path
    chunks: Path
    case_ids: list[str]

    @property
    def queue_path(self) -> Path:
        return self.warehouse / "review_queue" / VERSION / f"{NIGHT}.parquet"


def golden_cases() -> list[dict]:
    cases = [new_case(category="happy_path", query=q, expected_behavior="answer", reference_answer=a, query_type="simple",
                      source_chunk_ids=[k], stratum=i % 2, created_at="2026-11-27")  # fmt: skip
             for i, (k, (q, a)) in enumerate(QUESTIONS.items())]
    base = cases[0]
    variant = new_case(category="robustness", query="wat happens when a pass statment is executed?", expected_behavior="answer",
                       reference_answer=base["reference_answer"], query_type="simple", source_chunk_ids=["k1"], stratum=0,
                       variant_kind="typo", base_case_id=base["case_id"], created_at="2026-11-27")  # fmt: skip
    return [*cases, variant]


def _queue_and_metrics(cases: list[dict]) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows, metrics = [], []
    priority = 0
    for c in cases[:5]:
        source = SOURCES[c["source_chunk_ids"][0]]
        for s in SYSTEMS:
            answer = c["reference_answer"] if s == "oracle" else f"{c['reference_answer']} It was added in Python 2.0."
            priority += 1
            rows.append({"case_id": c["case_id"], "system_id": s, "dimension": "groundedness", "scale": "binary", "label": None,
                         "rater": None, "labelled_at": None, "comment": None, "review_queue": f"{VERSION}|{NIGHT}",
                         "label_meaning": "1 = every claim of the answer is supported by the contexts, 0 = something is not",
                         "priority": priority, "reason": "calibrated set {0,1}", "golden_set_version": VERSION, "night": NIGHT,
                         "stratum": str(c["stratum"]), "query_type": "simple", "metric": "groundedness_nli",
                         "raw_score": 0.9 if s == "oracle" else 0.4, "calibrated_probability": None, "prediction_set": "{0,1}",
                         "machine_verdict": "unsure", "label_source": "reference:faithdial", "query": c["query"],
                         "contexts": source + "\n---\nAn unrelated passage about the import statement.", "answer": answer,
                         "explanation": ""})  # fmt: skip
            metrics.append({"case_id": c["case_id"], "system_id": s, "reference": c["reference_answer"],
                            "groundedness_nli": 0.9 if s == "oracle" else 0.4, "context_relevancy": 0.8, "answer_relevancy": 0.7,
                            "least_grounded_sentence_nli": answer.split(". ")[-1] if s == "hybrid" else None,
                            "uncovered_context_sentences": [], "toxicity": 0.01, "toxicity_top_sentence": None,
                            "completeness_similarity": 0.6 if s == "oracle" else None})  # fmt: skip
    return pl.DataFrame(rows), pl.DataFrame(metrics)


def make_project(root: Path) -> ReviewProject:
    p = ReviewProject(root, root / "warehouse", root / "golden", root / "labels", root / "curation", root / "chunks.parquet", [])
    cases = golden_cases()
    p.case_ids = [c["case_id"] for c in cases]
    freeze_version(cases_frame(cases), VERSION, p.golden_dir, created_at="2026-11-27")
    pl.DataFrame({"chunk_id": list(SOURCES), "text": list(SOURCES.values())}).write_parquet(p.chunks)
    queue, metrics = _queue_and_metrics(cases)
    p.queue_path.parent.mkdir(parents=True)
    queue.write_parquet(p.queue_path)
    (p.warehouse / "metric_tables" / VERSION).mkdir(parents=True)
    metrics.write_parquet(p.warehouse / "metric_tables" / VERSION / f"{NIGHT}.parquet")
    (p.warehouse / "golden_set").mkdir()
    cases_frame(cases).write_parquet(p.warehouse / "golden_set" / f"{VERSION}.parquet")
    answers = [{"case_id": c["case_id"], "system_id": s, "answer": f"{s} says: {c['reference_answer']}"} for c in cases for s in SYSTEMS]
    (p.warehouse / "rag_responses" / VERSION).mkdir(parents=True)
    pl.DataFrame(answers).write_parquet(p.warehouse / "rag_responses" / VERSION / f"{NIGHT}.parquet")
    p.labels_dir.mkdir()
    return p


def chromium_or_skip():
    """playwright's sync API, or the test skipped when the project's Chromium (scripts/setup.sh) is not installed."""
    import pytest

    from hcat_pipeline.paths import CHROMIUM

    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium not installed (scripts/setup.sh installs it)")
    return pytest.importorskip("playwright.sync_api")


def settings_for(project, **kw):
    """The review page's settings over a ``make_project`` project (``kw``: the other fields)."""
    from hcat_pipeline.review.views import ReviewSettings

    return ReviewSettings(labels_dir=project.labels_dir, warehouse=project.warehouse, golden_dir=project.golden_dir,
                          curation_dir=project.curation_dir, **{"chunks": project.chunks, **kw})  # fmt: skip
