"""``constraints_met``: did the answer keep the format its question asked for (golden-eval §3.2.1, §3.2.4, §5.2)?

Deterministic, offline checks of the ``format:`` constraints a ``format_constraint`` case carries
(``golden.formats``); each check says what it saw:

* ``json_schema`` — the answer (a fenced ```json block allowed) parses as JSON and validates against the schema
  (``jsonschema``); ``format_valid`` records whether it did, the first validation error is named;
* ``list_items`` — every non-empty line is a list item ("- ", "* ", "• ", "1." / "1)"), one introductory line ending
  in ":" allowed, and 1 … n items;
* ``max_words`` — the answer's word count ≤ n;
* ``must_include`` — the answer ends with the required sentence (case, quotes and final whitespace ignored);
* ``language`` — ``langid`` (``common.language``, restricted to ``DETECTABLE``) reads the answer as the asked language.

Verdict pass when every constraint is met, else fail naming the failed constraint(s); score = share met. An answer
that answers nothing — a refusal, or the required disclaimer alone — meets no constraint (fail, said so).
"""

from __future__ import annotations

import json
import re

import jsonschema

from hcat_pipeline.common.language import detect_language
from hcat_pipeline.golden.formats import LANGUAGES, parse_constraint
from hcat_pipeline.metrics.refusal import is_refusal

_FENCE = re.compile(r"^\s*```(?:json)?\s*(?P<body>.*?)\s*```\s*$", re.S | re.I)
_ITEM = re.compile(r"^\s*(?:[-*•]\s+|\d{1,2}[.)]\s+)\S")
_WORD = re.compile(r"[\w'’-]+")


def check_json(answer: str, schema_text: str) -> tuple[bool, str]:
    body = _FENCE.match(answer)
    text = body.group("body") if body else answer.strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        return False, f"not JSON ({e.msg} at character {e.pos})"
    try:
        jsonschema.validate(value, json.loads(schema_text))
    except jsonschema.ValidationError as e:
        where = "/".join(map(str, e.absolute_path)) or "the object"
        return False, f"JSON does not match the schema at {where}: {e.message}"
    return True, "valid JSON matching the schema"


def check_list(answer: str, most: int) -> tuple[bool, str]:
    lines = [ln for ln in answer.splitlines() if ln.strip()]
    if lines and not _ITEM.match(lines[0]) and lines[0].rstrip().endswith(":"):
        lines = lines[1:]
    items = [ln for ln in lines if _ITEM.match(ln)]
    if len(items) != len(lines):
        return False, f"{len(lines) - len(items)} line(s) are not list items"
    if not 1 <= len(items) <= most:
        return False, f"{len(items)} items (asked: 1 to {most})"
    return True, f"a list of {len(items)} item(s)"


def check_words(answer: str, most: int) -> tuple[bool, str]:
    n = len(_WORD.findall(answer))
    return n <= most, f"{n} words (limit {most})"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().strip("\"'“”‘’ ").strip()).casefold()


def check_ending(answer: str, sentence: str) -> tuple[bool, str]:
    ok = _norm(answer).endswith(_norm(sentence))
    return ok, "ends with the required sentence" if ok else ("has the required sentence, not at the end" if _norm(sentence) in _norm(answer)
                                                             else "the required sentence is missing")  # fmt: skip


def check_language(answer: str, code: str) -> tuple[bool, str]:
    got, p = detect_language(answer)
    return got == code, f"reads as {got} (p={p:.2f}; asked: {code}, {LANGUAGES.get(code, code)})"


def check(kind: str, argument: str, answer: str) -> tuple[bool, str]:
    if kind == "json_schema":
        return check_json(answer, argument)
    if kind == "list_items":
        return check_list(answer, int(argument))
    if kind == "max_words":
        return check_words(answer, int(argument))
    if kind == "must_include":
        return check_ending(answer, argument)
    return check_language(answer, argument)


def answered(kind: str, argument: str, answer: str) -> str | None:
    """Why ``answer`` keeps no format because it answers nothing — a refusal, or only the required sentence — else None."""
    rest = answer
    if kind == "must_include":
        rest = re.sub(re.escape(argument.rstrip(".")) + r"\.?", " ", answer, flags=re.I)
    if len(_WORD.findall(rest)) < 2:
        return "no answer besides the required sentence" if kind == "must_include" else "no answer"
    if is_refusal(rest):
        return "declined the question: there is no answer to keep the format in"
    return None


def constraints_met(case: dict, answer: str):
    """(verdict, score, evidence, detail) of the case's ``format:`` constraints on ``answer``: a format kept by an answer
    that answers nothing (a refusal; the required disclaimer alone) is not met."""
    parsed = [p for p in (parse_constraint(c) for c in case.get("constraints") or []) if p]
    if not parsed:
        return "unsure", None, "the case carries no format constraint to check", {}
    empty = next((why for kind, arg in parsed if (why := answered(kind, arg, answer or ""))), None)
    if empty:
        return "fail", 0.0, f"constraint not met — {empty}", {"checks": {}, "failed": [empty], "format_valid": None}
    results = [(kind, *check(kind, arg, answer or "")) for kind, arg in parsed]
    failed = [f"{kind}: {why}" for kind, ok, why in results if not ok]
    detail = {"checks": {kind: why for kind, _, why in results}, "failed": failed,
              "format_valid": next((ok for kind, ok, _ in results if kind == "json_schema"), None)}  # fmt: skip
    score = sum(ok for _, ok, _ in results) / len(results)
    if failed:
        return "fail", score, "constraint not met — " + "; ".join(failed), detail
    return "pass", score, "constraints met — " + "; ".join(f"{k}: {w}" for k, _, w in results), detail
