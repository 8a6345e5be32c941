"""Partition definitions, defined once.

* ``golden_set_version`` (dynamic): one partition per frozen golden-set version. ``golden_set``
  is partitioned by it.
* ``night`` (daily, UTC): the night a campaign ran. ``end_offset=1`` makes today's night exist.
* ``production_day`` (daily, UTC): a day of the monitored service's traffic logs (``production_*`` assets).
* ``campaign_run`` = golden_set_version × night (``MultiPartitionsDefinition``): a campaign run is
  the systems of a campaign evaluated on one frozen version on one night. Every per-run asset
  (rag_responses, behaviour_checks, metric_tables …) is partitioned by it; Dagster maps each run to
  its version's ``golden_set`` partition (the version dimension). Why two dimensions instead of one
  dynamic run key: the UI shows the version × night grid (which nights ran on which version, what
  failed), trends over nights of one version are a dimension slice, a backfill over versions or
  nights is a range selection, and a re-run of the same night is the same partition (it resumes).
"""

from __future__ import annotations

import datetime as dt

import dagster as dg

golden_set_version = dg.DynamicPartitionsDefinition(name="golden_set_version")
FIRST_NIGHT = "2025-01-01"
night = dg.DailyPartitionsDefinition(start_date=FIRST_NIGHT, end_offset=1, timezone="UTC")
# production monitoring: one partition per day of the service's traffic logs (UTC)
production_day = dg.DailyPartitionsDefinition(start_date=FIRST_NIGHT, end_offset=1, timezone="UTC")
campaign_run = dg.MultiPartitionsDefinition({"golden_set_version": golden_set_version, "night": night})

NIGHT_FORMAT = "%Y-%m-%d"


def tonight(now: dt.datetime | None = None) -> str:
    """The night key of ``now`` (UTC date)."""
    now = now or dt.datetime.now(dt.UTC)
    return now.astimezone(dt.UTC).strftime(NIGHT_FORMAT)


def campaign_run_key(version: str, night_key: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"golden_set_version": version, "night": night_key})


def split_run_key(context) -> tuple[str, str]:
    """(golden-set version, night) of a campaign-run asset's partition."""
    keys = context.partition_key.keys_by_dimension
    return keys["golden_set_version"], keys["night"]
