"""Validate the LLM judge on held-out human labels from ../shared/validation (test split) and print the figures.

    nice -n 19 python benchmarks/judge_validation.py --per-label 6 --pairs 5 [--out /tmp/judge_val]

FaithDial audit → groundedness, ToxiGen demonstrations → safety (``judge.data``; items are
drawn from the ``test`` split only, balanced over labels, seeded). Prints κ with its 95 % CI per
dimension, the validated flag, and the three bias audits; with ``--out`` writes the tables as
Parquet and the figures as PNG. Each call of the local 0.5B model takes seconds (tens of seconds on
a loaded machine): keep the sample small.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from hcat_pipeline.judge.data import DEFAULT_VALIDATION_DIR, faithdial_items, faithdial_pairs, sample_items, toxigen_items
from hcat_pipeline.judge.plots import validation_figures
from hcat_pipeline.judge.scoring import JudgeConfig
from hcat_pipeline.judge.validation import validate_judge
from hcat_pipeline.resources.llm import LLM


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-label", type=int, default=6, help="items per human label and dimension")
    ap.add_argument("--pairs", type=int, default=5, help="position-bias pairs (2 calls each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--validation-dir", default=str(DEFAULT_VALIDATION_DIR))
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    items = sample_items(faithdial_items(args.validation_dir), args.per_label, "test", args.seed)
    items += sample_items(toxigen_items(args.validation_dir), args.per_label, "test", args.seed)
    pairs = [p for p in faithdial_pairs(args.validation_dir) if p["split"] == "test"][: args.pairs]
    llm = LLM(provider="local")
    config = JudgeConfig(dimensions=("groundedness", "answer_relevancy", "completeness", "correctness", "safety"))
    t0 = time.perf_counter()
    res = validate_judge(llm, items, pairs, config, min_items=10,
                         progress=lambda d, t: print(f"  {d}/{t} {time.perf_counter() - t0:.0f}s", flush=True))
    wall = time.perf_counter() - t0
    calls = len(items) + 2 * len(pairs)
    print(f"\n{calls} calls in {wall:.0f} s ({wall / calls:.1f} s/call)")
    v = res["validation"]
    cols = ["dimension", "validated", "kappa", "kappa_ci_low", "kappa_ci_high", "n", "accuracy", "n_errors", "reason",
            "length_rho", "length_rho_ci_low", "length_rho_ci_high", "self_preference_gap", "self_preference_note",
            "position_flip_rate", "position_flip_ci_low", "position_flip_ci_high", "position_n_pairs"]
    for r in v.select(cols).iter_rows(named=True):
        print(json.dumps(r, default=str))
    print("position bias:", json.dumps(res["position_bias"], default=str))
    if res["scores"].height:
        print(res["scores"].group_by("dimension", "human_label").agg(
            n=__import__("polars").len(), mean_score=__import__("polars").col("score").mean()).sort("dimension", "human_label"))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        v.write_parquet(out / "validation.parquet")
        res["scores"].write_parquet(out / "scores.parquet")
        if res["pairs"].height:
            res["pairs"].write_parquet(out / "pairs.parquet")
        for name, png in validation_figures(res).items():
            (out / f"{name}.png").write_bytes(png)
        print("written to", out)


if __name__ == "__main__":
    main()
