"""A labelled file for ``benchmarks/labels_to_decision.py`` from the FaithDial audit (../shared/validation/faithdial-audit).

    python benchmarks/make_faithdial_labels.py --out /tmp/faithdial.jsonl [--truth 0.96] [--heldout-only] [--seed 0]

Each line ``{"id", "question", "answer", "contexts": [knowledge], "human_label", "nli_heldout"}``: BEGIN ``entailment``
alone = 1, any hallucination = 0 (generic / uncooperative left out; ``metrics.nli.sets.faithdial_label``).
``--truth r`` keeps every supported response and a seeded sample of unsupported ones so that the file's human-pass rate
is about ``r`` (a night where the truth is above a gate's level); ``--truth 0`` keeps the audit's own mix.
``--heldout-only`` keeps the responses whose knowledge passage the packaged NLI head never trained on
(``split_of("faithdial", group) == "test"``); without it the file mixes both and marks each row's ``nli_heldout``, so
the metric is better on part of it than it would be on a corpus nobody trained on.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcat_pipeline.metrics.nli.sets import load_faithdial, split_of  # noqa: E402

VALIDATION = Path(__file__).resolve().parents[2] / "shared" / "validation"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--truth", type=float, default=0.0, help="target human-pass rate (0: the audit's own mix)")
    ap.add_argument("--heldout-only", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--validation-dir", default=str(VALIDATION))
    args = ap.parse_args()
    items, seen = [], set()
    for it in load_faithdial(Path(args.validation_dir)):
        key = (it.context, it.answer)
        if key in seen:
            continue
        seen.add(key)
        held = split_of("faithdial", it.group) == "test"
        if args.heldout_only and not held:
            continue
        items.append({"id": f"fd{len(items):05d}", "question": "", "answer": it.answer, "contexts": [it.context],
                      "human_label": int(it.label), "nli_heldout": held})  # fmt: skip
    pos = [r for r in items if r["human_label"] == 1]
    neg = [r for r in items if r["human_label"] == 0]
    if args.truth > 0:
        keep = min(len(neg), round(len(pos) * (1 - args.truth) / args.truth))
        neg = random.Random(args.seed).sample(neg, keep)
    rows = sorted(pos + neg, key=lambda r: r["id"])
    Path(args.out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} rows ({len(pos)} supported, {len(neg)} not; human-pass rate {len(pos) / len(rows):.3f}; "
          f"{sum(r['nli_heldout'] for r in rows)} NLI-held-out) -> {args.out}")  # fmt: skip


if __name__ == "__main__":
    main()
