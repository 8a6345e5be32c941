"""What the Dagster daemon does for the project's sensors, one tick at a time, on the instance of ``DAGSTER_HOME``.

``python -m hcat_pipeline_tests.night_chain tick`` observes ``corpus_files`` (the source observation automation runs
on its cron), then evaluates the project's sensors (``definitions.defs``) in turn, applies their dynamic-partition
requests and executes every run they request (job, partition, run config and tags as requested) until a whole pass
requests nothing. Sensor cursors are kept in ``$DAGSTER_HOME/sensor_cursors.json`` as the daemon keeps them in its
storage. It prints one JSON object per requested run, then ``{"done": true}``. A separate process because the
project's paths (``HCAT_DATA_DIR`` …) are read at import.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

SENSORS = ("corpus_change_sensor", "golden_candidates_sensor", "golden_set_version_sensor", "new_version_campaign_sensor")


def _say(**fields) -> None:
    print(json.dumps(fields, sort_keys=True), flush=True)


def tick(max_passes: int = 6) -> None:
    import dagster as dg
    from dagster._core.definitions.observe import observe  # not re-exported by dagster 1.13

    from hcat_pipeline.campaign import release_blocked_only
    from hcat_pipeline.definitions import defs

    instance = dg.DagsterInstance.get()
    cursors_file = Path(os.environ["DAGSTER_HOME"]) / "sensor_cursors.json"
    cursors = json.loads(cursors_file.read_text()) if cursors_file.exists() else {}
    seen_keys = set(cursors.pop("__run_keys__", []))  # the daemon drops a run key it already launched for a sensor
    observed = observe([defs.get_assets_def("corpus_files")], instance=instance)
    _say(observed="corpus_files", success=observed.success)
    for _ in range(max_passes):
        launched = 0
        for name in SENSORS:
            sensor = defs.resolve_sensor_def(name)
            with dg.build_sensor_context(instance=instance, instance_ref=instance.get_ref(), cursor=cursors.get(name),
                                         definitions=defs, sensor_name=name) as ctx:  # fmt: skip
                data = sensor.evaluate_tick(ctx)  # as the daemon's tick (resolves the requests' partitions)
            cursors[name] = data.cursor
            for req in data.dynamic_partitions_requests or []:
                instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
            for req in data.run_requests or []:
                if req.run_key and f"{name}:{req.run_key}" in seen_keys:
                    continue
                seen_keys.add(f"{name}:{req.run_key}")
                job_name = req.job_name or sensor.job_name
                run = defs.resolve_job_def(job_name).execute_in_process(
                    instance=instance, run_config=req.run_config or {}, partition_key=req.partition_key, tags=dict(req.tags),
                    raise_on_error=False,
                )  # fmt: skip
                failures = [f"{e.step_key}: {e.event_specific_data.error.message.strip()}" for e in run.all_events
                            if e.event_type_value == "STEP_FAILURE"]  # fmt: skip
                blocked = not run.success and release_blocked_only(run)  # a release verdict, as hcat campaign reads it
                _say(sensor=name, job=job_name, partition=req.partition_key, run_key=req.run_key, success=run.success or blocked,
                     release_blocked=blocked, failures=failures)  # fmt: skip
                launched += 1
        cursors_file.write_text(json.dumps({**cursors, "__run_keys__": sorted(seen_keys)}))
        if not launched:
            break
    _say(done=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["tick"]:
        sys.exit("usage: python -m hcat_pipeline_tests.night_chain tick")
    tick()
