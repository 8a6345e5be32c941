"""Reading a service's traffic logs (JSONL / JSON / Parquet / CSV): one normalised row per request, every row that
cannot be used kept in a ``rejected`` table with its file, line and reason — never dropped silently.

``LogFields`` maps the service's own field names (JSON paths, like the http system's ``answer_path``) onto the row
schema ``LOG_ROWS``. A row's day is its timestamp's UTC date, else the day in its file's name.
"""

from __future__ import annotations

import datetime as dt
import glob
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import polars as pl

from hcat_pipeline.common.jsonpath import get_path
from hcat_pipeline.monitoring.spans import SPAN_RECORD_FIELDS, is_span, traces, unpack_otlp
from hcat_pipeline.schemas import PRODUCTION_LOGS, PRODUCTION_REJECTS

LOG_ROWS = PRODUCTION_LOGS
REJECTED = PRODUCTION_REJECTS
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
DAY_IN_NAME = r"(\d{4}-\d{2}-\d{2})"
_FLAGS = ("retried", "abandoned", "copied")
_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f", ""}


def _meta(description: str, **kw) -> dict:
    return {"description": description, **kw}


@dataclass(frozen=True)
class LogFields:
    """Where each field sits in a log record (JSON paths: ``a.b``, ``contexts[*].text``); empty: the log has none."""

    question_path: str = field(default="question", metadata=_meta("the user's question"))
    answer_path: str = field(default="answer", metadata=_meta("the service's answer"))
    contexts_path: str = field(default="contexts", metadata=_meta("the retrieved passages (strings or objects); empty: none"))
    context_text_field: str = field(default="text", metadata=_meta("a passage object's text field"))
    timestamp_path: str = field(default="timestamp", metadata=_meta("ISO-8601 time or epoch seconds / ms; empty: the file name's day"))
    request_id_path: str = field(default="", metadata=_meta("the request id; empty: file:line"))
    latency_ms_path: str = field(default="latency_ms", metadata=_meta("milliseconds from question to answer"))
    input_tokens_path: str = field(default="", metadata=_meta("prompt tokens"))
    output_tokens_path: str = field(default="", metadata=_meta("answer tokens"))
    error_path: str = field(default="error", metadata=_meta("an error message when the request failed"))
    thumbs_path: str = field(default="", metadata=_meta("explicit feedback: up / down (1 / -1, true / false, 'up' / 'down')"))
    rating_path: str = field(default="", metadata=_meta("explicit feedback: a rating (1-5)"))
    correction_path: str = field(default="", metadata=_meta("explicit feedback: the user's correction"))
    retried_path: str = field(default="", metadata=_meta("implicit: the user asked again at once"))
    abandoned_path: str = field(default="", metadata=_meta("implicit: the session ended without a follow-up"))
    copied_path: str = field(default="", metadata=_meta("implicit: the user copied the answer"))
    day_pattern: str = field(default=DAY_IN_NAME, metadata=_meta("regex whose first group is a file name's YYYY-MM-DD"))


class LogRead(NamedTuple):
    rows: pl.DataFrame  # LOG_ROWS
    rejected: pl.DataFrame  # REJECTED: file:line and why
    other_days: dict[str, int]  # rows of these files whose timestamp falls on another day (read on that day)


class LogFileError(ValueError):
    """A log file that cannot be read at all (the message names it and why)."""


def log_files(patterns: list[str]) -> list[Path]:
    """The files the patterns name (folders: every log file inside), sorted, each once."""
    out: dict[str, Path] = {}
    for p in patterns:
        path = Path(p).expanduser()
        hits = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else [Path(h) for h in sorted(glob.glob(str(path), recursive=True))]
        out.update({str(h): h for h in hits if h.is_file() and h.suffix.lower() in FORMATS})
    return [out[k] for k in sorted(out)]


def file_day(path: Path, pattern: str = DAY_IN_NAME) -> str | None:
    m = re.search(pattern, path.name)
    return m.group(1) if m else None


def _records(path: Path) -> list[tuple[int, dict | None, str]]:
    """(line, record or None, why not) of every record in the file; line is 1-based (rows for tables)."""
    kind = FORMATS[path.suffix.lower()]
    try:
        if kind == "jsonl":
            out = []
            for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    out.append((i, None, f"not JSON ({e.msg} at column {e.colno})"))
                    continue
                out.append((i, rec, "") if isinstance(rec, dict) else (i, None, f"a JSON {type(rec).__name__}, not an object"))
            return out
        if kind == "json":
            data = json.loads(path.read_text(encoding="utf-8"))
            data = unpack_otlp(data) or (data if isinstance(data, list) else [data])  # an OTLP export: its spans
        else:
            data = (pl.read_parquet(path) if kind == "parquet" else pl.read_csv(path, infer_schema_length=0)).to_dicts()
    except (OSError, ValueError, pl.exceptions.PolarsError) as e:
        raise LogFileError(f"{path}: cannot be read as {kind}: {e}") from e
    return [(i, r, "") if isinstance(r, dict) else (i, None, "not an object") for i, r in enumerate(data, 1)]


