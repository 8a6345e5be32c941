"""Golden-set cases, versions and freezing (golden-eval §2.4 case specification, §2.5 freezing).

A *case* follows golden-eval §2.4: a stable id (content hash of its defining fields), category and
tags, stratum, query type, the input (query, options, a passage to inject into the context),
the expected behaviour (reference answer and/or constraints such as "must abstain"), the source
chunk ids, links (base case, counterfactual pair) and provenance (model, prompt hash, seed, corpus
hash, created date). Columns: ``hcat_pipeline.schemas.GOLDEN_SET``.

*Freezing* writes a version once, under ``<golden_dir>/<version>/``:
``golden_set.parquet`` (rows sorted by case_id) and ``manifest.json`` with the SHA-256 of the
Parquet file (``content_sha256``), of the canonical rows (``table_sha256``, independent of the
Parquet writer) and of the inputs (``inputs_sha256``). The directory is built aside and renamed
into place, manifest last, so a manifest on disk always describes a complete version. A frozen
version is never rewritten: freezing identical content again returns the stored manifest;
different content under the same version raises ``VersionConflict``.

*created_at* is not the wall clock: it is the ``created_at`` given (config / CLI), else the date of
``SOURCE_DATE_EPOCH`` (reproducible-builds convention), else ``1970-01-01`` meaning "not set".
So identical inputs give byte-identical frozen files. The manifest beside them records when
(``frozen_at``, wall clock) and by what (``frozen_by``: ``run:<dagster run id>``, or the command) the
version was frozen; neither is part of any hash nor of the Parquet file.

Curated import: a person edits an exported CSV / JSONL and freezes it as a new version; every bad
row is reported with its row number (``CaseImportError``) and nothing is written.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import re
from pathlib import Path

import polars as pl

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.corpus.content_hash import file_sha256
from hcat_pipeline.golden.frozen import MANIFEST_NAME, FrozenKind, freeze_table, table_sha256, verify_frozen
from hcat_pipeline.golden.frozen import read_manifest as _read_manifest
from hcat_pipeline.golden.review import iso_date_problem, review_fields
from hcat_pipeline.schemas import CONVERSATION, GOLDEN_SET, REVIEW, conform

TABLE_NAME = "golden_set.parquet"
MANIFEST_FORMAT = "hcat-golden-set/1"

CATEGORIES = ("happy_path", "ambiguous", "edge_case", "adversarial", "out_of_scope", "robustness", "bias_probe", "domain_specific",
              "multi_turn")  # golden-eval §2.2 long-context and multi-turn cases
EXPECTED_BEHAVIORS = ("answer", "abstain", "refuse", "resist_injection", "correct_premise", "clarify", "answer_partially",
                      "answer_with_care")  # golden-eval §11.2 sensitivity tests: caveat, referral or neutrality, never refused outright
QUERY_TYPES = ("simple", "multi_hop", "inference", "yes_no", "multiple_choice")
VARIANT_KINDS = ("typo", "colloquial", "paraphrase", "misleading_premise", "distractor", "injection", "counterfactual",  # HCAT §6.1, §4
                 "ambiguous", "edge_format", "partially_answerable", "jailbreak", "pii_elicitation",  # golden-eval §2, §10.4, §11.2
                 "format_constraint", "instruction_hierarchy", "boundary_probe", "follow_up", "correction", "long_history",
                 "sensitive_topic", "exfiltration")  # golden-eval §3.2.1 / §3.2.4 instruction following and format compliance
CASE_ID_FIELDS = (
    "category", "query_type", "query", "options", "reference_answer", "expected_behavior", "constraints",
    "source_chunk_ids", "distractor_passage", "base_case_id", "variant_kind", "attribute",
)  # fmt: skip
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_CASE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,79}$")
LIST_COLUMNS = tuple(c for c, t in GOLDEN_SET.items() if isinstance(t, pl.List))


class GoldenSetError(RuntimeError):
    """Base class of golden-set errors."""


class VersionConflict(GoldenSetError):
    """A different content was offered under an already frozen version."""


class GoldenSetIntegrityError(GoldenSetError):
    """A frozen version's files do not match its manifest."""


