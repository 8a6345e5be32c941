"""The sign-off block of a night's report and dossier (issue 67 item 4): each required role's signature — who, when, the
decision, the note and the bundle it was made on, fresh or **stale** — and who has yet to sign. The report is written
during the night, before its bundle is sealed and before anyone signs: ``refresh_report`` rewrites its block (between
two markers) when the night is sealed and after each signature."""

from __future__ import annotations

import json
from pathlib import Path

from hcat_pipeline.release.night import evidence_root_now, release_dir, signoff_log
from hcat_pipeline.release.plan import plan_history
from hcat_pipeline.release.signoff import read_log, signoff_status
from hcat_pipeline.reports.campaign_report import environment

START, END = "<!--signoffs-->", "<!--/signoffs-->"


def night_signoffs(data_dir: Path, version: str, night: str, roles: list[str] | None = None) -> dict:
    """The block's content: the roles (the plan's, unless given), the sealed root, the root the files hash to now, the status."""
    directory = release_dir(data_dir, version, night)
    history = plan_history(directory)
    roles = list(roles or (history[-1]["plan"].get("signoff_roles") if history else None) or ["validator"])
    bundle_path = directory / "bundle.json"
    if not bundle_path.is_file():
        return {"night": night, "roles": roles, "root": None, "status": None, "changed": False, "current": None}
    bundle = json.loads(bundle_path.read_text())
    current = evidence_root_now(bundle, data_dir, directory)
    status = signoff_status(read_log(signoff_log(data_dir)), night, current, roles)
    return {"night": night, "roles": roles, "root": bundle["root"], "current": current, "changed": current != bundle["root"], "status": status}


def signoff_block(s: dict) -> str:
    for r in (s["status"] or {}).get("roles", {}).values():  # a role not signed yet has no who / decision / note
        for k in ("who", "decision", "note", "at", "bundle_root"):
            r.setdefault(k, None)
    return f"{START}{environment().get_template('signoffs.html.j2').render(s=s)}{END}"


def refresh_report(report: Path, s: dict) -> bool:
    """Rewrite the report's sign-off block; False when the report or its markers are missing (a report of an older hcat)."""
    if not report.is_file():
        return False
    html = report.read_text(encoding="utf-8")
    a, b = html.find(START), html.find(END)
    if a < 0 or b < a:
        return False
    tmp = report.with_suffix(".html.tmp")
    tmp.write_text(html[:a] + signoff_block(s) + html[b + len(END) :], encoding="utf-8")
    tmp.replace(report)
    return True


def refresh_night_report(data_dir: Path, reports_dir: Path, version: str, night: str) -> bool:
    """The night's report (``<reports_dir>/<version>/<night>/report.html``) shows the sign-offs as they stand now."""
    return refresh_report(Path(reports_dir) / version / night / "report.html", night_signoffs(Path(data_dir), version, night))
