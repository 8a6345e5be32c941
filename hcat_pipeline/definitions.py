"""The one Definitions of the project: assets, checks, resources, jobs, schedules, sensors.

Assets and asset checks are collected from every module of ``hcat_pipeline.assets`` (one module
per lineage stage); jobs, schedules and sensors are listed by their modules.
"""

import dagster as dg

import hcat_pipeline  # noqa: F401  (pins the model stack offline)
from hcat_pipeline import assets as asset_package
from hcat_pipeline.assets.contracts import contract_checks
from hcat_pipeline.automation import apply_automation, automation_sensor
from hcat_pipeline.jobs import JOBS
from hcat_pipeline.resources.sets import executor_for, resources_for
from hcat_pipeline.schedules import SCHEDULES
from hcat_pipeline.sensors import SENSORS

ASSETS = apply_automation(dg.load_assets_from_package_module(asset_package))  # automation conditions + code versions

defs = dg.Definitions(
    assets=ASSETS,
    # the checks the asset modules declare + a blocking contract check per stored table (hcat_pipeline.contracts)
    asset_checks=[*dg.load_asset_checks_from_package_module(asset_package), *contract_checks(ASSETS)],
    resources=resources_for(),
    executor=executor_for(),  # HCAT_DEPLOYMENT=distributed: dagster-celery; else Dagster's default
    jobs=JOBS,
    schedules=SCHEDULES,
    sensors=[*SENSORS, automation_sensor()],  # + the declarative-automation sensor (hcat_pipeline.automation), running
)
