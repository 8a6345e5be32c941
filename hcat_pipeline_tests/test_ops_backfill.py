"""Backfills over golden-set versions: complete; interrupted midway, the same backfill resumes without
redoing finished partitions (tiny assets partitioned like the project's, real Dagster runs)."""

import json

import dagster as dg
import pytest

from hcat_pipeline.backfill import backfill_id, run_backfill
from hcat_pipeline.commands.backfill import parse_nights, partitions_for
from hcat_pipeline.partitions import campaign_run_key, golden_set_version

VERSIONS = ["gs-a", "gs-b", "gs-c", "gs-d"]


def _job(tmp_path, crash_on: str | None):
    calls = tmp_path / "calls.jsonl"

    @dg.asset(partitions_def=golden_set_version)
    def per_version(context) -> None:
        if context.partition_key == crash_on and (tmp_path / "crash").exists():
            raise RuntimeError(f"simulated crash on {crash_on}")
        with open(calls, "a") as f:
            f.write(json.dumps(context.partition_key) + "\n")

    defs = dg.Definitions(assets=[per_version], jobs=[dg.define_asset_job("per_version_job", selection=[per_version])])
    return defs.resolve_job_def("per_version_job"), calls


def _calls(path) -> list[str]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture()
def instance():
    with dg.instance_for_test() as inst:
        inst.add_dynamic_partitions(golden_set_version.name, VERSIONS)
        yield inst


def test_backfill_over_several_versions_completes_and_a_rerun_redoes_nothing(tmp_path, instance):
    job, calls = _job(tmp_path, None)
    result = run_backfill(job, VERSIONS, instance, say=lambda s: None)
    assert result.success and result.done == VERSIONS and _calls(calls) == VERSIONS
    again = run_backfill(job, VERSIONS, instance, say=lambda s: None)
    assert again.backfill_id == result.backfill_id and again.skipped == VERSIONS and not again.done
    assert _calls(calls) == VERSIONS  # nothing executed twice


def test_interrupted_backfill_resumes_without_redoing_finished_partitions(tmp_path, instance):
    job, calls = _job(tmp_path, "gs-c")
    (tmp_path / "crash").touch()
    first = run_backfill(job, VERSIONS, instance, say=lambda s: None)
    assert first.done == ["gs-a", "gs-b"] and first.failed == ["gs-c"] and first.not_run == ["gs-d"] and not first.success
    (tmp_path / "crash").unlink()  # the cause is fixed; the same command again
    lines = []
    second = run_backfill(job, VERSIONS, instance, say=lines.append)
    assert second.success and second.skipped == ["gs-a", "gs-b"] and second.done == ["gs-c", "gs-d"]
    assert sorted(_calls(calls)) == sorted(VERSIONS)  # each version's work done exactly once
    assert any("gs-a: done by an earlier attempt" in line for line in lines)
    # the runs are real Dagster runs of the instance, tagged with the backfill
    runs = instance.get_runs(dg.RunsFilter(tags={"hcat/backfill": first.backfill_id}))
    assert len(runs) == 5 and sum(r.status == dg.DagsterRunStatus.FAILURE for r in runs) == 1


def test_campaign_run_partitions_and_night_ranges():
    assert parse_nights("2026-01-30..2026-02-02") == ["2026-01-30", "2026-01-31", "2026-02-01", "2026-02-02"]
    with pytest.raises(ValueError, match="before the start"):
        parse_nights("2026-02-02..2026-01-30")
    with pytest.raises(ValueError, match="not a date"):
        parse_nights("yesterday")
    keys = partitions_for("campaign_run_job", ["gs-a", "gs-b"], ["2026-01-30", "2026-01-31"])
    assert keys[1] == campaign_run_key("gs-a", "2026-01-31") and len(keys) == 4
    assert str(keys[2]) == "gs-b|2026-01-30"  # the dagster/partition tag a resumed backfill compares
    assert partitions_for("golden_set_job", ["gs-a"], ["2026-01-30"]) == ["gs-a"]
    assert backfill_id("j", ["b", "a"]) == backfill_id("j", ["a", "b"]) != backfill_id("j", ["a"])
