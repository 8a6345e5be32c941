"""The violation-match deck's headline figures (metrics/violation_figures.py): the match score per checker version
beside precision / recall / F1 of std_match and ha_match, with bootstrap CIs over texts; the rule-similarity backends."""

import json
import shutil

import numpy as np
import pytest

from hcat_pipeline.metrics.matching import MatchConfig, match_violations, word_jaccard
from hcat_pipeline.metrics.violation_figures import FigureOptions, figures_with_ci, text_counts
from hcat_pipeline.metrics.violation_files import evaluate_campaign
from hcat_pipeline.paths import DATA_DIR

VEC = {  # as test_core_matching's hand-worked example: cos(no promises, no guarantees) = 0.8, (be polite, no guarantees) = 0.6
    "no promises": (1.0, 0.0, 0.0), "no guarantees": (0.8, 0.6, 0.0), "be polite": (0.0, 1.0, 0.0),
    "promises returns": (0.0, 0.0, 1.0), "rude wording": (0.0, 0.0, 1.0), "say returns may vary": (0.0, 0.0, 1.0),
}


def fake_embed(texts):
    return np.array([VEC[t] for t in texts], dtype=np.float32)

PRED = [
    {"start": 0, "end": 10, "rule": "no promises", "category": "claims", "explanation": "promises returns"},
    {"start": 20, "end": 30, "rule": "be polite", "category": "tone", "explanation": "rude wording"},
    {"start": 0, "end": 10, "rule": "no guarantees", "category": "tone"},
]
GT = [
    {"start": 5, "end": 15, "rule": "no guarantees", "category": "claims", "explanation": "promises returns", "correction": "say returns may vary"},
    {"start": 22, "end": 40, "rule": "be polite", "category": "tone", "explanation": "rude wording"},
    {"start": 50, "end": 60, "rule": "no promises"},
]


def test_match_score_is_the_mean_weighted_score_of_the_matches():
    # test_core_matching's hand-worked example: std matches P2–G2 0.70 and P3–G1 1/6 + 0.5; ha matches 0.80 and 0.64
    r = match_violations(PRED, GT, fake_embed)
    counts = text_counts([""], [{**v, "text_id": ""} for v in PRED], [{**v, "text_id": ""} for v in GT], r.matches, r.ha_matches)
    f = figures_with_ci(counts)
    assert f["match_score"] == pytest.approx((0.70 + 1 / 6 + 0.5) / 2) and f["ha_match_score"] == pytest.approx((0.80 + 0.64) / 2)
    assert f["precision"] == pytest.approx(2 / 3) and f["recall"] == pytest.approx(2 / 3) and f["f1"] == pytest.approx(2 / 3)
    assert f["ha_f1"] == pytest.approx(r.ha_f1)
    # one text is one sample: no interval can be drawn from it
    assert f["samples"] == 1 and f["match_score_ci_low"] is None and f["f1_ci_high"] is None


def test_the_cis_resample_texts_are_seeded_and_narrow_with_more_texts():
    # per text: predicted, ground truth, TP, Σ score, ha TP, Σ ha score — 4 texts, 2 perfect, 2 missed entirely
    base = np.array([[1, 1, 1, 0.9, 1, 0.8], [2, 2, 2, 1.4, 2, 1.2], [1, 0, 0, 0, 0, 0], [0, 2, 0, 0, 0, 0]], dtype=float)
    f = figures_with_ci(base, FigureOptions(n_boot=2000, seed=7))
    assert f["precision"] == pytest.approx(3 / 4) and f["recall"] == pytest.approx(3 / 5) and f["f1"] == pytest.approx(6 / 9)
    assert f["match_score"] == pytest.approx(2.3 / 3) and f["ha_match_score"] == pytest.approx(2.0 / 3)
    for fig in ("precision", "recall", "f1", "match_score", "ha_f1"):
        assert f[f"{fig}_ci_low"] <= f[fig] <= f[f"{fig}_ci_high"], fig
    assert f["recall_ci_low"] < f["recall_ci_high"]  # texts differ: the interval is not a point
    assert figures_with_ci(base, FigureOptions(n_boot=2000, seed=7)) == f
    wide = f["f1_ci_high"] - f["f1_ci_low"]
    many = figures_with_ci(np.tile(base, (25, 1)), FigureOptions(n_boot=2000, seed=7))
    assert many["f1"] == pytest.approx(f["f1"]) and many["f1_ci_high"] - many["f1_ci_low"] < wide / 3
    with pytest.raises(ValueError, match="n_boot"):
        FigureOptions(n_boot=0)


