"""``hcat verify NIGHT`` and ``hcat sign NIGHT``: a night's release decision checked offline and signed (issue 67,
``hcat_pipeline.release``). Both read ``data/release/<version>/<night>/`` (the plan and the evidence bundle the night
wrote) and the sign-off log ``data/release/signoffs.jsonl``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hcat_pipeline.commands import command

ROLES_HELP = "roles whose sign-off the release needs (default: the campaign file's signoff_roles)"


def campaign_roles(config: str | None) -> list[str]:
    from hcat_pipeline.campaign_spec import load_campaign

    return list(load_campaign(config).signoff_roles)


def _night_dir(night: str, version: str | None) -> Path:
    from hcat_pipeline.paths import DATA_DIR

    found = [d for d in sorted((DATA_DIR / "release").glob(f"*/{night}")) if not version or d.parent.name == version]
    if len(found) != 1:
        names = ", ".join(d.parent.name for d in found) or "none"
        raise SystemExit(f"night {night}: {len(found)} golden-set versions have a plan ({names}); name one with --version")
    return found[0]


def _verify_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("night", help="night key YYYY-MM-DD, or a folder written by hcat dossier")
    p.add_argument("--version", default=None, help="golden-set version (needed when several have a plan for the night)")
    p.add_argument("--roles", nargs="*", default=None, help=ROLES_HELP)
    p.add_argument("--config", default=None, help="campaign file (default: campaign.yaml, or HCAT_CAMPAIGN_FILE)")


def _target(night: str, version: str | None) -> tuple[Path, Path, Path]:
    """(the night's release dir, the data dir it lives in, the gates file to hold it to): the project's data, or a dossier
    folder's own evidence (its copy of the gates file)."""
    from hcat_pipeline.gates.spec import DEFAULT_GATES_FILE
    from hcat_pipeline.paths import DATA_DIR
    from hcat_pipeline.release.export import folder_night

    if Path(night).is_dir():
        found = folder_night(Path(night))
        if found is None:
            raise SystemExit(f"{night}: not a folder written by hcat dossier (no evidence/release/<version>/<night>/plan.json)")
        return found
    return _night_dir(night, version), DATA_DIR, Path(DEFAULT_GATES_FILE)


@command("verify", "check a night's plan, evidence bundle, gate verdicts and sign-off log offline (a night key or a dossier folder); "
         "exit 1 naming each broken link", _verify_args)  # fmt: skip
def _verify(args: argparse.Namespace) -> int:
    from hcat_pipeline.release.night import evidence_root_now, signoff_log, verify_night
    from hcat_pipeline.release.plan import plan_history
    from hcat_pipeline.release.signoff import read_log, signoff_status

    directory, data_dir, gates = _target(args.night, args.version)
    night = directory.name
    notes: list[str] = []
    problems = verify_night(directory, data_dir, gates, notes)
    for p in problems:
        print(f"BROKEN: {p}")
    for n in notes:
        print(n)
    bundle_path = directory / "bundle.json"
    if bundle_path.is_file():
        bundle = json.loads(bundle_path.read_text())
        history = plan_history(directory)
        planned = history[-1]["plan"].get("signoff_roles") if history else None
        roles = args.roles or planned or campaign_roles(args.config)  # the roles the plan locked, unless named
        # a signature is fresh only while the files still hash to what was signed
        status = signoff_status(read_log(signoff_log(data_dir)), night, evidence_root_now(bundle, data_dir, directory), roles)
        for role, r in status["roles"].items():
            who = f"{r['who']}: {r['decision']} at {r['at']}" if r["state"] != "missing" else "not signed"
            print(f"{role}: {r['state'].upper() if r['state'] == 'stale' else r['state']} — {who}"
                  + (" (signed on evidence that has changed since)" if r["state"] == "stale" else ""))  # fmt: skip
        print(f"bundle root {bundle['root']}; signed off: {'yes' if status['released'] else 'no'} "
              f"(yet to sign: {', '.join(status['yet_to_sign']) or 'nobody'})")  # fmt: skip
    print("verified" if not problems else f"{len(problems)} broken link(s)")
    return 1 if problems else 0


def _sign_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("night", help="night key YYYY-MM-DD")
    p.add_argument("--version", default=None, help="golden-set version (needed when several have a plan for the night)")
    p.add_argument("--who", required=True, help="the person signing")
    p.add_argument("--role", required=True, help="e.g. validator, model owner, risk officer")
    p.add_argument("--decision", required=True, choices=["approve", "approve_with_conditions", "reject"])
    p.add_argument("--note", default="", help="the conditions or the reasons (required unless approve)")
    p.add_argument("--campaign", default="", help="the campaign's name (default: the plan's)")


@command("sign", "sign a night's release decision, bound to its evidence bundle's hash (refused when it does not verify)", _sign_args)
def _sign(args: argparse.Namespace) -> int:
    from hcat_pipeline.gates.spec import DEFAULT_GATES_FILE
    from hcat_pipeline.paths import DATA_DIR, REPORTS_DIR
    from hcat_pipeline.release.night import now, signoff_log, verify_night
    from hcat_pipeline.release.plan import plan_history
    from hcat_pipeline.release.signoff import append_signoff
    from hcat_pipeline.reports.signoffs import refresh_night_report

    directory = _night_dir(args.night, args.version)
    if problems := verify_night(directory, DATA_DIR, Path(DEFAULT_GATES_FILE)):
        print("hcat sign: the night does not verify, nothing signed:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    plan = plan_history(directory)[-1]
    root = json.loads((directory / "bundle.json").read_text())["root"]
    try:
        entry = append_signoff(signoff_log(DATA_DIR), night=args.night, campaign=args.campaign or plan["plan"]["campaign"],
                               who=args.who, role=args.role, decision=args.decision, note=args.note, bundle_root=root,
                               plan_sha256=plan["sha256"], at=now())  # fmt: skip
    except ValueError as e:
        print(f"hcat sign: {e}", file=sys.stderr)
        return 2
    print(f"signed: {entry['who']} ({entry['role']}) {entry['decision']} on bundle {root[:16]}; log entry {entry['seq']} {entry['hash'][:16]}")
    if refresh_night_report(DATA_DIR, REPORTS_DIR, directory.parent.name, args.night):
        print(f"the night's report shows it: {REPORTS_DIR / directory.parent.name / args.night / 'report.html'}")
    return 0


def _dossier_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("night", help="night key YYYY-MM-DD")
    p.add_argument("--version", default=None, help="golden-set version (needed when several have a plan for the night)")
    p.add_argument("--out", default=None, help="the folder to write (default: data/dossiers/<version>/<night>)")
    p.add_argument("--no-pdf", action="store_true", help="write the HTML and the evidence only (no Chromium)")


@command("dossier", "export a night's release dossier: HTML, a PDF printed by Chromium, the evidence bundle (verify it with "
         "hcat verify FOLDER)", _dossier_args)  # fmt: skip
def _dossier(args: argparse.Namespace) -> int:
    from hcat_pipeline.gates.spec import DEFAULT_GATES_FILE
    from hcat_pipeline.paths import DATA_DIR, LABELS_DIR, REPORTS_DIR, WAREHOUSE_DIR
    from hcat_pipeline.reports.dossier import export_dossier

    directory = _night_dir(args.night, args.version)
    version = directory.parent.name
    out = Path(args.out) if args.out else DATA_DIR / "dossiers" / version / args.night
    try:
        done = export_dossier(DATA_DIR, REPORTS_DIR, LABELS_DIR, WAREHOUSE_DIR, version, args.night, Path(DEFAULT_GATES_FILE), out,
                              pdf=not args.no_pdf)  # fmt: skip
    except (FileNotFoundError, RuntimeError) as e:
        print(f"hcat dossier: {e}", file=sys.stderr)
        return 1
    print(f"dossier: {done['html']}" + (f", {done['pdf']}" if done["pdf"] else "") + f"; evidence bundle {done['root'][:16]} in {done['evidence']}")
    for p in done["problems"]:
        print(f"BROKEN when exported: {p}")
    return 1 if done["problems"] else 0
