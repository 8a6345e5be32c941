"""The nightly schedule: every night a new campaign run of the latest frozen golden-set version.

The golden set is not regenerated here (only on demand: ``test_generation_job`` / ``hcat campaign
--regenerate``); the night re-asks every system of the campaign file. Cron and timezone come from
``HCAT_NIGHTLY_CRON`` / ``HCAT_NIGHTLY_TZ`` (default 02:00 UTC).
"""

import os

import dagster as dg

from hcat_pipeline.jobs import campaign_run_job
from hcat_pipeline.partitions import campaign_run_key, golden_set_version, tonight


def nightly_request(instance: dg.DagsterInstance, campaign_file: str | None = None, night: str | None = None):
    """The RunRequest of tonight's campaign run, or a SkipReason. A bad campaign file raises (the tick
    shows the file, line and reason)."""
    from hcat_pipeline.campaign_spec import campaign_run_config, load_campaign
    from hcat_pipeline.golden.cases import latest_version
    from hcat_pipeline.paths import GOLDEN_SETS_DIR

    spec = load_campaign(campaign_file)
    known = set(instance.get_dynamic_partitions(golden_set_version.name))
    if spec.golden_set_version == "latest":
        version = latest_version(os.environ.get("HCAT_GOLDEN_SETS_DIR") or GOLDEN_SETS_DIR)
    else:
        version = spec.golden_set_version
    if version is None or version not in known:
        return dg.SkipReason(f"no frozen golden-set version to evaluate ({version or 'none frozen yet'}; known: "
                             f"{sorted(known)}): run `hcat campaign` or test_generation_job first")  # fmt: skip
    night = night or tonight()
    return dg.RunRequest(run_key=f"campaign:{version}|{night}", partition_key=campaign_run_key(version, night),
                         run_config=campaign_run_config(spec),
                         tags={"golden_set_version": version, "night": night, "campaign": spec.name})  # fmt: skip


@dg.schedule(
    name="nightly_campaign_schedule",
    job=campaign_run_job,
    cron_schedule=os.environ.get("HCAT_NIGHTLY_CRON", "0 2 * * *"),
    execution_timezone=os.environ.get("HCAT_NIGHTLY_TZ", "UTC"),
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Tonight's campaign run of the latest frozen golden-set version (systems from campaign.yaml).",
)
def nightly_campaign_schedule(context: dg.ScheduleEvaluationContext):
    when = context.scheduled_execution_time
    return nightly_request(context.instance, night=tonight(when) if when else None)


SCHEDULES = [nightly_campaign_schedule]
