"""Declarative automation over the real asset graph: a change re-requests exactly what is downstream of it.

Materializations and source observations are reported to an ephemeral instance (no asset runs), then
``dg.evaluate_automation_conditions`` ticks; what it requests is compared with the graph.
"""

import datetime as dt

import dagster as dg
import pytest

from hcat_pipeline.automation import module_code_version
from hcat_pipeline.definitions import defs
from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version

NOW = dt.datetime(2026, 3, 10, 12, 0, 30, tzinfo=dt.UTC)  # between two source-observation cron ticks
NIGHT = "2026-03-10"
VERSION = "gs-test"


@pytest.fixture(scope="module")
def graph():
    return defs.resolve_asset_graph()


def _job_assets(name: str) -> set[str]:
    job = defs.resolve_job_def(name)
    return {k.to_user_string() for k in job.asset_layer.executable_asset_keys}


GENERATION = _job_assets("test_generation_job")  # corpus → … → golden_candidates
RECALIBRATION = _job_assets("labels_job") - {"human_labels"}  # the refit a label import asks for


def _observe(instance, key: str, version: str) -> None:
    instance.report_runless_asset_event(dg.AssetObservation(asset_key=key, tags={"dagster/data_version": version}))


def _materialize_everything(instance, graph) -> None:
    """Every asset materialized once (per-run assets for one run partition, golden_set for its version)."""
    instance.add_dynamic_partitions(golden_set_version.name, [VERSION])
    run_partition = campaign_run_key(VERSION, NIGHT)
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        if node.is_observable:
            _observe(instance, key.to_user_string(), "v1")
        elif node.is_materializable:
            part = run_partition if node.partitions_def == campaign_run else VERSION if node.partitions_def else None
            instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=part))


def _requested(result) -> dict[str, set]:
    out = {}
    for r in result.results:
        if r.true_subset.size:
            out[r.key.to_user_string()] = set(r.true_subset.expensively_compute_partition_keys()) if r.true_subset.is_partitioned else {None}
    return out


def _tick(instance, cursor, seconds: int = 0):
    return dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor, evaluation_time=NOW + dt.timedelta(seconds=seconds))


def _downstream(graph, source: str) -> set[str]:
    sel = dg.AssetSelection.assets(source).downstream() - dg.AssetSelection.assets(source)
    return {k.to_user_string() for k in sel.resolve(graph)}


@pytest.fixture()
def settled(graph):
    """An instance where everything is materialized and the automation has settled (nothing requested)."""
    with dg.instance_for_test() as instance:
        _materialize_everything(instance, graph)
        result = _tick(instance, None)
        result = _tick(instance, result.cursor, 1)
        assert result.total_requested == 0, _requested(result)
        yield instance, result.cursor


def test_a_changed_corpus_requests_nothing_of_the_automation_generation_is_sensor_driven(settled, graph):
    # corpus_change_sensor regenerates with the campaign file's settings (test_ops_night_chain); an eager chain would not
    instance, cursor = settled
    _observe(instance, "corpus_files", "v2")  # a new corpus file: another content hash
    result = _tick(instance, cursor, 2)
    assert result.total_requested == 0, _requested(result)
    assert all(graph.get(dg.AssetKey(k)).automation_condition is None for k in GENERATION)


def test_new_label_import_requests_recalibration_and_the_runs_calibrated_scores(settled, graph):
    instance, cursor = settled
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key="human_labels"))  # what label_file_sensor's job does
    result = _tick(instance, cursor, 2)
    requested = _requested(result)
    assert RECALIBRATION <= set(requested)
    assert "calibrated_scores" in requested and requested["calibrated_scores"] == {campaign_run_key(VERSION, NIGHT)}
    assert set(requested) <= _downstream(graph, "human_labels")
    assert not {"rag_responses", "metric_tables", "behaviour_checks", "corpus", "golden_candidates"} & set(requested)


def test_changed_gates_file_requests_exactly_the_gates_downstream_of_the_run(settled, graph):
    instance, cursor = settled
    _observe(instance, "gates_file", "v2")
    result = _tick(instance, cursor, 2)
    requested = _requested(result)
    assert set(requested) == _downstream(graph, "gates_file")
    assert {"gate_verdicts", "release_decision"} <= set(requested)
    assert all(parts == {campaign_run_key(VERSION, NIGHT)} for parts in requested.values())


def test_retrained_nli_head_requests_the_metrics_downstream_only(settled, graph):
    instance, cursor = settled
    _observe(instance, "nli_head_file", "v2")
    result = _tick(instance, cursor, 2)
    requested = _requested(result)
    assert {"metric_tables", "behaviour_checks"} <= set(requested)
    # the per-run part in one run; the unpartitioned refit cannot share a run with it: it follows once the tables land
    assert set(requested) == _downstream(graph, "nli_head_file") - RECALIBRATION
    assert not {"rag_responses", "retrieval_metrics", "golden_candidates"} & set(requested)
    for key in requested:
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=key, partition=campaign_run_key(VERSION, NIGHT)))
    assert set(_requested(_tick(instance, result.cursor, 3))) == set(RECALIBRATION)


def test_code_versions_follow_the_source_and_sources_are_observable(graph):
    import hcat_pipeline.assets.corpus as corpus_module

    assert graph.get(dg.AssetKey("chunks")).code_version == module_code_version(corpus_module)
    assert all(graph.get(dg.AssetKey(k)).is_observable for k in ("corpus_files", "gates_file", "nli_head_file"))
    sensor = defs.resolve_sensor_def("automation_sensor")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
