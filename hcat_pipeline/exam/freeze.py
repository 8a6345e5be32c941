"""Exam versions: frozen, content-addressed and immutable, like golden-set versions (``golden.cases``).

The exam table (``EXAM_COLUMNS``: one row per question) is frozen under ``<exam_dir>/<version>/``
as ``exam.parquet`` (rows sorted by question_id) + ``manifest.json`` with the SHA-256 of the file
(``content_sha256``), of the canonical rows (``table_sha256``, independent of the Parquet writer), the
exam's statistics (App. A.3 table: candidates, rejections by reason, survivors, baselines, mean
question length) and the provenance (prompt hashes, model, seed, corpus hash). The default version
name is ``ex-<table_sha256[:12]>``: the same candidates and seed give the same version. The directory
is written aside and renamed into place (``golden.frozen``, shared with golden sets); a frozen version is never rewritten
(identical content returns the stored manifest, different content raises ``ExamVersionConflict``).
Every downstream row (exam responses, IRT tables, report) carries ``exam_version``.

No dagster import.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl

from hcat_pipeline.golden.cases import check_version_name
from hcat_pipeline.golden.frozen import MANIFEST_NAME, FrozenKind, freeze_table, table_sha256, verify_frozen
from hcat_pipeline.schemas import EXAM as EXAM_COLUMNS

TABLE_NAME = "exam.parquet"
MANIFEST_FORMAT = "hcat-exam/1"



class ExamError(RuntimeError):
    """Base class of exam-version errors."""


class ExamVersionConflict(ExamError):
    """Different content offered under an already frozen exam version."""


class ExamIntegrityError(ExamError):
    """A frozen exam's files do not match its manifest."""


_KIND = FrozenKind("exam version", TABLE_NAME, ExamError, ExamIntegrityError, ExamVersionConflict, "a frozen exam is never rewritten")


def exam_table(selected: list[dict], corpus_hash: str | None = None) -> pl.DataFrame:
    """The exam rows of the selected candidates (EXAM_COLUMNS, exam_version empty until frozen), sorted by question_id."""
    rows = []
    for r in selected:
        rows.append({
            "question_id": r["question_id"], "exam_version": None, "question": r["question"], "options": list(r["options"]),
            "correct_index": int(r["correct_index"]), "answer": r["answer"], "evidence": r.get("evidence"),
            "question_form": r.get("question_form") or "llm", "distractor_sources": list(r.get("distractor_sources") or []),
            "chunk_id": r["chunk_id"], "stratum": r.get("stratum"), "stratum_label": r.get("stratum_label"),
            "model": r.get("model"), "question_prompt_hash": r.get("question_prompt_hash"),
            "distractor_prompt_hash": r.get("distractor_prompt_hash"), "seed": r.get("seed"), "corpus_hash": corpus_hash,
        })  # fmt: skip
    frame = pl.DataFrame(rows, schema=EXAM_COLUMNS, orient="row") if rows else pl.DataFrame(schema=EXAM_COLUMNS)
    dupes = frame.filter(pl.col("question_id").is_duplicated())["question_id"].unique().to_list()
    if dupes:
        raise ExamError(f"exam table: duplicate question ids {dupes[:5]}")
    bad = frame.filter((pl.col("correct_index") < 0) | (pl.col("correct_index") >= pl.col("options").list.len()))
    if bad.height:
        raise ExamError(f"exam table: correct_index outside the options for {bad['question_id'].to_list()[:5]}")
    return frame.sort("question_id")


def default_version(frame: pl.DataFrame) -> str:
    """``ex-`` + the first 12 hex digits of the table hash (exam_version column excluded)."""
    return "ex-" + table_sha256(frame.drop("exam_version").sort("question_id"))[:12]


def _dir(version: str, exam_dir: str | Path) -> Path:
    return Path(exam_dir) / check_version_name(version)


def freeze_exam(frame: pl.DataFrame, exam_dir: str | Path, version: str | None = None, stats: dict | None = None,
                provenance: dict | None = None) -> dict:  # fmt: skip
    """Freeze ``frame`` (EXAM_COLUMNS) under ``version`` (default: content hash); return the manifest."""
    if frame.height == 0:
        raise ExamError("refusing to freeze an exam with no questions")
    version = version or default_version(frame)
    frame = frame.select(list(EXAM_COLUMNS)).with_columns(pl.lit(version, pl.String).alias("exam_version")).sort("question_id")

    def fields() -> dict:
        return {"n_questions": frame.height, "frozen_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "statistics": stats or {}, "provenance": provenance or {}}  # fmt: skip

    return freeze_table(frame, version, _dir(version, exam_dir), _KIND, fields, MANIFEST_FORMAT)


def verify_exam(version: str, exam_dir: str | Path) -> dict:
    """Check a frozen exam's file against its manifest; return the manifest."""
    return verify_frozen(_dir(version, exam_dir), version, _KIND)


def load_exam(version: str, exam_dir: str | Path) -> tuple[pl.DataFrame, dict]:
    manifest = verify_exam(version, exam_dir)
    return pl.read_parquet(_dir(version, exam_dir) / manifest["file"]), manifest


def list_exams(exam_dir: str | Path) -> list[str]:
    d = Path(exam_dir)
    return sorted(p.parent.name for p in d.glob(f"*/{MANIFEST_NAME}")) if d.is_dir() else []
