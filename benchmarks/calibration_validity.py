"""Validity of the double calibration (HCAT §5) on the held-out part of the shipped reference sets.

For each shipped set (FaithDial audit → groundedness, ToxiGen demonstrations → toxicity) and each of
its metrics, scored with the project's own metrics (``score_frame``, as ``reference_label_scores``):
Stage 1 (Platt, and isotonic) on the set's ``stage1`` part, Stage 2 q̂ on ``stage2``, every figure on
the ``evaluation`` part only (never used to fit): AUROC of the raw score (Hanley-McNeil 95 % CI),
empirical coverage at α = 0.1 and 0.2 (Wilson 95 % CI; target 1 − α ± 3 points), mean set size and
set counts, Brier and ECE before (raw score read as P(Y = 1)) and after calibration.

    python benchmarks/calibration_validity.py [--sets faithdial,toxigen] [--metrics groundedness_similarity,...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcat_pipeline.calibration.fitting import fit_calibration  # noqa: E402
from hcat_pipeline.calibration.reference import REFERENCE_SETS, load_reference  # noqa: E402
from hcat_pipeline.metrics.scoring import score_frame  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default=",".join(sorted(REFERENCE_SETS)))
    ap.add_argument("--metrics", default="", help="comma-separated; default: each set's metrics")
    ap.add_argument("--methods", default="platt,isotonic")
    args = ap.parse_args()

    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.multilingual import MultilingualEncoder
    from hcat_pipeline.resources.nli import NLIModel

    embed, nli = EmbeddingModel(), NLIModel()
    print("| set | metric | method | held-out n (1/0) | AUROC raw [95% CI] | α | coverage [95% CI] | target | mean set size | sets | Brier before → after | ECE before → after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in [s for s in args.sets.split(",") if s]:
        ref = load_reference(name)
        metrics = [m for m in args.metrics.split(",") if m] or list(REFERENCE_SETS[name].metrics)
        for metric in metrics:
            t0 = time.perf_counter()
            try:
                scored, _ = score_frame(ref.select("query", "contexts", "answer"), [metric], embed=embed.embed,
                                          embed_layers=embed.layer_features, nli=nli, multilingual=MultilingualEncoder, device=embed.device)
            except Exception as e:  # a metric that cannot run here is reported, and the others go on
                print(f"| {name} | {metric} | – | – | not scored: {type(e).__name__}: {str(e)[:160]} | | | | | | | |")
                continue
            secs = time.perf_counter() - t0
            for method in args.methods.split(","):
                for alpha in (0.1, 0.2):
                    r = fit_calibration(ref["item_id"].to_list(), scored[metric].to_list(), ref["label"].to_list(), dimension=ref["dimension"][0],
                                        label_source=f"reference:{name}", metric=metric, method=method, alpha=alpha,
                                        fixed_splits=ref["split"].to_list())  # fmt: skip
                    if r.status != "fitted":
                        print(f"| {name} | {metric} | {method} | – | {r.message} | {alpha} | | | | | | |")
                        continue
                    ev = r.evaluation
                    a, c = ev["auroc_raw"], ev["coverage"]
                    print(f"| {name} | {metric} | {method} | {ev['n']} ({ev['labels']['1']}/{ev['labels']['0']}) | "
                          f"{a['auroc']:.3f} [{a['ci_low']:.3f}, {a['ci_high']:.3f}] | {alpha} | {c['rate']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}] | "
                          f"{c['target']:.2f} | {ev['mean_set_size']:.3f} | {ev['sets']} | {ev['brier_before']:.3f} → {ev['brier_after']:.3f} | "
                          f"{ev['ece_before']:.3f} → {ev['ece_after']:.3f} |")  # fmt: skip
            print(f"<!-- {name}/{metric}: scored {ref.height} items in {secs:.1f} s; unscored {scored[metric].null_count()} -->")


if __name__ == "__main__":
    main()
