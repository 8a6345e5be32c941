"""Repairs the case screen proposes for a common unsound kind, for the reviewer to take with one key (issue 68 item 3).

- ``lost_context``: a question that cannot be understood without the passage it was written from ("the SELECT
  statement", "the default settings", "if you are affected" — ``golden.question_checks.referent_problem``) is anchored
  to the source passage's heading: the referent a stranger needs. Nothing is proposed when the passage has no short
  first line to anchor to.
- ``why_to_what``: a "why" or "purpose" question whose reference gives no reason — no causal or purpose clause the
  question does not already hold, so it only restates the conclusion — is re-asked as "what": "Why are X cleared when
  Y?" → "What happens to X when Y?"; "What is the purpose of using X to Y?" → "What is used to Y?"; "What is the
  purpose of X?" → "What does X do?". Nothing is proposed for a form these do not cover ("Why does X …?").
- ``two_right_options``: a multiple-choice case with an option that says what the key says ("id(x)" beside "id()",
  "PEP 572" beside "572") — the same after case, quotes, articles, a call's arguments and a "PEP" / "section" label are
  set aside — keeps the key and drops the other.

The reviewer takes a proposal as is (``p``), edits it further (``e``) or rejects the case; the curation log records
whether a proposal was offered and whether it was taken as is, so ``proposal_counts`` says how often it helps.
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


# a reason the reference gives: a causal or purpose clause (its next words must be news to the question)
REASON = re.compile(r"\b(?:because|since|so that|in order to|so as to|as a result|due to|therefore|thus|hence|otherwise|which means|"
                    r"to (?:help|avoid|prevent|allow|ensure|make|enable|keep|support|provide|reduce|improve|simplify|protect|guarantee|"
                    r"cause|let|permit|speed|save)|caus(?:es?|ing)|allow(?:s|ing)?|ensur(?:es|ing)|prevent(?:s|ing)?|avoid(?:s|ing)?|"
                    r"enabl(?:es|ing)|permit(?:s|ting)?|for (?:the )?(?:purpose|sake))\b", re.I)  # fmt: skip
WHY_PASSIVE = re.compile(r"^why (?:is|are|was|were) (?P<tail>.+?)\??$", re.I)
# the passive's participle: an -ed / -en word not followed by "by" (that one is a reduced relative: "the name bound by …")
PARTICIPLE = re.compile(r" (?P<done>\w+(?:ed|en|wn|lt))\b(?! by\b)", re.I)
PURPOSE_OF = re.compile(r"^what (?:is|was) the (?:main )?(?:purpose|role) of (?P<what>.+?)\??$", re.I)
USING_TO = re.compile(r"^using (?P<tool>.+?) (?P<aim>to \w+.*)$", re.I)
_STOP = frozenset("a an the of to in on for and or is are be by with as it its this that what which when how why does do".split())


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_]+", text.lower()) if w not in _STOP}


def gives_a_reason(question: str, reference: str) -> bool:
    """Whether ``reference`` holds a causal / purpose clause whose next five content words are not all in ``question``."""
    asked = _words(question)
    for m in REASON.finditer(reference):
        following = [w for w in re.findall(r"[a-z0-9_]+", reference[m.end():].lower()) if w not in _STOP][:5]
        if any(w not in asked for w in following):
            return True
    return False


def why_to_what(question: str) -> str | None:
    """``question`` re-asked as "what", or None for a form not covered."""
    if (m := WHY_PASSIVE.match(question)) and (p := PARTICIPLE.search(m["tail"])):
        return f"What happens to {m['tail'][:p.start()]}{m['tail'][p.end():].rstrip()}?"
    if m := PURPOSE_OF.match(question):
        what = m["what"].strip()
        if u := USING_TO.match(what):
            return f"What is used {u['aim']}?"
        return f"What does {what} do?"
    return None


def _why_to_what(case: dict, q: str) -> dict | None:
    if not re.match(r"^(?:why\b|what (?:is|was) the (?:main )?(?:purpose|role) of\b)", q, re.I):
        return None
    if gives_a_reason(q, case.get("reference_answer") or "") or (repaired := why_to_what(q)) is None:
        return None
    return {"kind": "why_to_what", "edits": {"query": repaired},
            "why": "a 'why' / 'purpose' question whose reference gives no reason, only restates the conclusion: re-asked as 'what'"}


def option_key(option: str) -> str:
    """What an option says, for comparing two: lower case, no quotes / backticks, articles, a call's arguments, or a
    "PEP" / "section" label."""
    text = re.sub(r"[`'\"“”‘’]", "", option.lower())
    text = re.sub(r"\(([^()]*)\)", "", text)
    text = re.sub(r"\b(?:the|a|an|pep|section|§)\b", " ", text)
    return " ".join(re.sub(r"[^\w]+", " ", text).split())


def _two_right_options(case: dict) -> dict | None:
    options, key = list(case.get("options") or []), case.get("reference_answer")
    if case.get("query_type") != "multiple_choice" or key not in options:
        return None
    same = [o for o in options if o != key and option_key(o) and option_key(o) == option_key(key)]
    if not same or len(options) - len(same) < 2:
        return None
    kept = [o for o in options if o not in same]
    return {"kind": "two_right_options", "edits": {"options": kept},
            "why": f"{', '.join(map(repr, same))} says what the key {key!r} says: two right options, the other dropped"}


def propose(case: dict, passages: list[str]) -> dict | None:
    """{kind, edits, why} — a repaired question (or options) for the reviewer to take as is — or None."""
    q = " ".join((case.get("query") or "").split())
    if not q or case.get("category") != "happy_path" or case.get("variant_kind"):
        return None
    if found := _two_right_options(case) or _why_to_what(case, q):
        return found
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
