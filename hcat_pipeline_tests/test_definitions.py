"""The one Definitions loads; every job, schedule and sensor resolves; a job naming an unknown asset fails."""

import dagster as dg
import pytest

from hcat_pipeline.definitions import defs
from hcat_pipeline.jobs import JOBS
from hcat_pipeline.schedules import SCHEDULES
from hcat_pipeline.sensors import SENSORS

PER_RUN = {"rag_responses", "retrieval_metrics", "behaviour_checks", "metric_tables", "bias_report",
           "weakness_report", "weakest_cases", "robustness_deltas", "failure_cases", "campaign_report",
           "llm_judge_scores"}  # enabled=auto: skipped (cheaply, saying why) when the local model would exceed its time budget


def test_every_job_schedule_and_sensor_resolves():
    defs.validate_loadable(defs)
    for job in JOBS:
        resolved = defs.resolve_job_def(job.name)
        assert resolved.name == job.name
    for sched in SCHEDULES:
        assert defs.resolve_schedule_def(sched.name).job_name in {j.name for j in JOBS}
    for sensor in SENSORS:
        s = defs.resolve_sensor_def(sensor.name)
        assert all(t.job_name in {j.name for j in JOBS} for t in s.targets)


def test_campaign_run_job_covers_the_per_run_assets_only():
    keys = {k.to_user_string() for k in defs.resolve_job_def("campaign_run_job").asset_layer.executable_asset_keys}
    assert keys == PER_RUN
    gen = {k.to_user_string() for k in defs.resolve_job_def("test_generation_job").asset_layer.executable_asset_keys}
    assert "golden_candidates" in gen and not (gen & PER_RUN)


def test_a_job_that_names_an_unknown_asset_fails_to_resolve():
    bad = dg.define_asset_job("bad_job", selection=dg.AssetSelection.assets("no_such_asset").downstream())
    broken = dg.Definitions(assets=list(defs.assets), resources=defs.resources, jobs=[bad])
    with pytest.raises(dg.DagsterInvalidDefinitionError):
        broken.resolve_job_def("bad_job")
