"""Sharded stages: a campaign run's expensive per-run asset as a graph of steps — plan → one step per shard
(dynamic outputs, ``hcat_pipeline.common.shards``) → merge — so Celery / Kubernetes workers share one night.

Why a graph with dynamic outputs and not a third partition dimension: Dagster's multi-partitions have at most two
dimensions, and the version × night grid is what the UI, backfills and the sensors address; shards are an execution
detail of one run (the shard count may change between nights without changing any partition), each shard step is
retried and re-executed from failure on its own, and the merged asset is one materialization per campaign run, as
before. The asset's run config stays where it was (``ops: {<asset>: {config: …}}``): a config mapping hands the one
config to every step.
"""

from collections.abc import Sequence

import dagster as dg

from hcat_pipeline.common.shards import Shard


def shard_config_mapping(config_cls: type[dg.Config], op_names: Sequence[str]) -> dg.ConfigMapping:
    """The asset's one config (``config_cls``, defaults and all) given to each of ``op_names``."""

    def to_ops(config):
        values = config.model_dump(mode="json", exclude_none=True)
        return {name: {"config": values} for name in op_names}

    to_ops.__annotations__ = {"config": config_cls, "return": dict}
    return dg.config_mapping(to_ops)


def emit_shards(plan: Sequence[Shard]):
    """The plan as dynamic outputs (one step each)."""
    for shard in plan:
        yield dg.DynamicOutput(shard, mapping_key=shard.key)


def emit_work(work, **extra):
    """A stored table's shards (``split_frame``'s (shard, rows) pairs) as dynamic outputs: ``{"shard", "rows", **extra}``."""
    for shard, rows in work:
        yield dg.DynamicOutput({"shard": shard, "rows": rows, **extra}, mapping_key=shard.key)


def shard_log(context, shard: Shard, what: str) -> None:
    context.log.info(f"shard {shard.index + 1}/{shard.count} of {shard.system_id or 'every system'}: "
                     f"{len(shard.case_ids)} case(s) — {what}")
