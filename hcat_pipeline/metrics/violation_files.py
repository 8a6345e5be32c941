"""Violation-detection campaigns from JSONL files (violation-match deck), and who they are: ``split@version`` and
``checker@version|model`` as the deck names them.

Folder layout (default data/violations/):
  ground_truth.jsonl        the labelled violations (the evaluation split)
  split.json                optional: {"split": "<name>@<version>"}; the split id is that name@version with the
                            ground truth's content hash (``#<sha256[:12]>``), so two runs on a changed file never
                            read as the same split (``unversioned@-#…`` without split.json)
  match_labels.jsonl        optional: human match labels (``metrics.violation_fit``), never read as a checker
  <checker>.jsonl           one file per checker version, named ``<name>@<version>`` (e.g. prompt-baseline@1.1.0.jsonl);
                            the model behind it from a ``"model"`` key on its records (the first one), or a
                            ``<name>@<version>.model`` file beside it; the checker id is ``<name>@<version>|<model>``
                            (``|unknown`` when none is given).
One JSON object per line, one line per checked text:
  {"text_id": "t1", "text": "the checked text (optional)",
   "violations": [{"start": 0, "end": 12, "rule": "…", "category": "…",
                   "explanation": "…", "correction": "…"}]}
start/end are character offsets into the text (end exclusive); category, explanation and
correction are optional. A text a checker file does not list counts as "no violations found"
(its ground truth becomes FN) and is counted in ``texts_missing``. A bad line (not JSON, no
text_id, duplicate text_id) or a bad violation (missing/invalid start, end or rule, offsets outside
the text) is reported with file and line number and skipped; the rest of the file is used.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hcat_pipeline.metrics.matching import Embed, MatchConfig, campaign_rows, match_violations
from hcat_pipeline.metrics.violation_figures import FigureOptions, figures_with_ci, text_counts

GROUND_TRUTH_FILE = "ground_truth.jsonl"
LABELS_FILE = "match_labels.jsonl"  # human match labels (``metrics.violation_fit``), not a checker


def read_violation_file(path) -> tuple[dict[str, list[dict]], list[dict]]:
    """{text_id: [violation dicts]} and the errors (file, line, reason) of one JSONL file."""
    path = Path(path)
    texts: dict[str, list[dict]] = {}
    errors: list[dict] = []

    def err(line: int | None, reason: str) -> None:
        errors.append({"file": path.name, "line": line, "reason": reason})

    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        err(None, f"unreadable: {e}")
        return texts, errors
    for no, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            err(no, f"not JSON: {e.msg} at column {e.colno}")
            continue
        if not isinstance(rec, dict) or rec.get("text_id") in (None, ""):
            err(no, "record without text_id")
            continue
        tid = str(rec["text_id"])
        if tid in texts:
            err(no, f"duplicate text_id {tid!r} (first occurrence kept)")
            continue
        viols = rec.get("violations", [])
        if not isinstance(viols, list):
            err(no, "'violations' is not a list")
            continue
        text = rec.get("text")
        good = []
        for k, v in enumerate(viols):
            reason = _violation_problem(v, text)
            if reason:
                err(no, f"violation {k}: {reason}")
                continue
            good.append({**{f: v.get(f) for f in ("rule", "category", "explanation", "correction")}, "start": int(v["start"]), "end": int(v["end"]), "text_id": tid})
        texts[tid] = good
    return texts, errors


def _violation_problem(v, text) -> str | None:
    if not isinstance(v, dict):
        return "not an object"
    for k in ("start", "end"):
        if not isinstance(v.get(k), int) or isinstance(v.get(k), bool):
            return f"{k!r} missing or not an integer"
    if not isinstance(v.get("rule"), str) or not v["rule"].strip():
        return "'rule' missing or empty"
    if not 0 <= v["start"] <= v["end"]:
        return f"invalid span [{v['start']}, {v['end']})"
    if isinstance(text, str) and v["end"] > len(text):
        return f"span end {v['end']} beyond the text ({len(text)} characters)"
    return None


def evaluate_campaign(folder, embed: Embed, config: MatchConfig | None = None, rule_embed: Embed | None = None,
                      figures: FigureOptions | None = None) -> tuple[list[dict], list[dict], list[dict]]:
    """(summary per checker version — counts, the match score and P / R / F1 of both variants with bootstrap CIs over
    texts (``violation_figures``), the rule-similarity backend —, every candidate pair with its decision, file errors)."""
    folder = Path(folder)
    gt_path = folder / GROUND_TRUTH_FILE
    if not gt_path.is_file():
        raise FileNotFoundError(f"no {GROUND_TRUTH_FILE} in {folder}")
    gt, errors = read_violation_file(gt_path)
    split = split_id(folder)
    gt_flat = [v for vs in gt.values() for v in vs]
    summary, pairs = [], []
    for path in sorted(folder.glob("*.jsonl")):
        if path.name in (GROUND_TRUTH_FILE, LABELS_FILE):
            continue
        checker = path.stem
        pred, errs = read_violation_file(path)
        errors.extend(errs)
        unknown = [t for t in pred if t not in gt]
        for t in unknown:
            errors.append({"file": path.name, "line": None, "reason": f"text_id {t!r} not in {GROUND_TRUTH_FILE} (ignored)"})
        pred_flat = [v for t, vs in pred.items() if t in gt for v in vs]
        res = match_violations(pred_flat, gt_flat, embed, config, rule_embed)
        row = campaign_rows([(checker, res)])[0]
        row.update(texts=len(gt), texts_missing=sum(1 for t in gt if t not in pred), predicted=len(pred_flat), ground_truth=len(gt_flat))
        counts = text_counts(sorted(gt), pred_flat, gt_flat, res.matches, res.ha_matches)
        row.update(figures_with_ci(counts, figures), rule_similarity=res.config["rule_similarity"], split=split,
                   checker=checker_id(path))
        summary.append(row)
        for c in res.pairs:
            p, g = pred_flat[c["pred"]], gt_flat[c["gt"]]
            pairs.append({
                "checker_version": checker, **{k: v for k, v in c.items() if k not in ("pred", "gt")},
                "pred_start": p["start"], "pred_end": p["end"], "pred_rule": p["rule"],
                "gt_start": g["start"], "gt_end": g["end"], "gt_rule": g["rule"],
            })
    return summary, pairs, errors


def split_id(folder: Path) -> str:
    """``<name>@<version>#<sha256[:12] of ground_truth.jsonl>`` (split.json's name; ``unversioned@-`` without one)."""
    digest = hashlib.sha256((folder / GROUND_TRUTH_FILE).read_bytes()).hexdigest()[:12]
    meta = folder / "split.json"
    name = "unversioned@-"
    if meta.is_file():
        try:
            name = str(json.loads(meta.read_text(encoding="utf-8"))["split"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{meta}: expected {{\"split\": \"<name>@<version>\"}} ({e})") from None
        if "@" not in name:
            raise ValueError(f"{meta}: split {name!r} is not <name>@<version>")
    return f"{name}#{digest}"


def checker_id(path: Path) -> str:
    """``<name>@<version>|<model>``: the model from a sidecar ``<stem>.model`` or the file's first ``"model"`` key."""
    sidecar = path.with_suffix(".model")
    model = sidecar.read_text(encoding="utf-8").strip() if sidecar.is_file() else ""
    if not model:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and rec.get("model"):
                model = str(rec["model"])
                break
    return f"{path.stem}|{model or 'unknown'}"
