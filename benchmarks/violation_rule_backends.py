"""The violation-match deck's rule-similarity backends compared: word Jaccard (the deck's string baseline), MiniLM
(a sentence transformer, as the deck's stsb-roberta-large) and the packaged multilingual USE-M3, on a folder of
violation files (default data/violations: the project's worked example — the deck's own example rules were lost
with its slides' images).

    python benchmarks/violation_rule_backends.py [--folder data/violations] [--out benchmarks/results/violation_rule_backends.json]

Prints every (predicted, ground-truth) rule pair of the same text with its similarity under each backend, and each
checker version's match score, TP / FP / FN and F1 under each. The chosen default is ``MatchConfig.rule_similarity``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hcat_pipeline.metrics.matching import MatchConfig, evaluate_campaign  # noqa: E402
from hcat_pipeline.resources.embedding import EmbeddingModel  # noqa: E402
from hcat_pipeline.resources.multilingual import MultilingualEncoder  # noqa: E402

BACKENDS = ("jaccard", "minilm", "use_m3")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", default=str(ROOT / "data" / "violations"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "violation_rule_backends.json"))
    args = ap.parse_args()
    embed, use = EmbeddingModel().embed, MultilingualEncoder().encode
    results, pairs = {}, {}
    for backend in BACKENDS:
        summary, cands, _ = evaluate_campaign(args.folder, embed, MatchConfig(rule_similarity=backend), rule_embed=use)
        results[backend] = {r["checker_version"]: {k: r[k] for k in ("tp", "fp", "fn", "f1", "match_score", "ha_f1", "ha_match_score")}
                            for r in summary}  # fmt: skip
        for c in cands:
            key = (c["checker_version"], c["text_id"], c["pred_rule"], c["gt_rule"])
            pairs.setdefault(key, {"text_overlap": round(c["text_overlap"], 3)})[backend] = round(c["rule_similarity"], 3)
            pairs[key][f"{backend}_std_match"] = c["std_match"]
    print(f"{'checker':<24} {'text':<5} {'IoU':>5} " + " ".join(f"{b:>8}" for b in BACKENDS) + "  predicted rule | ground-truth rule")
    for (checker, text, pred, gt), fig in sorted(pairs.items()):
        marks = " ".join(f"{fig[b]:>7.3f}{'*' if fig[f'{b}_std_match'] else ' '}" for b in BACKENDS)
        print(f"{checker:<24} {text:<5} {fig['text_overlap']:>5.2f} {marks}  {pred} | {gt}")
    print("(* = a std match under that backend)")
    for backend, by in results.items():
        for checker, r in by.items():
            ms = "—" if r["match_score"] is None else f"{r['match_score']:.3f}"
            print(f"{backend:>8} {checker}: TP {r['tp']} FP {r['fp']} FN {r['fn']} F1 {r['f1']:.3f} match score {ms}")
    out = {"chosen": MatchConfig().rule_similarity, "figures": results,
           "pairs": [{"checker_version": k[0], "text_id": k[1], "pred_rule": k[2], "gt_rule": k[3], **v} for k, v in sorted(pairs.items())]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"chosen: {out['chosen']}; written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
