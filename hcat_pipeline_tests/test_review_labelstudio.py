"""Label Studio interchange: the queue as tasks + labeling config, and a project's JSON export back as labels.

``fixtures/labelstudio_export.json`` is a Label Studio "JSON" export (the field set of label-studio's
``data_export`` serializer: tasks with ``annotations`` [{id, completed_by, result [{value, id, from_name, to_name,
type, origin}], was_cancelled, ground_truth, created_at, updated_at, lead_time, …}], drafts, predictions, data, meta,
inner_id, total_annotations, cancelled_annotations, …) of the first four tasks ``export_tasks`` makes from
``review_data``'s queue: ``completed_by`` as an expanded user (email) and as a bare id, a text-area note, a skipped
(cancelled) annotation and a task nobody labelled."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import polars as pl
import pytest

from hcat_pipeline.calibration.labels import read_label_file
from hcat_pipeline.review.items import load_queue
from hcat_pipeline.review.labelstudio import annotations_to_labels, export_tasks, labeling_config, read_export
from hcat_pipeline_tests.review_data import make_project

FIXTURE = Path(__file__).parent / "fixtures" / "labelstudio_export.json"


def test_the_queue_exports_as_tasks_with_a_labeling_config_per_scale(tmp_path):
    project = make_project(tmp_path)
    groups = export_tasks(load_queue(project.queue_path))
    assert list(groups) == ["binary"] and len(groups["binary"]) == 10
    data = groups["binary"][0]["data"]
    assert {"case_id", "system_id", "dimension", "scale", "query", "answer", "contexts", "label_meaning"} <= set(data)
    assert "id" not in groups["binary"][0]  # Label Studio assigns its own ids: ours travel in data
    root = ET.fromstring(labeling_config("binary"))
    choices = root.find("Choices")
    assert choices.get("name") == "label" and choices.get("toName") == "answer" and choices.get("choice") == "single"
    assert [(c.get("value"), c.get("hotkey")) for c in choices.findall("Choice")] == [("0", "0"), ("1", "1")]
    assert root.find("TextArea").get("name") == "comment"
    assert {t.get("value") for t in root.findall("Text")} == {"$query", "$answer", "$contexts"}
    ordinal = ET.fromstring(labeling_config("ordinal:1-3"))
    assert [c.get("value") for c in ordinal.find("Choices").findall("Choice")] == ["1", "2", "3"]


def test_a_label_studio_export_round_trips_into_the_label_format(tmp_path):
    project = make_project(tmp_path)
    exported = export_tasks(load_queue(project.queue_path))["binary"]
    tasks = read_export(FIXTURE)
    assert [t["data"] for t in tasks] == [t["data"] for t in exported[:4]]  # the fixture is an export of our own tasks
    rows, problems, cancelled = annotations_to_labels(tasks, users={"2": "bob"})
    assert problems == [] and cancelled == 1 and len(rows) == 4
    by = {(r["case_id"], r["system_id"], r["rater"]): r for r in rows}
    first = tasks[0]["data"]
    alice = by[(first["case_id"], first["system_id"], "alice@bank.example")]
    assert alice["label"] == "0" and alice["comment"] == "adds a claim the passage lacks" and alice["labelled_at"].startswith("2026-11-27T10:11")
    assert by[(first["case_id"], first["system_id"], "bob")]["label"] == "0"
    # without a users map a bare id stays recognisable
    anonymous, _, _ = annotations_to_labels(tasks)
    assert {r["rater"] for r in anonymous} == {"alice@bank.example", "labelstudio-user-2"}
    # the rows are a label file the store takes as it is
    path = tmp_path / "ls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    good, errors = read_label_file(path)
    assert errors.height == 0 and good.height == 4 and set(good["dimension"]) == {"groundedness"}
    assert good.filter(pl.col("rater") == "alice@bank.example").sort("system_id")["label"].to_list() == [0, 1]


def test_what_cannot_become_a_label_is_named_and_the_cli_imports_nothing(tmp_path, capsys):
    from hcat_pipeline.cli import main

    tasks = json.loads(FIXTURE.read_text())
    tasks[2]["annotations"][0]["result"] = []  # submitted without a choice
    tasks[3]["annotations"] = [{**tasks[0]["annotations"][1], "id": 9}]
    tasks[3]["data"] = {"text": "a task of another project"}
    rows, problems, _ = annotations_to_labels(tasks)
    assert problems == [("3", "annotation 5 has 0 'label' choices, needs exactly one"),
                        ("4", "task data has no case_id, system_id, dimension: not a task this project exported")]  # fmt: skip
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(tasks))
    labels = tmp_path / "labels"
    assert main(["labelstudio-import", str(bad), "--labels-dir", str(labels)]) == 1
    assert "nothing imported" in capsys.readouterr().err and not labels.exists()
    (tmp_path / "min.json").write_text(json.dumps({"label": "0"}))
    with pytest.raises(ValueError, match="list of tasks"):
        read_export(tmp_path / "min.json")


def test_cli_export_then_import(tmp_path, capsys):
    from hcat_pipeline.calibration.store import LabelStore
    from hcat_pipeline.cli import main

    project = make_project(tmp_path)
    out = tmp_path / "ls"
    assert main(["labelstudio-export", "--queue", str(project.queue_path), "--out", str(out)]) == 0
    assert len(json.loads((out / "tasks_binary.json").read_text())) == 10 and (out / "config_binary.xml").is_file()
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"2": "bob"}))
    args = ["labelstudio-import", str(FIXTURE), "--users", str(users), "--labels-dir", str(project.labels_dir)]
    assert main(args) == 0
    assert "4 label(s) from 4 task(s) (1 skipped annotation(s) left out)" in capsys.readouterr().out
    store = LabelStore(project.labels_dir / "_store").labels()
    assert store.height == 4 and set(store["rater"]) == {"alice@bank.example", "bob"}
    assert main(args) == 0 and LabelStore(project.labels_dir / "_store").labels().height == 4  # the same export twice: nothing new
