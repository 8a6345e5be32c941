"""The review queue as screens: one answer (case × system) per screen, the dimensions to label on it.

Where the queue comes from: the ``review_queue`` asset's stored output of a campaign run
(``<warehouse>/review_queue/<version>/<night>.parquet``, the latest run by default) or the CSV it exported
(any file with the review-queue columns). The same run's ``metric_tables`` (when stored) add every
metric's score on the answer and the sentences the metrics flagged, which the page marks in the answer
and in the retrieved passages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from hcat_pipeline.calibration.campaign import DIMENSION_METRICS, EXPLANATION_COLUMNS, LABEL_MEANINGS, explanation_text
from hcat_pipeline.calibration.labels import parse_scale

__all__ = ["Flag", "Item", "QueueError", "build_items", "find_queue", "highlight", "load_queue", "scale_choices", "stored_queue", "paired_answers"]

PASSAGE_SEPARATOR = "\n---\n"  # how the review_queue asset joins an answer's passages
# the metric scores a reviewer sees (metric_tables columns) with the columns explaining each: the review queue's, but for
# toxicity its most toxic sentence and category rather than every sentence's score
SHOWN_METRICS: dict[str, tuple[str, ...]] = {**EXPLANATION_COLUMNS, "toxicity": ("toxicity_top_sentence", "toxicity_category")}


class QueueError(ValueError):
    """No review queue where one was looked for, or a file that is not one."""


@dataclass(frozen=True)
class Flag:
    """A sentence a metric flagged: where it is (``answer`` / ``passages``) and why."""

    sentence: str
    where: str
    why: str


@dataclass
class Item:
    """One screen: an answer and the queue's dimensions to label on it (priority order)."""

    case_id: str
    system_id: str
    priority: int
    query: str
    answer: str
    passages: list[str]
    reference: str | None  # the golden set's reference answer (from the run's metric_tables), when known
    rows: list[dict]  # the queue rows of this answer: dimension, scale, label_meaning, reason, metric, scores
    stratum: str | None = None
    query_type: str | None = None
    scores: dict[str, float | None] = field(default_factory=dict)
    explanations: dict[str, str] = field(default_factory=dict)
    flags: list[Flag] = field(default_factory=list)
    paired: dict | None = None  # a variant's base case: its question and the same system's answer (``paired_answers``)

    @property
    def key(self) -> str:
        return f"{self.case_id}|{self.system_id}"


def scale_choices(scale: str, dimension: str) -> list[dict]:
    """The labels a reviewer picks from: ``[{value, key, meaning}]`` (key = the keyboard digit)."""
    s = parse_scale(scale)
    meaning = LABEL_MEANINGS.get(dimension, "")
    words = {}
    if s.is_binary and " = " in meaning:  # "1 = …, 0 = …" → the words after each value
        for part in re.split(r",\s*(?=[01] = )", meaning):
            v, _, text = part.partition(" = ")
            words[int(v)] = text.strip()
    return [{"value": v, "key": str(v % 10), "meaning": words.get(v, "")} for v in range(s.lo, s.hi + 1)]


def find_queue(warehouse: str | Path) -> Path | None:
    """The latest stored review queue (``review_queue/<version>/<night>.parquet``, latest night, then modified)."""
    files = list(Path(warehouse, "review_queue").glob("*/*.parquet"))
    return max(files, key=lambda p: (p.stem, p.stat().st_mtime)) if files else None


_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def stored_queue(warehouse: str | Path, name: str) -> Path:
    """``<version>/<night>`` → that campaign run's stored review queue; ``QueueError`` when there is none."""
    parts = name.split("/")
    if len(parts) != 2 or not all(_PART.match(p) for p in parts):
        raise QueueError(f"queue {name!r}: name a campaign run as <golden-set version>/<night>, e.g. gs-1a2b3c/2026-11-27")
    path = Path(warehouse, "review_queue", parts[0], f"{parts[1]}.parquet")
    if not path.is_file():
        raise QueueError(f"no stored review queue for {name} (looked for {path}): its campaign run has not made one")
    return path