def _get(rec: dict, path: str):
    if not path:
        return None
    try:
        return get_path(rec, path)
    except KeyError:
        return None


def parse_time(value) -> dt.datetime:
    """ISO-8601 (a trailing Z allowed; naive = UTC) or epoch seconds / milliseconds → an aware UTC datetime."""
    if isinstance(value, bool) or value is None or value == "":
        raise ValueError(f"no timestamp ({value!r})")
    if isinstance(value, int | float) or re.fullmatch(r"\d+(\.\d+)?", str(value)):
        x = float(value)
        return dt.datetime.fromtimestamp(x / 1000 if x > 1e11 else x, dt.UTC)
    t = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


def _flag(value, name: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in _TRUE or s in _FALSE:
        return s in _TRUE
    raise ValueError(f"{name} {value!r} is not true / false")


def _thumbs(value) -> int | None:
    if value is None or value == "":
        return None
    s = str(value).strip().lower()
    ups, downs = {"1", "true", "up", "+1", "thumbs_up", "👍"}, {"-1", "false", "down", "0", "thumbs_down", "👎"}
    if s in ups or s in downs:
        return 1 if s in ups else -1
    raise ValueError(f"thumbs {value!r} is not up / down")


def _contexts(value, text_field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = json.loads(value) if value.strip().startswith("[") else [value]
    if not isinstance(value, list):
        raise ValueError(f"contexts is a {type(value).__name__}, not a list")
    out = []
    for c in value:
        text = c.get(text_field) if isinstance(c, dict) else c
        if not isinstance(text, str):
            raise ValueError(f"a context without text ({str(c)[:60]!r})")
        out.append(text)
    return out


def _number(value, name: str, kind=float):
    if value is None or value == "":
        return None
    try:
        x = kind(float(value))
    except (TypeError, ValueError):
        raise ValueError(f"{name} {value!r} is not a number") from None
    if x < 0:
        raise ValueError(f"{name} {value!r} is negative")
    return x


def normalise_record(rec: dict, fields: LogFields, source: str, default_day: str | None) -> dict:
    """One log record as a ``LOG_ROWS`` row; raises ValueError naming the field that cannot be used."""
    question = _get(rec, fields.question_path)
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"no question at {fields.question_path!r}")
    error = _get(rec, fields.error_path)
    error = str(error) if error not in (None, "", False) else None
    answer = _get(rec, fields.answer_path)
    if answer is not None and not isinstance(answer, str):
        raise ValueError(f"answer at {fields.answer_path!r} is a {type(answer).__name__}, not text")
    if error is None and not (answer or "").strip():
        raise ValueError(f"no answer at {fields.answer_path!r} and no error")
    stamp = _get(rec, fields.timestamp_path)
    if stamp is None and default_day is None:
        raise ValueError(f"no timestamp at {fields.timestamp_path!r} and no day in the file name")
    when = parse_time(stamp) if stamp is not None else None
    rating = _number(_get(rec, fields.rating_path), "rating")
    correction = _get(rec, fields.correction_path)
    rid = _get(rec, fields.request_id_path)
    row = {
        "request_id": str(rid) if rid not in (None, "") else source, "day": when.strftime("%Y-%m-%d") if when else default_day,
        "timestamp": when.isoformat() if when else None, "question": question, "answer": answer, "error": error,
        "contexts": _contexts(_get(rec, fields.contexts_path), fields.context_text_field),
        "latency_ms": _number(_get(rec, fields.latency_ms_path), "latency_ms"),
        "input_tokens": _number(_get(rec, fields.input_tokens_path), "input_tokens", int),
        "output_tokens": _number(_get(rec, fields.output_tokens_path), "output_tokens", int),
        "thumbs": _thumbs(_get(rec, fields.thumbs_path)), "rating": rating,
        "correction": str(correction) if correction not in (None, "") else None, "source": source,
    }  # fmt: skip
    return row | {f: _flag(_get(rec, getattr(fields, f"{f}_path")), f) for f in _FLAGS}


def requests(path: Path, fields: LogFields) -> tuple[list[tuple[object, dict | None, str]], LogFields]:
    """(where, record, why not) per request of a file, and the field map to read them with: a span export (OpenTelemetry
    / OpenInference, ``monitoring.spans``) gives one record per trace read by the spans' own names; any other file its
    records, read by ``fields``."""
    records = _records(path)
    if not any(is_span(r) for _, r, _ in records[:50]):
        return records, fields
    return traces(records), LogFields(**SPAN_RECORD_FIELDS, day_pattern=fields.day_pattern)


def merge_reads(a: LogRead, b: LogRead) -> LogRead:
    other = dict(a.other_days)
    for d, n in b.other_days.items():
        other[d] = other.get(d, 0) + n
    return LogRead(pl.concat([a.rows, b.rows]), pl.concat([a.rejected, b.rejected]), other)


def record_day(rec: dict | None, fields: LogFields) -> str | None:
    """The UTC day of a record's timestamp, or None when it has no usable one."""
    try:
        return parse_time(_get(rec or {}, fields.timestamp_path)).strftime("%Y-%m-%d")
    except (ValueError, OverflowError, OSError):
        return None


def _take(records, fields: LogFields, day: str, default_day: str | None, prefix: str, acc: tuple[list, list, dict]) -> None:
    """Normalise ``records`` ((where, record or None, why not)) into ``acc`` = (rows of ``day``, rejected, rows of
    other days counted). A rejected record is named on one day only: the file's name's day (or the SQL query's), else
    its timestamp's, else the first day the file's records fall on — a bad row of a ten-day export is named once, not
    ten times. A file with no dated record at all names its rejects on every day it is read (it cannot be placed)."""
    rows, rejected, other = acc
    undated: list[dict] = []
    days_seen: set[str] = set()
    for where, rec, why in records:
        source = f"{prefix}{where}"
        try:
            if rec is None:
                raise ValueError(why)
            row = normalise_record(rec, fields, source, default_day)
        except ValueError as e:
            stamped = record_day(rec, fields)  # a good row's day comes parsed with it; only a rejected one is read again
            days_seen.update([stamped] if stamped is not None else [])
            own = default_day or stamped  # a named file (or the SQL source's day) is read on that day only: named there
            if own is None:
                undated.append({"source": source, "reason": str(e)})
            elif own == day:
                rejected.append({"source": source, "reason": str(e)})
            continue
        days_seen.add(row["day"])
        if row["day"] != day:
            other[row["day"]] = other.get(row["day"], 0) + 1
            continue
        rows.append(row)
    if not days_seen or min(days_seen) == day:
        rejected.extend(undated)


def _read(acc: tuple[list, list, dict]) -> LogRead:
    return LogRead(pl.DataFrame(acc[0], schema=LOG_ROWS), pl.DataFrame(acc[1], schema=REJECTED), acc[2])


def read_sql_day(source, day: str, fields: LogFields) -> LogRead:
    """The rows of ``day`` a ``sql_source.SqlSource`` returns, read and rejected like a file's records."""
    acc: tuple[list, list, dict] = ([], [], {})
    _take(source.records(day), fields, day, day, "", acc)
    return _read(acc)


def read_day(patterns: list[str], day: str, fields: LogFields = LogFields()) -> LogRead:
    """Every row of ``day`` in the files the patterns name: files whose name carries that day or no day. A file
    that cannot be read at all raises ``LogFileError``; a record that cannot be used is a ``rejected`` row."""
    acc: tuple[list, list, dict] = ([], [], {})
    for path in log_files(patterns):
        named = file_day(path, fields.day_pattern)
        if named not in (None, day):
            continue
        records, use = requests(path, fields)
        _take(records, use, day, named, f"{path.name}:", acc)
    return _read(acc)


def days_in(patterns: list[str], pattern: str = DAY_IN_NAME, fields: LogFields | None = None) -> dict[str, list[Path]]:
    """The days the logs hold → their files: the day a file's name carries, else (a single export, hourly or arbitrary
    names) every day its rows' timestamps fall on (``fields.timestamp_path``; a row without a usable one is left to
    ``read_day`` to reject). Without ``fields`` an undated file is left out."""
    out: dict[str, list[Path]] = {}
    for p in log_files(patterns):
        named = file_day(p, pattern)
        for d in [named] if named is not None else sorted(row_days(p, fields)) if fields is not None else []:
            out.setdefault(d, []).append(p)
    return out


def row_days(path: Path, fields: LogFields) -> set[str]:
    """The days the rows of an undated file fall on, by their timestamps (unreadable rows and files give none)."""
    try:
        records, use = requests(path, fields)
    except LogFileError:
        return set()
    return {d for _, rec, _why in records if (d := record_day(rec, use)) is not None}


def no_day_reason(patterns: list[str], fields: LogFields) -> str:
    """Why the logs gave no day: no file at all, or files with no date in the name and no row with a timestamp."""
    files = log_files(patterns)
    if not files:
        return f"no log file ({', '.join(sorted(FORMATS))}) matches {patterns}"
    return (f"no day found in {len(files)} log file(s) ({', '.join(p.name for p in files[:3])}{' …' if len(files) > 3 else ''}): no "
            f"date in the file names (day_pattern {fields.day_pattern!r}) and no row with a timestamp at {fields.timestamp_path!r}")
