"""Run campaign jobs as real Dagster runs in the project's instance (DAGSTER_HOME)."""

from __future__ import annotations

import dagster as dg


def run_campaign(job_name: str = "nightly_campaign", partition: str | None = None, instance: dg.DagsterInstance | None = None) -> bool:
    from hcat_pipeline.definitions import defs

    instance = instance or dg.DagsterInstance.get()
    job = defs.resolve_job_def(job_name)
    result = job.execute_in_process(instance=instance, partition_key=partition, raise_on_error=False)
    for event in result.all_events:
        if event.is_step_failure:
            print(f"step failed: {event.step_key}: {event.event_specific_data.error.message.strip()}")
    return result.success
