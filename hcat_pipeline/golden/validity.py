"""Case validity: would a model-risk reviewer sign this test case? Checks with their numbers, for cases from anywhere.

Every case gets a ``Validity``: ``score`` (0-1, higher = sounder), ``verdict`` (``valid`` | ``invalid`` |
``unsure``), ``reasons`` (why not valid, each ``code: detail``) and ``checks`` (every number behind it).

An answerable case (expected behaviour ``answer`` with a reference) is checked for:

- a **grammatical** question (``question_problem``: ends with "?", no "Is the value must be …?");
- **answer type**: a question asking for a purpose, a default, a syntax or a quantity gets a reference that carries one
  (``answer_type_problem``: "What is the purpose of X?" answered by "X terminates when …" is not);
- **self-contained** question (``self_contained``): no "the passage", "the table", "the above", "according to the
  text", no emphasised single-letter variable with a definite article ("the *n*") and no leading pronoun
  ("What does it return?") — a user of the system under test sees the question alone;
- **support**: the reference (a yes/no reference's explanation; a multiple-choice key) is in the cited source —
  the larger of its content-word recall in the source and its best cosine to a source sentence — and has no number
  the source does not have (a cosine forgives "90 euros" for "25 pounds");
- **round trip** (the reference answers the question): the source sentences are ranked by how well they answer the
  question (cosine + recall of the question's focus words) as an extractive reader would; ``round_trip`` is the
  reference's content-word recall in the top ``round_trip_k`` of them. ``alignment`` is the recall of the question's
  focus words in the sentence that carries the reference plus the reference itself: a reference lifted from a
  sentence about something else ("What methods are called when an object is removed?" → a sentence about
  exceptions) scores low on both;
- **comparison**: "the difference between X and Y" needs a reference naming both;
- **polarity** (yes / no): the source's polarity, when the lexical rule can read it, agrees with the label;
- **a reader's faults** (``reader_problems``, ``golden.case_signals``; no domain vocabulary): the reference restates
  the question (``circular``), defers elsewhere, leans on unseen context, or denies what the question presupposes;
- **near-duplicate** questions (batch): the later of two questions with cosine ≥ ``max_duplicate_similarity``.

``score`` = weighted mean of support, round trip and alignment (weights fixed a priori in ``ValidityConfig``, not
fitted); a hard reason (not self-contained, unsupported, polarity, comparison, duplicate) caps it at
``hard_cap``. Verdict: ``valid`` at ``score >= valid_at`` without a hard reason, ``invalid`` below ``invalid_below``
or with one, else ``unsure``. Variants and other categories: ``golden.variant_checks``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np

from hcat_pipeline.corpus.chunking import split_sentences
from hcat_pipeline.golden.case_signals import text_signals
from hcat_pipeline.golden.claims import contradicted_by
from hcat_pipeline.golden.selection import content_words, lexical_recall, reference_polarity, split_yes_no, stem

Verdict = Literal["valid", "invalid", "unsure"]
VERDICTS: tuple[str, ...] = ("valid", "invalid", "unsure")
Embed = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class ValidityConfig:
    """Weights and thresholds of the validity score (fixed before any measurement; see benchmarks/case_validity.py)."""

    w_support: float = 0.3
    w_round_trip: float = 0.35
    w_alignment: float = 0.35
    valid_at: float = 0.6
    invalid_below: float = 0.4
    hard_cap: float = 0.2
    min_support: float = 0.6  # below: the reference is not in the cited source (hard)
    round_trip_k: int = 2
    max_duplicate_similarity: float = 0.92
    min_sentence_words: int = 3
    max_restatement: float = 1.0  # at or above: the reference restates the question (``case_signals``): no word of its own


@dataclass
class Validity:
    score: float
    verdict: str
    reasons: list[str] = field(default_factory=list)
    checks: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


HARD = ("not_self_contained", "reference_not_supported", "reference_contradicts_source", "polarity_contradicts_source",
        "comparison_incomplete", "near_duplicate", "malformed", "premise_not_false", "premise_not_from_source",
        "wrong_expected_behavior", "unnatural_persona", "answer_type_mismatch", "circular", "reference_defers",
        "reference_context_lost", "polarity_denied")  # fmt: skip
MIN_VALID_RATE = 0.9  # the golden_set asset check warns below this share of valid cases (the target)
SOFT_CAP = 0.5  # a soft reason (e.g. unnatural_persona) keeps the case from "valid": at most this score

# ------------------------------------------------------------------------------------------- self-contained
_DEICTIC = re.compile(
    r"\b(?:the|this|that|these|those|above|below|following|given|provided|said)\s+"
    r"(?:passage|text|table|document|excerpt|paragraph|section|context|article|snippet|figure|list|sentence|chapter|page|"
    r"source|author|example above|extract)s?\b|\b(?:this|that|these|those|above|below|following|given|provided|said)\s+"
    r"(?:code|code snippet|code sample|snippet|example|image|diagram)s?\b|\baccording to (?:the|this) (?:passage|text|document|author|excerpt|context|table)\b"
    r"|\b(?:mentioned|described|shown|listed|given|indicated) (?:above|below|here)\b|\bas indicated\b|\bsee\b[^.?]*\b(?:above|below)\b|\bin (?:the|this) (?:example|snippet|code) (?:above|below)\b",
    re.I,
)
_VAR_WITH_ARTICLE = re.compile(r"\bthe\s+(?:(?:\*|`)?[A-Za-z](?:\*|`)?|[a-z]+\s+[*`][A-Za-z][*`])(?=[\s?.,;:]|$)")  # "the *n*", "the x",
# "the value *n*" (a one-letter variable the question does not define; not "the X class")
_LEADING_PRONOUN = re.compile(r"^\s*(?:what|how|why|when|where|which)\s+(?:\w+\s+){0,2}?(?:it|they|this|these|them)\b(?!\s+(?:is|are)\s+called)", re.I)
_FOCUS_STOP = frozenset(
    "what which who whom whose when where why how difference differences between mean means meaning called used use uses "
    "purpose type types kind kinds happens happen example examples way ways describe explain define definition role "
    "function work works does do did thing things name named".split()
)


def self_contained(query: str) -> str | None:
    """Why the question cannot be understood on its own, or None."""
    q = query or ""
    m = _DEICTIC.search(q)
    if m:
        return f"refers to {m.group(0)!r} the user never sees"
    m = _VAR_WITH_ARTICLE.search(q)
    if m:
        return f"{m.group(0)!r}: a variable with a definite article and no antecedent"
    if _LEADING_PRONOUN.match(q) and not re.search(r"\b(?:it|they|this|these|them)\b.*\b(?:if|when|that)\b", q, re.I):
        first = len(content_words(q)) < 4
        if first:
            return "a pronoun without an antecedent"
    return None


_DOUBLE_AUX = re.compile(
    r"^\s*(?:is|are|was|were|does|do|did|has|have)\s+(?:(?:(?!\b(?:that|which|who|whom|whose|if|when|whether|where|than)\b)[^,?])*?\s)?"
    r"(?:must|can|cannot|should|shall|will|would|could|may|might|does|do)\s",
    re.I)  # "Is the return value must be …?": the small model's yes/no questions that prefix an auxiliary to a statement


def question_problem(query: str) -> str | None:
    """Why the question is not a well-formed question, or None: cut short (no closing "?"), punctuation left dangling
    before the "?" ("When is pass a null operation —?"), or two finite auxiliaries in a yes/no question."""
    q = (query or "").strip()
    if not q.endswith("?"):
        return f"does not end with '?' (cut short?): {q[-30:]!r}"
    if re.search(r"[—–\-,:;(]\s*\?$", q):
        return f"garbled: dangling punctuation before the question mark ({q[-12:]!r})"
    m = _DOUBLE_AUX.match(q)
    return f"two auxiliaries in one yes/no question ({m.group(0).strip()!r}…)" if m else None


# the kind of answer a question asks for, and a cue the reference must carry to give it (answer-type consistency)
ANSWER_TYPES = (
    ("purpose", re.compile(r"^\s*(?:what is|what's|what are) the (?:purpose|use|role|point) of\b|^\s*why\b", re.I),
     re.compile(r"\b(?:to|for|so that|in order to|because|since|allows?|lets?|enables?|used|helps?|serves?|ensures?|avoids?|"
                r"prevents?|requires?|means|indicates?|so|as)\b", re.I)),
    ("default", re.compile(r"\bdefault\b", re.I), re.compile(r"\bdefault|\bby default\b|\bunless\b|\botherwise\b|\bnormally\b", re.I)),
    ("syntax", re.compile(r"\bsyntax\b", re.I), re.compile(r"\bsyntax\b|::=|\bof the form\b|[\"'`“]|\bwritten\b|\bspelled\b", re.I)),
    ("quantity", re.compile(r"^\s*how (?:many|much|long|often|far)\b", re.I),
     re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|once|twice|daily|weekly|monthly|yearly|annually|every|each|"
                r"none|all|no|several|few|many|hours?|days?|weeks?|months?|years?)\b", re.I)),
)


def answer_type_problem(query: str, reference: str) -> str | None:
    """The question asks for a kind of answer (a purpose, a default, a syntax, a quantity) the reference does not carry."""
    for kind, asks, cue in ANSWER_TYPES:
        if asks.search(query or "") and not cue.search(reference or ""):
            return f"the question asks for a {kind}; the reference states none"
    return None


def reader_problems(query: str, reference: str, query_type: str | None, cfg: ValidityConfig) -> list[str]:
    """What a stranger reading the question and the reference sees wrong, in any domain (``golden.case_signals``)."""
    sig = text_signals(query, reference, query_type)
    out = []
    if sig["restatement"] >= cfg.max_restatement:
        out.append(f"circular: {sig['restatement']:.0%} of the reference's words are the question's own (it restates, does not answer)")
    if sig["defers"]:
        out.append("reference_defers: the reference points elsewhere ('the same … applies as for', 'as described in', 'see …')")
    if sig["context_lost"]:
        out.append("reference_context_lost: the reference leans on text the user never sees ('This …', 'this way', 'the *n*')")
    if sig["polarity_denied"]:
        out.append("polarity_denied: the question presupposes what the reference denies")
    return out


def focus_words(query: str) -> list[str]:
    """The question's content words minus generic question words (what the reference must be about)."""
    return [w for w in content_words(query) if w not in _FOCUS_STOP]


