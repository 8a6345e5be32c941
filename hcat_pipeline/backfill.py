"""Backfills over golden-set versions / campaign runs, resumable (``hcat backfill``).

A backfill is a list of partitions of one job, run one after the other as real Dagster runs in the
instance, each tagged ``hcat/backfill=<id>`` (and Dagster's ``dagster/partition``). Its id is derived
from the job and the partitions (or given), so running the same command again *resumes* it: every
partition that already has a successful run of this backfill is skipped, only the missing or failed
ones run. By default the backfill stops at the first failed partition (as an interruption would);
``keep_going`` runs the rest and counts the failures.

The UI path is Dagster's own: in the asset graph or a job's page, *Materialize* → select partitions
(versions, or version × night ranges) → *Launch backfill*; the daemon of ``dagster dev``
(``scripts/ui.sh``) runs it and the *Backfills* page shows and resumes it ("Re-execute failed").
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import dagster as dg

from hcat_pipeline.campaign import release_blocked_only

BACKFILL_TAG = "hcat/backfill"
VERDICT_TAG = "hcat/verdict"  # release_blocked: the run completed, its blocking release gates failed (not a failed run)


def backfill_id(job_name: str, partition_keys: Sequence[str]) -> str:
    """Deterministic id: the same job over the same partitions is the same backfill (so it resumes)."""
    digest = hashlib.sha256("\n".join([job_name, *sorted(map(str, partition_keys))]).encode()).hexdigest()
    return f"{job_name}-{digest[:10]}"


@dataclass
class BackfillResult:
    backfill_id: str
    done: list[str] = field(default_factory=list)  # ran successfully now
    skipped: list[str] = field(default_factory=list)  # finished by an earlier attempt of this backfill
    failed: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)  # left after a stop

    @property
    def success(self) -> bool:
        return not self.failed and not self.not_run


def finished_partitions(instance: dg.DagsterInstance, bid: str) -> set[str]:
    """Partitions with a successful run of backfill ``bid`` (a run whose release gates blocked is one: a verdict)."""
    runs = instance.get_runs(dg.RunsFilter(tags={BACKFILL_TAG: bid}))
    done = [r for r in runs if r.status == dg.DagsterRunStatus.SUCCESS or r.tags.get(VERDICT_TAG) == "release_blocked"]
    return {r.tags.get("dagster/partition", "") for r in done}


def run_backfill(
    job: dg.JobDefinition,
    partition_keys: Sequence[str | dg.MultiPartitionKey],
    instance: dg.DagsterInstance,
    bid: str | None = None,
    run_config: dict | None = None,
    tags: dict[str, str] | None = None,
    keep_going: bool = False,
    say: Callable[[str], None] = print,
) -> BackfillResult:
    """Run ``job`` for every partition not yet finished by backfill ``bid`` (see the module doc)."""
    keys = list(dict.fromkeys(partition_keys))
    bid = bid or backfill_id(job.name, [str(k) for k in keys])
    result = BackfillResult(bid)
    finished = finished_partitions(instance, bid)
    for i, key in enumerate(keys):
        name = str(key)
        if name in finished:
            result.skipped.append(name)
            say(f"[{i + 1}/{len(keys)}] {name}: done by an earlier attempt, skipped")
            continue
        if result.failed and not keep_going:
            result.not_run.append(name)
            continue
        say(f"[{i + 1}/{len(keys)}] {name}: running {job.name} …")
        run = job.execute_in_process(instance=instance, partition_key=key, run_config=run_config or {}, raise_on_error=False,
                                     tags={**(tags or {}), BACKFILL_TAG: bid})  # fmt: skip
        blocked = not run.success and release_blocked_only(run)
        if blocked:
            instance.add_run_tags(run.run_id, {VERDICT_TAG: "release_blocked"})
        (result.done if run.success or blocked else result.failed).append(name)
        status = "succeeded" if run.success else "succeeded, release BLOCKED by its gates" if blocked else "FAILED"
        say(f"[{i + 1}/{len(keys)}] {name}: {status} (run {run.run_id[:8]})")
    if result.not_run:
        say(f"backfill {bid} stopped after a failure; {len(result.not_run)} partition(s) not run — run the same command again to resume")
    return result
