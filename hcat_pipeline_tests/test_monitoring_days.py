"""Issue 60 item 1: logs whose file names carry no date are read by their rows' timestamps; no day at all is an error
that says why (hcat monitor exits 2)."""

import json

from hcat_pipeline.monitoring.logs import LogFields, days_in, read_day

FIELDS = LogFields()


def _rows(day: str, n: int, hour: int = 12) -> list[dict]:
    return [{"question": f"q{i} on {day}", "answer": "an answer", "timestamp": f"{day}T{hour:02d}:{i % 60:02d}:00Z"} for i in range(n)]


def test_one_export_holding_ten_days_is_read_as_ten_days(tmp_path):
    days = [f"2026-11-{d:02d}" for d in range(1, 11)]
    (tmp_path / "export.jsonl").write_text("".join(json.dumps(r) + "\n" for d in days for r in _rows(d, 3)))
    found = days_in([str(tmp_path)], FIELDS.day_pattern, FIELDS)
    assert sorted(found) == days and all(p.name == "export.jsonl" for ps in found.values() for p in ps)
    assert days_in([str(tmp_path)], FIELDS.day_pattern) == {}  # without the fields: the old behaviour, nothing
    read = read_day([str(tmp_path)], "2026-11-04", FIELDS)
    assert read.rows.height == 3 and set(read.rows["day"]) == {"2026-11-04"} and sum(read.other_days.values()) == 27


def test_hourly_and_arbitrarily_named_files_give_the_days_of_their_rows(tmp_path):
    for h in range(3):
        (tmp_path / f"traces-hour-{h:02d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows("2026-11-20", 2, h)))
    (tmp_path / "day-01.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows("2026-11-21", 2)))
    found = days_in([str(tmp_path)], FIELDS.day_pattern, FIELDS)
    assert sorted(found) == ["2026-11-20", "2026-11-21"] and len(found["2026-11-20"]) == 3
    assert read_day([str(tmp_path)], "2026-11-21", FIELDS).rows.height == 2


def test_no_day_found_exits_2_with_the_reason(tmp_path, capsys):
    from hcat_pipeline.cli import main

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "day-01.jsonl").write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")  # no date anywhere
    (tmp_path / "c.yaml").write_text(f"name: t\nsystems:\n  - system_id: s\n    retriever: bm25\nmonitoring:\n  paths: [{str(logs)!r}]\n")
    assert main(["monitor", "--config", str(tmp_path / "c.yaml")]) == 2
    err = capsys.readouterr().err
    assert "no day found in 1 log file(s) (day-01.jsonl)" in err and "no row with a timestamp at 'timestamp'" in err
