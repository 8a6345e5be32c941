"""HCAT §2 step 5.4, query selection: keep the generated queries that are fit to be test cases.

A query is rejected with one reason (the first check it fails, in ``REJECTION_REASONS`` order) and a detail:
``llm_failed`` / ``no_partner`` (nothing usable generated); ``type_mismatch`` (yes/no question not starting
with an auxiliary or without a yes/no answer; multiple choice without four distinct, non-yes/no options;
an open type that is a yes/no question); ``mc_key_not_in_options``; degenerate: ``too_short`` / ``too_long``
(also an open answer copying the passage) / ``empty_answer`` / ``answer_leaked``; ``copies_prompt_example``
(a few-shot question of its template handed back); ``low_relevancy`` (cosine to the source chunk);
yes/no and multiple choice: ``evidence_too_short`` / ``evidence_not_in_source`` (the explanation);
``polarity_contradicts_explanation`` ("No. A format specification can be empty.") /
``polarity_contradicts_source`` (negation mismatch with the source sentence restating the question);
``mc_key_contradicts_evidence`` (the evidence supports another option); ``reference_not_supported`` (the
reference, or the keyed option, neither similar to a source sentence nor made of its words);
``reference_contradicts_source`` (a source clause restates the reference with the opposite negation);
``multi_hop_single_source``; ``near_duplicate`` (of an already kept query). Added by ``golden.grounded.validity_gate``
for grounded rows (stage "validity"): ``no_referent`` (the question leans on its text or names nothing specific),
``roundtrip_disagrees`` (the generator answering from the source chunk alone disagrees with the reference),
``case_invalid`` (the golden set's validity does not accept it), ``yes_no_quota`` (yes/no beyond a third of a stratum), ``yes_no_balance`` (more "Yes" than "No" cases).

Polarity (``reference_polarity``) is lexical: the clause of a statement that restates the question's
proposition (≥ ``POLARITY_COVERAGE`` of its content words, light stemming) answers "yes" unless it
negates it (not / no / never / cannot / n't …, a negating prefix such as im-mutable, an antonym).
It abstains (None) when no clause restates the proposition, so only clear contradictions reject.

Embeddings come from an ``embed(list[str]) -> np.ndarray`` callable (L2-normalised rows).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hcat_pipeline.common.text import STOPWORDS
from hcat_pipeline.corpus.chunking import split_sentences
from hcat_pipeline.golden.generation import few_shot_questions, prompt_name

AUXILIARIES = (
    "is", "are", "am", "was", "were", "do", "does", "did", "can", "could", "will", "would", "should",
    "shall", "has", "have", "had", "may", "might", "must", "isn't", "aren't", "doesn't", "don't", "can't",
)  # fmt: skip
WH_WORDS = ("what", "which", "who", "whom", "whose", "when", "where", "why", "how", "in which", "for what", "under what")
_WORD = re.compile(r"[A-Za-z0-9_]+")

REJECTION_REASONS = (
    "llm_failed", "no_partner", "type_mismatch", "mc_key_not_in_options", "too_short", "too_long", "empty_answer", "answer_leaked",
    "copies_prompt_example", "low_relevancy", "evidence_too_short", "evidence_not_in_source", "polarity_contradicts_explanation",
    "polarity_contradicts_source", "mc_key_contradicts_evidence", "reference_not_supported", "reference_contradicts_source",
    "multi_hop_single_source", "near_duplicate", "no_referent", "roundtrip_disagrees", "case_invalid", "yes_no_quota", "yes_no_balance",
)  # fmt: skip


@dataclass(frozen=True)
class SelectionConfig:
    min_relevancy: float = 0.30
    min_answer_support: float = 0.55  # cosine(answer, best source sentence)
    min_lexical_support: float = 0.70  # share of the answer's content words found in the sources
    min_evidence_overlap: float = 0.80  # yes/no + MC: the evidence must be (nearly) copied from a source…
    min_evidence_similarity: float = 0.85  # …or be this similar to a source sentence
    min_evidence_words: int = 3  # yes/no + MC: content words in the evidence ("Yes. A" explains nothing)
    min_hop_relevancy: float = 0.20  # multi-hop: cosine(query+answer, each chunk)
    max_duplicate_similarity: float = 0.92
    min_query_words: int = 4
    max_query_words: int = 60
    max_answer_words: int = 120
    max_answer_passage_ratio: float = 0.8  # open types: an answer this share of the passage's length just copies it…
    min_copied_passage_words: int = 25  # …when it is at least this long


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text or "")]


def stem(w: str) -> str:
    """A light stem: a trailing ing / ed / es / s dropped when three letters stay."""
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in STOPWORDS]


def lexical_recall(part: str, whole: str) -> float:
    """Share of ``part``'s content words that occur in ``whole`` (1.0 when ``part`` has none)."""
    cw = content_words(part)
    if not cw:
        return 1.0
    pool = set(words(whole))
    return sum(w in pool for w in cw) / len(cw)


