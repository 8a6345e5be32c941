"""Matching predicted rule violations to ground-truth violations (violation-match deck).

For every (predicted, ground-truth) pair of the same checked text:

* text overlap = character IoU (Jaccard) of the two spans: |A ∩ B| / (|A| + |B| − |A ∩ B|)
* rule similarity = cosine similarity of the sentence embeddings of the two rules (``rule_similarity: minilm``, the
  default; ``use_m3``: the packaged multilingual encoder's; ``jaccard``: word-set Jaccard, the deck's string baseline)
* weighted match score (std_match) = 0.5 · text overlap + 0.5 · rule similarity
* human-aligned score (ha_match) = 0.3 · overlap + 0.3 · rule + 0.1 · category match (exact)
  + 0.2 · explanation similarity + 0.1 · correction similarity

One-to-one matching: take the potential match with the highest weighted score; it is a match if
overlap > OVERLAP_THRESHOLD (0), rule similarity > RULE_SIMILARITY_THRESHOLD (0.01) and score >
MATCH_THRESHOLD (0.5); both violations then leave the pool; repeat. Matches are TP, unmatched
predictions FP, unmatched ground truth FN; precision = TP/(TP+FP), recall = TP/(TP+FN),
F1 = 2TP/(2TP+FP+FN) (``None`` when the denominator is 0). Weights and thresholds are
configuration (``MatchConfig``).

Explanation / correction similarity and category match when a side lacks the field: one missing → 0.0; both
missing → the field is *not scored* (null, never a free 1.0): ha_match is then the weighted mean over the fields both
violations state — the present components' weights rescaled to sum to the configured total — so two bare violations are
matched on span and rule alone, as the deck's standard score does.

The files (``ground_truth.jsonl`` + one ``<checker>.jsonl`` per checker version) and the campaign over them:
``metrics.violation_files``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np

Embed = Callable[[list[str]], np.ndarray]
RuleSimilarity = Literal["minilm", "use_m3", "jaccard"]


@dataclass(frozen=True)
class MatchConfig:
    overlap_weight: float = 0.5
    rule_weight: float = 0.5
    ha_overlap_weight: float = 0.3
    ha_rule_weight: float = 0.3
    ha_category_weight: float = 0.1
    ha_explanation_weight: float = 0.2
    ha_correction_weight: float = 0.1
    overlap_threshold: float = 0.0  # IoU > 0: at least one shared character
    rule_similarity_threshold: float = 1e-2
    match_threshold: float = 0.5
    # the deck compares Jaccard, a sentence transformer and OpenAI embeddings; benchmarks/violation_rule_backends.py
    # compares Jaccard, MiniLM and USE-M3 on data/violations (3 rule pairs — a worked example, not a validation):
    # paraphrased ex2 rules (artificial urgency / false deadlines) 0.000 / 0.508 / 0.348, unrelated ex2 rules
    # 0.000 / 0.077 / 0.204, ex1's paraphrase 0.100 / 0.814 / 0.845. MiniLM kept: the widest gap between a paraphrase
    # and an unrelated rule (0.43 vs 0.14 for USE-M3); Jaccard scores a paraphrase 0, under the 0.01 threshold
    rule_similarity: RuleSimilarity = "minilm"

    @classmethod
    def from_options(cls, **options) -> MatchConfig:
        known = set(cls.__dataclass_fields__)
        bad = set(options) - known
        if bad:
            raise TypeError(f"unknown matching options {sorted(bad)}; expected some of {sorted(known)}")
        return cls(**options)


@dataclass
class MatchResult:
    tp: int
    fp: int
    fn: int
    precision: float | None
    recall: float | None
    f1: float | None
    matches: list[dict]
    ha_tp: int
    ha_fp: int
    ha_fn: int
    ha_precision: float | None
    ha_recall: float | None
    ha_f1: float | None
    ha_matches: list[dict]
    pairs: list[dict] = field(default_factory=list)  # every candidate pair with its component scores
    config: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def char_iou(a_start: int, a_end: int, b_start: int, b_end: int) -> float:
    """Character IoU of the spans [a_start, a_end) and [b_start, b_end)."""
    la, lb = max(0, a_end - a_start), max(0, b_end - b_start)
    inter = max(0, min(a_end, b_end) - max(a_start, b_start))
    union = la + lb - inter
    return inter / union if union > 0 else 0.0


def prf(tp: int, fp: int, fn: int) -> tuple[float | None, float | None, float | None]:
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else None
    return p, r, f


def greedy_one_to_one(candidates: list[dict], key: str, passes: Callable[[dict], bool]) -> list[dict]:
    """Highest ``key`` first; a passing pair whose two sides are both still free becomes a match."""
    used_p, used_g, out = set(), set(), []
    for c in sorted(candidates, key=lambda c: (-c[key], c["text_id"], c["pred"], c["gt"])):
        if (c["text_id"], c["pred"]) in used_p or (c["text_id"], c["gt"]) in used_g:
            continue
        if passes(c):
            used_p.add((c["text_id"], c["pred"]))
            used_g.add((c["text_id"], c["gt"]))
            out.append(c)
    return out


def _records(side) -> list[dict]:
    if hasattr(side, "to_dicts"):
        side = side.to_dicts()
    out = []
    for i, v in enumerate(side):
        v = dict(v)
        for k in ("start", "end", "rule"):
            if v.get(k) is None:
                raise ValueError(f"violation {i}: missing {k!r}")
        v["start"], v["end"] = int(v["start"]), int(v["end"])
        if v["end"] < v["start"]:
            raise ValueError(f"violation {i}: end {v['end']} < start {v['start']}")
        v.setdefault("text_id", "")
        v["text_id"] = "" if v["text_id"] is None else str(v["text_id"])
        out.append(v)
    return out


def _field_similarity(a: str | None, b: str | None, vec: dict[str, np.ndarray]) -> float | None:
    """Cosine of the two fields' embeddings; 0.0 when one side lacks it; None (not scored) when both do."""
    if not a and not b:
        return None
    if not a or not b:
        return 0.0
    return float(vec[a] @ vec[b])


