"""``hcat backfill``: re-run golden-set versions or campaign runs (version × night), resumable.

Examples::

    hcat backfill --job golden_set_job --versions all
    hcat backfill --job campaign_run_job --versions gs-aaa,gs-bbb --nights 2026-03-01..2026-03-03

Running the same command again resumes: finished partitions are skipped (``hcat_pipeline.backfill``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from hcat_pipeline.commands import command

JOBS = ("campaign_run_job", "golden_set_job")


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--job", choices=JOBS, default="campaign_run_job")
    p.add_argument("--versions", required=True, help="comma-separated golden-set versions, or 'all' (every known version)")
    p.add_argument("--nights", default="", help="campaign_run_job: YYYY-MM-DD, a comma list, or FROM..TO (default: today, UTC)")
    p.add_argument("--config", default=None, help="campaign file for campaign_run_job (default: campaign.yaml / HCAT_CAMPAIGN_FILE)")
    p.add_argument("--id", default=None, help="backfill id (default: derived from the job and partitions, so a re-run resumes)")
    p.add_argument("--keep-going", action="store_true", help="run the remaining partitions after a failure")


def parse_nights(spec: str) -> list[str]:
    """``''`` → [today]; ``a,b`` → [a, b]; ``FROM..TO`` → every night in between (inclusive)."""
    from hcat_pipeline.campaign import check_night
    from hcat_pipeline.partitions import tonight

    if not spec:
        return [tonight()]
    if ".." in spec:
        lo, hi = (dt.date.fromisoformat(check_night(x.strip())) for x in spec.split("..", 1))
        if hi < lo:
            raise ValueError(f"--nights {spec}: the end is before the start")
        return [(lo + dt.timedelta(days=i)).isoformat() for i in range((hi - lo).days + 1)]
    return [check_night(x.strip()) for x in spec.split(",") if x.strip()]


def partitions_for(job: str, versions: list[str], nights: list[str]) -> list:
    from hcat_pipeline.partitions import campaign_run_key

    return list(versions) if job == "golden_set_job" else [campaign_run_key(v, n) for v in versions for n in nights]


@command("backfill", "re-run golden-set versions or campaign runs over selected versions / nights (resumable)", _args)
def backfill(args: argparse.Namespace) -> int:
    import dagster as dg

    from hcat_pipeline.backfill import run_backfill
    from hcat_pipeline.campaign import claim_instance
    from hcat_pipeline.campaign_spec import CampaignFileError, campaign_run_config, load_campaign
    from hcat_pipeline.definitions import defs
    from hcat_pipeline.partitions import golden_set_version

    instance = dg.DagsterInstance.get()
    known = instance.get_dynamic_partitions(golden_set_version.name)
    versions = list(known) if args.versions == "all" else [v.strip() for v in args.versions.split(",") if v.strip()]
    unknown = sorted(set(versions) - set(known))
    if unknown or not versions:
        print(f"hcat backfill: unknown golden-set version(s) {unknown or '(none given)'}; known: {sorted(known)}", file=sys.stderr)
        return 2
    try:
        keys = partitions_for(args.job, versions, parse_nights(args.nights))
        run_config = campaign_run_config(load_campaign(args.config)) if args.job == "campaign_run_job" else None
    except (ValueError, CampaignFileError) as e:
        print(f"hcat backfill: {e}", file=sys.stderr)
        return 2
    tags = claim_instance(instance)  # recovers an attempt killed mid-run, applies the LLM pool, tags this one
    result = run_backfill(defs.resolve_job_def(args.job), keys, instance, bid=args.id, run_config=run_config, tags=tags,
                          keep_going=args.keep_going, say=lambda line: print(line, flush=True))  # fmt: skip
    print(f"backfill {result.backfill_id}: {len(result.done)} ran, {len(result.skipped)} already done, "
          f"{len(result.failed)} failed, {len(result.not_run)} not run")  # fmt: skip
    return 0 if result.success else 1
