"""The one Definitions of the project: assets, checks, resources, jobs, schedules, sensors.

Assets and asset checks are collected from every module of ``hcat_pipeline.assets`` (one module
per lineage stage); jobs, schedules and sensors from their modules.
"""

import dagster as dg
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

import hcat_pipeline  # noqa: F401  (pins the model stack offline)
from hcat_pipeline import assets as asset_package
from hcat_pipeline import jobs, schedules, sensors
from hcat_pipeline.resources.sets import resources_for


def _collect(module, kind):
    return [v for v in vars(module).values() if isinstance(v, kind)]


defs = dg.Definitions(
    assets=dg.load_assets_from_package_module(asset_package),
    asset_checks=dg.load_asset_checks_from_package_module(asset_package),
    resources=resources_for(),
    jobs=_collect(jobs, (UnresolvedAssetJobDefinition, dg.JobDefinition)),
    schedules=_collect(schedules, dg.ScheduleDefinition),
    sensors=_collect(sensors, dg.SensorDefinition),
)
