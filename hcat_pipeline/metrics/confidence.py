"""Stated confidence (golden-eval §3.2.3, CALIBRATION): the confidence a system states in its answer, as a probability.

Read deterministically from the answer text, first match wins:

1. a number — "Confidence: 80%", "(confidence 0.8)", "I am 90% sure / certain / confident";
2. a structured field — a JSON answer's ``"confidence": "high" | "medium" | "low"`` or a number (the format cases'
   schema asks for one);
3. a verbal hedge, mapped by ``VERBAL`` (a fixed, documented lexicon of first-person and epistemic hedges: "I am
   certain" 0.95, "I'm fairly sure" / "probably" 0.7, "I think" 0.6, "my best guess" 0.4, "I am not sure" 0.3).

``stated_confidence`` is null when the answer states none (most do not: the metric applies to systems that state one)
and for a refusal ("I don't know" is an abstention, not a low confidence). ``confidence_statement`` is the phrase it
was read from. The system-level Brier score, ECE and reliability diagram against each case's correctness verdict are
``calibration.stated``.
"""

from __future__ import annotations

import json
import re

import polars as pl

from hcat_pipeline.metrics.registry import metric

#: verbal hedges → probability (first listed wins on overlap; checked on the lower-cased answer)
VERBAL: tuple[tuple[str, float], ...] = (  # first-person and epistemic hedges only: "is likely to" in content is not one
    (r"\b(?:i am|i'm)\s+(?:not\s+(?:at\s+all\s+)?(?:sure|certain|confident)|unsure|uncertain)\b|\bnot\s+(?:entirely\s+)?(?:sure|certain)\b", 0.3),
    (r"\b(?:my best guess|i(?: am|'m) guessing|i guess)\b", 0.4),
    (r"\b(?:i am|i'm)\s+(?:absolutely|completely|totally|100\s?%)\s+(?:sure|certain|confident)\b|\b(?:i am|i'm) certain\b|\bwithout (?:a|any) doubt\b", 0.95),
    (r"\b(?:i am|i'm)\s+(?:very|highly)\s+(?:sure|confident)\b", 0.9),
    (r"\b(?:i am|i'm)\s+(?:confident|sure)\b", 0.85),
    (r"\b(?:i am|i'm)\s+(?:fairly|quite|pretty|reasonably|moderately)\s+(?:sure|certain|confident)\b|\bmost likely\b|\bprobably\b", 0.7),
    (r"\b(?:i think|i believe)\b", 0.6),
)
_VERBAL = [(re.compile(p, re.I), v) for p, v in VERBAL]
_NUMBER = re.compile(r"\bconfidence(?:\s+level)?\s*(?:is|of|:|=)?\s*(?P<a>\d{1,3}(?:\.\d+)?)\s*(?P<pa>%)?"
                     r"|\b(?:i am|i'm)\s+(?P<b>\d{1,3})\s*%\s+(?:sure|certain|confident)", re.I)  # fmt: skip
_ABSTAIN = re.compile(r"\b(?:i (?:do not|don't|cannot|can't) (?:know|answer|say|help)|(?:cannot|can't|unable to) (?:answer|provide|find)"
                      r"|no information)\b", re.I)  # an abstention states no confidence in an answer
LEVELS = {"high": 0.9, "medium": 0.6, "low": 0.3}


def _from_json(answer: str) -> tuple[float, str] | None:
    body = re.sub(r"^\s*```(?:json)?|```\s*$", "", answer.strip()).strip()
    if not body.startswith("{"):
        return None
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    c = value.get("confidence") if isinstance(value, dict) else None
    if isinstance(c, str) and c.strip().lower() in LEVELS:
        return LEVELS[c.strip().lower()], f'"confidence": "{c}"'
    if isinstance(c, (int, float)) and not isinstance(c, bool) and 0 <= c <= 100:
        return (c / 100 if c > 1 else float(c)), f'"confidence": {c}'
    return None


def stated_confidence(answer: str | None) -> tuple[float | None, str | None]:
    """(probability in [0, 1], the phrase it was read from), or (None, None) when the answer states no confidence."""
    if not answer or _ABSTAIN.search(answer):
        return None, None
    m = _NUMBER.search(answer)
    if m:
        raw = float(m.group("a") or m.group("b"))
        p = raw / 100 if (m.group("pa") or m.group("b") or raw > 1) else raw
        if 0 <= p <= 1:
            return p, m.group(0)
    found = _from_json(answer)
    if found:
        return found
    for rx, p in _VERBAL:
        hit = rx.search(answer)
        if hit:
            return p, hit.group(0)
    return None, None


@metric("stated_confidence", columns={"confidence_statement": pl.String})
def stated_confidence_metric(batch, resources, options) -> dict[str, list]:
    """Stated confidence (§3.2.3): the probability the answer states it is right (number, JSON field or verbal hedge)."""
    value, phrase = batch.column(), batch.column()
    for i in batch.valid:
        value[i], phrase[i] = stated_confidence(batch.answers[i])
    return {"stated_confidence": value, "confidence_statement": phrase}
