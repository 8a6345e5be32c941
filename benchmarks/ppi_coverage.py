"""Coverage of the night's human-pass rate under each way of choosing the labelled answers (issue 57, item 6).

    python benchmarks/ppi_coverage.py [--nights 1000] [--n 400] [--budget 60] [--seed 0] [--anytime]

Simulated nights with a known truth (``hcat_pipeline.calibration.known_answers``: strict raters, a factor the score does
not see), each regime × calibrator (Platt, isotonic) over ``--nights`` nights. Prints coverage of the true rate (nominal
0.95) with its Monte-Carlo standard error, mean interval width, bias and the labels that entered the rate, and the
labels-only exact (Clopper-Pearson) width on the same number of uniform labels for comparison. ``--anytime`` reports the
time-uniform confidence sequence instead of the fixed-time interval for the active estimator.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcat_pipeline.calibration.known_answers import REGIMES, coverage, simulate_night  # noqa: E402
from hcat_pipeline.gates.certificate import clopper_pearson  # noqa: E402


def _labels_only_width(nights: int, n: int, budget: int, seed: int) -> float:
    """Mean two-sided 95 % Clopper-Pearson width on ``budget`` uniform labels (two one-sided 97.5 % bounds)."""
    rng = np.random.default_rng(seed)
    widths = []
    for _ in range(nights):
        night = simulate_night(rng, n)
        k = int(night.labels[rng.choice(n, budget, replace=False)].sum())
        low, high = clopper_pearson(k, budget, 0.975)
        widths.append(high - low)
    return float(np.mean(widths))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nights", type=int, default=1000)
    ap.add_argument("--n", type=int, default=400, help="answers a night")
    ap.add_argument("--budget", type=int, default=60, help="labels a night (expected, for the designs)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--anytime", action="store_true", help="the confidence sequence, not the fixed-time interval")
    args = ap.parse_args()
    print(f"{args.nights} nights of {args.n} answers, {args.budget} labels a night (expected), "
          f"{'anytime confidence sequence' if args.anytime else 'fixed-time interval'}")  # fmt: skip
    print(f"{'regime':<18} {'calibrator':<9} {'coverage':>14} {'width':>7} {'bias':>8} {'labels':>7} {'s':>6}")
    for regime in REGIMES:
        for method in ("platt", "isotonic"):
            t0 = time.perf_counter()
            kw = {"anytime": args.anytime} if regime in ("uniform", "design", "design_flagged") else {}
            r = coverage(regime, method, args.nights, args.seed, n=args.n, budget=args.budget, **kw)
            print(f"{regime:<18} {method:<9} {r['coverage']:>7.3f} ± {r['coverage_se']:.3f} {r['width']:>7.3f} "
                  f"{r['bias']:>+8.3f} {r['labels']:>7.1f} {time.perf_counter() - t0:>6.1f}", flush=True)  # fmt: skip
    print(f"labels-only exact (Clopper-Pearson, {args.budget} uniform labels): mean width "
          f"{_labels_only_width(args.nights, args.n, args.budget, args.seed):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