class CaseImportError(GoldenSetError):
    """Curated cases could not be imported; ``errors`` lists (row, message)."""

    def __init__(self, path: str, errors: list[tuple[int, str]]):
        self.errors = errors
        lines = "\n".join(f"  row {r}: {m}" for r, m in errors[:50])
        more = f"\n  … and {len(errors) - 50} more" if len(errors) > 50 else ""
        super().__init__(f"{path}: {len(errors)} problem(s), nothing imported:\n{lines}{more}")


_KIND = FrozenKind("golden-set version", TABLE_NAME, GoldenSetError, GoldenSetIntegrityError, VersionConflict,
                   "a frozen version is never rewritten: freeze the new cases under a new version")  # fmt: skip


# ---------------------------------------------------------------- cases


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def case_id_for(case: dict) -> str:
    """Stable id: SHA-256 of the defining fields (not provenance), e.g. ``gc-3f2a9c0d1b7e4a55``."""
    key = {f: case.get(f) or ([] if f in LIST_COLUMNS else None) for f in CASE_ID_FIELDS}
    if case.get("history"):  # only a multi-turn case carries its turns in the id: single-turn ids stay as they were
        key["history"] = [[t["role"], t["content"]] for t in case["history"]]
    return "gc-" + short_hash(_canonical(key), n=16)


def new_case(**fields) -> dict:
    """A case dict with every GOLDEN_SET column (lists default to [], others to None) and its case_id."""
    case = {c: ([] if c in LIST_COLUMNS else None) for c in GOLDEN_SET}
    for k, v in fields.items():
        case[k] = v
    for c in LIST_COLUMNS:
        case[c] = list(case[c] or [])
    if not case.get("case_id"):
        case["case_id"] = case_id_for(case)
    return case


def case_from_query(row: dict, corpus_hash: str | None = None) -> dict:
    """The happy-path case of a selected generated query (HCAT §2 step 5)."""
    qtype = row["query_type"]
    stratum = row.get("stratum")
    return new_case(
        category="happy_path",
        tags=[f"query_type:{qtype}", *([f"stratum:{stratum}"] if stratum is not None else []), "answerability:answerable",
              *([f"difficulty_asked:{row['difficulty_asked']}"] if row.get("difficulty_asked") else [])],
        stratum=stratum,
        stratum_label=row.get("stratum_label"),
        query_type=qtype,
        query=row["query"],
        options=list(row.get("options") or []),
        reference_answer=row["reference_answer"],
        expected_behavior="answer",
        constraints=["must answer from the documents"],
        source_chunk_ids=list(row["source_chunk_ids"]),
        model=row.get("model"),
        prompt_hash=row.get("prompt_hash"),
        seed=row.get("seed"),
        corpus_hash=corpus_hash,
    )


def cases_frame(cases: list[dict], extra_schema: dict | None = None) -> pl.DataFrame:
    """The golden-set table of ``cases`` (contract columns first, then extras), sorted by case_id."""
    schema = {**GOLDEN_SET, **CONVERSATION, **REVIEW, **(extra_schema or {})}
    rows = [{c: (case.get(c) or [] if c in CONVERSATION else case.get(c)) for c in schema} for case in cases]
    frame = pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)
    dupes = frame.filter(pl.col("case_id").is_duplicated())["case_id"].unique().to_list()
    if dupes:
        frame = frame.unique("case_id", keep="first", maintain_order=True)
    return conform(frame.sort("case_id"), GOLDEN_SET)


def corpus_hash(doc_ids) -> str:
    """Hash of the corpus: SHA-256 over its sorted document ids (which are content hashes)."""
    return short_hash(*sorted(set(doc_ids)), n=16, sep="\n")


def resolve_created_at(created_at: str | None = None) -> str:
    """The created date of a version's cases: given value → SOURCE_DATE_EPOCH → '1970-01-01' (never the wall clock)."""
    if created_at:
        return dt.date.fromisoformat(created_at[:10]).isoformat()
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC).date().isoformat()
    return "1970-01-01"


# ---------------------------------------------------------------- versions
def check_version_name(version: str) -> str:
    if not isinstance(version, str) or not _VERSION_RE.match(version):
        raise ValueError(f"invalid golden-set version {version!r}: use letters, digits, '.', '_' or '-' (max 64)")
    return version


def version_dir(version: str, golden_dir: str | Path) -> Path:
    return Path(golden_dir) / check_version_name(version)


