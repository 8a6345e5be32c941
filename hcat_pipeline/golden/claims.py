"""Claims: is a sentence a grammatical claim, and does the source say the opposite of it? (misleading premises, distractor passages, references.)

``claim_problem(claim)``: why a text is no self-standing sentence (a table / code fragment, no subject, no verb, ends
mid-phrase), or None. ``contradicted_by(claim, source)`` finds the source clauses that restate most of the claim's content words (the
best-overlapping ones, at least ``min_overlap``) and says how the best of them says the opposite: ``negation`` (one of
the two is negated), ``number`` (another number in its place) or ``antonym``; None when it agrees or none restates it.
Clauses are split at sentence ends, semicolons, commas, "and" / "but" / "while" joins, so the negation of a neighbouring
predicate ("costs 25 pounds and is not guaranteed to succeed") is not read as negating the claim.
"""

from __future__ import annotations

import re

from hcat_pipeline.common.lexicon import ANTONYMS
from hcat_pipeline.golden.selection import AUXILIARIES, NEGATIONS, content_words, polarity_tokens, words

_CLAUSE = re.compile(r"(?<=[.!?])\s+|;\s*|,\s+|,?\s+(?:and|but|while|whereas)\s+(?=(?:is|are|was|were|can|cannot|will|must|may|does|do|has|have|it|they|we|you)\b)")


_MARKUP = re.compile(r"\||\+[-=]{2,}|\(\d+\)\s*\(\d+\)|>>>|:::|^[^\w\"'`*(]|\s[-=]{3,}")
_SUBORDINATE = frozenset("if when whether because although though while since unless that which who".split())


def claim_problem(claim: str) -> str | None:
    """Why ``claim`` is not a grammatical, self-standing sentence, or None."""
    c = " ".join((claim or "").split())
    toks = words(c)
    if len(toks) < 4:
        return f"claim {c!r} has fewer than 4 words"
    if _MARKUP.search(c):
        return f"claim {c[:60]!r} is a table or code fragment"
    alpha = sum(t.isalpha() for t in toks) / len(toks)
    if alpha < 0.6:
        return f"claim {c[:60]!r} is mostly symbols or numbers ({alpha:.0%} words)"
    first = toks[0]
    if first in AUXILIARIES or first in ("not", "to", "and", "or", "but") or first in _SUBORDINATE:
        return f"claim {c[:60]!r} has no subject (starts with {first!r})"
    if not any(t in AUXILIARIES or t in ("not", "cannot") or (len(t) > 3 and t.endswith(("s", "ed")) and i > 0) for i, t in enumerate(toks)):
        return f"claim {c[:60]!r} has no verb"
    if toks[-1] in ("the", "a", "an", "of", "to", "and", "or", "in", "for", "with", "by", "is", "are"):
        return f"claim {c[:60]!r} ends mid-phrase"
    return None


_DOC_NOISE = re.compile(r"https?://|www\.|\*{3,}|::=|>>>|\b(?:Changed|New) in version\b|\bDeprecated since\b|\[\d+\]|^\(?e\.g\.|^\(", re.I)
_DEPENDENT_START = re.compile(
    r"^(?:note|see|for example|for instance|otherwise|also|alternatively|however|thus|therefore|similarly|likewise|in this case|in that case|"
    r"this|these|that|those|it|its|they|their|such|here|there|both|either|neither|an easy way|the former|the latter|notice|"
    r"return|returns|call|get|set|create|use|raise|remove|add|compare|convert|make)\b", re.I)
_GLUED = re.compile(
    r"[a-z0-9)\"”’'*]\.\*?\s*[A-Z]"  # "…future.* A cell object …": two sentences run together
    r"|\.\s+[a-z_][\w.]*\(|\)\s+[A-Z][a-z]+\s"  # a signature glued on: ". object.__getitem__(self)", "header=None) Enter the"
    r"|[a-z]\s+(?:The|A|An|This|These|In|It|For|If|When|Each|By|On|At|To|As|All|Some|Most|While|Since|Normally|Usually)\s"  # a heading
    # glued on: "Common Sequence Operations The operations", "Metaclasses By default"
    r"|[~=^-]{3,}|\s\d+\.$|\s\d+\.\s"  # rule lines and numbered steps ("… is invoked. 5.")
    r"|[a-z]:\s+[A-Z][a-z]+\s")  # a second sentence after a colon ("… at compile time: Changes to the semantics …")
