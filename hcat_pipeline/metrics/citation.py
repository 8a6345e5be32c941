"""Attribution and citation quality (golden-eval §10.3, CITATION_QUALITY), per answer sentence, explained.

A system that cites marks its sentences with the passages they come from: ``[2]``, ``[1, 3]``, ``[Source 2]`` (the
passage's 1-based rank among the row's retrieved contexts, as the reference systems' ``rag_cited_v1`` prompt and most
RAG services number them) or ``[<chunk id>]`` (an id among the row's ``context_chunk_ids``). For each answer sentence
(markers removed; a marker standing alone after a full stop belongs to the sentence before it):

* it *needs* a citation when it makes a claim — at least ``MIN_CLAIM_WORDS`` content words, not a question, not a
  refusal ("I don't know based on the provided context" needs none);
* it is *supported by its citations* when the NLI head (``resources.nli``, the validated groundedness head, with the
  row's grounding task as groundedness_nli: qa by default) entails it from the cited passages together (σ(D) ≥
  ``SUPPORTED``, the head's decision boundary);
* a citation is *relevant* (ALCE's citation precision) when its passage alone supports the sentence, or the sentence is
  supported by all its citations and no longer without this one; a marker naming no retrieved passage is not.

Per answer: ``citation_presence`` (share of claim sentences with a citation), ``citation_recall`` (share of claim
sentences supported by their citations), ``citation_precision`` (share of citations that are relevant; null when the
answer cites nothing), and ``citation_sentences`` — one line per sentence saying which of these it met and why. An
answer with no claim, or a row without retrieved passages, gets nulls (nothing to attribute).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hcat_pipeline.metrics.nli.api import content_tokens
from hcat_pipeline.metrics.refusal import is_refusal
from hcat_pipeline.metrics.registry import STR_LIST, metric

MIN_CLAIM_WORDS = 3
SUPPORTED = 0.5  # σ(D) at D = 0: the NLI head's decision boundary
_NUMBERS = re.compile(r"\[\s*(?:(?:source|passage|doc(?:ument)?|ref|context)\s*)?#?(\d{1,2}(?:\s*[,;&]\s*(?:and\s+)?\d{1,2})*)\s*\]", re.I)
_ID = re.compile(r"\[([A-Za-z0-9][\w:.#/-]{2,100})\]")
_NUM = re.compile(r"\d{1,2}")
_LEADING = re.compile(r"^\s*(?:\[[^\]\n]{1,100}\]\s*)+")


@dataclass
class Cited:
    """One answer sentence: its text without markers, the passages (0-based) it cites and the markers naming none."""

    text: str
    passages: list[int] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)

    @property
    def needs(self) -> bool:
        return len(content_tokens(self.text)) >= MIN_CLAIM_WORDS and not self.text.rstrip().endswith("?") and not is_refusal(self.text)


def markers(sentence: str, n_passages: int, ids: list[str] | None) -> tuple[str, list[int], list[str]]:
    """(sentence without markers, cited passage indices (0-based, in order, unique), markers naming no passage)."""
    cited, dangling = [], []
    for m in _NUMBERS.finditer(sentence):
        for k in map(int, _NUM.findall(m.group(1))):
            (cited.append(k - 1) if 1 <= k <= n_passages else dangling.append(f"[{k}]"))
    index = {cid: j for j, cid in enumerate(ids or [])}
    for m in _ID.finditer(_NUMBERS.sub(" ", sentence)):
        if m.group(1) in index:
            cited.append(index[m.group(1)])
        elif ids is not None and not m.group(1).isalpha():  # "[note]"-like words are prose, not a citation
            dangling.append(f"[{m.group(1)}]")
    text = _ID.sub(lambda m: "" if m.group(1) in index else m.group(0), _NUMBERS.sub("", sentence))
    return re.sub(r"\s+([.,;:!?])", r"\1", re.sub(r"\s{2,}", " ", text)).strip(), list(dict.fromkeys(cited)), dangling


def has_citation(answer: str | None) -> bool:
    """Whether an answer carries a numbered citation marker ("[2]", "[Source 1]"): a system that shows one cites."""
    return bool(_NUMBERS.search(answer or ""))


def cited_sentences(sentences: list[str], n_passages: int, ids: list[str] | None = None) -> list[Cited]:
    """The answer's sentences with their citations. Markers after a full stop belong to the sentence before them (the
    splitter puts "Fee applies. [1] Rates vary." as "[1] Rates vary."): a sentence's leading markers go back one."""
    out: list[Cited] = []
    for s in sentences:
        lead = _LEADING.match(s)
        if lead and out:
            _, back, back_dangling = markers(lead.group(0), n_passages, ids)
            out[-1].passages = list(dict.fromkeys(out[-1].passages + back))
            out[-1].dangling += back_dangling
            s = s[lead.end():]
        text, cited, dangling = markers(s, n_passages, ids)
        if out and not re.search(r"\w", text):
            out[-1].passages = list(dict.fromkeys(out[-1].passages + cited))
            out[-1].dangling += dangling
        elif re.search(r"\w", text):
            out.append(Cited(text, cited, dangling))
    return out