def _recall(part_words: Sequence[str], whole: str, idf: dict[str, float] | None = None) -> float:
    """Share of ``part_words`` found in ``whole`` (light stemming: a trailing s / es / ed / ing), each word weighted by
    its ``idf`` in the source when given (a word in every sentence, such as the product's name, says little)."""
    if not part_words:
        return 1.0
    pool = {stem(w) for w in content_words(whole)} | {w.lower() for w in re.findall(r"[A-Za-z0-9_]+", whole)}
    weight = [idf.get(stem(w), 0.0) if idf else 1.0 for w in part_words]  # a word the source never uses: no evidence
    total = sum(weight)
    return sum(wt for w, wt in zip(part_words, weight) if w in pool or stem(w) in pool) / total if total else 1.0


def _idf(sents: Sequence[str]) -> dict[str, float]:
    """Inverse sentence frequency of each (stemmed) content word of the source: log((N + 1) / (df + 0.5))."""
    df: dict[str, int] = {}
    for s in sents:
        for w in {stem(w) for w in content_words(s)}:
            df[w] = df.get(w, 0) + 1
    n = len(sents)
    return {w: float(np.log((n + 1) / (d + 0.5))) for w, d in df.items()}


_COMPARISON = re.compile(
    r"\bdifferences?\s+between\s+(?:an?\s+|the\s+)?(.+?)\s+and\s+(?:an?\s+|the\s+)?(.+?)(?:\?|$)|\bcompare\s+(.+?)\s+(?:and|with|to)\s+(.+?)(?:\?|$)",
    re.I,
)


