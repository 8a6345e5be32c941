"""Cases from anywhere for ``hcat validate-cases``: read JSONL / CSV, resolve each case's source text, write verdicts.

A row needs ``case_id``, ``query``, ``query_type`` and ``reference_answer`` (may be empty for abstain / refuse
cases), and either ``source_text`` or ``source_chunk_ids`` (resolved in the ``chunks`` table). Any golden-set
column (category, variant_kind, expected_behavior, pair_id, attribute, distractor_passage, tags) is used when
present. A row that cannot be read is reported with its line and reason and gets verdict ``invalid``; the rest go on.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

REQUIRED = ("case_id", "query")
LIST_FIELDS = ("source_chunk_ids", "tags", "options", "constraints")


def _list(value) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    try:
        parsed = json.loads(value)
        return [str(v) for v in parsed] if isinstance(parsed, list) else [str(parsed)]
    except (TypeError, json.JSONDecodeError):
        return [s.strip() for s in str(value).split("|") if s.strip()]


def read_case_rows(path: str | Path) -> tuple[list[dict], list[dict]]:
    """(cases, problems): cases keep their line as ``_line``; a problem is {case_id, line, reason}."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    raw: list[tuple[int, object]] = []
    problems: list[dict] = []
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    raw.append((n, json.loads(line)))
                except json.JSONDecodeError as e:
                    problems.append({"case_id": None, "line": n, "reason": f"not valid JSON: {e.msg}"})
    elif path.suffix.lower() == ".csv":
        with open(path, encoding="utf-8", newline="") as f:
            raw = [(n, dict(r)) for n, r in enumerate(csv.DictReader(f), start=2)]
    else:
        raise ValueError(f"{path}: expected .jsonl or .csv")
    cases: list[dict] = []
    seen: set[str] = set()
    for n, row in raw:
        if not isinstance(row, dict):
            problems.append({"case_id": None, "line": n, "reason": "not a JSON object"})
            continue
        missing = [k for k in REQUIRED if not str(row.get(k) or "").strip()]
        cid = str(row.get("case_id") or "") or None
        if missing:
            problems.append({"case_id": cid, "line": n, "reason": f"missing {missing}"})
            continue
        if cid in seen:
            problems.append({"case_id": cid, "line": n, "reason": f"case_id {cid!r} repeats an earlier row"})
            continue
        seen.add(cid)
        case = {k: (v if v != "" else None) for k, v in row.items()}
        for k in LIST_FIELDS:
            case[k] = _list(row.get(k))
        case["_line"] = n
        cases.append(case)
    return cases, problems


def resolve_sources(cases: list[dict], chunk_text: dict[str, str]) -> tuple[dict[str, str], list[dict]]:
    """case_id → source text (``source_text``, else the cited chunks joined); problems for chunk ids not found."""
    sources: dict[str, str] = {}
    problems: list[dict] = []
    for c in cases:
        if c.get("source_text"):
            sources[c["case_id"]] = str(c["source_text"])
            continue
        ids = c.get("source_chunk_ids") or []
        missing = [i for i in ids if i not in chunk_text]
        if missing:
            problems.append({"case_id": c["case_id"], "line": c["_line"], "reason": f"source_chunk_ids not in the corpus: {missing[:5]}"})
        sources[c["case_id"]] = "\n".join(chunk_text[i] for i in ids if i in chunk_text)
    return sources, problems


def verdict_rows(cases: list[dict], validities, problems: list[dict]) -> list[dict]:
    """One output row per input row, in file order: case_id, verdict, validity_score, reasons (and the checks)."""
    out = [{"case_id": c["case_id"], "line": c["_line"], "verdict": v.verdict, "validity_score": v.score, "reasons": v.reasons,
            "checks": v.checks} for c, v in zip(cases, validities, strict=True)]  # fmt: skip
    by_id = {r["case_id"]: r for r in out}
    for p in problems:
        row = by_id.get(p["case_id"]) if p["case_id"] else None
        if row is not None:
            row["reasons"].append(f"unreadable: {p['reason']}")
            row["verdict"], row["validity_score"] = "invalid", 0.0
        else:
            out.append({"case_id": p["case_id"], "line": p["line"], "verdict": "invalid", "validity_score": 0.0,
                        "reasons": [f"unreadable: {p['reason']}"], "checks": {}})  # fmt: skip
    return sorted(out, key=lambda r: r["line"])


def write_jsonl(rows: list[dict], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(path)
    return path