def _premise(batch, i: int, passages: list[int]) -> tuple[str, ...]:
    return tuple(s for j in passages for s in batch.split(batch.contexts[i][j]))


def _support_pairs(rows: dict[int, list[Cited]], batch, task) -> set[tuple[str, tuple[str, ...], str]]:
    """(grounding task, premise sentences, hypothesis) for every support question the rows ask."""
    pairs = set()
    for i, sents in rows.items():
        for c in sents:
            if not c.needs or not c.passages:
                continue
            t = task(i)
            pairs.add((t, _premise(batch, i, c.passages), c.text))
            for j in c.passages:
                pairs.add((t, _premise(batch, i, [j]), c.text))
                if len(c.passages) > 1:
                    pairs.add((t, _premise(batch, i, [k for k in c.passages if k != j]), c.text))
    return pairs


def _explain(c: Cited, supported: bool | None, relevant: list[bool]) -> str:
    head = f"«{c.text[:80]}{'…' if len(c.text) > 80 else ''}»"
    if not c.needs:
        return f"{head}: no claim, no citation needed"
    if not c.passages:
        return f"{head}: needs a citation, has none" + (f" (cites {', '.join(c.dangling)}: no such passage)" if c.dangling else "")
    cites = ", ".join(f"[{j + 1}]" for j in c.passages)
    bad = [f"[{j + 1}]" for j, ok in zip(c.passages, relevant) if not ok] + c.dangling
    return f"{head} {cites}: {'supported' if supported else 'NOT supported'} by its citations" + (f"; irrelevant: {', '.join(bad)}" if bad else "")


def citation_scores(batch, resources, default_task: str) -> dict[str, list]:
    """The three citation figures and the per-sentence explanation of every row (module doc); the NLI pairs of each
    grounding task (the row's ``task``, else the call's, as groundedness_nli) scored in one call."""
    rows = {i: cited_sentences(batch.split(batch.answers[i]), len(batch.contexts[i]), batch.context_ids[i])
            for i in batch.valid if batch.contexts[i]}  # fmt: skip
    task = lambda i: batch.tasks[i] or default_task  # noqa: E731
    pairs = sorted(_support_pairs(rows, batch, task))
    scored: dict[tuple[str, tuple[str, ...], str], float] = {}
    for t in sorted({p[0] for p in pairs}):
        mine = [p for p in pairs if p[0] == t]
        out = resources.get("nli").decision([list(p) for _, p, _ in mine], [h for _, _, h in mine], task=t)
        scored.update({pair: float(s) for pair, s in zip(mine, out["sigma"], strict=True)})
    supports = lambda i, passages, text: scored[(task(i), _premise(batch, i, passages), text)] >= SUPPORTED  # noqa: E731
    cols = {k: batch.column() for k in ("citation_presence", "citation_recall", "citation_precision", "citation_sentences")}
    for i, sents in rows.items():
        claims = [c for c in sents if c.needs]
        lines, supported_n, relevant_n, citations_n = [], 0, 0, 0
        for c in sents:
            ok = c.needs and bool(c.passages) and supports(i, c.passages, c.text)
            rel = [supports(i, [j], c.text)
                   or (ok and len(c.passages) > 1 and not supports(i, [k for k in c.passages if k != j], c.text))
                   for j in c.passages] if c.needs else [True] * len(c.passages)  # fmt: skip
            supported_n += ok
            relevant_n += sum(rel)
            citations_n += len(c.passages) + len(c.dangling)
            lines.append(_explain(c, ok, rel))
        cols["citation_sentences"][i] = lines
        if claims:
            cols["citation_presence"][i] = sum(bool(c.passages) for c in claims) / len(claims)
            cols["citation_recall"][i] = supported_n / len(claims)
        cols["citation_precision"][i] = relevant_n / citations_n if citations_n else None
    return cols


def _one(name: str):
    def compute(batch, resources, options) -> dict[str, list]:
        got = batch.memo("citation", lambda: citation_scores(batch, resources, options.task))
        return {name: got[name], **({"citation_sentences": got["citation_sentences"]} if name == "citation_recall" else {})}

    compute.__qualname__ = f"citation.{name}"
    compute.__doc__ = {"citation_recall": "Citation recall (§10.3): share of claim sentences supported (NLI) by the passages they cite.",
                       "citation_precision": "Citation precision (§10.3, ALCE): share of citations whose passage supports its sentence.",
                       "citation_presence": "Citation presence (§10.3): share of claim sentences that cite a retrieved passage."}[name]
    return compute


metric("citation_recall", needs={"nli"}, columns={"citation_sentences": STR_LIST})(_one("citation_recall"))
metric("citation_precision", needs={"nli"})(_one("citation_precision"))
metric("citation_presence", needs={"nli"})(_one("citation_presence"))