def comparison_terms(query: str) -> tuple[list[str], list[str]] | None:
    """The words that tell apart the two things a "difference between A and B" question compares (A's, B's)."""
    m = _COMPARISON.search(query or "")
    if not m:
        return None
    a, b = (content_words(g.strip(" *`'\"")) or [g.strip(" *`'\"").lower()] for g in m.groups() if g is not None)
    only_a, only_b = [w for w in a if w not in b], [w for w in b if w not in a]
    return (only_a or a), (only_b or b)


# ------------------------------------------------------------------------------------------- one case
def reference_text(case: dict) -> str:
    """What must be supported: a yes/no reference's explanation, else the reference (a multiple-choice key)."""
    ref = case.get("reference_answer") or ""
    if case.get("query_type") == "yes_no":
        return split_yes_no(ref)[1] or ref
    return ref


def source_sentences(source: str, min_words: int) -> list[str]:
    sents = [" ".join(s.split()) for s in split_sentences(source or "")]
    return [s for s in dict.fromkeys(sents) if len(s.split()) >= min_words] or ([" ".join(source.split())] if source.strip() else [])


def answerable_checks(case: dict, source: str, vec: Callable[[str], np.ndarray], cfg: ValidityConfig) -> tuple[dict, list[str]]:
    """The numbers and hard reasons of an answerable case given its source text (``vec``: text → unit vector)."""
    q, ref = case.get("query") or "", reference_text(case)
    reasons: list[str] = []
    why = self_contained(q)
    if why:
        reasons.append(f"not_self_contained: {why}")
    bad = question_problem(q)
    if bad:
        reasons.append(f"malformed: {bad}")
    mismatch = answer_type_problem(q, ref)
    if mismatch:
        reasons.append(f"answer_type_mismatch: {mismatch}")
    reasons += reader_problems(q, case.get("reference_answer") or "", case.get("query_type"), cfg)
    sents = source_sentences(source, cfg.min_sentence_words)
    if not ref.strip():
        return {"support": 0.0, "round_trip": 0.0, "alignment": 0.0}, [*reasons, "reference_not_supported: no reference"]
    if not sents:  # nothing to check the reference against: not invalid, but not signed off either
        return {}, [*reasons, "unchecked: no source text to check the reference against"]
    sv = np.stack([vec(s) for s in sents])
    ref_cos = np.clip(sv @ vec(ref), -1.0, 1.0)
    ref_words = content_words(ref)
    ref_lex = np.array([lexical_recall(ref, s) for s in sents])
    support = max(float(lexical_recall(ref, source)), float(ref_cos.max()))
    focus, idf = focus_words(q), _idf(sents)
    q_score = np.clip(sv @ vec(q), -1.0, 1.0) + np.array([_recall(focus, s, idf) for s in sents])
    ranking = np.argsort(-q_score, kind="stable")  # the sentences an extractive reader would pick, best first
    top = ranking[: cfg.round_trip_k]
    round_trip = _recall(ref_words, " ".join(sents[i] for i in top)) if ref_words else float(ref_cos[top].max())
    anchor = int(np.argmax(ref_lex + ref_cos))
    # relative to the source's best sentence: words the question shares only with a heading (the product's name) do
    # not count against a reference whose sentence says "it"
    best_focus = max(_recall(focus, s_, idf) for s_ in sents)
    alignment = min(1.0, _recall(focus, sents[anchor] + " " + ref, idf) / best_focus) if best_focus > 0 else 1.0
    foreign = sorted(set(re.findall(r"\d+(?:[.,]\d+)*", ref)) - set(re.findall(r"\d+(?:[.,]\d+)*", source)))
    if support < cfg.min_support:
        reasons.append(f"reference_not_supported: support {support:.2f} < {cfg.min_support}")
    elif foreign:
        reasons.append(f"reference_not_supported: number(s) {foreign[:3]} not in the source")
    elif (how := contradicted_by(ref, source, min_overlap=0.8)) is not None:
        reasons.append(f"reference_contradicts_source: the source clause that restates the reference says the opposite ({how})")
    terms = comparison_terms(q)
    if terms and not all(_recall(t, case.get("reference_answer") or "") >= 0.5 for t in terms):
        reasons.append(f"comparison_incomplete: the question compares {' '.join(terms[0])!r} and {' '.join(terms[1])!r}; the reference does not name both")
    if case.get("query_type") == "yes_no":
        label = split_yes_no(case.get("reference_answer") or "")[0]
        said = reference_polarity(q, source)
        if label and said and said != label:
            reasons.append(f"polarity_contradicts_source: reference says {label!r}, the source says {said!r}")
    checks = {"support": support, "round_trip": float(round_trip), "alignment": float(alignment), "anchor_rank": float(int(np.flatnonzero(ranking == anchor)[0]) + 1)}
    return checks, reasons


