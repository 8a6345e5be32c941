"""`hcat review` (the labelling / curation page on loopback), `hcat labelstudio-export`, `hcat labelstudio-import`."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from urllib.parse import urlparse

from hcat_pipeline.commands import command
from hcat_pipeline.paths import CURATION_DIR, GOLDEN_SETS_DIR, LABELS_DIR, REVIEW_URL, WAREHOUSE_DIR


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--queue", default="", help="a review queue (.parquet stored by the review_queue asset, or its CSV export); "
                   "default: the latest stored run's")  # fmt: skip
    p.add_argument("--labels-dir", default=str(LABELS_DIR), help=f"label files and the store (default {LABELS_DIR})")
    p.add_argument("--warehouse", default=str(WAREHOUSE_DIR), help=f"stored assets (default {WAREHOUSE_DIR})")


def _review_args(p: argparse.ArgumentParser) -> None:
    url = urlparse(REVIEW_URL)
    _common(p)
    p.add_argument("--golden-dir", default=str(GOLDEN_SETS_DIR), help=f"golden-set versions (default {GOLDEN_SETS_DIR})")
    p.add_argument("--curation-dir", default=str(CURATION_DIR), help=f"curation decisions (default {CURATION_DIR})")
    p.add_argument("--chunks", default=str(WAREHOUSE_DIR / "chunks.parquet"), help="chunks table the validity checks resolve sources with")
    p.add_argument("--reports-dir", default="", help="production monitoring's review queues (<dir>/monitoring/<day>/queue.jsonl; "
                   "default HCAT_REPORTS_DIR / data/reports)")
    p.add_argument("--host", default=url.hostname or "127.0.0.1", help="interface (default loopback only)")
    p.add_argument("--port", type=int, default=url.port or 8765, help="port (default from HCAT_REVIEW_URL, 8765)")
    p.add_argument("--rater", default="", help="rater name shown by default (each browser can set its own)")
    p.add_argument("--release-dir", default="", help="the nights' plans and bundles and the sign-off log (/release; default <data>/release)")
    p.add_argument("--roles", nargs="*", default=None, help="the roles whose sign-off a release needs (/release; default: the "
                   "campaign file's signoff_roles)")
    p.add_argument("--dimension", action="append", default=[], metavar="NAME",
                   help="also offer this dimension on every screen (repeatable), e.g. global_coherence: labels of the judge's rubric "
                   "items, which judge_validation reads")  # fmt: skip


def asked_dimensions(names) -> tuple[str, ...]:
    """``--dimension`` names: a label dimension's spelling or SystemExit; a name nothing reads (no metric, no judge
    dimension) is allowed — a user rubric — but said on stderr."""
    import re

    from hcat_pipeline.calibration.campaign import LABEL_MEANINGS
    from hcat_pipeline.judge.scoring import DIMENSIONS

    for n in names:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", n):
            raise SystemExit(f"hcat review: --dimension {n!r} is not a dimension name ([a-z][a-z0-9_]*)")
        if n not in LABEL_MEANINGS and n not in DIMENSIONS:
            print(f"note: no metric or judge dimension reads labels of {n!r} (declare its scale in a label file to use it)", file=sys.stderr)
    return tuple(dict.fromkeys(names))


def settings_from(args: argparse.Namespace):
    from hcat_pipeline.review.views import ReviewSettings

    def check_factory():
        from hcat_pipeline.commands.golden import validity_check

        return validity_check(args.chunks, keep_invalid=False)

    return ReviewSettings(labels_dir=Path(args.labels_dir), warehouse=Path(args.warehouse), golden_dir=Path(args.golden_dir),
                          curation_dir=Path(args.curation_dir), queue=Path(args.queue) if args.queue else None, rater=args.rater,
                          extra_dimensions=asked_dimensions(getattr(args, "dimension", ())), check_factory=check_factory,
                          chunks=Path(args.chunks), reports_dir=Path(args.reports_dir) if getattr(args, "reports_dir", "") else None,
                          needs=signable_needs(), release_dir=Path(args.release_dir) if getattr(args, "release_dir", "") else None,
                          roles=tuple(getattr(args, "roles", None) or signoff_roles()), **sample_review_settings())  # fmt: skip


def sample_review_settings(path: str | None = None) -> dict:
    """The campaign file's review-by-sample tolerance and confidence (the defaults when the file cannot be read)."""
    from hcat_pipeline.campaign_spec import CampaignFileError, load_campaign

    try:
        spec = load_campaign(path)
    except (CampaignFileError, OSError):
        return {}
    return {"review_tolerance": spec.review_tolerance, "review_confidence": spec.review_confidence}


def signoff_roles(path: str | None = None) -> list[str]:
    """The campaign file's ``signoff_roles`` (the default campaign's when the file cannot be read: said on stderr)."""
    from hcat_pipeline.campaign_spec import CampaignFileError, load_campaign

    try:
        return list(load_campaign(path).signoff_roles)
    except (CampaignFileError, OSError) as e:
        print(f"hcat review: the campaign file's signoff_roles could not be read ({e}); the release needs a validator", file=sys.stderr)
        return ["validator"]