_SEE_ELSEWHERE = re.compile(r"\bas indicated\b|\bsee\b[^.]*\b(?:above|below)\b|\b(?:described|shown|listed|explained) (?:above|below)\b", re.I)
_DEICTIC_THIS = re.compile(r"\b(?:of|by|to|with|for|from|on|in)\s+(?:this|that|these|those)\b(?!\s+[a-z]+(?:s|ion|ment|er|or)?\b(?<!\bis)(?<!\bare))|"
                           r"\b(?:this|these)\s+(?:is|are|was|were|means|allows|can|will|[,.;:])", re.I)


_IDENTIFIER_START = re.compile(r"[a-z][a-z0-9]*(?:[_\d][a-z0-9]*)+\s")  # pg_dump, x86_64: a name, not a fragment's word


_MAN_HEADINGS = re.compile(r"(?:NAME|SYNOPSIS|DESCRIPTION|OPTIONS|NOTES?|EXAMPLES?|ENVIRONMENT|FILES|BUGS|DIAGNOSTICS|AUTHORS?|USAGE|"
                           r"HISTORY|CAVEATS|WARNINGS?|EXIT STATUS|SEE ALSO|RETURN VALUES?|ERRORS|COMPATIBILITY|SECURITY)\s+[a-z]")


def _heading_run_in(s: str) -> bool:
    """A manual's section heading run into the sentence after it ("DESCRIPTION pg_dump is …", "EXIT STATUS pg_ctl …"),
    not an acronym starting a sentence ("ASCII characters are …")."""
    return bool(_MAN_HEADINGS.match(s))


def sentence_problem(sentence: str, min_words: int = 8, max_words: int = 40, identifier_start: bool = False) -> str | None:
    """Why ``sentence`` cannot stand alone as a reference or a claim a reviewer would sign, or None: ``claim_problem``
    plus documentation noise (URLs, heading rules, grammar productions, version notes, footnotes), a start that needs
    the previous sentence ("This", "It", "For example", "Note") or is an imperative without a subject ("Return a copy
    …"), two sentences run together, code-like text, and a length outside [min_words, max_words]. ``identifier_start``:
    a lower-case first word that is an identifier ("pg_dump", "x86_64": an underscore or a digit inside) starts
    a sentence of a manual, not a fragment."""
    s = " ".join((sentence or "").split())
    problem = claim_problem(s)
    if problem:
        return problem
    if not re.search(r"[.!?][\"'”’)]*$", s):
        return "does not end a sentence (cut at a chunk boundary?)"
    if not (s[:1].isupper() or s[:1] in "\"“'" or (identifier_start and _IDENTIFIER_START.match(s))):
        return f"starts mid-sentence ({s.split()[0]!r})"
    if s.count("(") != s.count(")"):
        return "unbalanced parentheses (cut from a longer sentence?)"
    n = len(s.split())
    if not min_words <= n <= max_words:
        return f"{n} words, outside [{min_words}, {max_words}]"
    if _DOC_NOISE.search(s):
        return "documentation noise (a URL, a heading rule, a grammar production, a version note or a footnote)"
    if _DEPENDENT_START.match(s.lstrip("\"'“*")):
        return f"starts with {s.split()[0]!r}: needs the sentence before it, or has no subject"
    if _GLUED.search(s[:-1]) or re.search(r"\s\d+\.$", s) or _heading_run_in(s):
        return "two sentences, a heading or a signature run together"
    if _SEE_ELSEWHERE.search(s):
        return "points elsewhere in the text ('see … below', 'as indicated')"
    if _DEICTIC_THIS.search(s):
        return "refers to 'this' / 'that' in the text before it"
    codey = sum(any(ch in tok for ch in "()[]{}=<>:") for tok in s.split()) / n
    if codey > 0.25:
        return f"code-like ({codey:.0%} of the tokens carry brackets or operators)"
    return None


_AUX = ("is", "are", "was", "were", "can", "could", "will", "would", "should", "must", "has", "have", "had", "does", "do", "did",
        "cannot")  # fmt: skip (not may / might: "May X be …?" reads as asking permission)
_PREPOSITIONS = frozenset({"in", "on", "at", "for", "with", "by", "from", "to", "after", "before", "during", "since", "under", "as"})
_CLAUSE_WORDS = frozenset({"that", "which", "who", "whom", "whose", "how", "what", "when", "where", "if", "whether", "because", "once",
                           "after", "before", "until", "unless", "although", "while", "whenever", "wherever"})
