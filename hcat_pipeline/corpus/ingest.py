"""Reading documents into the ``corpus`` table; bad input becomes rows of ``ingest_errors``.

Pure functions: paths in, polars frames out. A bad file (empty, binary, non-UTF-8, oversized,
malformed, unsupported) never stops the rest; it is reported with its path (and line) and reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import polars as pl

from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.schemas import CORPUS as CORPUS_SCHEMA
from hcat_pipeline.schemas import INGEST_ERRORS as ERRORS_SCHEMA

SUPPORTED_SUFFIXES = (".txt", ".md", ".html", ".htm", ".jsonl", ".pdf")



def doc_id_for(text: str) -> str:
    """Stable document id: the content hash (SHA-256 of the UTF-8 text, 16 hex digits)."""
    return short_hash(text, n=16)


_TERMINAL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|.\x08")  # ANSI escapes; "x\bx" overstrike (man pages)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def printable_text(text: str) -> str:
    """``text`` without terminal formatting (ANSI escape sequences, backspace overstrike: a man page saved from a
    terminal) and control characters other than newline and tab — which no question or answer should carry."""
    return _CONTROL.sub("", _TERMINAL.sub("", text))


@dataclass
class IngestResult:
    documents: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)

    def add_doc(self, text: str, source: str, title: str, metadata: dict | None = None) -> None:
        text = printable_text(text)
        self.documents.append(
            {
                "doc_id": doc_id_for(text),
                "source": source,
                "title": title,
                "text": text,
                "metadata": json.dumps(metadata or {}, sort_keys=True, ensure_ascii=False),
            }
        )

    def add_error(self, file: str, reason: str, line: int | None = None, size: int | None = None) -> None:
        self.errors.append({"file": file, "line": line, "reason": reason, "size_bytes": size})

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame, int]:
        """(corpus, ingest_errors, duplicates_dropped); documents are deduplicated by doc_id."""
        seen: set[str] = set()
        docs = []
        for d in self.documents:
            if d["doc_id"] in seen:
                continue
            seen.add(d["doc_id"])
            docs.append(d)
        corpus = pl.DataFrame(docs, schema=CORPUS_SCHEMA).sort("source", "doc_id")
        errors = pl.DataFrame(self.errors, schema=ERRORS_SCHEMA).sort("file", "line", nulls_last=False)
        return corpus, errors, len(self.documents) - len(docs)


def load_pydoc_topics(result: IngestResult) -> None:
    """The embedded default corpus: the Python language reference help topics shipped with CPython."""
    from pydoc_data.topics import topics

    for key in sorted(topics):
        text = topics[key].strip()
        if not text:
            continue
        title = text.splitlines()[0].strip() or key
        result.add_doc(text, source=f"pydoc_data.topics:{key}", title=title, metadata={"topic": key})


class _HTMLText(HTMLParser):
    """Text of an HTML page with its structure kept out of the sentences: every block element (headings, paragraphs,
    list items, table cells, definition terms) its own paragraph, so a heading becomes a line of its own (the chunk's
    title, ``common.sentences.headings``) instead of the first words of the next sentence; navigation (``<nav>``,
    header / footer, DocBook ``navheader`` / ``navfooter``, Sphinx ``related`` / ``sphinxsidebar`` / ``headerlink``,
    breadcrumbs, skip links), captions, scripts and styles dropped; a superscript is written after "^" and a subscript
    after "_", so "2<sup>32</sup>" reads 2^32, not 232. Tested on Sphinx and DocBook pages."""

    _SKIP = {"script", "style", "noscript", "template", "nav", "header", "footer", "caption", "figcaption", "button", "select"}
    _SKIP_CLASS = re.compile(r"\b(?:navheader|navfooter|navigation|nav|related|sphinxsidebar\w*|headerlink|breadcrumbs?|"
                             r"skip-?link|toc|footer|header|copyright|sidebar|menu|searchbox)\b", re.I)
    _VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}
    _BLOCK = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "td", "th", "pre", "section", "article", "table",
              "dt", "dd", "dl", "ul", "ol", "blockquote", "hr", "main", "aside", "figure", "address", "body"}

    _SCRIPT = {"sup": "^", "sub": "_"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip: list[str] = []  # open skipped elements (their tags), innermost last
        self._in_title = False
        self._pre = 0  # inside <pre>: line breaks are the text's own

    def handle_starttag(self, tag, attrs):
        if self._skip:
            if tag not in self._VOID:
                self._skip.append(tag)
            return
        cls = " ".join(v or "" for k, v in attrs if k in ("class", "role", "id"))
        if tag in self._SKIP or (cls and self._SKIP_CLASS.search(cls) and tag not in self._VOID):
            self._skip.append(tag)
        elif tag == "title":
            self._in_title = True
        elif tag in self._SCRIPT:  # "2<sup>32</sup>" is 2^32, not "232" (issue 68: "modulo-232" in a reference)
            self.parts.append(self._SCRIPT[tag])
        elif tag in self._BLOCK:
            self._pre += tag == "pre"
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if self._skip:
            if tag in self._skip:  # close up to the matching open tag (lenient about unclosed inner tags)
                while self._skip and self._skip.pop() != tag:
                    pass
            return
        if tag == "title":
            self._in_title = False
        elif tag in self._BLOCK:
            self._pre -= tag == "pre" and self._pre > 0
            self.parts.append("\n\n")

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data if self._pre else re.sub(r"\s+", " ", data))  # source line breaks are not the text's

    def text(self) -> str:
        raw = "".join(self.parts)
        raw = re.sub(r"[ \t\r\f\v]+", " ", raw)
        return re.sub(r"\n\s*\n+", "\n\n", raw).strip()


def _decode(data: bytes) -> str:
    """UTF-8 text or ValueError with the reason (binary content / invalid byte position)."""
    if b"\x00" in data[:8192]:
        raise ValueError("binary content (NUL bytes), not a text document")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"not valid UTF-8: byte 0x{data[e.start]:02x} at offset {e.start}") from None


def _title_from_text(text: str, fallback: str) -> str:
    for line in text.splitlines():
        s = line.strip().lstrip("#").strip()
        if s:
            return s[:200]
    return fallback


def read_file(path: Path, result: IngestResult, root: Path, max_bytes: int) -> None:
    rel = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    suffix = path.suffix.lower()
    try:
        size = path.stat().st_size
    except OSError as e:
        result.add_error(rel, f"cannot stat: {e.strerror}")
        return
    if suffix not in SUPPORTED_SUFFIXES:
        result.add_error(rel, f"unsupported file type '{suffix or '(none)'}' (supported: {', '.join(SUPPORTED_SUFFIXES)})", size=size)
        return
    if size == 0:
        result.add_error(rel, "empty file", size=0)
        return
    if size > max_bytes:
        result.add_error(rel, f"oversized: {size} bytes > limit {max_bytes}", size=size)
        return
    try:
        data = path.read_bytes()
    except OSError as e:
        result.add_error(rel, f"cannot read: {e.strerror}", size=size)
        return
    source = f"file:{rel}"
    if suffix == ".pdf":
        _read_pdf(data, rel, source, result, size)
        return
    try:
        text = _decode(data)
    except ValueError as e:
        result.add_error(rel, str(e), size=size)
        return
    if suffix == ".jsonl":
        _read_jsonl(text, rel, source, result, size)
        return
    if suffix in (".html", ".htm"):
        parser = _HTMLText()
        try:
            parser.feed(text)
            parser.close()
        except Exception as e:  # html.parser is lenient; anything raised is malformed input
            result.add_error(rel, f"malformed HTML: {e}", size=size)
            return
        body, title = parser.text(), parser.title.strip()
    else:
        body, title = text.strip(), ""
    if not body.strip():
        result.add_error(rel, "no text content (whitespace or markup only)", size=size)
        return
    result.add_doc(body, source, title or _title_from_text(body, path.stem), {"path": rel, "format": suffix[1:]})


def _read_jsonl(text: str, rel: str, source: str, result: IngestResult, size: int) -> None:
    good = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            result.add_error(rel, f"malformed JSON: {e.msg} (column {e.colno})", line=lineno, size=size)
            continue
        if not isinstance(obj, dict):
            result.add_error(rel, f"expected a JSON object, got {type(obj).__name__}", line=lineno, size=size)
            continue
        body = obj.get("text")
        if not isinstance(body, str) or not body.strip():
            result.add_error(rel, "missing or empty 'text' field", line=lineno, size=size)
            continue
        title = obj.get("title") if isinstance(obj.get("title"), str) else _title_from_text(body, f"{rel}:{lineno}")
        meta = {k: v for k, v in obj.items() if k not in ("text", "title")}
        meta.update({"path": rel, "line": lineno, "format": "jsonl"})
        result.add_doc(body.strip(), f"{source}:{lineno}", title, meta)
        good += 1
    if good == 0 and not any(e["file"] == rel for e in result.errors):
        result.add_error(rel, "no documents (all lines blank)", size=size)


def _read_pdf(data: bytes, rel: str, source: str, result: IngestResult, size: int) -> None:
    import io

    try:
        from pypdf import PdfReader

        reader = PdfReader(io.BytesIO(data))
        pages = [(p.extract_text() or "") for p in reader.pages]
    except Exception as e:  # pypdf raises many types for damaged files
        result.add_error(rel, f"unreadable PDF: {type(e).__name__}: {e}", size=size)
        return
    body = "\n\n".join(p.strip() for p in pages if p.strip())
    if not body:
        result.add_error(rel, "PDF has no extractable text (scanned image?)", size=size)
        return
    title = ""
    try:
        title = (reader.metadata.title or "") if reader.metadata else ""
    except Exception:
        title = ""
    result.add_doc(body, source, title or _title_from_text(body, Path(rel).stem), {"path": rel, "format": "pdf", "pages": len(pages)})


_GLOB = re.compile(r"[*?\[]")


def expand_paths(paths, base: Path | None = None) -> tuple[list[tuple[Path, Path]], list[tuple[str, str]]]:
    """(files as (path, root it is reported relative to), problems as (entry, reason)) of the campaign file's corpus
    ``paths``: a folder (every non-hidden file below it), a file, or a glob (``docs/**/*.html``); relative entries are
    taken from ``base``. An entry that matches nothing is a problem, not an empty corpus. Sorted, each file once."""
    out: dict[Path, Path] = {}
    problems: list[tuple[str, str]] = []
    for entry in paths:
        p = Path(entry).expanduser()
        p = p if p.is_absolute() or base is None else Path(base) / p
        if _GLOB.search(str(entry)):
            anchor = Path(p.anchor or ".")
            matches = [m for m in anchor.glob(str(p.relative_to(anchor))) if m.is_file()]
            found = [(m, m.parent) for m in matches]
        elif p.is_dir():
            found = [(f, p) for f in p.rglob("*") if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts)]
        elif p.is_file():
            found = [(p, p.parent)]
        else:
            found = []
        if not found:
            problems.append((str(entry), f"matches no file ({p})"))
        for f, root in found:
            out.setdefault(f.resolve(), root)
    return sorted(out.items()), problems


def ingest(
    include_embedded: bool = True,
    drop_folder: Path | None = None,
    max_file_bytes: int = 20_000_000,
    paths=(),
    base: Path | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """Build (corpus, ingest_errors, duplicates_dropped) from the chosen sources: the embedded reference, the drop
    folder and the campaign file's ``paths`` (``expand_paths``; an entry matching nothing is an ingest error)."""
    result = IngestResult()
    if include_embedded:
        load_pydoc_topics(result)
    if drop_folder is not None and Path(drop_folder).is_dir():
        root = Path(drop_folder)
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            if any(part.startswith(".") for part in path.relative_to(root).parts):
                continue  # hidden files (.gitkeep, editor swap files)
            read_file(path, result, root, max_file_bytes)
    files, problems = expand_paths(paths, base)
    for entry, reason in problems:
        result.errors.append({"file": entry, "line": None, "reason": reason, "size_bytes": None})
    for path, root in files:
        read_file(path, result, root, max_file_bytes)
    return result.frames()