def test_rule_similarity_backends_on_the_example_files():
    # data/violations: ex1's rules share one word of ten ("returns"): Jaccard 0.1, IoU 1 → 0.55, a match; the checker's
    # ex2 rule paraphrases one of the two true ones with no word in common: Jaccard 0 fails the 0.01 threshold (1 FP,
    # 2 FN); its ex3 violation is not in the ground truth (1 FP) → TP 1, FP 2, FN 2
    assert word_jaccard("Never guarantee returns on investments.", "Do not promise guaranteed investment returns.") == pytest.approx(0.1)
    summary, pairs, errors = evaluate_campaign(DATA_DIR / "violations", fake_embed_any, MatchConfig(rule_similarity="jaccard"))
    row = summary[0]
    assert not errors and row["rule_similarity"] == "jaccard"
    assert (row["tp"], row["fp"], row["fn"]) == (1, 2, 2) and row["f1"] == pytest.approx(1 / 3)
    assert row["match_score"] == pytest.approx(0.55) and row["samples"] == 3
    assert row["match_score_ci_low"] == pytest.approx(0.55) and row["match_score_ci_high"] == pytest.approx(0.55)  # one match
    assert row["f1_ci_low"] < 1 / 3 < row["f1_ci_high"]
    with pytest.raises(ValueError, match="needs rule_embed"):
        match_violations(PRED, GT, fake_embed, MatchConfig(rule_similarity="use_m3"))
    # use_m3: the rules go through rule_embed (here: every rule the same vector, similarity 1), explanations through
    # embed — P1–G1 now ties P3–G1 at 1/6 + 0.5 and wins the tie (lower index), where MiniLM-like vectors chose P3
    same = lambda texts: np.ones((len(texts), 3), dtype=np.float32) / np.sqrt(3)  # noqa: E731
    r = match_violations(PRED, GT, fake_embed, MatchConfig(rule_similarity="use_m3"), rule_embed=same)
    assert {(m["pred"], m["gt"]) for m in r.matches} == {(1, 1), (0, 0)}
    assert {(m["pred"], m["gt"]) for m in match_violations(PRED, GT, fake_embed).matches} == {(1, 1), (2, 0)}


def fake_embed_any(texts):
    """Explanations / corrections of the example files: a vector per distinct text (orthogonal, so similarity 0 or 1)."""
    order = {t: i for i, t in enumerate(sorted(set(texts)))}
    out = np.zeros((len(texts), max(1, len(order))), dtype=np.float32)
    for k, t in enumerate(texts):
        out[k, order[t]] = 1.0
    return out


def test_a_second_checker_version_gets_its_own_row(tmp_path):
    folder = tmp_path / "violations"
    shutil.copytree(DATA_DIR / "violations", folder)
    perfect = [json.loads(line) for line in (folder / "ground_truth.jsonl").read_text().splitlines()]
    (folder / "perfect@1.0.0.jsonl").write_text("\n".join(json.dumps(r) for r in perfect) + "\n")
    summary, _, _ = evaluate_campaign(folder, fake_embed_any, MatchConfig(rule_similarity="jaccard"))
    by = {r["checker_version"]: r for r in summary}
    assert set(by) == {"example-checker@0.1.0", "perfect@1.0.0"}
    p = by["perfect@1.0.0"]
    assert (p["tp"], p["fp"], p["fn"]) == (3, 0, 0) and p["f1"] == 1.0 and p["match_score"] == pytest.approx(1.0)
    assert p["ha_match_score"] == pytest.approx(1.0) and p["f1_ci_low"] == p["f1_ci_high"] == 1.0
