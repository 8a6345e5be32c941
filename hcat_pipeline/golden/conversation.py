"""Multi-turn and long-context cases (golden-eval §2.2: "coherence across extended interactions"), rule-built from the
happy-path bases, offline and deterministic for (bases, seed).

Each case carries its earlier turns in ``history`` ([{role, content}], user and assistant alternating, ending with the
assistant) and its last user turn in ``query``; it is scored on that last turn against the base's reference
(``answer_correct``). Category ``multi_turn``, expected ``answer``:

* ``follow_up`` (2 turns) — the user names the thing first ("I have a question about the "__exit__()" method."), the
  assistant invites the question, and the last turn refers back to it ("What does that method return?"): the referent
  is only in an earlier turn;
* ``correction`` (2 turns) — the assistant's earlier answer was wrong (the reference made false: a negation, an
  antonym, a number changed) and the user says so and asks again: the system must give the documents' answer, not
  repeat or defend its earlier one;
* ``long_history`` (4 turns) — three earlier exchanges on other topics (their questions and reference answers), then
  the base question: the answer must not be pulled towards the earlier topics.

Every case also records its standalone question in ``constraints`` ("standalone question: …"), so a reviewer and the
validity checks read what is being asked. Returns (cases, failures). No Dagster import.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

CONVERSATION_KINDS = ("follow_up", "correction", "long_history")
STANDALONE = "standalone question: "
_REFERENT = re.compile(  # "the <name> <head>": a quoted / code literal or capitalised name, then a lowercase kind noun
    r"\b[Tt]he\s+(?P<name>\"[^\"]{1,40}\"|'[^']{1,40}'|`[^`]{1,40}`|“[^”]{1,40}”|[a-z_][\w.]*\(\)|(?:[A-Z][\w.+-]*\s+){0,2}[A-Z][\w.+-]*)"
    r"\s+(?P<head>[a-z]{3,})\b"
)


def turn(role: str, content: str) -> dict:
    return {"role": role, "content": content}


def standalone_question(case: dict) -> str | None:
    """The question a conversation case asks, stated without its history (from its constraints)."""
    return next((c[len(STANDALONE):] for c in case.get("constraints") or [] if c.startswith(STANDALONE)), None)


def follow_up(base: dict) -> tuple[list[dict], str] | None:
    """(history, last turn) referring back to the base question's named thing, or None when it names none."""
    m = _REFERENT.search(base["query"])
    if not m:
        return None
    thing = m.group(0)
    last = base["query"][: m.start()] + f"that {m.group('head')}" + base["query"][m.end():]
    history = [turn("user", f"I have a question about {thing[0].lower()}{thing[1:]}."),
               turn("assistant", f"Of course. What would you like to know about {thing[0].lower()}{thing[1:]}?")]
    return history, last[0].upper() + last[1:]


def correction(base: dict, falsify: Callable[[str], tuple[str, str] | None]) -> tuple[list[dict], str] | None:
    """(history with a wrong earlier answer, the user's correction asking again), or None when ``falsify`` (the
    ``golden.contradiction.contradict_sentence``) cannot make the reference false."""
    wrong = falsify(base.get("reference_answer") or "")
    if not wrong:
        return None
    return [turn("user", base["query"]), turn("assistant", wrong[0])], \
        f"That is not right, please check the documents again. {base['query']}"  # fmt: skip


def long_history(base: dict, others: list[dict]) -> tuple[list[dict], str] | None:
    """(three earlier exchanges from other strata, the base question), or None without three such bases."""
    pool = [o for o in others if o["case_id"] != base["case_id"] and o.get("stratum") != base.get("stratum")][:3]
    if len(pool) < 3:
        return None
    history = [t for o in pool for t in (turn("user", o["query"]), turn("assistant", o["reference_answer"]))]
    return history, base["query"]


def conversation_cases(bases: list[dict], counts: dict[str, int], rng: random.Random, new_case, make_case,
                       falsify: Callable[[str], tuple[str, str] | None]) -> tuple[list[dict], list[dict]]:  # fmt: skip
    """``counts[kind]`` cases per ``CONVERSATION_KINDS`` kind on open happy-path bases (in ``rng``'s order, one base per
    case); (cases, failures)."""
    usable = sorted((b for b in bases if b.get("query_type") in ("simple", "inference") and b.get("reference_answer")),
                    key=lambda b: b["case_id"])  # fmt: skip
    rng.shuffle(usable)
    out, failures, used = [], [], set()
    for kind in CONVERSATION_KINDS:
        made = 0
        for base in usable:
            if made >= counts.get(kind, 0):
                break
            if base["case_id"] in used:
                continue
            built = follow_up(base) if kind == "follow_up" else correction(base, falsify) if kind == "correction" else long_history(base, usable)
            if built is None:
                continue
            history, last = built
            used.add(base["case_id"])
            made += 1
            out.append(make_case(new_case, base, category="multi_turn", variant_kind=kind, query=last, history=history,
                                 query_type=base["query_type"], reference_answer=base["reference_answer"], expected_behavior="answer",
                                 tags=[f"turns:{len(history) // 2 + 1}", f"query_type:{base['query_type']}"],
                                 constraints=[f"{STANDALONE}{base['query']}", "must answer the last turn in the light of the earlier ones"]))  # fmt: skip
        if made < counts.get(kind, 0):
            failures.append({"kind": kind, "base_case_id": None, "reason": f"{made} of {counts[kind]}: no more bases this kind can be built on"})
    return out, failures


def conversation_problems(case: dict) -> list[str]:
    """Why a conversation case is malformed (golden-set validity checks); [] when sound."""
    history = case.get("history") or []
    roles = [t.get("role") for t in history]
    if not history or roles != ["user", "assistant"] * (len(history) // 2) or len(history) % 2:
        return [f"malformed: a multi-turn case's history alternates user / assistant and ends with the assistant, got {roles}"]
    if not standalone_question(case):
        return ["malformed: a multi-turn case records its standalone question"]
    if case.get("variant_kind") == "follow_up":
        m = _REFERENT.search(standalone_question(case) or "")
        if m is None or m.group("name") not in history[0]["content"] or m.group("name") in (case.get("query") or ""):
            return ["malformed: a follow-up names its referent in an earlier turn only"]
    return []