def ha_score(cfg: MatchConfig, iou: float, rule: float, cat: float | None, expl: float | None, corr: float | None) -> float:
    """The human-aligned score over the components both sides state (a None component: its weight goes to the others)."""
    parts = [(cfg.ha_overlap_weight, iou), (cfg.ha_rule_weight, rule), (cfg.ha_category_weight, cat),
             (cfg.ha_explanation_weight, expl), (cfg.ha_correction_weight, corr)]  # fmt: skip
    total = sum(w for w, _ in parts)
    present = [(w, v) for w, v in parts if v is not None]
    scale = total / sum(w for w, _ in present) if sum(w for w, _ in present) > 0 else 0.0
    return scale * sum(w * v for w, v in present)


_WORD = re.compile(r"\w+")


def word_jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the lower-cased word sets of ``a`` and ``b`` (punctuation ignored)."""
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def _rule_similarity(cfg: MatchConfig, rules: list[str], embed: Embed, rule_embed: Embed | None) -> Callable[[str, str], float]:
    if cfg.rule_similarity == "jaccard":
        return word_jaccard
    if cfg.rule_similarity == "use_m3" and rule_embed is None:
        raise ValueError("rule_similarity 'use_m3' needs rule_embed (the multilingual encoder's encode)")
    fn = rule_embed if cfg.rule_similarity == "use_m3" else embed
    uniq = list(dict.fromkeys(rules))
    vec = dict(zip(uniq, np.asarray(fn(uniq), dtype=np.float32))) if uniq else {}
    return lambda a, b: float(vec[a] @ vec[b])


def match_violations(predicted, ground_truth, embed: Embed, config: MatchConfig | None = None,
                     rule_embed: Embed | None = None) -> MatchResult:
    """Match violations of the same ``text_id`` (default: all one text); see the module docstring. ``embed`` embeds
    explanations and corrections (and rules under ``minilm``); ``rule_embed`` the rules under ``use_m3``."""
    cfg = config or MatchConfig()
    pred, gt = _records(predicted), _records(ground_truth)
    texts = [t for v in (*pred, *gt) for t in (v.get("explanation"), v.get("correction")) if t]
    uniq = list(dict.fromkeys(texts))
    vec = dict(zip(uniq, np.asarray(embed(uniq), dtype=np.float32))) if uniq else {}
    rule_sim = _rule_similarity(cfg, [v["rule"] for v in (*pred, *gt)], embed, rule_embed)
    gt_by_text: dict[str, list[int]] = {}
    for j, g in enumerate(gt):
        gt_by_text.setdefault(g["text_id"], []).append(j)
    cands = []
    for i, p in enumerate(pred):
        for j in gt_by_text.get(p["text_id"], []):
            g = gt[j]
            iou = char_iou(p["start"], p["end"], g["start"], g["end"])
            rule = rule_sim(p["rule"], g["rule"])
            pc, gc = p.get("category") or None, g.get("category") or None
            cat = None if pc is None and gc is None else float(pc == gc)
            expl = _field_similarity(p.get("explanation"), g.get("explanation"), vec)
            corr = _field_similarity(p.get("correction"), g.get("correction"), vec)
            score = cfg.overlap_weight * iou + cfg.rule_weight * rule
            ha = ha_score(cfg, iou, rule, cat, expl, corr)
            cands.append(
                {
                    "text_id": p["text_id"], "pred": i, "gt": j, "text_overlap": iou, "rule_similarity": rule,
                    "category_match": cat, "explanation_similarity": expl, "correction_similarity": corr,
                    "match_score": score, "ha_match_score": ha,
                }
            )

    def gates(c: dict, key: str) -> bool:
        return c["text_overlap"] > cfg.overlap_threshold and c["rule_similarity"] > cfg.rule_similarity_threshold and c[key] > cfg.match_threshold

    std = greedy_one_to_one(cands, "match_score", lambda c: gates(c, "match_score"))
    ha = greedy_one_to_one(cands, "ha_match_score", lambda c: gates(c, "ha_match_score"))
    tp, fp, fn = len(std), len(pred) - len(std), len(gt) - len(std)
    htp, hfp, hfn = len(ha), len(pred) - len(ha), len(gt) - len(ha)
    p, r, f = prf(tp, fp, fn)
    hp, hr, hf = prf(htp, hfp, hfn)
    std_keys, ha_keys = {(c["pred"], c["gt"]) for c in std}, {(c["pred"], c["gt"]) for c in ha}
    for c in cands:
        c["std_match"] = (c["pred"], c["gt"]) in std_keys
        c["ha_match"] = (c["pred"], c["gt"]) in ha_keys
    return MatchResult(
        tp, fp, fn, p, r, f, std, htp, hfp, hfn, hp, hr, hf, ha, pairs=cands, config=asdict(cfg)
    )


def campaign_rows(results: Sequence[tuple[str, MatchResult]]) -> list[dict]:
    """One summary row per checker version."""
    keys = ("tp", "fp", "fn", "precision", "recall", "f1", "ha_tp", "ha_fp", "ha_fn", "ha_precision", "ha_recall", "ha_f1")
    return [{"checker_version": name, **{k: getattr(r, k) for k in keys}} for name, r in results]
