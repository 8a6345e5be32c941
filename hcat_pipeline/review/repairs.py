"""Repairs the case screen proposes for a common unsound kind, for the reviewer to take with one key (issue 68 item 3).

``lost_context``: a question that cannot be understood without the passage it was written from ("the SELECT
statement", "the default settings", "if you are affected" — ``golden.question_checks.referent_problem``) is anchored to
the source passage's heading: the referent a stranger needs. Nothing is proposed when the passage has no short first
line to anchor to. The reviewer takes it as is (``p``), edits it further (``e``) or rejects the case; the curation log
records whether a proposal was offered and whether it was taken as is, so ``proposal_counts`` says how often it helps.
"""

from __future__ import annotations

import re

from hcat_pipeline.golden.question_checks import referent_problem

MAX_TITLE = 90
# a referent only the passage supplies: "the default settings", "if you are affected", "the SELECT statement" (which one?)
LOST_CONTEXT = re.compile(r"\bthe (?:default|following|above|current|same|given|specified|original|previous|relevant|affected) \w+|"
                          r"\bif you are affected\b|\bthe [A-Z][A-Z_]+ (?:statement|command|clause|query|call|example)\b")


def lost_context(question: str) -> str | None:
    """Why ``question`` leans on the passage it was written from, or None."""
    if m := LOST_CONTEXT.search(question):
        return f"{m.group(0)!r}: a referent only the source passage supplies"
    return referent_problem(question)


def _title(passage: str) -> str | None:
    """The passage's heading: its first non-empty line when short and not a sentence of the body."""
    for line in (passage or "").splitlines():
        line = " ".join(line.split()).strip("#=-*_ ").strip()
        if not line:
            continue
        return line if 3 <= len(line) <= MAX_TITLE and not line.endswith((".", ",", ";", ":")) else None
    return None


def propose(case: dict, passages: list[str]) -> dict | None:
    """{kind, edits, why} — a repaired question for the reviewer to take as is — or None."""
    q = " ".join((case.get("query") or "").split())
    if not q or case.get("category") != "happy_path" or case.get("variant_kind"):
        return None
    why = lost_context(q)
    title = next((t for t in map(_title, passages) if t), None)
    if why is None or title is None or title.lower() in q.lower():
        return None
    anchored = f"{q.rstrip('?').rstrip()} (in “{title}”)?"
    return {"kind": "lost_context", "edits": {"query": anchored}, "why": f"{why}: anchored to the source's heading"}


def proposal_counts(entries: list[dict]) -> dict[str, int]:
    """How many decisions were made with a proposal on screen, and how many took it as is (latest per case)."""
    latest = {e["case_id"]: e for e in entries if e["action"] != "undo"}
    offered = [e for e in latest.values() if e.get("proposal_offered")]
    return {"offered": len(offered), "taken_as_is": sum(bool(e.get("as_proposed")) for e in offered)}
