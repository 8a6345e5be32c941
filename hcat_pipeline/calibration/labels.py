"""Human label files (``data/labels/``): parsing and row-level validation, nothing stored here.

A label file is CSV, JSONL or Parquet with one human judgement per row:

=============  ========  ======================================================================
column         required  meaning
=============  ========  ======================================================================
case_id        yes       golden-set case
system_id      yes       the RAG system whose response was judged
dimension      yes       groundedness, context_relevancy, completeness, answer_relevancy,
                         toxicity, or a rubric dimension (lower-case ``[a-z][a-z0-9_]*``)
label          yes       integer on the declared scale
scale          no*       ``binary`` (labels 0/1) or ``ordinal:LO-HI`` (integers LO..HI, e.g.
                         ``ordinal:0-4``, ``ordinal:1-5``)
rater          yes       who judged (several raters on one item are all kept)
labelled_at    yes       ISO 8601 date or date-time; a time without offset is taken as UTC
comment        no        free text
=============  ========  ======================================================================

*The scale.* A ``scale`` column declares it per row; left empty (or absent) it comes from
``DEFAULT_SCALES`` (the five metric dimensions are binary: supported / relevant / complete /
toxic or not). A rubric dimension has no default and must declare its scale. All rows of one
dimension must agree on the scale (within the file; ``LabelStore`` also checks against the store).

Validated rows get ``label_index = label − LO`` (0..K−1, what ``Calibrator`` takes), ``n_levels`` = K,
the parsed ``labelled_at`` (UTC), ``source_file`` / ``source_line`` and a ``row_hash`` over the
judgement itself (not the file or line) so the same judgement imported twice is recognised.

*Errors* are rows of (``file``, ``line``, ``reason``). Line numbers: CSV = spreadsheet row (the
header is line 1, the first data row line 2); JSONL = the line in the file; Parquet = 1-based row
number; line 0 = the whole file (unreadable, unsupported type, no rows). A file with any error is
imported not at all: the caller (``LabelStore.import_file``) takes all good rows or none.
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl

from hcat_pipeline.common.ids import json_hash
from hcat_pipeline.schemas import LABEL_FILE_ERRORS as ERROR_SCHEMA
from hcat_pipeline.schemas import LABEL_ROWS as LABEL_SCHEMA

__all__ = [
    "REQUIRED_COLUMNS",
    "OPTIONAL_COLUMNS",
    "REVIEW_COLUMNS",
    "DEFAULT_SCALES",
    "LABEL_SCHEMA",
    "ERROR_SCHEMA",
    "Scale",
    "parse_scale",
    "read_label_file",
    "validate_label",
]

REQUIRED_COLUMNS = ("case_id", "system_id", "dimension", "label", "rater", "labelled_at")
OPTIONAL_COLUMNS = ("scale", "comment")
# Context columns of an exported review queue (``review_queue`` asset): accepted and ignored on import,
# so a filled-in copy of the export is imported as it is. A row marked with ``review_queue`` whose
# label, rater and labelled_at are all blank is "not labelled yet": skipped and counted, not an error.
REVIEW_COLUMNS = (
    "review_queue", "label_meaning", "golden_set_version", "night", "stratum", "stratum_label", "query_type", "priority", "reason",
    "metric", "raw_score", "calibrated_probability", "prediction_set", "machine_verdict", "label_source",
    "query", "contexts", "answer", "explanation",
    # the labelling design of the queued row (calibration.design): the labels' probabilities live in the frozen design,
    # these copies only tell a reader of the CSV how the row was drawn
    "design", "inclusion_probability", "design_order", "design_seed",
)  # fmt: skip
DEFAULT_SCALES = {
    "groundedness": "binary",
    "context_relevancy": "binary",
    "completeness": "binary",
    "answer_relevancy": "binary",
    "toxicity": "binary",
}
SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}

_DIMENSION = re.compile(r"^[a-z][a-z0-9_]*$")
_SCALE = re.compile(r"^ordinal:(-?\d+)-(-?\d+)$")


class Scale(tuple):
    """``(lo, hi)``; ``str(scale)`` is the canonical spelling (``binary`` / ``ordinal:LO-HI``)."""

    def __new__(cls, lo: int, hi: int):
        return super().__new__(cls, (lo, hi))

    lo = property(lambda self: self[0])
    hi = property(lambda self: self[1])
    n_levels = property(lambda self: self[1] - self[0] + 1)
    is_binary = property(lambda self: tuple(self) == (0, 1))

    def __str__(self) -> str:
        return "binary" if self.is_binary else f"ordinal:{self.lo}-{self.hi}"


def parse_scale(text: str) -> Scale:
    """``binary`` → (0, 1); ``ordinal:LO-HI`` → (LO, HI) with LO < HI. Raises ValueError."""
    t = str(text).strip().lower().replace(" ", "")
    if t == "binary":
        return Scale(0, 1)
    m = _SCALE.match(t)
    if not m or int(m.group(1)) >= int(m.group(2)):
        raise ValueError(f"scale {text!r} is neither 'binary' nor 'ordinal:LO-HI' with LO < HI")
    return Scale(int(m.group(1)), int(m.group(2)))


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value != value:  # NaN from a spreadsheet export
        return ""
    return str(value).strip()


def _parse_label(value) -> int:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int):
        return value
    t = _text(value)
    f = float(t)  # "2", "2.0" (spreadsheets); ValueError otherwise
    if f != int(f):
        raise ValueError
    return int(f)


def _parse_time(value) -> datetime:
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    else:
        dt = datetime.fromisoformat(_text(value))
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def _validate(raw: dict, scales_seen: dict[str, tuple[str, int]], line: int) -> dict:
    """One record → a validated row; raises ValueError with the reason."""
    missing = [c for c in ("case_id", "system_id", "dimension", "label", "rater", "labelled_at") if not _text(raw.get(c))]
    if missing:
        raise ValueError(f"empty {', '.join(missing)}")
    dim = _text(raw["dimension"]).lower()
    if not _DIMENSION.match(dim):
        raise ValueError(f"dimension {raw['dimension']!r} is not a name like 'groundedness' or 'tone' ([a-z][a-z0-9_]*)")
    declared = _text(raw.get("scale"))
    if not declared:
        if dim.startswith("behaviour_"):  # a behaviour check verdict (did the system really resist / correct / decline?)
            declared = "binary"
        elif dim not in DEFAULT_SCALES:
            raise ValueError(
                f"rubric dimension {dim!r} has no default scale: declare one in the scale column ('binary' or 'ordinal:LO-HI')"
            )
        declared = DEFAULT_SCALES[dim]
    scale = parse_scale(declared)
    first = scales_seen.setdefault(dim, (str(scale), line))
    if first[0] != str(scale):
        raise ValueError(f"dimension {dim!r} has scale {scale} here but {first[0]} on line {first[1]}")
    try:
        label = _parse_label(raw["label"])
    except (ValueError, TypeError):
        raise ValueError(f"label {raw['label']!r} is not an integer") from None
    if not scale.lo <= label <= scale.hi:
        raise ValueError(f"label {label} outside the {scale} scale ({scale.lo}..{scale.hi})")
    try:
        at = _parse_time(raw["labelled_at"])
    except (ValueError, TypeError):
        raise ValueError(f"labelled_at {raw['labelled_at']!r} is not an ISO 8601 date or date-time") from None
    row = {
        "case_id": _text(raw["case_id"]),
        "system_id": _text(raw["system_id"]),
        "dimension": dim,
        "label": label,
        "scale": str(scale),
        "rater": _text(raw["rater"]),
        "labelled_at": at,
        "comment": _text(raw.get("comment")) or None,
    }
    row["row_hash"] = json_hash({**row, "labelled_at": at.isoformat()}, n=32)
    row["label_index"] = label - scale.lo
    row["n_levels"] = scale.n_levels
    return row


def validate_label(raw: dict) -> dict:
    """One judgement (a dict with the label-file columns) → the validated row; ValueError with the reason."""
    return _validate(raw, {}, 1)


def _records(path: Path, kind: str):
    """Yield ``(line, record | None, problem | None)``; a header problem is ``(line, None, reason)``."""
    known = set(REQUIRED_COLUMNS) | set(OPTIONAL_COLUMNS) | set(REVIEW_COLUMNS)

    def header_problem(columns) -> str | None:
        cols = [_text(c).lower() for c in columns]
        missing = [c for c in REQUIRED_COLUMNS if c not in cols]
        unknown = [c for c in cols if c not in known]
        dup = sorted({c for c in cols if cols.count(c) > 1})
        parts = []
        if missing:
            parts.append(f"missing column(s) {', '.join(missing)}")
        if unknown:
            parts.append(f"unknown column(s) {', '.join(unknown)} (allowed: {', '.join(sorted(known))})")
        if dup:
            parts.append(f"repeated column(s) {', '.join(dup)}")
        return "; ".join(parts) or None

    if kind == "csv":
        text = path.read_text(encoding="utf-8-sig")
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            yield 0, None, "empty file"
            return
        if problem := header_problem(header):
            yield 1, None, problem
            return
        names = [_text(c).lower() for c in header]
        for line, fields in enumerate(reader, start=2):
            if not fields or all(not f.strip() for f in fields):
                continue  # blank spreadsheet row
            if len(fields) != len(names):
                yield line, None, f"expected {len(names)} fields, got {len(fields)}"
                continue
            yield line, dict(zip(names, fields)), None
    elif kind == "jsonl":
        with path.open(encoding="utf-8-sig") as fh:
            for line, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                try:
                    obj = json.loads(text)
                except json.JSONDecodeError as e:
                    yield line, None, f"not valid JSON ({e.msg})"
                    continue
                if not isinstance(obj, dict):
                    yield line, None, "not a JSON object"
                    continue
                obj = {str(k).lower(): v for k, v in obj.items()}
                unknown = [k for k in obj if k not in known]  # missing keys: reported as empty by the row check
                if unknown:
                    yield line, None, f"unknown field(s) {', '.join(unknown)}"
                    continue
                yield line, obj, None
    else:
        frame = pl.read_parquet(path)
        if problem := header_problem(frame.columns):
            yield 0, None, problem
            return
        frame = frame.rename({c: c.lower() for c in frame.columns})
        for line, obj in enumerate(frame.iter_rows(named=True), start=1):
            yield line, obj, None


def _pending(raw: dict) -> bool:
    """An exported review-queue row nobody has labelled yet."""
    return bool(_text(raw.get("review_queue"))) and not any(_text(raw.get(c)) for c in ("label", "rater", "labelled_at"))


def read_label_file(path: str | Path, return_pending: bool = False):
    """Parse and validate one label file → ``(good_rows, errors)`` (frames with ``LABEL_SCHEMA`` /
    ``ERROR_SCHEMA``), plus the number of unlabelled review-queue rows skipped when
    ``return_pending``. When ``errors`` is not empty the caller must import nothing from the file."""
    path = Path(path)
    name = path.name
    rows: list[dict] = []
    errors: list[dict] = []
    kind = SUFFIXES.get(path.suffix.lower())
    scales_seen: dict[str, tuple[str, int]] = {}
    seen_keys: dict[tuple, tuple[int, int]] = {}
    pending = 0
    if kind is None:
        errors.append(
            {"file": name, "line": 0, "reason": f"unsupported file type {path.suffix!r} (use .csv, .jsonl or .parquet)"}
        )
    else:
        try:
            for line, raw, problem in _records(path, kind):
                if problem is None and _pending(raw):
                    pending += 1
                    continue
                if problem is None:
                    try:
                        row = _validate(raw, scales_seen, line)
                    except ValueError as e:
                        problem = str(e)
                if problem is None:
                    key = (row["case_id"], row["system_id"], row["dimension"], row["rater"], row["labelled_at"])
                    first = seen_keys.setdefault(key, (row["label"], line))
                    if first[0] != row["label"]:
                        problem = f"rater {row['rater']!r} gives label {row['label']} here but {first[0]} on line {first[1]} for the same item and time"
                if problem is not None:
                    errors.append({"file": name, "line": line, "reason": problem})
                else:
                    rows.append({**row, "source_file": name, "source_line": line})
        except (OSError, UnicodeDecodeError, pl.exceptions.PolarsError, csv.Error) as e:
            errors.append({"file": name, "line": 0, "reason": f"cannot read the file: {type(e).__name__}: {e}"})
        if not rows and not errors and not pending:
            errors.append({"file": name, "line": 0, "reason": "no label rows"})
    good = pl.DataFrame(rows, schema=LABEL_SCHEMA) if rows else pl.DataFrame(schema=LABEL_SCHEMA)
    if return_pending:
        return good, pl.DataFrame(errors, schema=ERROR_SCHEMA), pending
    return good, pl.DataFrame(errors, schema=ERROR_SCHEMA)
