"""``hcat campaign``: tonight's campaign run as real Dagster runs (``hcat_pipeline.campaign``)."""

from __future__ import annotations

import argparse
import sys
import time

from hcat_pipeline.commands import command


def _campaign_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, help="campaign file (default: campaign.yaml, or HCAT_CAMPAIGN_FILE)")
    p.add_argument("--version", default=None, help="golden-set version (default: the file's, else the latest frozen one)")
    p.add_argument("--max-cases", type=int, default=None, help="cases per system (overrides the file; 0 = all)")
    p.add_argument("--night", default=None, help="night key YYYY-MM-DD (default: today, UTC); re-running a night resumes it")
    p.add_argument("--regenerate", action="store_true", help="generate and freeze a new golden set first")
    p.add_argument("--generate-only", action="store_true", help="generate (with --regenerate or when none is frozen) and freeze "
                   "the golden set, apply the campaign's shipped review, and stop before the night: review it, then run the night")
    p.add_argument("--verbose", action="store_true", help="print Dagster's full DEBUG log instead of one line per stage")
    p.add_argument("--strict-gates", action="store_true", help="exit 3 when a blocking release gate fails (for CI pipelines)")


@command("campaign", "run tonight's campaign run (generating a golden set first when none is frozen) as real Dagster runs", _campaign_args)
def _campaign(args: argparse.Namespace) -> int:
    from hcat_pipeline.campaign import run_campaign
    from hcat_pipeline.campaign_spec import CampaignFileError
    from hcat_pipeline.console import CampaignConsole

    t0 = time.perf_counter()
    console = None if args.verbose else CampaignConsole()
    stop = console.start_heartbeat() if console is not None else None  # a line at least every 30 s inside every step
    try:
        ok, version, blocked = run_campaign(version=args.version, campaign_file=args.config, max_cases=args.max_cases,
                                   night=args.night, regenerate=args.regenerate, console=console,
                                            generate_only=args.generate_only)  # fmt: skip
    except (CampaignFileError, ValueError) as e:
        print(f"hcat campaign: {e}", file=sys.stderr)
        return 2
    finally:
        if stop is not None:
            stop.set()
    print(f"campaign {'completed' if ok else 'FAILED'} (golden-set version {version}) in {time.perf_counter() - t0:.1f}s"
          + ("; release BLOCKED by its gates" if blocked else ""))
    return 1 if not ok else 3 if blocked and args.strict_gates else 0