def load_queue(path: str | Path) -> pl.DataFrame:
    """A review queue from the asset's Parquet or its CSV export; ``QueueError`` saying what is wrong otherwise."""
    path = Path(path)
    if not path.is_file():
        raise QueueError(f"no review queue at {path}: run a campaign (its review_queue asset) or pass --queue FILE")
    try:
        frame = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path, infer_schema_length=0)
    except (pl.exceptions.PolarsError, OSError) as e:
        raise QueueError(f"{path} cannot be read as a review queue: {e}") from e
    missing = [c for c in ("case_id", "system_id", "dimension", "query", "answer", "contexts", "priority") if c not in frame.columns]
    if missing:
        raise QueueError(f"{path} is not a review queue: missing column(s) {', '.join(missing)}")
    return frame.with_columns(pl.col("priority").cast(pl.Int64), pl.col("scale").fill_null("binary") if "scale" in frame.columns
                              else pl.lit("binary").alias("scale"))  # fmt: skip


def metric_tables_for(queue_path: str | Path, warehouse: str | Path) -> pl.DataFrame | None:
    """The same run's stored ``metric_tables`` (when the queue is a stored partition), else None."""
    p = Path(queue_path)
    candidate = Path(warehouse, "metric_tables", p.parent.name, p.name)
    return pl.read_parquet(candidate) if p.suffix == ".parquet" and candidate.is_file() else None


MAX_PASSAGE_FLAGS = 5  # completeness lists every uncovered passage sentence: the page marks the first few


def paired_answers(queue_path: str | Path, warehouse: str | Path) -> dict[tuple[str, str], dict]:
    """For a stored run's variant cases (robustness, counterfactual, bias probes, format, multi-turn): what a reviewer compares
    a variant's answer with — the same system's answers to the base case and to the base's other variants of the same kind
    (a counterfactual pair), those the run has. Empty when the run's tables are not stored."""
    p = Path(queue_path)
    golden = Path(warehouse, "golden_set", f"{p.parent.name}.parquet")
    rag = Path(warehouse, "rag_responses", p.parent.name, p.name)
    if p.suffix != ".parquet" or not golden.is_file() or not rag.is_file():
        return {}
    cases = pl.read_parquet(golden, columns=["case_id", "base_case_id", "query", "variant_kind"])
    query = dict(zip(cases["case_id"], cases["query"], strict=True))
    answers = {(c, s): a for c, s, a in pl.read_parquet(rag, columns=["case_id", "system_id", "answer"]).iter_rows()}
    variants = cases.filter(pl.col("base_case_id").is_not_null()).to_dicts()
    systems: dict[str, list[str]] = {}
    for c, system in answers:
        systems.setdefault(c, []).append(system)
    family: dict[tuple[str, str], list[str]] = {}  # (base, kind) → its variants
    for v in variants:
        family.setdefault((v["base_case_id"], v["variant_kind"]), []).append(v["case_id"])
    out = {}
    for v in variants:
        siblings = [c for c in family[(v["base_case_id"], v["variant_kind"])] if c != v["case_id"]]
        for system in systems.get(v["case_id"], []):
            compare = [{"relation": "base case" if c == v["base_case_id"] else f"other {v['variant_kind']} variant", "case_id": c,
                        "query": query.get(c, ""), "answer": answers[(c, system)]}
                       for c in (v["base_case_id"], *siblings) if (c, system) in answers]  # fmt: skip
            out[(v["case_id"], system)] = {"base_case_id": v["base_case_id"], "variant_kind": v["variant_kind"], "compare": compare}
    return out


