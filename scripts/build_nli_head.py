"""Build the shipped NLI head (hcat_pipeline/metrics/nli/nli_head.json) with the one recipe.

Same as ``hcat train-nli --out hcat_pipeline/metrics/nli/nli_head.json`` and as the ``nli_head``
asset with its defaults on the default corpus: ``train_nli_head`` with ``TrainConfig()``.

    nice -n 19 python scripts/build_nli_head.py [--task all|qa|dialogue|summary] [--out PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcat_pipeline.metrics.nli.train import TASK_SETS, TrainConfig, default_documents  # noqa: E402
from hcat_pipeline.resources.nli import packaged_head, train_and_save  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="all", choices=("all", *TASK_SETS), help="the general head, or one task's (TASK_SETS)")
    ap.add_argument("--out", default=None, help="default: the packaged head of --task (resources.nli.packaged_head)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out = args.out or str(packaged_head(args.task))
    head, pairs, _ = train_and_save(default_documents(), out, TrainConfig(task=args.task), corpus_name="chunks")
    args.out = out
    print(
        f"{len(pairs)} pairs {head.info['pairs_by_source']}; C={head.info['C']} (CV {head.info['cv_auroc_by_C']}); "
        f"{time.perf_counter() - t0:.0f} s"
    )
    for n, w in zip(head.feature_names, head.w):
        print(f"  w[{n}] = {w:+.4f}")
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
