"""Schedules: the nightly campaign."""

import dagster as dg

from hcat_pipeline.jobs import nightly_campaign

nightly_schedule = dg.ScheduleDefinition(
    name="nightly_campaign_schedule",
    job=nightly_campaign,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
