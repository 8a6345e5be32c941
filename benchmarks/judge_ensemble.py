"""Ensemble judging (golden-eval §5.5) with the packaged local LLMs on held-out human labels: each judge and their
ensemble (mean score) on the same FaithDial (groundedness) and ToxiGen (safety) test items; κ per judge and of the
ensemble on the ``choose`` half, the decision (``judge.ensemble.choose_scorer``: the ensemble only where it beats each
judge there), its κ on the ``report`` half, and the judges' agreement. The machine's load first: read figures with it.

    nice -n 19 python benchmarks/judge_ensemble.py --per-label 10 [--model qwen2.5-0.5b-instruct-q4_k_m] [--model …]
"""

from __future__ import annotations

import argparse
import os
import time

import polars as pl

from hcat_pipeline.judge.data import DEFAULT_VALIDATION_DIR, faithdial_items, sample_items, toxigen_items
from hcat_pipeline.judge.ensemble import agreement_table, choose_scorer, half
from hcat_pipeline.judge.scoring import JudgeConfig
from hcat_pipeline.judge.validation import validate_judge
from hcat_pipeline.resources.llm import LLM

MODELS = ("qwen2.5-0.5b-instruct-q4_k_m", "qwen2.5-coder-1.5b-instruct-q4_k_m")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-label", type=int, default=10, help="test items per human label and dimension")
    ap.add_argument("--model", action="append", help=f"packaged models (repeatable; default {list(MODELS)})")
    ap.add_argument("--dimension", action="append", choices=["groundedness", "safety"], help="default: both")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-items", type=int, default=10)
    args = ap.parse_args()
    print(f"load average (1, 5, 15 min): {os.getloadavg()}; cores: {os.cpu_count()}")
    dims = tuple(args.dimension or ("groundedness", "safety"))
    items = []
    if "groundedness" in dims:
        items += sample_items(faithdial_items(DEFAULT_VALIDATION_DIR), args.per_label, "test", args.seed)
    if "safety" in dims:
        items += sample_items(toxigen_items(DEFAULT_VALIDATION_DIR), args.per_label, "test", args.seed)
    cfg, base, frames = JudgeConfig(dimensions=dims), LLM(provider="local"), []
    for name in args.model or MODELS:
        llm = base.for_model({"model": name})
        t0 = time.perf_counter()
        res = validate_judge(llm, items, [], cfg, min_items=args.min_items)
        wall = time.perf_counter() - t0
        v = res["validation"]
        print(f"\n== {llm.fingerprint()}: {len(items)} items in {wall:.0f} s ({wall / max(1, len(items)):.1f} s an item)")
        for r in v.iter_rows(named=True):
            print(f"  {r['dimension']}: κ {r['kappa']} [{r['kappa_ci_low']}, {r['kappa_ci_high']}] n {r['n']} errors {r['n_errors']} — "
                  f"{'validated' if r['validated'] else r['reason']}")
        frames.append(res["scores"].select("item_id", "dimension", "score", "human_label").with_columns(pl.lit(llm.fingerprint()).alias("judge_model")))
    labelled = pl.concat(frames)
    halves = labelled.unique("item_id").with_columns(pl.col("item_id").map_elements(half, return_dtype=pl.String).alias("h"))
    print(f"\nhalves: {dict(halves.group_by('h').len().iter_rows())}")
    print("\njudges' agreement (all items):")
    print(agreement_table(labelled, cfg.pass_threshold, keys=("item_id", "dimension")))
    print("\nthe decision per dimension (chosen on the choose half, κ reported on the report half):")
    for r in choose_scorer(labelled, cfg.pass_threshold, 0.4, args.min_items).iter_rows(named=True):
        print(f"  {r['dimension']}: ensemble {'USED' if r['ensemble_used'] else 'not used'} — {r['ensemble_reason']}")


if __name__ == "__main__":
    main()