def list_versions(golden_dir: str | Path) -> list[str]:
    """Versions that have a manifest (complete or hand-dropped), sorted."""
    d = Path(golden_dir)
    if not d.is_dir():
        return []
    return sorted(p.parent.name for p in d.glob(f"*/{MANIFEST_NAME}") if _VERSION_RE.match(p.parent.name))


def latest_version(golden_dir: str | Path) -> str | None:
    """The most recently frozen version (manifest ``frozen_at``; a hand-dropped manifest without it
    counts by its file time), or None when nothing is frozen. Ties: the larger name."""
    d = Path(golden_dir)
    best: tuple[str, str] | None = None
    for v in list_versions(d):
        path = d / v / MANIFEST_NAME
        try:
            when = json.loads(path.read_text(encoding="utf-8")).get("frozen_at")
        except (OSError, ValueError):
            continue
        if not when:
            when = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).isoformat(timespec="seconds")
        if best is None or (when, v) > best:
            best = (when, v)
    return best[1] if best else None


def _prepare(candidates: pl.DataFrame, version: str, created_at: str | None) -> pl.DataFrame:
    frame = conform(candidates, GOLDEN_SET)
    if frame.height == 0:
        raise GoldenSetError(f"refusing to freeze version {version!r}: no cases")
    dupes = frame.filter(pl.col("case_id").is_duplicated())["case_id"].unique().to_list()
    if dupes:
        raise GoldenSetError(f"refusing to freeze version {version!r}: duplicate case ids {dupes[:5]}")
    date = resolve_created_at(created_at)
    frame = frame.with_columns(
        pl.lit(version, pl.String).alias("version"),
        pl.col("created_at").fill_null(date).alias("created_at"),
    )
    cols = list(GOLDEN_SET) + [c for c in frame.columns if c not in GOLDEN_SET]
    return frame.select(cols).sort("case_id")


def _counts(frame: pl.DataFrame, col: str) -> dict:
    if col not in frame.columns:
        return {}
    vc = frame[col].fill_null("none").value_counts(sort=True)
    return {str(k): int(v) for k, v in sorted(zip(vc[col].to_list(), vc["count"].to_list(), strict=True))}


def frozen_by(provenance: dict | None, source: str) -> str:
    """Who froze a version, for its manifest: the Dagster run (``run:<id>``), the command, or the import."""
    provenance = provenance or {}
    if provenance.get("run_id"):
        return f"run:{provenance['run_id']}"
    if provenance.get("frozen_by"):
        return str(provenance["frozen_by"])
    return "hcat import-cases" if source == "curated" else "unknown"


def freeze_version(
    candidates: pl.DataFrame,
    version: str,
    golden_dir: str | Path,
    inputs_sha256: str | None = None,
    created_at: str | None = None,
    source: str = "generated",
    provenance: dict | None = None,
) -> dict:
    """Freeze ``candidates`` as ``version`` under ``golden_dir``; return the manifest.

    Idempotent for identical content (returns the stored manifest after verifying it); raises
    ``VersionConflict`` if the version exists with different content. ``inputs_sha256`` defaults
    to the hash of the candidate rows.
    """
    frame = _prepare(candidates, version, created_at)

    def fields() -> dict:
        return {
            "inputs_sha256": inputs_sha256 or table_sha256(candidates.sort("case_id")), "n_cases": frame.height,
            "created_at": frame["created_at"].min(), "frozen_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "frozen_by": frozen_by(provenance, source), "source": source,
            "counts": {c: _counts(frame, c) for c in ("category", "query_type", "variant_kind", "expected_behavior")},
            "provenance": provenance or {},
        }  # fmt: skip

    return freeze_table(frame, version, version_dir(version, golden_dir), _KIND, fields, MANIFEST_FORMAT)


def read_manifest(version: str, golden_dir: str | Path) -> dict:
    return _read_manifest(version_dir(version, golden_dir), version, _KIND)


def verify_version(version: str, golden_dir: str | Path) -> dict:
    """Check the version's file against its manifest (SHA-256 of the bytes; table hash if given). Returns the manifest."""
    return verify_frozen(version_dir(version, golden_dir), version, _KIND)


def load_version(version: str, golden_dir: str | Path) -> tuple[pl.DataFrame, dict]:
    """The verified frozen table and its manifest."""
    manifest = verify_version(version, golden_dir)
    frame = pl.read_parquet(version_dir(version, golden_dir) / manifest["file"])
    return conform(frame, GOLDEN_SET), manifest