_DETERMINER = re.compile(r"^(?:the|a|an|each|every|all|most|some|any|no|this|these|its|their|modifying|calling|using)\b", re.I)


def _lower_first_word(toks: list[str]) -> bool:
    """Lower-case the subject's first word when it is an ordinary word ("Item *i*", "The value"), not a name ("Python",
    "Easy Saver", "CPython", a quoted term)."""
    first, nxt = toks[0], toks[1] if len(toks) > 1 else ""
    if _DETERMINER.match(first):
        return True
    return first.isalpha() and first[:1].isupper() and first[1:].islower() and not nxt[:1].isupper() and first not in _NAMES


_NAMES = frozenset({"Python", "Unicode", "Windows", "Linux", "Unix", "Mac", "macOS", "Java", "English", "European", "American"})


_ANAPHOR = re.compile(r"\b(?:they|them|their|theirs|these|those)\b", re.I)  # refers to something before the sentence: a question by rule has no antecedent


def _anaphor_first(statement: str, head_words: int = 6) -> bool:
    """A they / them / their / these / those among the first words: it points to the sentence before ("One can think of them as …"),
    not to a noun of its own sentence ("Claims … are rejected unless a director approves them")."""
    return bool(_ANAPHOR.search(" ".join((statement or "").split()[:head_words])))


MAX_YES_NO_WORDS = 25  # a longer yes/no question is rarely one a user would ask
_NOT = re.compile(r"\b(?:not|cannot|never)\b|n't\b", re.I)
_SECOND_CLAUSE = re.compile(r";|,\s+(?:however|but|whereas|while|and\s+(?:the|a|an|it|this|they|its)\b)", re.I)


def subject_split(statement: str) -> tuple[str, str, list[str]] | None:
    """(subject, auxiliary, the words after it) of a plain affirmative statement with a short subject (at most six
    words, no clause of its own) followed by an auxiliary; None otherwise. The subject's first word is lower-cased
    unless it is a name. Used to invert a statement into a question by rule."""
    s = " ".join((statement or "").split()).rstrip(" .")
    if _NOT.search(s) or _SECOND_CLAUSE.search(s):
        return None  # "Can X not be …?" has no clear yes; "Does X …, however Y …?" asks two things at once
    toks = s.split(" ")
    for i, tok in enumerate(toks[:7]):
        word = tok.lower().strip("\"'“”*")
        if "," in tok or ";" in tok or ":" in tok or word in _CLAUSE_WORDS or word in ("may", "might", "shall"):
            return None
        if word in _AUX and i >= 1:
            nxt = toks[i + 1].lower() if i + 1 < len(toks) else ""
            if word in ("has", "have", "had") and not (nxt in ("been", "not") or nxt.endswith(("ed", "en", "wn", "ne"))):
                return None  # "have" as the main verb ("The functions have arguments") is not inverted in English
            if toks[0].lower() in _PREPOSITIONS or toks[0].lower() in ("if", "when", "although", "though", "while", "because", "since", "unless"):
                return None  # "In this mode the account is closed": the subject is not at the start
            subject = " ".join(toks[:i])
            subject = subject[0].lower() + subject[1:] if _lower_first_word(toks[: i + 1]) else subject
            return subject, word, toks[i + 1 :]
    return None


GENERIC_NOUNS = frozenset(
    "value values result results return argument arguments function functions method methods object objects item items element "
    "elements parameter parameters field fields expression expressions name names type types string strings number numbers "
    "operation operations statement statements call calls instance instances class classes attribute attributes variable "
    "variables default defaults code data output input entry entries list key keys option options account customer fee size valid basic "
    "idea".split()
)


def generic_subject(subject: str) -> bool:
    """The subject names nothing a user could recognise on its own: determiners and generic nouns only ("the return
    value", "the result", "this method"), no literal, no name and no "of …" phrase. A question about it has no
    antecedent."""
    if re.search(r"[\"'`*“”()_]|\bof\b", subject) or any(w[:1].isupper() for w in subject.split()[1:]):
        return False
    words = [w.lower() for w in subject.split() if not _DETERMINER.match(w)]
    return bool(words) and all(w in GENERIC_NOUNS for w in words)


