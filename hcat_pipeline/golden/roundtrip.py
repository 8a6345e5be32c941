"""The round-trip check (golden-eval: a question must ask for its reference): the generator answers each question from
its source chunk alone, and the answer is compared with the reference the question was written for.

* yes/no: the answer's leading "Yes" / "No" must be the case's label;
* a question written for a span (``evidence``: a term of the reference sentence): the term must be in the answer;
* a multi-hop question (``agrees_hops``): the answer, from both passages, must use a word only the first sentence has
  and one only the second has;
* any other open question: the answer must be made of the reference's words (at least half of its content words, and
  at least two) — an answer taken from another sentence of the chunk means the question asks something else.
"NOT IN PASSAGE", an empty or failed answer disagrees. The answer and the verdict are kept on the generated row
(``roundtrip_answer``, ``roundtrip_agrees``) and a disagreement rejects the case (``roundtrip_disagrees``).
"""

from __future__ import annotations

import re

from hcat_pipeline.common.prompts import load_prompt
from hcat_pipeline.common.text import answer_in_question
from hcat_pipeline.golden.selection import content_words, words

ROUNDTRIP_PROMPT = "roundtrip_answer_v1"
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "minLength": 1}}, "required": ["answer"]}
MAX_PASSAGE_CHARS = 1500
MAX_TOKENS = 64
NOT_ANSWERED = "NOT IN PASSAGE"


def roundtrip_answer(question: str, passage: str, llm, seed: int, failed_exceptions=()) -> tuple[str | None, str | None]:
    """(the generator's answer to ``question`` from ``passage`` alone, error)."""
    template = load_prompt(ROUNDTRIP_PROMPT)
    text = " ".join((passage or "").split())[:MAX_PASSAGE_CHARS]
    try:
        result = llm.generate(template.render(passage=text, question=question), json_schema=ANSWER_SCHEMA, temperature=0.0,
                              seed=seed, max_tokens=MAX_TOKENS)  # fmt: skip
    except failed_exceptions as e:
        return None, f"llm_failed: {getattr(e, 'kind', type(e).__name__)}: {e}"
    return str((result.data or {}).get("answer", "")).strip(), None


def agrees(answer: str | None, reference: str, label: str | None = None, evidence: str | None = None) -> bool:
    """Whether ``answer`` agrees with the reference (see the module docstring)."""
    a = " ".join((answer or "").split())
    if not a or NOT_ANSWERED.lower() in a.lower():
        return False
    if label in ("yes", "no"):
        first = (words(a) or [""])[0]
        return first == label
    if evidence and (answer_in_question(a, evidence) or _bare(evidence) in _bare(a)):
        return True
    ref = set(content_words(re.sub(r"^(?:yes|no)\.\s*", "", reference or "", flags=re.I)))
    mine = content_words(a)
    hits = sum(w in ref for w in mine)
    return bool(mine) and hits >= min(2, len(mine)) and hits >= 0.5 * len(mine)


def agrees_hops(answer: str | None, first: str, second: str) -> bool:
    """A multi-hop round trip: the answer uses each sentence — at least one content word that sentence has and the
    other has not (an answer from one sentence alone means the question needs only that one)."""
    a = " ".join((answer or "").split())
    if not a or NOT_ANSWERED.lower() in a.lower():
        return False
    mine, one, two = set(content_words(a)), set(content_words(first)), set(content_words(second))
    return bool(mine & (one - two)) and bool(mine & (two - one))


def _bare(text: str) -> str:
    """A term without quotes, emphasis and spaces ('"[\'\']"' → "['']", "*chars*" → "chars")."""
    return re.sub(r"[\s\"“”*`]", "", text or "").lower() or "\x00"
