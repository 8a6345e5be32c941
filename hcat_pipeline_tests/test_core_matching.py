import json

import numpy as np
import pytest

from hcat_pipeline.metrics.matching import MatchConfig, char_iou, match_violations
from hcat_pipeline.metrics.violation_files import evaluate_campaign, read_violation_file

VEC = {
    "no promises": (1.0, 0.0, 0.0),
    "no guarantees": (0.8, 0.6, 0.0),  # cos with "no promises" = 0.8
    "be polite": (0.0, 1.0, 0.0),  # cos with "no guarantees" = 0.6, with "no promises" = 0
    "promises returns": (0.0, 0.0, 1.0),
    "rude wording": (0.0, 0.0, 1.0),
    "say returns may vary": (0.0, 0.0, 1.0),
}


def fake_embed(texts):
    return np.array([VEC[t] for t in texts], dtype=np.float32)


def test_char_iou():
    assert char_iou(0, 10, 5, 15) == pytest.approx(5 / 15)  # |A∩B| = 5, |A∪B| = 10 + 10 − 5
    assert char_iou(0, 10, 10, 20) == 0.0  # touching spans share no character
    assert char_iou(3, 7, 3, 7) == 1.0
    assert char_iou(0, 0, 0, 0) == 0.0


def test_hand_worked_example():
    pred = [
        {"start": 0, "end": 10, "rule": "no promises", "category": "claims", "explanation": "promises returns"},  # P1
        {"start": 20, "end": 30, "rule": "be polite", "category": "tone", "explanation": "rude wording"},  # P2
        {"start": 0, "end": 10, "rule": "no guarantees", "category": "tone"},  # P3
    ]
    gt = [
        {"start": 5, "end": 15, "rule": "no guarantees", "category": "claims", "explanation": "promises returns", "correction": "say returns may vary"},  # G1
        {"start": 22, "end": 40, "rule": "be polite", "category": "tone", "explanation": "rude wording"},  # G2
        {"start": 50, "end": 60, "rule": "no promises"},  # G3: never predicted
    ]
    r = match_violations(pred, gt, fake_embed)
    # std_match = 0.5·IoU + 0.5·rule:
    #   P2–G2: IoU = 8/(10+18−8) = 0.4, rule 1.0 → 0.2 + 0.5 = 0.70
    #   P3–G1: IoU = 5/15 = 1/3,       rule 1.0 → 1/6 + 0.5 ≈ 0.667
    #   P1–G1: IoU = 1/3,              rule 0.8 → 1/6 + 0.4 ≈ 0.567 (G1 already taken by P3)
    #   every other pair has IoU 0 and fails the overlap threshold
    pairs = {(c["pred"], c["gt"]): c for c in r.pairs}
    assert pairs[(1, 1)]["match_score"] == pytest.approx(0.70)
    assert pairs[(2, 0)]["match_score"] == pytest.approx(1 / 6 + 0.5)
    assert pairs[(0, 0)]["match_score"] == pytest.approx(1 / 6 + 0.4)
    assert [(m["pred"], m["gt"]) for m in r.matches] == [(1, 1), (2, 0)]
    # TP = 2, FP = 1 (P1), FN = 1 (G3): precision 2/3, recall 2/3, F1 = 2·2/(2·2+1+1) = 2/3
    assert (r.tp, r.fp, r.fn) == (2, 1, 1)
    assert r.precision == pytest.approx(2 / 3) and r.recall == pytest.approx(2 / 3) and r.f1 == pytest.approx(2 / 3)
    # ha_match = 0.3·IoU + 0.3·rule + 0.1·category + 0.2·explanation + 0.1·correction:
    #   P2–G2: (0.3·0.4 + 0.3·1 + 0.1·1 + 0.2·1) / 0.9 = 0.80 (both corrections missing: not scored, never a free 1 —
    #          the other weights rescaled to the configured total 1.0)
    #   P1–G1: 0.3/3 + 0.3·0.8 + 0.1·1 + 0.2·1 + 0.1·0 (correction one-sided → 0)   = 0.64
    #   P3–G1: 0.3/3 + 0.3·1 + 0.1·0 + 0.2·0 + 0.1·0                                  = 0.40 (≤ 0.5)
    assert pairs[(1, 1)]["ha_match_score"] == pytest.approx(0.80) and pairs[(1, 1)]["correction_similarity"] is None
    assert pairs[(0, 0)]["ha_match_score"] == pytest.approx(0.64)
    assert pairs[(2, 0)]["ha_match_score"] == pytest.approx(0.40)
    assert [(m["pred"], m["gt"]) for m in r.ha_matches] == [(1, 1), (0, 0)]  # the human-aligned pick differs
    assert (r.ha_tp, r.ha_fp, r.ha_fn) == (2, 1, 1)
    assert r.ha_f1 == pytest.approx(2 / 3)


def test_thresholds_and_weights_are_configuration():
    pred = [{"start": 0, "end": 10, "rule": "be polite"}]
    gt = [{"start": 0, "end": 10, "rule": "no promises"}]
    # IoU 1 but rule similarity 0: score 0.5 is not > 0.5 and rule 0 is not > 0.01 → FP + FN
    r = match_violations(pred, gt, fake_embed)
    assert (r.tp, r.fp, r.fn) == (0, 1, 1)
    assert r.precision == 0.0 and r.recall == 0.0 and r.f1 == 0.0
    # lowering the thresholds makes it a match
    r = match_violations(pred, gt, fake_embed, MatchConfig(rule_similarity_threshold=-1, match_threshold=0.4))
    assert r.tp == 1
    r = match_violations([], [], fake_embed)
    assert r.precision is None and r.f1 is None


