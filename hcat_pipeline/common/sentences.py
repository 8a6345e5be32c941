"""Sentences and answer terms of a chunk: the readers the golden-set generator and the exam generator share.

``sentences(text)`` — readable sentences (code / table lines dropped, 6-40 words); ``terms(sentence)`` — candidate
answer terms (quoted, ``code``, *emphasis*, versions and numbers) in order; ``shape(term)`` — a coarse type of a term
(dunder, call, exception, version, number, dotted, camel, operator, identifier, phrase), so a distractor or a swapped
variant is the same kind of thing as the key.
"""

from __future__ import annotations

import re

_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'*`(\[A-Z])")
_ABBREV = re.compile(r"\b(e\.g|i\.e|etc|cf|vs|resp)\.", re.I)
_FOOTNOTE = re.compile(r"^\[\d+\]\s*")
_TERMS = (
    re.compile(r'"([^"\n]{1,48})"'),  # "quoted" (pydoc text renders code this way)
    re.compile(r"`([^`'\n]{1,48})'(?!\w)"),  # `quoted' (TeX-style quotes of plain-text manuals and licences)
    re.compile(r"``?([^`\n]{1,48})``?"),  # `code` / ``code`` (Markdown / reST)
    re.compile(r"(?<![\w*])\*([A-Za-z][^*\n]{0,40})\*(?!\*)"),  # *emphasis*
    re.compile(r"\b(\d+(?:\.\d+)+|\d{2,})\b"),  # versions and numbers of two or more digits
)
_MARKUP = re.compile(r"^\s*(>>>|\.\.\.|[|+][-=+|]*|[-=]{3,})")
_TRIVIAL = {"a", "an", "the", "x", "y", "i", "n", "s", "self", "obj", "object", "value", "key", "args", "kwargs"}


_RULE = re.compile(r"^\s*[-=*~^#+]{3,}\s*$")
_SECTION_NUMBER = re.compile(r"^\s*(?:(?:chapter|section|part|appendix)\s+)?(?:[0-9]+|[IVXLC]+|[A-Z])(?:\.[0-9]+)*\.?\s+(?=\S)", re.I)
_NAVIGATION = re.compile(r"^(?:<<<?\s*)?(?:prev(?:ious)?|next|up|home|top|contents|table of contents|index|search)(?:\s*>>>?)?$", re.I)
MAX_HEADING_WORDS = 14


def is_heading(paragraph: str) -> bool:
    """A heading, caption or navigation line rather than prose: one short line (at most ``MAX_HEADING_WORDS`` words)
    that does not end a sentence ("Basic Concepts", "2.3. Using aptitude", "Next >>>"), or a line underlined by a
    rule (reST / pydoc: "Common Sequence Operations" over "*****")."""
    lines = [ln.strip() for ln in (paragraph or "").strip().splitlines() if ln.strip()]
    if not lines:
        return False
    if len(lines) >= 2 and _RULE.match(lines[1]) and not _RULE.match(lines[0]):
        return True
    if len(lines) != 1:
        return False
    line = lines[0]
    return bool(_NAVIGATION.match(line)) or (len(line.split()) <= MAX_HEADING_WORDS and not re.search(r"[.!?:;,]['\"”’)]*$", line))


def clean_heading(heading: str) -> str:
    """A heading as a title: whitespace folded, rule lines and a leading section number ("2.3.", "Chapter 2.") removed."""
    first = next((ln for ln in (heading or "").splitlines() if ln.strip() and not _RULE.match(ln)), "")
    return _SECTION_NUMBER.sub("", " ".join(first.split())).strip()


def paragraphs(text: str) -> list[tuple[int, str]]:
    """(offset, paragraph) of the blank-line separated paragraphs of ``text``."""
    out = []
    for m in re.finditer(r"\S(?:.*?)(?=\n[ \t]*\n|\Z)", text or "", re.S):
        out.append((m.start(), m.group(0)))
    return out


def headings(text: str) -> list[tuple[int, str]]:
    """(offset, title) of the headings of a document (``is_heading``, navigation lines left out), titles cleaned."""
    out = []
    for offset, para in paragraphs(text):
        if is_heading(para) and not _NAVIGATION.match(para.strip()):
            title = clean_heading(para)
            if title and len(title) > 1:
                out.append((offset, title))
    return out


def title_at(heads: list[tuple[int, str]], start: int, end: int, default: str | None = None) -> str | None:
    """The title of the text span [start, end): the last heading at or before ``start``, else the first one inside
    the span, else ``default`` (the document's title)."""
    before = [t for o, t in heads if o <= start]
    if before:
        return before[-1]
    inside = [t for o, t in heads if start < o < end]
    return inside[0] if inside else default


def sentences(text: str) -> list[str]:
    """Readable sentences of a chunk: paragraph by paragraph (a sentence never runs over a paragraph break), headings,
    captions and navigation dropped (``is_heading``), whitespace folded, code / table lines dropped, 6-40 words."""
    out = []
    for _, para in paragraphs(text):
        if is_heading(para):
            continue
        lines = [ln for ln in para.splitlines() if not _MARKUP.match(ln)]
        flat = " ".join(" ".join(lines).split())
        protected = _ABBREV.sub(lambda m: m.group(0).replace(".", "\x00"), flat)
        for s in _SENT_SPLIT.split(protected):
            s = _FOOTNOTE.sub("", s.replace("\x00", ".").strip())
            n = len(s.split())
            if 6 <= n <= 40 and s[-1:] in ".!?" and (s[0].isupper() or s[0] in "\"'*`") and s.count('"') % 2 == 0:
                out.append(s)
    return out


# (shape, pattern), first match wins: the order puts specific shapes before general ones
_SHAPES = (
    ("dunder", re.compile(r"__\w+__(\(.*\))?")),
    ("call", re.compile(r"[\w.]+\(.*\)")),
    ("exception", re.compile(r"[A-Z]\w*(Error|Exception|Warning|Exit|Iteration|Interrupt)")),
    ("version", re.compile(r"\d+(\.\d+)+")),
    ("number", re.compile(r"-?\d+")),
    ("dotted", re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")),
    ("camel", re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+")),
    ("operator", re.compile(r"[^\w\s]{1,4}")),
    ("identifier", re.compile(r"[A-Za-z_]\w*")),
)
_PHRASE = re.compile(r"[\w' -]+")


def shape(term: str) -> str:
    """A coarse type of a term, so that a distractor is the same kind of thing as the key."""
    t = term.strip()
    for name, pattern in _SHAPES:
        if pattern.fullmatch(t):
            return name
    return "phrase" if 2 <= len(t.split()) <= 6 and _PHRASE.fullmatch(t) else "other"


def terms(sentence: str) -> list[str]:
    """Candidate answer terms of a sentence, in order of appearance, each once."""
    found: list[tuple[int, str]] = []
    for pattern in _TERMS:
        for m in pattern.finditer(sentence):
            t = m.group(1).strip()
            if t and t.lower() not in _TRIVIAL and shape(t) != "other" and not t.startswith(("\\", "%")) and "' " not in t:
                found.append((m.start(1), t))
    return list(dict.fromkeys(t for _, t in sorted(found)))
