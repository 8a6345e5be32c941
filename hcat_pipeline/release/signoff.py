"""The sign-off log (issue 67 items 4-5): a named person's decision on a night's release, bound to its evidence bundle.

JSON lines, appended only. An entry: ``seq``, the night and campaign, ``who``, ``role``, ``decision`` (``Decision``),
``note``, ``bundle_root`` (the evidence it was made on), ``plan_sha256``, ``at``, ``prev`` (the entry before's ``hash``;
the first: empty) and ``hash`` (SHA-256 of the entry without it). ``verify_log`` finds an edited, removed, inserted or
reordered entry by its line; ``signoff_status`` tells per required role whether it signed, on this evidence (fresh) or
on evidence that has changed since (**stale**: never carried over), or has yet to sign."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, get_args

from hcat_pipeline.common.ids import canonical_json, sha256_hex

Decision = Literal["approve", "approve_with_conditions", "reject"]
LOG_FILE = "signoffs.jsonl"


def entry_hash(entry: dict) -> str:
    return sha256_hex(canonical_json({k: v for k, v in entry.items() if k != "hash"}, compact=True))


def read_log(path: str | Path) -> list[dict]:
    p = Path(path)
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()] if p.exists() else []


def append_signoff(path: str | Path, *, night: str, campaign: str, who: str, role: str, decision: str, note: str,
                   bundle_root: str, plan_sha256: str, at: str) -> dict:  # fmt: skip
    """Append one sign-off (after checking the log as it stands: a broken log is refused, nothing appended)."""
    if decision not in get_args(Decision):
        raise ValueError(f"decision {decision!r}: one of {get_args(Decision)}")
    if not who.strip() or not role.strip():
        raise ValueError("a sign-off names who signed and in which role")
    if decision != "approve" and not note.strip():
        raise ValueError(f"{decision}: the note says why (the conditions, or what must change)")
    entries = read_log(path)
    if problems := verify_log(entries):
        raise ValueError("the sign-off log is broken, nothing appended: " + "; ".join(problems))
    entry = {"seq": len(entries) + 1, "night": night, "campaign": campaign, "who": who.strip(), "role": role.strip(),
             "decision": decision, "note": note.strip(), "bundle_root": bundle_root, "plan_sha256": plan_sha256, "at": at,
             "prev": entries[-1]["hash"] if entries else ""}  # fmt: skip
    entry["hash"] = entry_hash(entry)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry, sort_keys=True, ensure_ascii=False) + "\n")
    return entry


def verify_log(entries: list[dict]) -> list[str]:
    """What is wrong with the chain, one line per broken link (empty: intact)."""
    problems, prev = [], ""
    for i, e in enumerate(entries, 1):
        if e.get("hash") != entry_hash(e):
            problems.append(f"entry {i} (seq {e.get('seq')}, {e.get('who')}) was edited: its hash is not its content's")
        if e.get("prev") != prev:
            problems.append(f"entry {i} (seq {e.get('seq')}) does not follow entry {i - 1}: an entry was removed, inserted or reordered")
        if e.get("seq") != i:
            problems.append(f"entry {i} carries seq {e.get('seq')}")
        prev = e.get("hash", "")
    return problems


def signoff_status(entries: list[dict], night: str, bundle_root: str, required_roles: list[str]) -> dict:
    """Per required role: its latest sign-off on ``night`` with ``state`` fresh / stale (signed on another bundle) /
    missing; ``released`` only when every required role approved (with or without conditions) on this bundle."""
    roles = {}
    for role in required_roles:
        mine = [e for e in entries if e["night"] == night and e["role"] == role]
        last = mine[-1] if mine else None
        state = "missing" if last is None else ("fresh" if last["bundle_root"] == bundle_root else "stale")
        roles[role] = {"state": state, **({k: last[k] for k in ("who", "decision", "note", "at", "bundle_root")} if last else {})}
    released = bool(required_roles) and all(r["state"] == "fresh" and r["decision"] != "reject" for r in roles.values())
    return {"night": night, "bundle_root": bundle_root, "roles": roles, "released": released,
            "yet_to_sign": [r for r, v in roles.items() if v["state"] != "fresh"]}  # fmt: skip