def combine(checks: dict, reasons: list[str], cfg: ValidityConfig) -> Validity:
    """Score and verdict from the checks and reasons (``HARD`` reasons cap the score and make it invalid)."""
    w = (cfg.w_support, cfg.w_round_trip, cfg.w_alignment)
    parts = (checks.get("support", 1.0), checks.get("round_trip", 1.0), checks.get("alignment", 1.0))  # absent: not checked
    score = float(np.dot(w, np.clip(parts, 0.0, 1.0)) / sum(w))
    hard = [r for r in reasons if r.split(":", 1)[0] in HARD]
    if hard:
        score = min(score, cfg.hard_cap)
    elif reasons:
        score = min(score, SOFT_CAP)
    verdict = "invalid" if hard or score < cfg.invalid_below else "valid" if score >= cfg.valid_at and not reasons else "unsure"
    if verdict == "unsure" and not reasons:
        reasons = [f"weak: support {parts[0]:.2f}, round trip {parts[1]:.2f}, alignment {parts[2]:.2f}"]
    return Validity(score=round(score, 4), verdict=verdict, reasons=reasons, checks={k: round(float(v), 4) for k, v in checks.items()})


def is_answerable(case: dict) -> bool:
    return (case.get("expected_behavior") or "answer") == "answer" and bool((case.get("reference_answer") or "").strip())