def is_yes_no_question(query: str) -> bool:
    first = (words(query) or [""])[0]
    return first in AUXILIARIES or query.strip().lower().split(" ", 1)[0] in AUXILIARIES


# ---------------------------------------------------------------- yes/no polarity of a statement
POLARITY_COVERAGE = 0.75  # share of the proposition's content words a clause must restate
NEGATIONS = frozenset({"not", "no", "never", "none", "nothing", "neither", "nor", "nobody", "nowhere"})
_NEG_PREFIXES = ("non", "un", "in", "im", "il", "ir")
_ANTONYM_PAIRS = (
    ("true", "false"), ("allowed", "forbidden"), ("required", "optional"), ("mandatory", "optional"),
    ("enabled", "disabled"), ("same", "different"), ("include", "exclude"), ("possible", "impossible"),
    ("minimum", "maximum"), ("increases", "decreases"), ("synchronous", "asynchronous"), ("local", "global"),
)  # fmt: skip (not before / after, faster / slower: a relation read from its other side is not a flip)
_ANTONYMS = {a: b for x, y in _ANTONYM_PAIRS for a, b in ((x, y), (y, x))}
_POLARITY_STOP = STOPWORDS | NEGATIONS | frozenset(AUXILIARIES) | frozenset(
    "be been being there any some also just only very it they them their he she we you i".split()
)
_CLAUSE_SPLIT = re.compile(r"[;:]|,\s*|\s+(?:but|whereas|although|though|because)\s+", re.I)  # not "while": a keyword here
_TOKEN = re.compile(r"[a-z0-9_]+(?:'[a-z]+)?")


def polarity_tokens(text: str) -> list[str]:
    """Lower-case tokens with contractions opened (can't → can not, isn't → is not, cannot → can not)."""
    out: list[str] = []
    for t in _TOKEN.findall(re.sub(r"(?<=\d),(?=\d{3}\b)", "", (text or "").lower().replace("’", "'"))):  # 1,000 = 1000
        t = {"can't": "cann't", "cannot": "cann't", "won't": "willn't"}.get(t, t)
        out += [t[:-3], "not"] if t.endswith("n't") else [t.split("'", 1)[0]]
    return out