def _flags(m: dict, dimensions: set[str]) -> list[Flag]:
    """The sentences the metrics of the queued ``dimensions`` flagged (a flag no queued dimension reads is noise)."""
    out = []
    if "groundedness" in dimensions:
        hows = {}  # the NLI and the similarity metric often flag the same sentence: one flag naming both
        for col, how in (("least_grounded_sentence_nli", "NLI"), ("least_grounded_sentence", "similarity")):
            if m.get(col):
                hows.setdefault(m[col], []).append(how)
        out += [Flag(s, "answer", f"least grounded sentence ({', '.join(h)})") for s, h in hows.items()]
    if "toxicity" in dimensions and m.get("toxicity_top_sentence"):
        out.append(Flag(m["toxicity_top_sentence"], "answer", f"most toxic sentence ({m.get('toxicity') or 0:.2f})"))
    if "completeness" in dimensions:
        long_enough = [s for s in m.get("uncovered_context_sentences") or [] if len(s.split()) >= 4]
        out += [Flag(s, "passages", "not covered by the answer (completeness)") for s in long_enough[:MAX_PASSAGE_FLAGS]]
    return out


def build_items(queue: pl.DataFrame, metric_tables: pl.DataFrame | None = None, pairs: dict | None = None) -> list[Item]:
    """Screens in queue order: an answer's first (lowest) priority decides its place."""
    metrics = {}
    if metric_tables is not None:
        metrics = {(r["case_id"], r["system_id"]): r for r in metric_tables.iter_rows(named=True)}
    items: dict[tuple[str, str], Item] = {}
    for r in queue.sort("priority", "case_id", "system_id", "dimension").iter_rows(named=True):
        key = (r["case_id"], r["system_id"])
        if key not in items:
            m = metrics.get(key, {})
            items[key] = Item(
                case_id=r["case_id"], system_id=r["system_id"], priority=int(r["priority"]), query=r["query"] or "",
                answer=r["answer"] or "", reference=m.get("reference"), passages=[p for p in (r["contexts"] or "").split(PASSAGE_SEPARATOR) if p.strip()],
                rows=[], stratum=None if r.get("stratum") is None else str(r["stratum"]), query_type=r.get("query_type"),
                scores={k: m.get(k) for k in SHOWN_METRICS if k in m},
                explanations={k: explanation_text(m, cols, MAX_PASSAGE_FLAGS, 3) for k, cols in SHOWN_METRICS.items() if m},
            )  # fmt: skip
            if not m and r.get("explanation"):
                items[key].explanations = {r.get("metric") or "metric": r["explanation"]}
        items[key].rows.append({
            "dimension": r["dimension"], "scale": r.get("scale") or "binary", "label_meaning": r.get("label_meaning") or LABEL_MEANINGS.get(r["dimension"], ""),
            "reason": r.get("reason") or "", "metric": r.get("metric") or DIMENSION_METRICS.get(r["dimension"], ""),
            "raw_score": r.get("raw_score"), "calibrated_probability": r.get("calibrated_probability"),
            "prediction_set": r.get("prediction_set"), "choices": scale_choices(r.get("scale") or "binary", r["dimension"]),
        })  # fmt: skip
    for (case_id, system_id), item in items.items():
        m = metrics.get((case_id, system_id))
        item.flags = _flags(m, {r["dimension"] for r in item.rows}) if m else []
        item.paired = (pairs or {}).get((case_id, system_id))
    return list(items.values())


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def highlight(text: str, flags: list[Flag]) -> list[dict]:
    """``text`` cut into ``[{text, why}]`` segments, ``why`` set on the flagged sentences found in it (whitespace-insensitive)."""
    marks: list[tuple[int, int, str]] = []
    for f in flags:
        words = _norm(f.sentence).split(" ")
        if not words or not words[0]:
            continue
        pattern = r"\s+".join(re.escape(w) for w in words)
        for m in re.finditer(pattern, text):
            if not any(a < m.end() and m.start() < b for a, b, _ in marks):
                marks.append((m.start(), m.end(), f.why))
    out, pos = [], 0
    for a, b, why in sorted(marks):
        if a > pos:
            out.append({"text": text[pos:a], "why": None})
        out.append({"text": text[a:b], "why": why})
        pos = b
    if pos < len(text) or not out:
        out.append({"text": text[pos:], "why": None})
    return out
