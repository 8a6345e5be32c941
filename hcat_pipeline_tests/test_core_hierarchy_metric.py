"""Hierarchical consistency (concept-level chapter §14.3) as a registered opt-in metric (metrics/hierarchy.py): the
answer's sections / lists read as a tree, alignment / redundancy / contradiction with their explanations, computed
through score_frame like every metric; values checked against cosines worked by hand."""

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.metrics.hierarchy import answer_hierarchy
from hcat_pipeline.metrics.registry import MetricUnavailable, default_metrics, opt_in_metrics
from hcat_pipeline.metrics.scoring import score_frame

ANSWER = """Opening an account takes three steps.
- Check eligibility
- Confirm eligibility
- Sign the agreement"""
# root R; children A, B, C.  cos(A, R) = 0.8, cos(B, R) = 0.6 (< 0.70: drift), cos(C, R) = 0.8;
# cos(A, B) = 0.96 (≥ 0.90: redundant; ≥ 0.5: same topic), cos(A, C) = 0.64 (same topic), cos(B, C) = 0.48
VEC = {"Opening an account takes three steps.": (1.0, 0.0, 0.0), "Check eligibility": (0.8, 0.6, 0.0),
       "Confirm eligibility": (0.6, 0.8, 0.0), "Sign the agreement": (0.8, 0.0, 0.6)}  # fmt: skip


def fake_embed(texts):
    return np.array([VEC.get(t, (0.0, 0.0, 1.0)) for t in texts], dtype=np.float32)


class FakeNLI:
    """Contradiction 0.9 for the pair (A, C) in either direction, 0.1 for any other."""

    def decision(self, *a, **k):  # the resource probe
        return None

    def contradiction(self, premises, hypotheses):
        pair = {"Check eligibility", "Sign the agreement"}
        return np.array([0.9 if {p, h} == pair else 0.1 for p, h in zip(premises, hypotheses)])


def _frame(answers, queries=None):
    n = len(answers)
    return pl.DataFrame({"query": queries or ["How do I open an account?"] * n, "contexts": [["ctx"]] * n, "answer": answers})


def test_the_answer_is_read_as_a_tree_of_sections_and_items():
    listed = answer_hierarchy("Three steps.\n1. Check eligibility:\n   - be 18\n   - live here\n2. Sign.", "q")
    assert listed["text"] == "Three steps." and listed["structure"] == "list"
    assert [c["text"] for c in listed["children"]] == ["Check eligibility:", "Sign."]
    assert [c["text"] for c in listed["children"][0]["children"]] == ["be 18", "live here"]
    headed = answer_hierarchy("## Fees\nNo monthly fee.\n## Interest\nPaid monthly.", "What does it cost?")
    assert headed["text"] == "What does it cost?" and headed["structure"] == "headings"  # no lead: the question is the root
    assert [c["text"] for c in headed["children"]] == ["Fees No monthly fee.", "Interest Paid monthly."]
    assert answer_hierarchy("Just prose. Two sentences.", "q") is None
    assert answer_hierarchy("Intro.\n- a single item", "q") is None  # fewer than two sections / items
    assert answer_hierarchy(None, "q") is None


def test_the_metric_scores_alignment_redundancy_and_contradiction_with_explanations():
    assert "hierarchical_consistency" in opt_in_metrics() and "hierarchical_consistency" not in default_metrics()
    out, info = score_frame(_frame([ANSWER, "Plain prose answer."]), ["hierarchical_consistency"], embed=fake_embed, nli=FakeNLI())
    row, prose = out.row(0, named=True), out.row(1, named=True)
    mean_alignment = (0.8 + 0.6 + 0.8) / 3
    assert row["hierarchical_consistency"] == pytest.approx(mean_alignment * 0.95, abs=1e-6)  # one redundant pair: −5 %
    assert row["hierarchy_alignment_min"] == pytest.approx(0.6, abs=1e-6) and row["hierarchy_drifting"] == ["Confirm eligibility"]
    assert [(p["element_a"], p["element_b"]) for p in row["hierarchy_redundant_pairs"]] == [("Check eligibility", "Confirm eligibility")]
    assert row["hierarchy_redundant_pairs"][0]["similarity"] == pytest.approx(0.96, abs=1e-6)
    assert [(c["section_a"], c["section_b"]) for c in row["hierarchy_contradictions"]] == [("Check eligibility", "Sign the agreement")]
    assert row["hierarchy_contradictions"][0]["contradiction_probability"] == pytest.approx(0.9)
    assert "drift" in row["hierarchy_explanation"] and "redundant" in row["hierarchy_explanation"] and "contradiction" in row["hierarchy_explanation"]
    assert row["hierarchy_structure"] == "list"
    # prose: the metric does not apply — null, and said
    assert prose["hierarchical_consistency"] is None and prose["hierarchy_structure"] == "none"
    assert info["metrics_computed"] == ["hierarchical_consistency"]


def test_without_an_nli_model_it_is_unavailable_not_silently_partial():
    with pytest.raises(MetricUnavailable, match="nli"):
        score_frame(_frame([ANSWER]), ["hierarchical_consistency"], embed=fake_embed)


def test_the_score_is_floored_at_zero():
    from hcat_pipeline.metrics.similarity import hierarchical_consistency_report

    items = [f"item {k}" for k in range(8)]  # 8 identical siblings: 28 redundant pairs → 1 − 1.4 < 0
    report = hierarchical_consistency_report({"text": "root", "children": items}, lambda t: np.ones((len(t), 3)))
    assert len(report["redundant_pairs"]) == 28 and report["consistency_score"] == 0.0


@pytest.mark.slow
def test_real_models_find_the_contradicting_sections(embedding_model):
    from hcat_pipeline.resources.nli import NLIModel

    answer = ("Here is what the current account costs.\n## Monthly fee\nThe current account has no monthly fee.\n"
              "## Charges\nThe current account charges a monthly fee of 5 euros.\n## Overdraft\nAn overdraft is available on request.")  # fmt: skip
    out, _ = score_frame(_frame([answer], ["What does the current account cost?"]), ["hierarchical_consistency"],
                         embed=embedding_model.embed, nli=NLIModel())  # fmt: skip
    row = out.row(0, named=True)
    pairs = {frozenset((c["section_a"], c["section_b"])) for c in row["hierarchy_contradictions"]}
    assert frozenset(("Monthly fee The current account has no monthly fee.", "Charges The current account charges a monthly fee of 5 euros.")) in pairs
    assert 0.0 < row["hierarchical_consistency"] <= 1.0 and row["hierarchy_structure"] == "headings"
