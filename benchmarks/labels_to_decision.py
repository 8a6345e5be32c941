"""Labels to a decision on labelled data (issue 57, item 7): how many human labels the product's queue needs before a
human-calibrated gate decides, and whether the decision's interval covers the truth.

    python benchmarks/labels_to_decision.py --data FILE.jsonl [--level 0.9] [--resamples 200] [--prior reference|raw|none]
                                            [--method platt|isotonic] [--budget-share 0.5] [--check-every 5]

``FILE.jsonl``: one ``{"id", "question", "answer", "contexts": [str, ...], "human_label": 0|1}`` a line (a bad line is
named and the run stops before scoring). Every row is scored with the product's own groundedness metric
(``groundedness_nli``, ``metrics.scoring.score_frame``); the queue's inclusion probabilities come from ``--prior``:
``reference`` (the product's behaviour before a campaign has labels: the calibrator fitted on the shipped FaithDial
reference set's stage-1 / stage-2 parts — leaks into π only, never into the estimate, but do not use it on a FaithDial
file), ``raw`` (the metric's score read as P(pass)), ``none`` (uniform). Then, ``--resamples`` times with a fresh seed,
a simulated reviewer answers the queue from ``human_label`` until the gate decides (``calibration.known_answers.
sequential_review``), under the product's design and under uniform PPI and labels alone (the same anytime-valid
confidence sequence), and labels alone with Clopper-Pearson checked after every batch (the usual practice; not valid
when one stops on it, shown for reference). Prints, per mode: coverage of the file's true human-pass rate at the
moment of stopping, the share decided, the median and 90th-percentile labels to a decision, reviewer minutes at 10 s a
label.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcat_pipeline.calibration.known_answers import MODES, sequential_review  # noqa: E402

SECONDS_PER_LABEL = 10


def read_file(path: Path) -> pl.DataFrame:
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            row = {"id": str(r["id"]), "query": str(r.get("question") or ""), "answer": str(r["answer"]),
                   "contexts": [str(c) for c in r["contexts"]], "human_label": int(r["human_label"])}  # fmt: skip
        except (ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"{path}:{i}: not a labelled row ({type(e).__name__}: {e}); need id, answer, contexts, human_label") from e
        if row["human_label"] not in (0, 1):
            raise SystemExit(f"{path}:{i}: human_label must be 0 or 1, got {row['human_label']}")
        rows.append(row)
    if len(rows) < 20:
        raise SystemExit(f"{path}: {len(rows)} labelled rows; a decision needs at least 20")
    return pl.DataFrame(rows)


def score(frame: pl.DataFrame) -> np.ndarray:
    from hcat_pipeline.metrics.scoring import score_frame
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.nli import NLIModel

    embed = EmbeddingModel()
    scored, _ = score_frame(frame.select("query", "contexts", "answer"), ["groundedness_nli"], embed=embed.embed, nli=NLIModel(),
                            device=embed.device)  # fmt: skip
    s = scored["groundedness_nli"].to_numpy().astype(float)
    if np.isnan(s).any():
        raise SystemExit(f"{int(np.isnan(s).sum())} row(s) could not be scored (empty answer or contexts)")
    return s


def prior(kind: str, s: np.ndarray) -> np.ndarray:
    if kind == "none":
        return np.full(s.size, 0.5)
    if kind == "raw":
        return s
    from hcat_pipeline.calibration.calibrators import Calibrator
    from hcat_pipeline.calibration.reference import load_reference

    ref = load_reference("faithdial").filter(pl.col("split") != "evaluation")
    ref_s = score(ref.select("query", "contexts", "answer"))
    return Calibrator(method="platt").fit(ref_s, ref["label"].to_numpy()).predict_proba(s)[:, 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--level", type=float, default=0.9, help="the human-pass rate the gate requires")
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--prior", choices=("reference", "raw", "none"), default="reference")
    ap.add_argument("--method", choices=("platt", "isotonic"), default="platt")
    ap.add_argument("--budget-share", type=float, default=0.5, help="expected share of the answers the design asks")
    ap.add_argument("--check-every", type=int, default=5)
    ap.add_argument("--modes", default=",".join(MODES))
    args = ap.parse_args()
    frame = read_file(args.data)
    t0 = time.perf_counter()
    s = score(frame)
    y = frame["human_label"].to_numpy()
    p = prior(args.prior, s)
    truth = float(y.mean())
    auc = float(np.mean([(a > b) + 0.5 * (a == b) for a in s[y == 1] for b in s[y == 0]])) if 0 < y.sum() < y.size else float("nan")
    print(f"{args.data}: {y.size} rows, true human-pass rate {truth:.3f} (gate level {args.level}; truth is "
          f"{'above' if truth >= args.level else 'below'} it); groundedness_nli AUROC {auc:.3f}; scored in {time.perf_counter() - t0:.0f} s")  # fmt: skip
    print(f"prior {args.prior}, calibrator {args.method} (cross-fitted), design budget {args.budget_share:.0%} of the answers, "
          f"checked every {args.check_every} labels, {args.resamples} resamples")  # fmt: skip
    print(f"{'mode':<18} {'coverage':>9} {'decided':>8} {'right':>6} {'median':>7} {'p90':>5} {'minutes (median)':>17} {'s':>6}")
    for mode in [m for m in args.modes.split(",") if m]:
        t0 = time.perf_counter()
        runs = [sequential_review(s, y, p, args.level, seed, mode=mode, method=args.method, budget_share=args.budget_share,
                                  check_every=args.check_every) for seed in range(args.resamples)]  # fmt: skip
        want = "above" if truth >= args.level else "below"
        labels = np.array([r.labels for r in runs])
        print(f"{mode:<18} {np.mean([r.covered for r in runs]):>9.3f} {np.mean([r.decision != 'undecided' for r in runs]):>8.2f} "
              f"{np.mean([r.decision == want for r in runs]):>6.2f} {np.median(labels):>7.0f} {np.percentile(labels, 90):>5.0f} "
              f"{np.median(labels) * SECONDS_PER_LABEL / 60:>17.1f} {time.perf_counter() - t0:>6.0f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
