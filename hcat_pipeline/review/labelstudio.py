"""Interchange with Label Studio (HumanSignal/label-studio), for teams that already label there.

Export: the review queue as Label Studio tasks (``[{"data": {...}}]``, one task per queue row: an answer ×
a dimension) with a labeling config per label scale (``<Choices name="label">`` with the scale's values and
digit hotkeys, ``<TextArea name="comment">``). Label Studio assigns its own task ids, so each task carries
ours in ``data`` (``case_id``, ``system_id``, ``dimension``, ``scale``).

Import: a project's JSON export (``[{"id", "data", "annotations": [{"completed_by", "result",
"was_cancelled", "created_at", "updated_at", …}]}]``) → rows of the label-file format
(``calibration.labels``): one per annotation that is not cancelled, ``label`` from the ``label`` choice,
``comment`` from the ``comment`` text area, ``rater`` from ``completed_by`` (an email when the export
expands users, else ``labelstudio-user-<id>`` or the name a users map gives), ``labelled_at`` from
``updated_at``. What cannot become a label is a problem ``(task id, reason)``, not a silent drop.
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import quoteattr

import polars as pl

from hcat_pipeline.calibration.labels import parse_scale

__all__ = ["TASK_FIELDS", "export_tasks", "labeling_config", "annotations_to_labels", "read_export"]

TASK_FIELDS = ("case_id", "system_id", "dimension", "scale", "label_meaning", "query", "answer", "contexts", "reason",
               "golden_set_version", "night", "stratum", "priority")  # fmt: skip
CHOICES_NAME, COMMENT_NAME = "label", "comment"


def labeling_config(scale: str) -> str:
    """The Label Studio labeling config (XML) for the tasks of one label scale."""
    s = parse_scale(scale)
    choices = "\n".join(f'    <Choice value="{v}" hotkey="{v % 10}"/>' for v in range(s.lo, s.hi + 1))
    return f"""<View>
  <Header value="$dimension: $label_meaning"/>
  <Header value="Question" size="5"/>
  <Text name="query" value="$query"/>
  <Header value="Answer" size="5"/>
  <Text name="answer" value="$answer"/>
  <Header value="Retrieved passages" size="5"/>
  <Text name="contexts" value="$contexts"/>
  <Choices name={quoteattr(CHOICES_NAME)} toName="answer" choice="single" showInline="true" required="true">
{choices}
  </Choices>
  <TextArea name={quoteattr(COMMENT_NAME)} toName="answer" rows="2" editable="true" maxSubmissions="1" placeholder="Optional note"/>
</View>
"""


def export_tasks(queue: pl.DataFrame) -> dict[str, list[dict]]:
    """Queue rows → Label Studio tasks, grouped by label scale (one project per scale)."""
    out: dict[str, list[dict]] = {}
    for r in queue.sort("priority", "case_id", "system_id", "dimension").iter_rows(named=True):
        data = {k: ("" if r.get(k) is None else r[k] if isinstance(r.get(k), (int, float)) else str(r[k])) for k in TASK_FIELDS if k in r}
        data["scale"] = str(parse_scale(r.get("scale") or "binary"))
        out.setdefault(data["scale"], []).append({"data": data})
    return out


def read_export(path: str | Path) -> list[dict]:
    """A Label Studio JSON export (a list of tasks); ValueError saying why not."""
    try:
        tasks = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a Label Studio JSON export ({e})") from e
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        raise ValueError(f"{path}: a Label Studio JSON export is a list of tasks (export as 'JSON', not 'JSON_MIN' or CSV)")
    return tasks


def _rater(completed_by, users: dict[str, str]) -> str | None:
    if isinstance(completed_by, dict):
        return completed_by.get("email") or users.get(str(completed_by.get("id"))) or (
            f"labelstudio-user-{completed_by['id']}" if completed_by.get("id") is not None else None)
    if completed_by is None:
        return None
    return users.get(str(completed_by), f"labelstudio-user-{completed_by}")


def _annotation_row(task: dict, ann: dict, users: dict[str, str]) -> dict:
    """One annotation → a label-file row; ValueError with the reason."""
    data = task.get("data") or {}
    missing = [k for k in ("case_id", "system_id", "dimension") if not data.get(k)]
    if missing:
        raise ValueError(f"task data has no {', '.join(missing)}: not a task this project exported")
    by_name = {r.get("from_name"): r for r in ann.get("result") or [] if isinstance(r, dict)}
    choice = (by_name.get(CHOICES_NAME) or {}).get("value", {}).get("choices") or []
    if len(choice) != 1:
        raise ValueError(f"annotation {ann.get('id')} has {len(choice)} '{CHOICES_NAME}' choices, needs exactly one")
    rater = _rater(ann.get("completed_by"), users)
    if not rater:
        raise ValueError(f"annotation {ann.get('id')} has no completed_by")
    note = (by_name.get(COMMENT_NAME) or {}).get("value", {}).get("text") or []
    return {"case_id": data["case_id"], "system_id": data["system_id"], "dimension": data["dimension"], "label": choice[0],
            "scale": data.get("scale") or "", "rater": rater, "labelled_at": ann.get("updated_at") or ann.get("created_at"),
            "comment": " ".join(note) or None}  # fmt: skip


def annotations_to_labels(tasks: list[dict], users: dict[str, str] | None = None) -> tuple[list[dict], list[tuple[str, str]], int]:
    """``(label rows, problems [(task id, reason)], cancelled annotations skipped)``."""
    users = {str(k): v for k, v in (users or {}).items()}
    rows, problems, cancelled = [], [], 0
    for task in tasks:
        anns = task.get("annotations") or []
        for ann in anns:
            if ann.get("was_cancelled"):
                cancelled += 1
                continue
            try:
                rows.append(_annotation_row(task, ann, users))
            except ValueError as e:
                problems.append((str(task.get("id")), str(e)))
    return rows, problems, cancelled
