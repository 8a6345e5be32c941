"""Match weights fitted to human match labels (the violation-match deck's next step): known weights recovered from
labels made with them, the held-out agreement beside the deck's defaults, and too few labels refused."""

import json

import numpy as np

from hcat_pipeline.metrics.matching import MatchConfig
from hcat_pipeline.metrics.violation_fit import fit_match_weights, read_match_labels

RULES = ["do not promise returns", "do not create urgency", "be polite to customers", "never share account numbers"]


def _labels(n: int, seed: int = 0) -> list[dict]:
    """People here call two violations the same when the spans overlap well (IoU ≥ 0.5) and the rule is the same."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        g_start, length = int(rng.integers(0, 50)), int(rng.integers(10, 40))
        shift = int(rng.integers(0, length))
        p_start, p_end = g_start + shift, g_start + shift + length
        same_rule = bool(rng.random() < 0.6)
        g_rule = RULES[i % 4]
        p_rule = g_rule if same_rule else RULES[(i + 1) % 4]
        iou = max(0, length - shift) / (length + shift)
        out.append({"text_id": f"t{i // 2}", "pred": {"start": p_start, "end": p_end, "rule": p_rule},
                    "gt": {"start": g_start, "end": g_start + length, "rule": g_rule}, "match": bool(iou >= 0.5 and same_rule)})  # fmt: skip
    return out


def _no_embed(texts):
    raise AssertionError("jaccard rules and no explanations: nothing to embed")


def test_fitted_weights_follow_the_labels_and_beat_the_defaults_held_out(tmp_path):
    labels = _labels(240)
    fit = fit_match_weights(labels, _no_embed, config=MatchConfig(rule_similarity="jaccard"))
    assert fit["n_fit"] >= 20 and fit["n_held_out"] >= 20 and abs(sum(fit["weights"].values()) - 1) < 1e-6
    held = fit["held_out"]["ha"]
    assert held["fitted"]["accuracy"] > held["defaults"]["accuracy"] and held["fitted"]["accuracy"] >= 0.9, held
    assert fit["weights"]["text_overlap"] > 0.2  # the defaults give overlap 0.3 of 1 but match a 0.2-IoU pair on its rule
    (tmp_path / "match_labels.jsonl").write_text("\n".join(json.dumps(r) for r in labels[:3]) + "\n{\"text_id\": \"x\", \"match\": \"yes\"}\n")
    read, problems = read_match_labels(tmp_path / "match_labels.jsonl")
    assert len(read) == 3 and problems == ["match_labels.jsonl:4: needs pred and gt (start, end, rule) and a boolean match"]
    assert "needed" in fit_match_weights(labels[:20], _no_embed, config=MatchConfig(rule_similarity="jaccard"))["why"]


def test_std_match_and_the_gates_are_fitted_too_and_applied_only_when_they_hold_out():
    from hcat_pipeline.metrics.violation_fit import held_out_half, weights_note

    cfg = MatchConfig(rule_similarity="jaccard")
    labels = _labels(240)
    fit = fit_match_weights(labels, _no_embed, config=cfg)
    std = fit["held_out"]["std"]
    assert std["fitted"]["f1"] > std["defaults"]["f1"] and fit["applied"] is True, fit["held_out"]
    assert set(fit["std"]["weights"]) == {"text_overlap", "rule_similarity"} and fit["gates"]["overlap_threshold"] >= 0.0
    o = fit["overrides"]
    assert {"overlap_weight", "rule_weight", "ha_overlap_weight", "match_threshold", "overlap_threshold"} <= set(o)
    assert MatchConfig(**{**cfg.__dict__, **o}).overlap_weight == o["overlap_weight"]  # a valid MatchConfig
    assert weights_note(fit).startswith("fitted to ") and "std_match held-out F1" in weights_note(fit)
    # a fit half that says "every pair matches" and a held-out half labelled by the deck's own rule: the fitted rule does
    # not hold out, so nothing is applied and the figures keep the defaults (said so)
    flipped = [dict(r, match=True) if not held_out_half(r["text_id"], 0) else dict(r, match=bool(_default_match(r))) for r in labels]
    flipped += [dict(flipped[1], text_id="fit-neg", match=False)] if not any(not r["match"] for r in flipped if not held_out_half(r["text_id"], 0)) else []
    bad = fit_match_weights(flipped, _no_embed, config=cfg)
    assert bad["applied"] is False and bad["overrides"] == {}, bad["held_out"]
    assert weights_note(bad).startswith("the deck's default weights (the fitted set did not hold out")
    assert weights_note({"why": "3 fit / 2 held-out"}) == "the deck's default weights (3 fit / 2 held-out)"


def _default_match(r: dict) -> bool:
    """The deck's std rule on a pair with jaccard rules: 0.5 · IoU + 0.5 · rule > 0.5, IoU > 0, rule > 0.01."""
    p, g = r["pred"], r["gt"]
    inter = max(0, min(p["end"], g["end"]) - max(p["start"], g["start"]))
    iou = inter / (max(p["end"], g["end"]) - min(p["start"], g["start"]))
    rule = 1.0 if p["rule"] == g["rule"] else 0.0
    return iou > 0 and rule > 0.01 and 0.5 * iou + 0.5 * rule > 0.5