# ---------------------------------------------------------------- export / curated import
EXPORT_COLUMNS = tuple(c for c in GOLDEN_SET if c != "version")


def export_cases(frame: pl.DataFrame, path: str | Path) -> Path:
    """Write cases as CSV (list columns as JSON arrays) or JSONL, by the file suffix."""
    path = Path(path)
    cols = [c for c in (*EXPORT_COLUMNS, *CONVERSATION, *REVIEW) if c in frame.columns]  # a multi-turn case keeps its turns, a reviewed one its review
    out = frame.select(cols)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".jsonl":
        with open(path, "w", encoding="utf-8") as f:
            for row in out.iter_rows(named=True):
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    elif path.suffix.lower() == ".csv":
        with open(path, "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(cols)
            for row in out.iter_rows(named=True):
                w.writerow([json.dumps(row[c] or [], ensure_ascii=False) if c in (*LIST_COLUMNS, *CONVERSATION)
                            else ("" if row[c] is None else row[c]) for c in cols])  # fmt: skip
    else:
        raise ValueError(f"{path}: export as .csv or .jsonl")
    return path


def _read_rows(path: Path) -> tuple[list[tuple[int, dict]], list[tuple[int, str]]]:
    rows, errors = [], []
    if path.suffix.lower() == ".jsonl":
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    errors.append((n, f"not valid JSON: {e.msg}"))
                    continue
                if not isinstance(obj, dict):
                    errors.append((n, "not a JSON object"))
                    continue
                rows.append((n, obj))
    elif path.suffix.lower() == ".csv":
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            for n, rec in enumerate(reader, start=2):  # spreadsheet row: the header is row 1
                if None in rec:
                    errors.append((n, f"more fields than the header has columns: {rec[None]!r}"))
                    continue
                row = {}
                for k, v in rec.items():
                    if k in CONVERSATION:
                        try:
                            row[k] = json.loads(v) if v and v.strip() else []
                        except json.JSONDecodeError:
                            row[k] = v  # reported by the row check: not a list of turns
                    elif k in LIST_COLUMNS:
                        if v is None or not v.strip():
                            row[k] = []
                            continue
                        try:
                            row[k] = json.loads(v)
                        except json.JSONDecodeError:
                            row[k] = [s.strip() for s in v.split("|") if s.strip()]
                    else:
                        row[k] = None if v is None or v == "" else v
                rows.append((n, row))
    else:
        raise ValueError(f"{path}: import a .csv or .jsonl file")
    return rows, errors


def _as_int(value, name: str, problems: list[str]):
    if value is None or value == "":
        return None
    try:
        f = float(value)
        if f != int(f):
            raise ValueError
        return int(f)
    except (TypeError, ValueError):
        problems.append(f"{name} must be an integer, got {value!r}")
        return None


def _as_float(value, name: str, problems: list[str]):
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        problems.append(f"{name} must be a number, got {value!r}")
        return None


def _history(value, problems: list[str]) -> list[dict]:
    """A case's earlier turns: an optional system turn first (an instruction-hierarchy case's rule), then [{role: user |
    assistant, content}] alternating, ending with the assistant."""
    if value in (None, []):
        return []
    ok = isinstance(value, list) and all(isinstance(t, dict) and t.get("role") in ("system", "user", "assistant")
                                         and isinstance(t.get("content"), str) and t["content"].strip() for t in value)  # fmt: skip
    turns = [t["role"] for t in value[1 if ok and value[0]["role"] == "system" else 0 :]] if ok else []
    if not ok or turns != ["user", "assistant"] * (len(turns) // 2) or len(turns) % 2:
        problems.append("history must be a list of {role, content} turns: an optional system turn first, then user and assistant "
                        "alternating, ending with the assistant")
        return []
    return [{"role": t["role"], "content": t["content"]} for t in value]


def validate_case(row: dict) -> tuple[dict, list[str]]:
    """A normalised case from an imported row, and the list of problems (empty when valid)."""
    problems: list[str] = []
    unknown = sorted(set(row) - set(GOLDEN_SET) - set(CONVERSATION) - set(REVIEW))
    if unknown:
        problems.append(f"unknown column(s) {unknown}")
    case = {"history": _history(row.get("history"), problems), **review_fields(row, problems)}
    for c, t in GOLDEN_SET.items():
        v = row.get(c)
        if c in LIST_COLUMNS:
            v = [] if v is None else v
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                problems.append(f"{c} must be a list of strings, got {v!r}")
                v = []
        elif t in (pl.Int32, pl.Int64):
            v = _as_int(v, c, problems)
        elif t == pl.Float64:
            v = _as_float(v, c, problems)
        elif v is not None:
            v = str(v)
            v = v if v.strip() else None
        case[c] = v
    q = (case["query"] or "").strip()
    if not q:
        problems.append("query is empty")
    if case["category"] not in CATEGORIES:
        problems.append(f"category {case['category']!r} is not one of {list(CATEGORIES)}")
    if case["expected_behavior"] not in EXPECTED_BEHAVIORS:
        problems.append(f"expected_behavior {case['expected_behavior']!r} is not one of {list(EXPECTED_BEHAVIORS)}")
    if case["query_type"] is not None and case["query_type"] not in QUERY_TYPES:
        problems.append(f"query_type {case['query_type']!r} is not one of {list(QUERY_TYPES)}")
    if case["variant_kind"] is not None and case["variant_kind"] not in VARIANT_KINDS:
        problems.append(f"variant_kind {case['variant_kind']!r} is not one of {list(VARIANT_KINDS)}")
    if case["expected_behavior"] == "answer" and not case["reference_answer"]:
        problems.append("expected_behavior 'answer' needs a reference_answer")
    if case["query_type"] == "multiple_choice":
        if len(case["options"]) < 2:
            problems.append("a multiple_choice case needs at least 2 options")
        elif case["reference_answer"] not in case["options"]:
            problems.append("the reference_answer of a multiple_choice case must be one of its options")
        elif len(set(case["options"])) != len(case["options"]):
            problems.append("multiple-choice options are not distinct")
    if case["case_id"] is not None and not _CASE_ID_RE.match(case["case_id"]):
        problems.append(f"case_id {case['case_id']!r} is not a valid id")
    iso_date_problem(case["created_at"], "created_at", problems)
    return case, problems


def read_curated_cases(path: str | Path) -> pl.DataFrame:
    """Read and validate a curated CSV / JSONL; raise ``CaseImportError`` listing every bad row.

    Row numbers are what an editor shows: the line of a JSONL file; the spreadsheet row of a CSV
    file (header = row 1, first case = row 2)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    rows, errors = _read_rows(path)
    cases: list[dict] = []
    seen: dict[str, int] = {}
    for n, row in rows:
        case, problems = validate_case(row)
        if not case["case_id"] and not problems:
            case["case_id"] = case_id_for(case)
        cid = case["case_id"]
        if cid and cid in seen:
            problems.append(f"case_id {cid!r} repeats row {seen[cid]}")
        elif cid:
            seen[cid] = n
        errors.extend((n, p) for p in problems)
        cases.append(case)
    for (n, _), case in zip(rows, cases, strict=True):
        if case["base_case_id"] and case["base_case_id"] not in seen:
            errors.append((n, f"base_case_id {case['base_case_id']!r} is not a case of this file"))
    if not rows and not errors:
        errors.append((0, "no cases in the file"))
    if errors:
        raise CaseImportError(str(path), sorted(errors))
    return cases_frame(cases)


def import_cases(path: str | Path, version: str, golden_dir: str | Path, created_at: str | None = None, check=None,
                 provenance: dict | None = None) -> dict:  # fmt: skip
    """Validate a curated CSV / JSONL and freeze it as ``version`` (all or nothing); return the manifest.

    ``check(frame) -> (frame with validity columns, [(row, problem)])``: the case validity checks (``hcat import-cases``
    passes ``golden.validity``); any problem refuses the whole file (``CaseImportError``), nothing is written."""
    frame = read_curated_cases(path)
    if check is not None:
        frame, problems = check(frame)
        if problems:
            raise CaseImportError(str(path), sorted(problems))
    return freeze_version(
        frame, version, golden_dir, inputs_sha256=file_sha256(Path(path)), created_at=created_at, source="curated",
        provenance={"imported_from": Path(path).name, **(provenance or {})},
    )  # fmt: skip
