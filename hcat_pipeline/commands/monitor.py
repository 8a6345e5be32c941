"""``hcat monitor``: production monitoring from the command line (golden-eval §7).

Examples::

    hcat monitor --demo-logs data/demo_logs          # ten days of a synthetic service over your corpus, faults planted
    hcat monitor                                     # every day of the campaign file's monitoring: paths, oldest first
    hcat monitor --days 2026-11-01..2026-11-10       # those days only

Each day runs ``monitoring_job`` (what ``production_log_sensor`` does in ``dagster dev`` as the files appear); the day's
report is data/reports/monitoring/<day>/report.html, the history page data/reports/history.html.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from hcat_pipeline.commands import command


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, help="campaign file with a monitoring: section (default: campaign.yaml / HCAT_CAMPAIGN_FILE)")
    p.add_argument("--days", default="", help="YYYY-MM-DD, a comma list, or FROM..TO (default: every day the logs hold)")
    p.add_argument("--demo-logs", default="", metavar="DIR", help="write ten days of synthetic traffic of a service over the stored "
                   "corpus (chunks + topic_strata of the warehouse; faults planted: an acute groundedness drop on day 7, a refusal "
                   "drift from day 3, one stratum's answers off-topic from day 5) ending yesterday, and print the monitoring: section")


def demo_logs(folder: Path, warehouse: Path) -> tuple[list[Path], str]:
    import polars as pl

    from hcat_pipeline.monitoring.synthetic import FIELDS, TrafficPlan, sentence_pools, write_traffic

    strata = pl.read_parquet(warehouse / "topic_strata.parquet").join(pl.read_parquet(warehouse / "chunks.parquet").select("chunk_id", "text"), on="chunk_id")
    pools = sentence_pools(strata["text"].to_list(), strata["stratum"].to_list())
    if len(pools) < 2:
        raise ValueError(f"the stored corpus has {len(pools)} stratum with usable sentences: the demo needs two (run the campaign first)")
    first = (dt.datetime.now(dt.UTC).date() - dt.timedelta(days=10)).isoformat()
    plan = TrafficPlan(first_day=first, acute_day=7, drift_from=3, drift_step=0.04, category_stratum=sorted(pools)[len(pools) // 2], category_from=5)
    files = write_traffic(folder, plan, pools)
    fields = "\n".join(f"    {k}: {v}" for k, v in vars(FIELDS).items() if v and k != "day_pattern")
    section = (f"monitoring:\n  service: demo-service\n  paths: [{folder.resolve()}/traffic-*.jsonl]\n  fields:\n{fields}\n"
               "  judge: {enabled: off}  # auto: the LLM judge on the rows the metrics flag, within time_budget_s a day\n")
    return files, section


def days_to_run(spec, wanted: str) -> list[str]:
    from hcat_pipeline.commands.backfill import parse_nights
    from hcat_pipeline.monitoring.logs import days_in, no_day_reason

    present = sorted(set(days_in(spec.paths, spec.fields.day_pattern, spec.fields)) | set(spec.sql_source().days() if spec.sql else []))
    if not present:
        raise ValueError(no_day_reason(spec.paths, spec.fields))
    if not wanted:
        return present
    asked = parse_nights(wanted)
    missing = [d for d in asked if d not in present]
    if missing:
        raise ValueError(f"no log file for {missing} in {spec.paths}")
    return asked


@command("monitor", "production monitoring: run monitoring_job for the days of the service's logs (or write demo logs)", _args)
def monitor(args: argparse.Namespace) -> int:
    from hcat_pipeline.campaign_spec import CampaignFileError, load_campaign
    from hcat_pipeline.paths import REPORTS_DIR, WAREHOUSE_DIR

    if args.demo_logs:
        try:
            files, section = demo_logs(Path(args.demo_logs), WAREHOUSE_DIR)
        except (FileNotFoundError, ValueError) as e:
            print(f"hcat monitor: {e}", file=sys.stderr)
            return 2
        print(f"wrote {len(files)} days of demo traffic to {args.demo_logs}; add this to the campaign file:\n\n{section}")
        return 0
    try:
        spec = load_campaign(args.config).monitoring
        if spec is None:
            raise CampaignFileError("the campaign file has no monitoring: section (hcat monitor --demo-logs DIR prints one)")
        days = days_to_run(spec, args.days)
    except (CampaignFileError, ValueError) as e:
        print(f"hcat monitor: {e}", file=sys.stderr)
        return 2
    import dagster as dg

    from hcat_pipeline.campaign import claim_instance
    from hcat_pipeline.campaign_monitoring import monitoring_run_config
    from hcat_pipeline.definitions import defs

    instance = dg.DagsterInstance.get()
    tags = claim_instance(instance)
    job = defs.resolve_job_def("monitoring_job")
    for day in days:
        result = job.execute_in_process(run_config=monitoring_run_config(spec), partition_key=day, instance=instance,
                                        tags={**tags, "service": spec.service}, raise_on_error=False)  # fmt: skip
        raised = [f"{e.check_name} ({e.severity.value})" for e in result.get_asset_check_evaluations() if not e.passed]
        print(f"{day}: {'ok' if result.success else 'FAILED'}; checks raised: {', '.join(raised) or 'none'}", flush=True)
        if not result.success:
            return 1
    print(f"reports: {REPORTS_DIR / 'monitoring'}/<day>/report.html · history: {REPORTS_DIR / 'history.html'}")
    return 0