def yes_no_question(statement: str) -> str | None:
    """The yes/no question whose "yes" is ``statement``, by subject-auxiliary inversion ("The return value of "__str__()"
    must be a string object." → "Must the return value of "__str__()" be a string object?"); None when ``subject_split`` finds no short subject
    and auxiliary (the question would need a verb's base form; a subordinate clause first; a negated statement — a
    negated question has no clear "yes": ask the positive claim, whose answer is "No"; a second main clause), when the
    subject is generic (``generic_subject``) or the statement is longer than ``MAX_YES_NO_WORDS``."""
    parts = subject_split(statement)
    if (parts is None or len(" ".join((statement or "").split()).split()) > MAX_YES_NO_WORDS or generic_subject(parts[0])
            or _anaphor_first(statement)):
        return None
    subject, aux, rest = parts
    return f"{aux.capitalize()} {subject} {' '.join(rest)}?".replace("  ", " ")


_CONDITION = {"when": "When", "whenever": "When", "once": "When", "if": "Under what condition", "unless": "Under what condition"}
MAX_WH_PREDICATE_WORDS = 12


def wh_question(statement: str) -> str | None:
    """A "when" / "under what condition" question whose answer is the condition ``statement`` states ("A warning is
    printed to "sys.stderr" when an exception occurs in "__del__()"." → "When is a warning printed to "sys.stderr"?"),
    or a "what is" question for a definition of a definite subject ("The string argument passed to "eval()" is a code
    block." → "What is the string argument passed to "eval()"?"; "A non-empty return is a syntax error …" states a
    property of a kind, not a definition: no question). By rule, the reference is the statement itself; None when neither form
    applies or the subject is generic."""
    parts = subject_split(statement)
    if parts is None or generic_subject(parts[0]) or _anaphor_first(statement):
        return None
    subject, aux, rest = parts
    for k, tok in enumerate(rest):
        word = tok.lower().strip(",")
        if word in ("which", "that", "who", "whose", "where"):
            return None  # a relative clause: its "when" belongs to it, not to the statement
        if k >= 1 and word in _CONDITION and len(rest) - k >= 3:
            predicate = " ".join(rest[:k]).rstrip(",")
            if 1 <= len(predicate.split()) <= MAX_WH_PREDICATE_WORDS and not re.search(r"[,;:]|\b(?:and|or)\b", predicate):
                return f"{_CONDITION[word]} {aux} {subject} {predicate}?"
            return None
    if aux in ("is", "are") and rest and rest[0].lower() in ("a", "an", "one") and subject.lower().startswith("the ") and len(content_words(subject)) >= 2:
        return f"What {aux} {subject}?"
    return None


def clauses(source: str) -> list[str]:
    return [c.strip() for c in _CLAUSE.split(" ".join((source or "").split())) if c and c.strip()]


def _numbers(toks: list[str]) -> set[str]:
    return {t for t in toks if t.isdigit()}


def contradicted_by(claim: str, source: str, min_overlap: float = 0.5) -> str | None:
    cw = set(content_words(claim))
    if not cw:
        return None
    c_toks = polarity_tokens(claim)
    scored = [(len(cw & set(content_words(c))) / len(cw), c) for c in clauses(source)]
    best = max((o for o, _ in scored), default=0.0)
    if best < min_overlap:
        return None
    for overlap, clause in scored:
        if overlap < best:
            continue
        s_toks = polarity_tokens(clause)
        if sum(t in NEGATIONS for t in s_toks) % 2 != sum(t in NEGATIONS for t in c_toks) % 2:
            return "negation"
        if _numbers(c_toks) - _numbers(s_toks) and _numbers(s_toks) - _numbers(c_toks):
            return "number"
        if any(ANTONYMS.get(t, frozenset()) & set(s_toks) and t not in s_toks for t in c_toks):
            return "antonym"
    return None


# ------------------------------------------------------------------------------------------- readings of an ambiguous case
READING = "reading: "  # the constraint prefix of each reading an ambiguous case records (golden.categories)


def readings_of(case: dict) -> list[str]:
    """The readings an ambiguous case records in its constraints ("reading: Easy Saver account", …)."""
    return [c.split(":", 1)[1].strip() for c in case.get("constraints") or [] if c.startswith(READING.strip())]


def bare_name(text: str) -> str:
    """A name without its quotes, emphasis and call parentheses, lower-cased ('"__exit__()"' → "__exit__")."""
    return re.sub(r"[\"'`*“”()]", "", text or "").lower()
