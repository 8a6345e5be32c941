"""A campaign end to end, as real Dagster runs in the project's instance (DAGSTER_HOME).

1. ``nightly_campaign`` — every unpartitioned stage: corpus → chunks → embeddings → strata →
   sampled chunks → generated / selected queries → robustness cases → golden_candidates.
2. The golden-set version is named after the candidates' content (``gs-<sha256[:12]>``), so the
   same inputs + seed give the same version and a re-run reuses (and verifies) it; a new partition
   is added for a new version.
3. ``golden_set_job`` for that partition — golden_set (frozen on first use) → rag_responses →
   retrieval_metrics → metric_tables → bias_report.

The scheduled path does the same inside Dagster: the nightly schedule runs step 1 and
``golden_candidates_sensor`` (sensors.py) performs steps 2-3.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import dagster as dg
import polars as pl

from hcat_pipeline.partitions import golden_set_version


def version_for_candidates(candidates: pl.DataFrame) -> str:
    from hcat_pipeline.core.golden import table_sha256

    return f"gs-{table_sha256(candidates)[:12]}"  # the same hash golden_candidates records (candidates_sha256)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_stale_runs(instance: dg.DagsterInstance) -> list[str]:
    """Runs a killed campaign process left STARTED still hold their pool slots (pool "llm"), which
    would block every later campaign forever. Mark such runs failed and free their slots. Only runs
    this runner launched (tag hcat/pid on this host) whose process is gone are touched."""
    from dagster._core.storage.dagster_run import DagsterRunStatus, RunsFilter

    host = socket.gethostname()
    stale = []
    for run in instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING])):
        pid, run_host = run.tags.get("hcat/pid"), run.tags.get("hcat/host")
        if pid is None or run_host != host or _pid_alive(int(pid)):
            continue
        instance.report_run_failed(run, "campaign process ended without finishing the run (killed?)")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        stale.append(run.run_id)
    return stale


def _report(result) -> bool:
    for event in result.all_events:
        if event.is_step_failure:
            print(f"step failed: {event.step_key}: {event.event_specific_data.error.message.strip()}")
    return result.success


def run_campaign(
    instance: dg.DagsterInstance | None = None,
    version: str | None = None,
    candidates_path: Path | None = None,
    run_config: dict | None = None,
) -> tuple[bool, str | None]:
    """Run the whole campaign; returns (success, golden-set version)."""
    from hcat_pipeline.definitions import defs
    from hcat_pipeline.paths import WAREHOUSE_DIR

    instance = instance or dg.DagsterInstance.get()
    for run_id in recover_stale_runs(instance):
        print(f"recovered stale run {run_id} (its process is gone): marked failed, pool slots freed")
    tags = {"hcat/pid": str(os.getpid()), "hcat/host": socket.gethostname()}
    prepare = defs.resolve_job_def("nightly_campaign").execute_in_process(
        instance=instance, raise_on_error=False, run_config=(run_config or {}).get("nightly_campaign"), tags=tags
    )
    if not _report(prepare):
        return False, None
    candidates_path = Path(candidates_path or WAREHOUSE_DIR / "golden_candidates.parquet")
    version = version or version_for_candidates(pl.read_parquet(candidates_path))
    if not instance.has_dynamic_partition(golden_set_version.name, version):
        instance.add_dynamic_partitions(golden_set_version.name, [version])
    print(f"golden-set version: {version}")
    per_version = defs.resolve_job_def("golden_set_job").execute_in_process(
        instance=instance, partition_key=version, raise_on_error=False, run_config=(run_config or {}).get("golden_set_job"), tags=tags
    )
    return _report(per_version), version
