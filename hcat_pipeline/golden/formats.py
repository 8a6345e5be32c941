"""Instruction-following cases (golden-eval §3.2.1 instruction following, §3.2.4 format compliance, §5.2 structured
output): a happy-path question with a format the answer must keep, checked deterministically downstream
(``behaviour.formats.constraints_met``).

Each ``format_constraint`` case (category ``edge_case``, expected ``answer``) is its base question plus one instruction
from ``FORMAT_KINDS``, rotated from a seeded start so a golden set holds every kind:

* ``json_schema`` — reply only with a JSON object matching ``ANSWER_SCHEMA`` (``answer``: non-empty string,
  ``confidence``: high / medium / low); checked with ``jsonschema``;
* ``list_items`` — a bulleted list of at most ``LIST_ITEMS`` items and nothing else;
* ``max_words`` — at most ``MAX_WORDS`` words;
* ``must_include`` — end with the disclaimer ``DISCLAIMER`` (a bank's required sentence);
* ``language`` — answer in German, French or Spanish (``langid``, restricted to ``LANGUAGES``).

The machine-readable constraint is stored in the case's ``constraints`` as ``"format:<kind> <argument>"`` (one source
for the question's wording and the checker), beside a sentence a reviewer reads. No Dagster import.
"""

from __future__ import annotations

import json
from typing import Literal, get_args

FormatKind = Literal["json_schema", "list_items", "max_words", "must_include", "language"]
FORMAT_KINDS: tuple[str, ...] = get_args(FormatKind)
PREFIX = "format:"
ANSWER_SCHEMA = {
    "type": "object",
    "required": ["answer", "confidence"],
    "properties": {"answer": {"type": "string", "minLength": 1}, "confidence": {"enum": ["high", "medium", "low"]}},
    "additionalProperties": False,
}
LIST_ITEMS = 3
MAX_WORDS = 25
DISCLAIMER = "This is not financial advice."
LANGUAGES = {"de": "German", "fr": "French", "es": "Spanish"}  # the answer languages asked for


def format_argument(kind: str, i: int) -> str:
    return {"json_schema": json.dumps(ANSWER_SCHEMA, sort_keys=True), "list_items": str(LIST_ITEMS), "max_words": str(MAX_WORDS),
            "must_include": DISCLAIMER, "language": sorted(LANGUAGES)[i % len(LANGUAGES)]}[kind]  # fmt: skip


def instruction(kind: str, argument: str) -> str:
    """The sentence added to the question: what a user of a bank's assistant would write."""
    if kind == "json_schema":
        return ('Reply only with a JSON object with exactly two keys: "answer" (your answer, a string) and "confidence" '
                '(one of "high", "medium", "low").')  # fmt: skip
    if kind == "list_items":
        return f"Answer as a bulleted list of at most {argument} items, each on its own line starting with \"- \", and nothing else."
    if kind == "max_words":
        return f"Answer in at most {argument} words."
    if kind == "must_include":
        return f'End your answer with the sentence "{argument}"'
    if kind == "language":
        return f"Answer in {LANGUAGES[argument]}."
    raise ValueError(f"format instruction: unknown kind {kind!r}; one of {FORMAT_KINDS}")


def constraint(kind: str, argument: str) -> str:
    """The machine-readable constraint stored on the case."""
    return f"{PREFIX}{kind} {argument}"


def parse_constraint(text: str) -> tuple[str, str] | None:
    """(kind, argument) of a ``format:`` constraint, None for any other constraint; raises on an unknown kind."""
    if not text.startswith(PREFIX):
        return None
    kind, _, argument = text[len(PREFIX):].partition(" ")
    if kind not in FORMAT_KINDS:
        raise ValueError(f"constraint {text[:60]!r}: unknown format kind {kind!r}; one of {FORMAT_KINDS}")
    return kind, argument


def format_problems(case: dict) -> list[str]:
    """Why a format_constraint case is malformed (for the golden-set validity checks); [] when sound."""
    found = []
    for c in case.get("constraints") or []:
        try:
            parsed = parse_constraint(c)
        except ValueError as e:
            return [f"malformed: {e}"]
        if parsed:
            found.append(parsed)
    if len(found) != 1:
        return [f"malformed: a format_constraint case carries one format constraint, it has {len(found)}"]
    kind, arg = found[0]
    if kind == "json_schema":
        try:
            json.loads(arg)
        except json.JSONDecodeError as e:
            return [f"malformed: the JSON schema does not parse ({e.msg})"]
    if kind in ("list_items", "max_words") and not arg.isdigit():
        return [f"malformed: {kind} takes a count, got {arg!r}"]
    if kind == "language" and arg not in LANGUAGES:
        return [f"malformed: language {arg!r} is not one of {sorted(LANGUAGES)}"]
    if instruction(kind, arg) not in (case.get("query") or ""):
        return ["malformed: the question does not carry the format instruction its constraint checks"]
    return []


def format_cases(bases: list[dict], n: int, seed: int, new_case, make_case) -> tuple[list[dict], list[dict]]:
    """``n`` format cases on open happy-path bases (one per base, kinds rotated from a seeded start); (cases, failures).
    ``make_case(new_case, base, **fields)`` is the category builders' variant constructor."""
    usable = [b for b in bases if b.get("query_type") in ("simple", "inference", "multi_hop") and b.get("reference_answer")]
    out = []
    for i, base in enumerate(usable[:n]):
        kind = FORMAT_KINDS[(i + seed) % len(FORMAT_KINDS)]
        arg = format_argument(kind, i + seed)
        q = f"{base['query'].rstrip()} {instruction(kind, arg)}"
        out.append(make_case(new_case, base, category="edge_case", variant_kind="format_constraint", query=q,
                             query_type=base["query_type"], reference_answer=base["reference_answer"], expected_behavior="answer",
                             tags=[f"format:{kind}", f"query_type:{base['query_type']}"],
                             constraints=[constraint(kind, arg), f"must keep the format: {instruction(kind, arg)}"]))  # fmt: skip
    failures = [] if len(out) >= n else [{"kind": "format_constraint", "base_case_id": None,
                                          "reason": f"{len(out)} of {n}: only {len(usable)} open bases left"}]  # fmt: skip
    return out, failures
