"""Difficulty asked at generation and measured after a night (HCAT §2 step 5.3: "instructing the LLM to produce a variety
of question formats and difficulty levels").

The campaign file names a mix (``generation.difficulty_shares``, e.g. ``{easy: 0.5, hard: 0.5}``); empty: no difficulty
is asked and the prompts are what they were. The grounded generation hands each LLM-written question a level in those
shares (``difficulty_sequence``: the smooth round-robin the query types use, seeded) and appends the level's
instruction (``HINTS``) to the prompt's last message, so the few-shot prefix stays the one reused:

* ``easy`` — asked plainly, in the source sentence's own words (a keyword search finds it);
* ``hard`` — asked in the writer's own words, the sentence's phrases avoided (names of things excepted): the reader must
  understand the passage, not match its words.

A question made by rule (a condition or a definition, a yes/no inversion) is not asked a level (``difficulty_asked`` is
empty). After a night, ``difficulty_table`` compares what was asked with what was measured, per query type: the share of
answers judged correct (``answer_correct``) with its Wilson interval and the lexical overlap of question and reference
(``lexical_overlap``, the property the instruction changes). A type reads **as asked** when its hard questions were
answered correctly less often than its easy ones *and* share fewer words with their reference; otherwise **not as
asked** (said with the figures), or **undecided** when either level has no judged answer. No Dagster import.
"""

from __future__ import annotations

from typing import Literal, get_args

from hcat_pipeline.common.stats import wilson_interval
from hcat_pipeline.golden.query_mix import type_sequence
from hcat_pipeline.golden.selection import content_words

Difficulty = Literal["easy", "hard"]
DIFFICULTIES: tuple[str, ...] = get_args(Difficulty)
HINTS = {
    "easy": "Difficulty: easy. Ask it plainly; you may use the sentence's own words.",
    "hard": "Difficulty: hard. Ask it in your own words: do not copy phrases of the sentence (names of things excepted), so that "
            "a reader must understand the passage, not match its words, to find the answer.",
}  # fmt: skip
TAG = "difficulty_asked"


def difficulty_shares(shares: dict[str, float] | None) -> dict[str, float]:
    """{level: share} summing to 1, or {} (no difficulty asked). Raises on an unknown level or a negative share."""
    given = {k: float(v) for k, v in (shares or {}).items()}
    if not given:
        return {}
    if bad := sorted(set(given) - set(DIFFICULTIES)):
        raise ValueError(f"difficulty_shares names {bad}; the levels are {list(DIFFICULTIES)}")
    if any(v < 0 for v in given.values()) or sum(given.values()) <= 0:
        raise ValueError(f"difficulty_shares must be non-negative and not all 0: {given}")
    total = sum(given.values())
    return {k: given.get(k, 0.0) / total for k in DIFFICULTIES}


def difficulty_sequence(shares: dict[str, float], seed: int) -> list[str]:
    """The levels in their shares, interleaved and seeded (``golden.query_mix.type_sequence``); [] when none is asked."""
    return type_sequence(shares, seed + 7919) if shares else []


def with_hint(messages: list[dict], difficulty: str | None) -> list[dict]:
    """The prompt with the level's instruction after its last message's text (unchanged when no level is asked)."""
    if not difficulty:
        return messages
    if difficulty not in HINTS:
        raise ValueError(f"difficulty {difficulty!r} is not one of {list(DIFFICULTIES)}")
    last = messages[-1]
    return [*messages[:-1], {**last, "content": f"{last['content']}\n{HINTS[difficulty]}"}]


def lexical_overlap(question: str, reference: str) -> float:
    """Share of the question's content words that its reference holds (1: the question is the sentence's own words)."""
    q = set(content_words(question or ""))
    return len(q & set(content_words(reference or ""))) / len(q) if q else 0.0


def asked_of(case: dict) -> str | None:
    return next((t.split(":", 1)[1] for t in case.get("tags") or [] if t.startswith(TAG + ":")), None)


def difficulty_table(cases: list[dict], verdicts: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """(rows per query type × level asked: cases, answers judged, correct share [Wilson 95 %], mean lexical overlap;
    verdict per query type) — ``verdicts``: behaviour_checks rows (case_id, rule, verdict) of the night."""
    level = {c["case_id"]: asked_of(c) for c in cases}
    overlap = {c["case_id"]: lexical_overlap(c.get("query") or "", c.get("reference_answer") or "") for c in cases}
    qtype = {c["case_id"]: c.get("query_type") for c in cases}
    groups: dict[tuple[str, str], dict] = {}
    for cid, lvl in level.items():
        if lvl:
            g = groups.setdefault((qtype[cid], lvl), {"cases": set(), "k": 0, "n": 0})
            g["cases"].add(cid)
    for v in verdicts:
        key = (qtype.get(v["case_id"]), level.get(v["case_id"]))
        if key in groups and v.get("rule") == "answer_correct" and v.get("verdict") in ("pass", "fail"):
            groups[key]["n"] += 1
            groups[key]["k"] += v["verdict"] == "pass"
    rows = []
    for (t, lvl), g in sorted(groups.items()):
        lo, hi = wilson_interval(g["k"], g["n"]) if g["n"] else (None, None)
        rows.append({"query_type": t, "asked": lvl, "cases": len(g["cases"]), "answers": g["n"], "correct": g["k"] / g["n"] if g["n"] else None,
                     "ci_low": lo, "ci_high": hi, "overlap": sum(overlap[c] for c in g["cases"]) / len(g["cases"])})  # fmt: skip
    return rows, {t: _verdict([r for r in rows if r["query_type"] == t]) for t in sorted({r["query_type"] for r in rows})}


def _verdict(rows: list[dict]) -> str:
    by = {r["asked"]: r for r in rows}
    easy, hard = by.get("easy"), by.get("hard")
    if not easy or not hard or easy["correct"] is None or hard["correct"] is None:
        return "undecided: both levels need judged answers"
    ok = hard["correct"] < easy["correct"] and hard["overlap"] < easy["overlap"]
    figures = (f"correct {hard['correct']:.2f} hard vs {easy['correct']:.2f} easy (n {hard['answers']} / {easy['answers']}), word overlap "
               f"{hard['overlap']:.2f} vs {easy['overlap']:.2f}")  # fmt: skip
    return ("as asked: " if ok else "not as asked: ") + figures
