"""The evaluation harness of the concept-level chapter (§14.5): checks dispatched by task type.

``evaluate_tasks(frame, **options)`` scores each row with the checks of its ``task_type`` column (``TASK_CHECKS``):

* ``long_document`` — ``long_document_faithfulness`` (the chapter's ``_check_contradictions``: answer sentences with
  no source-document sentence above 0.70);
* ``multilingual_synthesis`` — ``language_coverage`` (``_check_language_coverage``: the sources' languages the answer
  draws on) and, with a reference, ``cross_lingual_similarity`` (the chapter's similarity across languages);
* ``planning`` — ``hierarchical_consistency`` (``hierarchical_consistency_report`` of the answer's plan);
* ``qa`` — every default metric that applies (``metrics.score`` with no list).

"Always run: semantic similarity": with a ``reference`` column, ``semantic_similarity`` is added to the same-language
tasks. Rows keep the input's order; a metric a task does not ask for is null in its rows. An unknown task type is a
``ValueError`` naming the row. The chapter's optional LLM judge is the campaign's (``judge``), not repeated here.
"""

from __future__ import annotations

from typing import Literal, get_args

import polars as pl

TaskType = Literal["long_document", "multilingual_synthesis", "planning", "qa"]
TASK_CHECKS: dict[str, tuple[str, ...] | None] = {
    "long_document": ("long_document_faithfulness",),
    "multilingual_synthesis": ("language_coverage",),
    "planning": ("hierarchical_consistency",),
    "qa": None,  # the default metrics
}
_WITH_REFERENCE = {"long_document": "semantic_similarity", "planning": "semantic_similarity", "multilingual_synthesis": "cross_lingual_similarity"}
assert set(TASK_CHECKS) == set(get_args(TaskType))


def checks_for(task: str, has_reference: bool) -> list[str] | None:
    """The metric names a task type asks for (None: every default metric)."""
    checks = TASK_CHECKS[task]
    if checks is None:
        return None
    return [*checks, *([_WITH_REFERENCE[task]] if has_reference and task in _WITH_REFERENCE else [])]


def evaluate_tasks(frame: pl.DataFrame, task_column: str = "task_type", **options) -> pl.DataFrame:
    """``frame`` (query, contexts, answer[, reference, source_documents], ``task_column``) scored per row by its task
    type's checks (``metrics.score`` with the options given); the input's rows and order, the metric columns added."""
    from hcat_pipeline.metrics.api import score

    if task_column not in frame.columns:
        raise ValueError(f"evaluate_tasks: the input has no {task_column!r} column (one of {list(TASK_CHECKS)} per row)")
    if frame.height == 0:
        return frame
    tasks = frame[task_column].to_list()
    bad = next(((i, t) for i, t in enumerate(tasks) if t not in TASK_CHECKS), None)
    if bad is not None:
        raise ValueError(f"evaluate_tasks: task_type {bad[1]!r} in row {bad[0]}: expected one of {list(TASK_CHECKS)}")
    indexed = frame.with_row_index("_row")
    parts = [score(indexed.filter(pl.col(task_column) == t), checks_for(t, "reference" in frame.columns), **options)
             for t in sorted(set(tasks))]  # fmt: skip
    return pl.concat(parts, how="diagonal_relaxed").sort("_row").drop("_row")