def test_matching_stays_within_one_text():
    pred = [{"text_id": "a", "start": 0, "end": 10, "rule": "be polite"}]
    gt = [{"text_id": "b", "start": 0, "end": 10, "rule": "be polite"}]
    r = match_violations(pred, gt, fake_embed)
    assert (r.tp, r.fp, r.fn) == (0, 1, 1)


def test_campaign_files_with_bad_lines(tmp_path):
    text = "Guaranteed returns! Be rude."
    gt = [
        json.dumps({"text_id": "t1", "text": text, "violations": [{"start": 0, "end": 19, "rule": "no promises"}]}),
        "{not json",
        json.dumps({"text_id": "t2", "text": "ok", "violations": [{"start": 0, "end": 99, "rule": "be polite"}]}),
    ]
    (tmp_path / "ground_truth.jsonl").write_text("\n".join(gt) + "\n")
    checker = [
        json.dumps({"text_id": "t1", "violations": [{"start": 0, "end": 19, "rule": "no guarantees"}, {"start": 0, "rule": "be polite"}]}),
        json.dumps({"violations": []}),
        json.dumps({"text_id": "zzz", "violations": []}),
    ]
    (tmp_path / "checker@1.0.jsonl").write_text("\n".join(checker) + "\n")
    texts, errors = read_violation_file(tmp_path / "ground_truth.jsonl")
    assert set(texts) == {"t1", "t2"} and texts["t2"] == []
    assert [(e["line"], e["reason"].split(":")[0]) for e in errors] == [(2, "not JSON"), (3, "violation 0")]
    summary, pairs, errors = evaluate_campaign(tmp_path, fake_embed)
    assert [(e["file"], e["line"]) for e in errors] == [
        ("ground_truth.jsonl", 2), ("ground_truth.jsonl", 3), ("checker@1.0.jsonl", 1), ("checker@1.0.jsonl", 2), ("checker@1.0.jsonl", None)
    ]
    (row,) = summary
    assert row["checker_version"] == "checker@1.0"
    assert (row["tp"], row["fp"], row["fn"]) == (1, 0, 0)  # IoU 1, rule 0.8 → 0.9
    assert row["texts_missing"] == 1  # t2 not listed by the checker
    assert pairs[0]["std_match"] is True


def test_a_field_both_sides_lack_is_not_a_free_point_and_the_campaign_names_split_and_checker(tmp_path):
    """Two bare violations (no category, explanation or correction) are matched on span and rule alone: ha_match equals
    the standard score's proportions, not 0.4 of free agreement; the campaign row names split@version#hash and
    checker@version|model as the deck does, and a changed ground truth is a different split."""
    import json

    from hcat_pipeline.metrics.violation_files import checker_id, split_id

    bare_p, bare_g = [{"start": 0, "end": 10, "rule": "no promises"}], [{"start": 0, "end": 10, "rule": "no promises"}]
    r = match_violations(bare_p, bare_g, fake_embed)
    c = r.pairs[0]
    assert c["category_match"] is None and c["explanation_similarity"] is None and c["correction_similarity"] is None
    assert c["ha_match_score"] == pytest.approx(1.0)  # IoU 1, rule 1: (0.3 + 0.3) / 0.6
    half = match_violations([{**bare_p[0], "end": 5}], bare_g, fake_embed).pairs[0]  # IoU 0.5, rule 1
    assert half["ha_match_score"] == pytest.approx((0.3 * 0.5 + 0.3) / 0.6) == pytest.approx(half["match_score"])
    one_sided = match_violations([{**bare_p[0], "category": "claims"}], bare_g, fake_embed).pairs[0]
    assert one_sided["category_match"] == 0.0 and one_sided["ha_match_score"] == pytest.approx(0.6 / 0.7)
    gt = {"text_id": "t1", "text": "0123456789", "violations": [{"start": 0, "end": 10, "rule": "no promises"}]}
    (tmp_path / "ground_truth.jsonl").write_text(json.dumps(gt) + "\n")
    (tmp_path / "split.json").write_text('{"split": "curated_split@0.3.2"}')
    (tmp_path / "zeroshot@2.2.5.jsonl").write_text(json.dumps({**gt, "model": "qwen2.5-0.5b"}) + "\n")
    (tmp_path / "baseline@1.1.0.jsonl").write_text(json.dumps(gt) + "\n")
    first = split_id(tmp_path)
    assert first.startswith("curated_split@0.3.2#") and len(first.split("#")[1]) == 12
    assert checker_id(tmp_path / "zeroshot@2.2.5.jsonl") == "zeroshot@2.2.5|qwen2.5-0.5b"
    assert checker_id(tmp_path / "baseline@1.1.0.jsonl") == "baseline@1.1.0|unknown"
    summary, _, _ = evaluate_campaign(tmp_path, fake_embed, MatchConfig(rule_similarity="jaccard"))
    assert {r["checker"] for r in summary} == {"zeroshot@2.2.5|qwen2.5-0.5b", "baseline@1.1.0|unknown"} and {r["split"] for r in summary} == {first}
    (tmp_path / "ground_truth.jsonl").write_text(json.dumps({**gt, "violations": []}) + "\n")
    assert split_id(tmp_path) != first  # same name, changed content: a different split
    (tmp_path / "split.json").write_text('{"split": "no-version"}')
    with pytest.raises(ValueError, match="not <name>@<version>"):
        split_id(tmp_path)
