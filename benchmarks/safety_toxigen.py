"""Toxicity on the ToxiGen demonstrations (../shared/validation/toxigen-demonstrations): AUROC and
throughput of the old profanity score (alt-profanity-check, now the ``toxicity_profanity`` column)
on all sentences, per group, and — with
``--llm-sample N`` — of the LLM judge (HARM_HATE / any AILuminate category) on a seeded, balanced
sample of N sentences.

    python benchmarks/safety_toxigen.py [--data DIR] [--llm-sample 40] [--seed 0]

Labels come from the file names (``__hate_`` / ``__neutral_``). Sentences are de-duplicated;
a sentence found under both labels is dropped (and counted).

The calibrated ``toxicity`` score is trained on part of these sentences: its held-out figures come
from ``benchmarks/safety_toxicity.py``.

Seen here (2 shared cores): 587 sentences (317 hate / 270 neutral), classifier AUROC 0.693,
~9,500 sentences/s; hate recall 0.21 at 0.5. The local Qwen-0.5B judge took ~255 s per call under
heavy CPU contention, so its AUROC was not measured; use an API LLM (HCAT_DEPLOYMENT=api) for it.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "validation" / "toxigen-demonstrations"


def load(data: Path) -> tuple[list[str], list[int], list[str], int]:
    labels: dict[str, set[int]] = defaultdict(set)
    group: dict[str, str] = {}
    for f in sorted(data.glob("*.txt")):
        if "__" not in f.name:
            continue
        kind = 1 if "__hate_" in f.name else 0 if "__neutral_" in f.name else None
        if kind is None:
            continue
        g = f.name.split("__", 1)[0]
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            s = line.strip().strip("-").strip()
            if len(s) < 3:
                continue
            labels[s].add(kind)
            group.setdefault(s, g)
    conflicting = sum(1 for v in labels.values() if len(v) > 1)
    texts = sorted(s for s, v in labels.items() if len(v) == 1)
    return texts, [next(iter(labels[s])) for s in texts], [group[s] for s in texts], conflicting


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--llm-sample", type=int, default=0, help="balanced seeded sample size for the LLM judge (0: skip)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from sklearn.metrics import roc_auc_score

    from hcat_pipeline.metrics.safety import load_toxicity_classifier

    texts, y, groups, conflicting = load(args.data)
    y_arr = np.array(y)
    print(f"toxigen-demonstrations: {len(texts)} unique sentences ({int(y_arr.sum())} hate, {int((1 - y_arr).sum())} neutral); "
          f"{conflicting} dropped as labelled both ways")

    t0 = time.perf_counter()
    predict = load_toxicity_classifier()
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    p = np.asarray(predict(texts), dtype=float)  # = the toxicity_profanity column for one-sentence rows
    dt = time.perf_counter() - t0
    print(f"alt-profanity-check: load {t_load:.2f}s, {len(texts) / dt:,.0f} sentences/s (one batch of {len(texts)})")
    print(f"  AUROC hate vs neutral: {roc_auc_score(y_arr, p):.3f}")
    for thr in (0.5, 0.2, 0.1):
        pred = p >= thr
        print(f"  threshold {thr}: hate recall {pred[y_arr == 1].mean():.3f}, neutral false-positive rate {pred[y_arr == 0].mean():.3f}")
    print("  per group (AUROC, n hate / n neutral):")
    g_arr = np.array(groups)
    for g in sorted(set(groups)):
        m = g_arr == g
        if len(set(y_arr[m])) == 2:
            print(f"    {g:20s} {roc_auc_score(y_arr[m], p[m]):.3f}  {int(y_arr[m].sum())}/{int((1 - y_arr[m]).sum())}")
    top_missed = sorted((pi, t) for pi, t, yi in zip(p, texts, y) if yi == 1)[:3]
    print("  lowest-scored hate sentences:", *(f"    {pi:.3f} {t}" for pi, t in top_missed), sep="\n")

    if args.llm_sample > 0:
        from hcat_pipeline.metrics.safety import harm_judge, harm_judge_summary
        from hcat_pipeline.resources.sets import resources_for

        rng = random.Random(args.seed)
        hate = [i for i, v in enumerate(y) if v == 1]
        neutral = [i for i, v in enumerate(y) if v == 0]
        k = args.llm_sample // 2
        idx = rng.sample(hate, min(k, len(hate))) + rng.sample(neutral, min(k, len(neutral)))
        llm = resources_for()["llm"]  # HCAT_DEPLOYMENT=api for an API judge
        t0 = time.perf_counter()
        judged = harm_judge([texts[i] for i in idx], llm, seed=args.seed)
        dt = time.perf_counter() - t0
        s = harm_judge_summary(judged)
        ok = [(i, r) for i, r in zip(idx, judged) if r["harm_any"] is not None]
        yy = np.array([y[i] for i, _ in ok])
        print(f"LLM judge ({llm.model_name}, seed {args.seed}): {len(idx)} sentences in {dt:.0f}s "
              f"({len(idx) / dt:.2f}/s), {s['harm_errors']} errors")
        for key in ("HARM_HATE", "harm_any"):
            pr = np.array([r[key] for _, r in ok], dtype=float)
            if len(set(yy)) == 2:
                print(f"  {key}: AUROC {roc_auc_score(yy, pr):.3f} (binary: = balanced accuracy), "
                      f"hate recall {pr[yy == 1].mean():.3f}, neutral flagged {pr[yy == 0].mean():.3f}")
        pc = np.array([p[i] for i, _ in ok])
        if len(set(yy)) == 2:
            print(f"  classifier on the same sample: AUROC {roc_auc_score(yy, pc):.3f}")


if __name__ == "__main__":
    main()
