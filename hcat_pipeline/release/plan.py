"""The night's plan, locked before any system answers (issue 67 item 2): the bar (gates file, level, judge, metric code)
and what it is applied to (golden-set version, systems), hashed. ``bar_moved`` names what changed between two plans."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hcat_pipeline.common.ids import canonical_json, sha256_hex

PLAN_FILE = "plan.json"
# the fields that are the bar: a change to one after a night is a new plan, and the report says the bar moved
BAR_FIELDS = ("gates_sha256", "gates", "certify_below", "gates_read", "judge", "metric_code")


@dataclass(frozen=True)
class NightPlan:
    campaign: str
    night: str
    golden_set_version: str
    golden_set_sha256: str  # the frozen version's manifest content hash
    shipped_review: str  # the shipped review's decisions file SHA-256 (empty: none)
    systems: dict[str, str]  # system_id → configuration hash
    gates_sha256: str  # the gates file's bytes
    gates: dict  # gate name → its thresholds as the file sets them
    certify_below: float
    gates_read: str
    judge: dict  # {"config_hash", "model", "validated"} or {} when off
    metric_code: str  # score_cache.code_fingerprint(): the scoring code and libraries
    seed: int
    intended_use: dict = field(default_factory=dict)  # the campaign file's purpose, users, scope, the decision supported
    signoff_roles: list[str] = field(default_factory=list)  # the roles whose sign-off releases the night (campaign file)
    gate_settings_sha256: str = ""  # gate_settings.json as written before the plan (hcat verify re-derives with it)

    def as_dict(self) -> dict:
        return asdict(self)


def plan_hash(plan: NightPlan | dict) -> str:
    """SHA-256 of the plan's canonical JSON."""
    return sha256_hex(canonical_json(plan.as_dict() if isinstance(plan, NightPlan) else plan, compact=True))


def write_plan(plan: NightPlan, directory: str | Path, written_at: str) -> tuple[Path, str]:
    """``<directory>/plan.json`` (the plan, its hash and when it was written); refuses to replace a plan of the same night
    whose bar differs — a changed bar is a new plan, recorded beside the old one as ``plan.<n>.json``."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    digest = plan_hash(plan)
    path = d / PLAN_FILE
    if path.exists():
        earlier = json.loads(path.read_text())
        if earlier["sha256"] == digest:
            return path, digest
        n = len(list(d.glob("plan.*.json"))) + 1
        path.rename(d / f"plan.{n}.json")  # the earlier plan stays, numbered in the order they were replaced
    path.write_text(json.dumps({"sha256": digest, "written_at": written_at, "plan": plan.as_dict()}, indent=1, sort_keys=True))
    return path, digest


def plan_history(directory: str | Path) -> list[dict]:
    """Every plan written for the night, oldest first (the numbered ones, then the current)."""
    d = Path(directory)
    numbered = sorted(d.glob("plan.*.json"), key=lambda p: int(p.name.split(".")[1]))
    return [json.loads(p.read_text()) for p in [*numbered, d / PLAN_FILE] if p.exists()]


def bar_moved(earlier: dict, later: dict) -> list[dict]:
    """The bar's fields that differ between two plans (as stored: {"plan": …, "written_at": …}): field, from, to, when."""
    a, b = earlier["plan"], later["plan"]
    return [{"field": f, "from": a.get(f), "to": b.get(f), "when": later.get("written_at")} for f in BAR_FIELDS if a.get(f) != b.get(f)]
