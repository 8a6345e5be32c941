"""Answerability (golden-eval §10.4): did the system abstain / refuse instead of answering?

``is_refusal`` is a small rule-based detector over the answer text (phrases such as "I don't know",
"the context does not contain", "I cannot answer"). It looks at the start of the answer and at short
answers as a whole, so an answer that merely mentions "not" somewhere is not counted as a refusal.
"""

from __future__ import annotations

import re

_PATTERNS = [
    r"\bi (?:do not|don't|dont) know\b",
    r"\bi(?:'m| am) not (?:sure|certain|able)\b",
    r"\bi (?:cannot|can't|can not|am unable to|could not|couldn't|won't|will not) (?:answer|help|provide|find|determine|say|assist|comply)",
    r"\bunable to (?:answer|determine|find|provide)\b",
    r"\b(?:the )?(?:provided |given )?(?:context|passages?|documents?|sources?|information)(?: provided| given)? (?:does|do|did) not (?:contain|mention|include|provide|say|specify|cover|state)",
    r"\bno (?:relevant )?(?:information|mention|answer|context|data)\b(?: (?:is|was))? (?:available|provided|given|found|about|on|in|regarding)",
    r"\bnot (?:mentioned|specified|covered|provided|stated|addressed|available) in the (?:context|passages?|documents?|text|sources?)",
    r"\b(?:there is|there's) (?:no|not enough) (?:information|context|evidence)",
    r"\b(?:insufficient|not enough) (?:information|context|evidence)\b",
    r"\boutside (?:the|my) (?:scope|knowledge)\b",
    r"\bi (?:must|have to) decline\b",
    r"\bi'?m sorry,? (?:but )?i (?:cannot|can't|can not|am unable|don't|do not)",
    r"\bcannot be (?:answered|determined)\b",
]
_RE = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.I)


def is_refusal(answer: str | None, head_chars: int = 160) -> bool:
    """True if ``answer`` abstains or refuses (empty/None answers are not refusals: they are errors)."""
    if not answer or not answer.strip():
        return False
    text = re.sub(r"\s+", " ", answer.strip().replace("’", "'"))
    return bool(_RE.search(text[:head_chars]))