def _stem(w: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and not w.endswith("ss") and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    return w[:-1] if w.endswith("e") and len(w) > 3 else w


def _flip_of(word: str, others: set[str]) -> str | None:
    """The word of ``others`` that ``word`` negates by prefix (im-mutable) or antonym, if any."""
    if word in _ANTONYMS and _ANTONYMS[word] in others:
        return _ANTONYMS[word]
    for p in _NEG_PREFIXES:
        base = word[len(p) :].lstrip("-")
        if word.startswith(p) and len(base) >= 4 and base in others:
            return base
        if len(word) >= 4 and (p + word in others or f"{p}-{word}" in others):
            return p + word
    return None


def _number_flip(missing: set[str], extra: set[str]) -> int:
    """1 when the proposition states a number the unit does not and the unit states another ("Is the default size 32
    megabytes?" against "The default size is 16 megabytes."): the number is the claim, and it is not the one stated."""
    return int(any(w.isdigit() for w in missing) and any(w.isdigit() for w in extra))


def _units(statement: str) -> list[str]:
    """Clauses and sentences of ``statement`` (clauses first: the smallest unit that restates a claim wins ties)."""
    sents = split_sentences(statement) or [statement]
    clauses = [c for s in sents for c in _CLAUSE_SPLIT.split(s) if c and c.strip()]
    return list(dict.fromkeys([*clauses, *sents]))


def _relative_polarity(prop: list[str], statement: str, coverage: float, min_matched: int, min_content: int = 1) -> str | None:
    """"yes" / "no": the unit of ``statement`` that best restates the proposition ``prop`` (tokens) asserts / negates it."""
    content = {w for w in prop if w not in _POLARITY_STOP}
    if len(content) < max(1, min_content):
        return None
    prop_negs = sum(w in NEGATIONS for w in prop)
    best = None
    for unit in _units(statement):
        toks = polarity_tokens(unit)
        words_, stems = set(toks), {_stem(w) for w in toks}
        direct = {w for w in content if w in words_ or _stem(w) in stems}
        flips = sum(_flip_of(w, words_) is not None for w in content - direct) + _number_flip(content - direct, words_ - content)
        matched = len(direct) + flips
        if matched < min(min_matched, len(content)) or matched / len(content) < coverage:
            continue
        key = (matched / len(content), -flips, -len(toks))  # a unit restating it as stated beats one that flips it, length last
        if best is None or key > best[0]:
            negs = sum(w in NEGATIONS for w in toks)
            best = (key, (negs - prop_negs + flips) % 2)
    return None if best is None else ("no" if best[1] else "yes")


def split_yes_no(reference: str) -> tuple[str | None, str]:
    """("yes" | "no" | None, explanation) of a yes/no reference such as "No. Strings are immutable."."""
    m = re.match(r"\s*(yes|no)\b[\s.,;:!-]*", reference or "", re.I)
    return (m.group(1).lower(), reference[m.end() :].strip()) if m else (None, (reference or "").strip())


def reference_polarity(question: str, statement: str, coverage: float = POLARITY_COVERAGE) -> str | None:
    """Does ``statement`` answer the yes/no ``question`` with "yes" or "no"? None when it cannot tell.

    The question's proposition is its words after the leading auxiliary ("Can a format specification be
    empty?" → format specification empty). The clause (or sentence) of ``statement`` that restates at least
    ``coverage`` of its content words answers "yes", unless it negates it: an odd number of negation words
    beyond the question's own, a negating prefix (mutable / immutable) or an antonym (required / optional).
    A leading "Yes" / "No" of ``statement`` is ignored (``split_yes_no`` reads it). Self-contained and lexical.
    """
    toks = polarity_tokens(question)
    if toks and toks[0] in AUXILIARIES:
        toks = toks[1:]
    if toks[:1] == ["not"]:
        toks = toks[1:]  # "Isn't X …?" asks the same proposition as "Is X …?"
    if toks[:3] == ["it", "true", "that"]:
        toks = toks[3:]
    return _relative_polarity(toks, split_yes_no(statement)[1], coverage, min_matched=2)


def negation_mismatch(claim: str, source_text: str, coverage: float = 0.8, min_matched: int = 3) -> bool:
    """True when a clause of ``source_text`` restates a clause of ``claim`` (≥ ``coverage`` of its content words, at
    least ``min_matched``) with the opposite negation ("X is mutable" vs "X is not mutable" / "X is immutable")."""
    clauses = [c for s in split_sentences(claim) or [claim] for c in _CLAUSE_SPLIT.split(s) if c and c.strip()]
    return any(_relative_polarity(polarity_tokens(c), source_text, coverage, min_matched, min_matched) == "no" for c in clauses)


def check_type(row: dict) -> str | None:
    """Why the query does not conform to its declared type, or None."""
    q = (row.get("query") or "").strip()
    qtype = row["query_type"]
    if qtype == "yes_no":
        if not is_yes_no_question(q):
            return f"yes/no query does not start with an auxiliary verb: {q[:40]!r}"
        if row.get("answer_label") not in ("yes", "no"):
            return "yes/no query without a yes/no answer"
        return None
    if is_yes_no_question(q) and qtype != "multiple_choice":
        return f"{qtype} query is a yes/no question"
    if qtype == "multiple_choice":
        options = [o.strip() for o in row.get("options") or []]
        if len(options) != 4 or any(not o for o in options):
            return f"multiple choice needs 4 non-empty options, got {len(options)}"
        if len({o.lower() for o in options}) != len(options):
            return "multiple-choice options are not distinct"
        lowered = {o.lower().strip(". ") for o in options}
        if lowered <= {"yes", "no", "true", "false"} or {"yes", "no"} <= lowered:
            return "multiple-choice options are yes/no answers"
        return None
    if not (q.endswith("?") or (words(q) and q.lower().startswith(WH_WORDS))):
        return f"{qtype} query is not a question"
    return None


def check_mc_key(row: dict) -> str | None:
    """Why the multiple-choice key is not among the options (index out of range, or a reference that is no option), or None."""
    options = [o.strip() for o in row.get("options") or []]
    idx = row.get("correct_index")
    if idx is None or not 0 <= idx < len(options):
        return f"key index {idx} is not among the {len(options)} options"
    ref = (row.get("reference_answer") or "").strip()
    if ref and ref.lower() != options[idx].lower():
        return f"reference {ref[:40]!r} is not the keyed option {'ABCD'[idx]} {options[idx][:40]!r}"
    return None


def check_degenerate(row: dict, cfg: SelectionConfig, source_text: str = "") -> tuple[str, str] | None:
    q = (row.get("query") or "").strip()
    ans = (row.get("reference_answer") or "").strip()
    n = len(words(q))
    if n < cfg.min_query_words:
        return "too_short", f"{n} words"
    if n > cfg.max_query_words:
        return "too_long", f"{n} words"
    if not ans:
        return "empty_answer", "no reference answer"
    if len(words(ans)) > cfg.max_answer_words:
        return "too_long", f"answer has {len(words(ans))} words"
    if row["query_type"] in ("simple", "multi_hop", "inference") and source_text:
        n_ans, n_src = len(words(ans)), len(words(source_text))
        if n_ans >= cfg.min_copied_passage_words and n_ans >= cfg.max_answer_passage_ratio * n_src:
            return "too_long", f"the answer copies the passage ({n_ans} of {n_src} words)"
    if row["query_type"] in ("simple", "multi_hop", "inference"):
        a, qq = " ".join(words(ans)), " ".join(words(q))
        if len(words(ans)) >= 2 and a in qq:
            return "answer_leaked", "the answer is written in the question"
        if len(content_words(ans)) >= 3 and lexical_recall(ans, q) >= 0.9:
            return "answer_leaked", f"{lexical_recall(ans, q):.2f} of the answer's content words are in the question"
    if row["query_type"] == "multiple_choice":
        correct = row["options"][row["correct_index"]]
        if len(words(correct)) >= 2 and " ".join(words(correct)) in " ".join(words(q)):
            return "answer_leaked", "the correct option is written in the question"
    return None


def check_yes_no_polarity(row: dict, source_text: str) -> tuple[str, str] | None:
    """(reason, detail) when a yes/no reference's yes/no contradicts its own explanation or the source, else None."""
    label = row.get("answer_label") or split_yes_no(row.get("reference_answer") or "")[0]
    explanation = row.get("evidence") or split_yes_no(row.get("reference_answer") or "")[1]
    said = reference_polarity(row["query"], explanation)
    if said and said != label:
        return "polarity_contradicts_explanation", f"answer {label!r} but the explanation says {said!r}: {explanation[:80]!r}"
    by_source = reference_polarity(row["query"], source_text)
    if by_source and by_source != label:
        return "polarity_contradicts_source", f"answer {label!r} but the source says {by_source!r}"
    return None


def _cos_max(a: np.ndarray, b: np.ndarray) -> float:
    """Largest cosine of ``a`` with the rows of ``b`` (unit rows; clipped: float32 gives 1.0000001 for a text with itself)."""
    return min(float((b @ a).max()), 1.0) if len(b) else 0.0


def select_queries(rows: list[dict], chunk_texts: dict[str, str], embed: Callable[[list[str]], np.ndarray], cfg: SelectionConfig | None = None):
    """Split generated rows into (kept, rejections). Kept rows gain ``relevancy`` and ``answer_support``.

    Rows are examined in the given order; a near-duplicate of an earlier kept query is rejected.
    """
    cfg = cfg or SelectionConfig()
    kept: list[dict] = []
    rejections: list[dict] = []

    def reject(row, reason, detail):
        rejections.append(
            {
                "query_id": row["query_id"], "query_type": row["query_type"], "chunk_id": row["chunk_id"],
                "source_chunk_ids": list(row["source_chunk_ids"]), "query": row.get("query"),
                "reference_answer": row.get("reference_answer"), "stage": "selection" if not row.get("error") else "generation",
                "reason": reason, "detail": detail,
            }
        )  # fmt: skip

    candidates = []
    for row in rows:
        if row.get("error"):
            reason = row["error"].split(":", 1)[0]
            reject(row, reason if reason in REJECTION_REASONS else "llm_failed", row["error"])
            continue
        problem = check_type(row)
        if problem:
            reject(row, "type_mismatch", problem)
            continue
        if row["query_type"] == "multiple_choice":
            problem = check_mc_key(row)
            if problem:
                reject(row, "mc_key_not_in_options", problem)
                continue
        deg = check_degenerate(row, cfg, "\n".join(chunk_texts.get(c, "") for c in row["source_chunk_ids"]))
        if deg:
            reject(row, *deg)
            continue
        candidates.append(row)
    examples = {r["query_id"]: few_shot_questions(r.get("prompt_name") or prompt_name(r["query_type"])) for r in candidates}
    if not candidates:
        return kept, rejections

    # embed everything once: queries, answers/evidence, options, source chunks and their sentences
    sent_of: dict[str, list[str]] = {cid: split_sentences(chunk_texts[cid]) or [chunk_texts[cid]] for r in candidates for cid in r["source_chunk_ids"]}
    texts: list[str] = []
    for r in candidates:
        texts += [r["query"], r["reference_answer"], r["query"] + " " + r["reference_answer"], r.get("evidence") or r["reference_answer"]]
        texts += [*(r.get("options") or []), *examples[r["query_id"]]]
    for cid, sents in sent_of.items():
        texts += [chunk_texts[cid], *sents]
    uniq = list(dict.fromkeys(texts))
    vecs = embed(uniq)
    vec = {t: vecs[i] for i, t in enumerate(uniq)}

    kept_vecs: list[np.ndarray] = []
    kept_ids: list[str] = []
    for r in candidates:
        src_ids = r["source_chunk_ids"]
        qv = vec[r["query"]]
        chunk_vecs = np.stack([vec[chunk_texts[c]] for c in src_ids])
        sent_vecs = np.stack([vec[s] for c in src_ids for s in sent_of[c]])
        source_text = "\n".join(chunk_texts[c] for c in src_ids)
        copied = max((float(vec[e] @ qv) for e in examples[r["query_id"]]), default=0.0)
        if copied >= cfg.max_duplicate_similarity:
            reject(r, "copies_prompt_example", f"similarity {copied:.3f} to a few-shot example question of the prompt")
            continue
        relevancy = _cos_max(qv, chunk_vecs)
        if relevancy < cfg.min_relevancy:
            reject(r, "low_relevancy", f"relevancy {relevancy:.3f} < {cfg.min_relevancy}")
            continue
        qtype = r["query_type"]
        if qtype in ("yes_no", "multiple_choice"):
            ev = r.get("evidence") or ""
            if len(content_words(ev)) < cfg.min_evidence_words:
                reject(r, "evidence_too_short", f"evidence {ev[:40]!r} has {len(content_words(ev))} content words < {cfg.min_evidence_words}")
                continue
            ev_overlap = lexical_recall(ev, source_text)
            ev_sim = _cos_max(vec[ev or r["reference_answer"]], sent_vecs)
            support = max(ev_overlap, ev_sim)
            if ev_overlap < cfg.min_evidence_overlap and ev_sim < cfg.min_evidence_similarity:
                reject(r, "evidence_not_in_source", f"evidence not found in the source (overlap {ev_overlap:.2f} < {cfg.min_evidence_overlap}, "
                       f"similarity {ev_sim:.2f} < {cfg.min_evidence_similarity})")  # fmt: skip
                continue
            if qtype == "yes_no":
                problem = check_yes_no_polarity(r, source_text)
                if problem:
                    reject(r, *problem)
                    continue
            else:
                ev_vec = vec[ev or r["reference_answer"]]
                scores = [float(vec[o] @ ev_vec) + lexical_recall(o, ev) for o in r["options"]]
                best = int(np.argmax(scores))
                if best != r["correct_index"]:
                    reject(r, "mc_key_contradicts_evidence", f"evidence supports option {'ABCD'[best]}, not the key {'ABCD'[r['correct_index']]}")
                    continue
                key = r["options"][best]
                key_sim, key_lex = _cos_max(vec[key], sent_vecs), lexical_recall(key, ev + "\n" + source_text)
                if key_sim < cfg.min_answer_support and key_lex < cfg.min_lexical_support:
                    reject(r, "reference_not_supported", f"key {key[:40]!r}: similarity {key_sim:.2f}, word overlap {key_lex:.2f}")
                    continue
        else:
            sim = _cos_max(vec[r["reference_answer"]], sent_vecs)
            lex = lexical_recall(r["reference_answer"], source_text)
            support = max(sim, lex)
            if sim < cfg.min_answer_support and lex < cfg.min_lexical_support:
                reject(r, "reference_not_supported", f"answer similarity {sim:.2f} < {cfg.min_answer_support} and word overlap {lex:.2f} < {cfg.min_lexical_support}")
                continue
            if negation_mismatch(r["reference_answer"], source_text):
                reject(r, "reference_contradicts_source", "a source sentence restates the reference with the opposite negation")
                continue
        if qtype == "multi_hop":
            qa = vec[r["query"] + " " + r["reference_answer"]]
            per_chunk = chunk_vecs @ qa
            if len(src_ids) < 2 or float(per_chunk.min()) < cfg.min_hop_relevancy:
                reject(r, "multi_hop_single_source", f"relevancy per chunk {np.round(per_chunk, 3).tolist()} (min {cfg.min_hop_relevancy})")
                continue
        if kept_vecs:
            sims = np.stack(kept_vecs) @ qv
            j = int(np.argmax(sims))
            if sims[j] >= cfg.max_duplicate_similarity:
                reject(r, "near_duplicate", f"similarity {sims[j]:.3f} to {kept_ids[j]}")
                continue
        kept_vecs.append(qv)
        kept_ids.append(r["query_id"])
        kept.append({**r, "relevancy": relevancy, "answer_support": float(support)})
    return kept, rejections


def rejection_counts(rejections: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in rejections:
        counts[r["reason"]] = counts.get(r["reason"], 0) + 1
    return dict(sorted(counts.items()))
