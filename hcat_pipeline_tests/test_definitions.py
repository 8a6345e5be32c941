"""The one Definitions loads; every job, schedule and sensor resolves; a job naming an unknown asset fails."""

import dagster as dg
import pytest

from hcat_pipeline.definitions import defs
from hcat_pipeline.jobs import JOBS
from hcat_pipeline.partitions import campaign_run
from hcat_pipeline.schedules import SCHEDULES
from hcat_pipeline.sensors import SENSORS

PER_RUN = {"rag_responses", "retrieval_metrics", "behaviour_checks", "metric_tables", "bias_report",
           "weakness_report", "weakest_cases", "robustness_deltas", "failure_cases", "paraphrase_variance", "campaign_report",
           "llm_judge_scores",  # enabled=auto: skipped (cheaply, saying why) when the local model would exceed its time budget
           "calibrated_scores", "review_queue", "gate_verdicts", "release_decision", "system_rankings", "pareto_frontier",
           "case_contamination", "grader_gaming", "canary_detection", "verdict_stochasticity",
           "judge_ensemble",  # empty without judge.ensemble; with one, it re-judges only what llm_judge_scores judged
           "harm_judgements"}  # empty unless harm_judge.enabled is on
# unpartitioned, run with the night: the label store and reference scores (so calibrated_scores has calibrators on a
# fresh machine) and the calibration refit downstream of the run's tables
ALSO_IN_RUN = {"human_labels", "reference_label_scores", "calibrators", "metric_validity"}


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
    assert keys == PER_RUN | ALSO_IN_RUN
    graph = defs.resolve_asset_graph()  # every asset partitioned per campaign run is in the nightly job
    assert {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).partitions_def == campaign_run} == PER_RUN
    assert defs.resolve_schedule_def("nightly_campaign_schedule").job_name == "campaign_run_job"
    gen = {k.to_user_string() for k in defs.resolve_job_def("test_generation_job").asset_layer.executable_asset_keys}
    assert "golden_candidates" in gen and not (gen & PER_RUN)


def test_a_job_that_names_an_unknown_asset_fails_to_resolve():
    bad = dg.define_asset_job("bad_job", selection=dg.AssetSelection.assets("no_such_asset").downstream())
    broken = dg.Definitions(assets=list(defs.assets), resources=defs.resources, jobs=[bad])
    with pytest.raises(dg.DagsterInvalidDefinitionError):
        broken.resolve_job_def("bad_job")
