"""Declarative automation: which assets re-materialize when what changes (one place for the policy).

``apply_automation`` maps the specs of the collected assets (definitions.py), so asset modules stay
as their owners wrote them:

* **eager** (``AutomationCondition.eager()``: when a dependency updates — or a partition of it is newly
  added — and none is missing or in progress): the generation chain ``corpus`` → … →
  ``golden_candidates`` (a changed corpus regenerates the golden set; ``golden_candidates_sensor``
  then freezes the new version), the calibration refit (``calibrators``, ``metric_validity``; without
  eager's "no missing dependency" clause, since they read every run's tables and most nights of most
  versions never ran) and every per-run asset downstream of ``rag_responses`` (latest night only, as eager does for time
  partitions).
* **not automated** (on demand, or started by a schedule / sensor that passes the campaign config):
  ``rag_responses`` (nightly schedule, ``new_version_campaign_sensor``), ``golden_set`` (golden-set
  sensors), ``human_labels`` (``label_file_sensor``), the exam group, ``nli_head``, the violation
  assets, ``judge_validation``, ``reference_label_scores``.
* **watched sources** (``assets/sources.py``, observed on ``HCAT_SOURCE_OBSERVE_CRON``, default every
  5 minutes): ``corpus_files`` → ``corpus``; ``gates_file`` → ``gate_verdicts``; ``nli_head_file`` →
  ``metric_tables`` and ``behaviour_checks`` (``deps=`` on those assets' decorators: Dagster 1.13's
  ``map_asset_specs`` turns argument inputs into Nothing inputs when deps are added). Their data versions
  are content hashes: an unchanged file is no update.
* **code versions**: each asset's ``code_version`` is a hash of its module's source and of the
  project modules it imports names from (one level), so the UI marks an asset stale ("code version
  changed") when its logic changes; data versions then follow from code + input versions.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
from collections.abc import Iterable
from pathlib import Path

import dagster as dg

SOURCE_OBSERVE_CRON = os.environ.get("HCAT_SOURCE_OBSERVE_CRON", "*/5 * * * *")

GENERATION = frozenset({"corpus", "ingest_errors", "chunks", "chunk_embeddings", "topic_strata", "sampled_chunks",
                        "generated_queries", "selected_queries", "query_rejections", "robustness_cases", "golden_candidates"})  # fmt: skip
RECALIBRATION = frozenset({"calibrators", "metric_validity"})
NOT_AUTOMATED = frozenset({"rag_responses", "golden_set", "human_labels"})


def condition_for(key: str, per_run: bool) -> dg.AutomationCondition | None:
    """The automation condition of an asset (None: on demand / started by a schedule or sensor)."""
    if key in NOT_AUTOMATED:
        return None
    if key in RECALIBRATION:
        # unpartitioned, over every run's tables: a night never run is not "missing" input for a refit
        return dg.AutomationCondition.eager().without(~dg.AutomationCondition.any_deps_missing()).with_label("eager_over_runs")
    if key in GENERATION or per_run:
        return dg.AutomationCondition.eager()
    return None


def _project_modules(module) -> list:
    """``module`` and the project modules it takes names from (one level), in a stable order."""
    found = {module.__name__: module}
    for value in vars(module).values():
        name = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
        if isinstance(name, str) and name.startswith("hcat_pipeline.") and name in sys.modules:
            found.setdefault(name, sys.modules[name])
    return [found[n] for n in sorted(found)]


def module_code_version(module) -> str:
    """Hash of the source files of ``module`` and the project modules it imports from."""
    h = hashlib.sha256()
    for mod in _project_modules(module):
        path = getattr(mod, "__file__", None)
        if path and Path(path).is_file():
            h.update(mod.__name__.encode() + b"\0" + Path(path).read_bytes())
    return h.hexdigest()[:12]


def _defining_module(assets_def: dg.AssetsDefinition):
    fn = getattr(getattr(assets_def.op, "compute_fn", None), "decorated_fn", None)
    return inspect.getmodule(fn) if fn is not None else None


def apply_automation(assets: Iterable) -> list:
    """The assets with the policy above applied (automation conditions, code versions)."""
    from hcat_pipeline.partitions import campaign_run

    out = []
    for a in assets:
        if not isinstance(a, dg.AssetsDefinition) or not a.is_executable or a.is_observable:
            out.append(a)
            continue
        module = _defining_module(a)
        version = module_code_version(module) if module is not None else None

        def fn(spec: dg.AssetSpec, version=version) -> dg.AssetSpec:
            key = spec.key.to_user_string()
            cond = condition_for(key, spec.partitions_def == campaign_run)
            return spec.replace_attributes(automation_condition=spec.automation_condition or cond,
                                           code_version=spec.code_version or version)  # fmt: skip

        out.append(a.map_asset_specs(fn))
    return out


def automation_sensor(name: str = "automation_sensor") -> dg.AutomationConditionSensorDefinition:
    """The sensor that evaluates the conditions above, running by default (30 s between ticks)."""
    return dg.AutomationConditionSensorDefinition(
        name, target=dg.AssetSelection.all(), default_status=dg.DefaultSensorStatus.RUNNING, minimum_interval_seconds=30,
        description="Declarative automation (hcat_pipeline.automation): re-materializes what is downstream of a change.",
    )
