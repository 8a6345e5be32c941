"""HCAT §2 step 5.4, query selection: keep the generated queries that are fit to be test cases.

A query is rejected, with one reason (the first check it fails, in this order) and a detail:

* ``llm_failed`` / ``no_partner`` — nothing usable was generated (kept from the generation row);
* ``type_mismatch`` — it does not conform to its declared type (a yes/no question must start with
  an auxiliary verb and have a yes/no answer; a multiple-choice one has four distinct options with
  exactly one correct; open types must not be yes/no questions);
* ``too_short`` / ``too_long`` / ``empty_answer`` / ``answer_leaked`` — degenerate (an open answer that
  copies the whole passage counts as ``too_long``);
* ``low_relevancy`` — cosine(query, source chunk) below ``min_relevancy``;
* ``unsupported_answer`` — the reference answer (yes/no and multiple choice: the evidence and the
  correct option) is not supported by the source chunks;
* ``multi_hop_single_source`` — a multi-hop query that does not draw on each of its chunks;
* ``near_duplicate`` — embedding similarity to an already kept query ≥ ``max_duplicate_similarity``.

Embeddings come from an ``embed(list[str]) -> np.ndarray`` callable (L2-normalised rows).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hcat_pipeline.core.chunking import split_sentences

AUXILIARIES = (
    "is", "are", "am", "was", "were", "do", "does", "did", "can", "could", "will", "would", "should",
    "shall", "has", "have", "had", "may", "might", "must", "isn't", "aren't", "doesn't", "don't", "can't",
)  # fmt: skip
WH_WORDS = ("what", "which", "who", "whom", "whose", "when", "where", "why", "how", "in which", "for what", "under what")
_WORD = re.compile(r"[A-Za-z0-9_]+")
STOPWORDS = frozenset(
    "a an the of to in on for and or is are be by with as it its that this these those from at was were can "
    "does do when which what how why who not no yes if then than so such into".split()
)

REJECTION_REASONS = (
    "llm_failed", "no_partner", "type_mismatch", "too_short", "too_long", "empty_answer", "answer_leaked",
    "low_relevancy", "unsupported_answer", "multi_hop_single_source", "near_duplicate",
)  # fmt: skip


@dataclass(frozen=True)
class SelectionConfig:
    min_relevancy: float = 0.30
    min_answer_support: float = 0.55  # cosine(answer, best source sentence)
    min_lexical_support: float = 0.70  # share of the answer's content words found in the sources
    min_evidence_overlap: float = 0.80  # yes/no + MC: the evidence must be (nearly) copied from a source
    min_hop_relevancy: float = 0.20  # multi-hop: cosine(query+answer, each chunk)
    max_duplicate_similarity: float = 0.92
    min_query_words: int = 4
    max_query_words: int = 60
    max_answer_words: int = 120
    max_answer_passage_ratio: float = 0.8  # open types: an answer this share of the passage's length just copies it…
    min_copied_passage_words: int = 25  # …when it is at least this long


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text or "")]


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
        idx = row.get("correct_index", -1)
        if idx is None or not 0 <= idx < len(options):
            return "multiple choice without exactly one correct option"
        if {o.lower().strip(". ") for o in options} <= {"yes", "no", "true", "false"}:
            return "multiple-choice options are yes/no"
        return None
    if not (q.endswith("?") or (words(q) and q.lower().startswith(WH_WORDS))):
        return f"{qtype} query is not a question"
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


def _cos_max(a: np.ndarray, b: np.ndarray) -> float:
    return float((b @ a).max()) if len(b) else 0.0


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
        deg = check_degenerate(row, cfg, "\n".join(chunk_texts.get(c, "") for c in row["source_chunk_ids"]))
        if deg:
            reject(row, *deg)
            continue
        candidates.append(row)
    if not candidates:
        return kept, rejections

    # embed everything once: queries, answers/evidence, options, source chunks and their sentences
    sent_of: dict[str, list[str]] = {cid: split_sentences(chunk_texts[cid]) or [chunk_texts[cid]] for r in candidates for cid in r["source_chunk_ids"]}
    texts: list[str] = []
    for r in candidates:
        texts += [r["query"], r["reference_answer"], r["query"] + " " + r["reference_answer"], r.get("evidence") or r["reference_answer"]]
        texts += list(r.get("options") or [])
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
        relevancy = float((chunk_vecs @ qv).max())
        if relevancy < cfg.min_relevancy:
            reject(r, "low_relevancy", f"relevancy {relevancy:.3f} < {cfg.min_relevancy}")
            continue
        qtype = r["query_type"]
        if qtype in ("yes_no", "multiple_choice"):
            ev = r.get("evidence") or ""
            ev_overlap = lexical_recall(ev, source_text)
            ev_sim = _cos_max(vec[ev or r["reference_answer"]], sent_vecs)
            support = max(ev_overlap, ev_sim)
            if ev_overlap < cfg.min_evidence_overlap and ev_sim < 0.85:
                reject(r, "unsupported_answer", f"evidence not found in the source (overlap {ev_overlap:.2f}, similarity {ev_sim:.2f})")
                continue
            if qtype == "multiple_choice":
                ev_vec = vec[ev]
                scores = [float(vec[o] @ ev_vec) + lexical_recall(o, ev) for o in r["options"]]
                best = int(np.argmax(scores))
                if best != r["correct_index"]:
                    reject(r, "unsupported_answer", f"evidence supports option {'ABCD'[best]}, not the declared {'ABCD'[r['correct_index']]}")
                    continue
        else:
            sim = _cos_max(vec[r["reference_answer"]], sent_vecs)
            lex = lexical_recall(r["reference_answer"], source_text)
            support = max(sim, lex)
            if sim < cfg.min_answer_support and lex < cfg.min_lexical_support:
                reject(r, "unsupported_answer", f"answer similarity {sim:.2f} < {cfg.min_answer_support} and word overlap {lex:.2f} < {cfg.min_lexical_support}")
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