def signable_needs(path: str | None = None) -> dict[str, int] | None:
    """What the campaign file's signable set holds (its target size and happy-path share, and the cases each gate needs
    at its certify_below); None without a readable campaign or gates file (said on stderr)."""
    from hcat_pipeline.campaign_spec import CampaignFileError, load_campaign
    from hcat_pipeline.gates.spec import GatesFileError, load_gates, rule_floors
    from hcat_pipeline.golden.review_order import needs_of

    try:
        spec = load_campaign(path) if path else load_campaign()
        return needs_of(spec.generation.target_size, spec.generation.happy_path_share, rule_floors(load_gates(), spec.certify_below))
    except (CampaignFileError, GatesFileError, OSError) as e:
        print(f"note: the curate screen shows no 'still missing' line ({e})", file=sys.stderr)
        return None


@command("review", "serve the review page (label answers, curate cases, see agreement) on loopback", _review_args)
def _review(args: argparse.Namespace) -> int:
    import uvicorn

    from hcat_pipeline.review.app import create_app

    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"note: serving on {args.host}: anyone who can reach it can label under any name", file=sys.stderr)
    print(f"hcat review: http://{args.host}:{args.port}/label  (Ctrl-C stops it)")
    uvicorn.run(create_app(settings_from(args)), host=args.host, port=args.port, log_level="warning")
    return 0


def _ship_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("version", help="the generated golden-set version the decisions are on")
    p.add_argument("--config", default="", help="the campaign file whose shipped_review folder receives them (default: the default campaign)")
    p.add_argument("--curation-dir", default=str(CURATION_DIR), help=f"curation decisions (default {CURATION_DIR})")


@command("ship-review", "ship the curate page's decisions on a generated version with the campaign (its shipped_review folder)", _ship_args)
def _ship(args: argparse.Namespace) -> int:
    from hcat_pipeline.campaign_spec import load_campaign
    from hcat_pipeline.review.shipped import campaign_fingerprint, ship_review

    spec = load_campaign(args.config or None)
    if not spec.shipped_review:
        raise SystemExit(f"hcat ship-review: the campaign file names no shipped_review folder ({args.config or 'default campaign'})")
    try:
        path = ship_review(args.curation_dir, args.version, spec.shipped_review, campaign_fingerprint(spec))
    except FileNotFoundError as e:
        raise SystemExit(f"hcat ship-review: {e}") from e
    print(f"shipped {path} ({sum(1 for _ in path.open(encoding='utf-8'))} decisions) with the generator's fingerprint")
    return 0


def _export_args(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--out", required=True, help="folder for tasks_<scale>.json and config_<scale>.xml (one Label Studio project per scale)")


@command("labelstudio-export", "export the review queue as Label Studio tasks + labeling config", _export_args)
def _ls_export(args: argparse.Namespace) -> int:
    from hcat_pipeline.review.items import QueueError, find_queue, load_queue
    from hcat_pipeline.review.labelstudio import export_tasks, labeling_config

    try:
        path = Path(args.queue) if args.queue else find_queue(args.warehouse)
        if path is None:
            raise QueueError(f"no stored review queue under {args.warehouse}: run a campaign first, or pass --queue FILE")
        groups = export_tasks(load_queue(path))
    except QueueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for scale, tasks in groups.items():
        tag = scale.replace(":", "_")
        (out / f"tasks_{tag}.json").write_text(json.dumps(tasks, ensure_ascii=False, indent=1), encoding="utf-8")
        (out / f"config_{tag}.xml").write_text(labeling_config(scale), encoding="utf-8")
        print(f"{len(tasks)} task(s) on the {scale} scale -> {out / f'tasks_{tag}.json'} (labeling config {out / f'config_{tag}.xml'})")
    return 0


def _import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("export", help="a Label Studio project's JSON export (Export → JSON)")
    p.add_argument("--users", default="", help="optional JSON {user id: rater name} for exports that give completed_by as an id")
    p.add_argument("--labels-dir", default=str(LABELS_DIR), help=f"where the label file is written and imported (default {LABELS_DIR})")


@command("labelstudio-import", "import a Label Studio JSON export as a label file into the label store", _import_args)
def _ls_import(args: argparse.Namespace) -> int:
    from hcat_pipeline.calibration.store import LabelStore
    from hcat_pipeline.review.labelstudio import annotations_to_labels, read_export

    try:
        tasks = read_export(args.export)
        users = json.loads(Path(args.users).read_text(encoding="utf-8")) if args.users else {}
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows, problems, cancelled = annotations_to_labels(tasks, users)
    for task_id, reason in problems:
        print(f"  task {task_id}: {reason}", file=sys.stderr)
    if problems:
        print(f"error: {len(problems)} annotation(s) cannot become labels: nothing imported", file=sys.stderr)
        return 1
    labels_dir = Path(args.labels_dir)
    labels_dir.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path = labels_dir / f"labelstudio_{hashlib.sha256(text.encode()).hexdigest()[:12]}.jsonl"
    path.write_text(text, encoding="utf-8")
    res = LabelStore(labels_dir / "_store").import_file(path)
    if res.status == "rejected":
        path.unlink()  # a file the store refuses would be retried (and refused) by every labels_job run
    print(f"{len(rows)} label(s) from {len(tasks)} task(s) ({cancelled} skipped annotation(s) left out) -> {path.name}: {res.message}")
    for e in res.errors.head(20).iter_rows(named=True):
        print(f"  line {e['line']}: {e['reason']}", file=sys.stderr)
    return 0 if res.status in ("imported", "unchanged") else 1
