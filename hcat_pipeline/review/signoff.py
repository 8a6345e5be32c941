"""The sign-off screen (``/release``, issue 67 item 4): a night's decision per system with its blocking gates, the plan and
the evidence bundle it rests on, whatever no longer verifies, who signed in which role (fresh / stale) and who has yet
to; a named person signs it (``release.signoff``), refused when the night does not verify."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from hcat_pipeline.release.night import evidence_root_now, signoff_log, verify_night
from hcat_pipeline.release.plan import plan_history
from hcat_pipeline.release.signoff import append_signoff, read_log, signoff_status

DEFAULT_ROLES = ("validator",)


def nights(release_root: Path) -> list[tuple[str, str]]:
    """(version, night) of every night that locked a plan, the most recent plan first."""
    plans = [p for p in release_root.glob("*/*/plan.json")] if release_root.is_dir() else []
    plans.sort(key=lambda p: json.loads(p.read_text()).get("written_at", ""), reverse=True)
    return [(p.parent.parent.name, p.parent.name) for p in plans]


def _decisions(warehouse: Path, version: str, night: str) -> list[dict]:
    path = warehouse / "release_decision" / version / f"{night}.parquet"
    gates = warehouse / "gate_verdicts" / version / f"{night}.parquet"
    rows = pl.read_parquet(path).to_dicts() if path.exists() else []
    blocking = pl.read_parquet(gates).filter(pl.col("blocking")) if gates.exists() else None
    for r in rows:
        mine = blocking.filter(pl.col("system_id") == r["system_id"]) if blocking is not None else None
        r["blocking_rows"] = mine.select("gate", "verdict", "estimate", "ci_low", "ci_high", "n", "reason").to_dicts() if mine is not None else []
    return rows


def signoff_view(release_root: Path, warehouse: Path, gates_file: Path, version: str | None = None, night: str | None = None,
                 roles: tuple[str, ...] = DEFAULT_ROLES) -> dict:  # fmt: skip
    """What the screen shows for one night (the most recent, unless named)."""
    known = nights(release_root)
    if version is None or night is None:
        if not known:
            return {"known": [], "night": None}
        version, night = known[0]
    directory = release_root / version / night
    history = plan_history(directory)
    bundle_path = directory / "bundle.json"
    bundle = json.loads(bundle_path.read_text()) if bundle_path.exists() else None
    entries = read_log(signoff_log(release_root.parent))
    # fresh only while the files still hash to the sealed root: a label or flag review changed since makes a signature stale
    status = signoff_status(entries, night, evidence_root_now(bundle, release_root.parent, directory), list(roles)) if bundle else None
    notes: list[str] = []  # what was checked beside the broken links (the gate verdicts re-derived, or why not)
    problems = verify_night(directory, release_root.parent, gates_file, notes)
    return {"known": known, "version": version, "night": night, "plan": history[-1] if history else None, "bundle": bundle,
            "problems": problems, "notes": notes, "status": status, "roles": list(roles),
            "decisions": _decisions(warehouse, version, night), "entries": [e for e in entries if e["night"] == night]}  # fmt: skip


def sign(release_root: Path, gates_file: Path, version: str, night: str, who: str, role: str, decision: str, note: str, at: str) -> dict:
    """Append the sign-off (``ValueError`` with the reason when the night does not verify or the entry is incomplete)."""
    directory = release_root / version / night
    if problems := verify_night(directory, release_root.parent, gates_file):
        raise ValueError("the night does not verify, nothing signed: " + "; ".join(problems))
    history = plan_history(directory)
    root = json.loads((directory / "bundle.json").read_text())["root"]
    return append_signoff(signoff_log(release_root.parent), night=night, campaign=history[-1]["plan"]["campaign"], who=who, role=role,
                          decision=decision, note=note, bundle_root=root, plan_sha256=history[-1]["sha256"], at=at)  # fmt: skip
