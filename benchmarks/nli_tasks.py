"""Groundedness per task (issue 23): each task's head against the general head, on that task's
development data, under the no-regression rule (CONTRIBUTING).

    nice -n 19 python benchmarks/nli_tasks.py [--limit 800] [--tasks qa,dialogue,summary]

* ``qa``: the hand-labelled QA answers of ``benchmarks/data/nli_qa_dev/qa_dev.jsonl`` (made by the
  packaged LLM over two corpora other than the default, labelled by hand) and the QA-style twins
  from the stdlib's docstrings (``qa_pairs``, 1,000 twins);
* ``dialogue``: FaithDial's held-out ("test") part; ``summary``: SummEdits' and FIB's held-out parts
  (``nli_sets.load_sets``; ``--limit`` items per set, a seeded sample, 0 = all).

Per set: AUROC of the answer's ``groundedness_nli`` (raw and length-matched), the general head
(``all``) then the task's head, and the paired bootstrap 95 % interval of the difference (1,000
resamples, seed 0); "WORSE" when the interval lies below 0. Answer sentences per second per head.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from hcat_pipeline.corpus.chunking import split_sentences  # noqa: E402
from hcat_pipeline.metrics.groundedness_nli import groundedness_nli_batch  # noqa: E402
from hcat_pipeline.metrics.nli.evaluation import auroc, length_matched_auroc, paired_auroc_difference_ci  # noqa: E402

QA_DEV = ROOT / "benchmarks" / "data" / "nli_qa_dev" / "qa_dev.jsonl"
DEV_SETS = {"qa": ("qa_dev", "qa_twins"), "dialogue": ("faithdial",), "summary": ("summedits", "fib")}


def _sents(text: str) -> list[str]:
    return split_sentences(text) or [text]


def load(name: str, limit: int, seed: int = 0) -> list[tuple[list[str], list[str], int]]:
    """(answer sentences, context sentences, label) per item of one dev set."""
    if name == "qa_dev":
        rows = [json.loads(x) for x in QA_DEV.read_text().splitlines()]
        return [(_sents(r["answer"]), _sents(r["context"]), int(r["label"])) for r in rows if r["label"] is not None]
    if name == "qa_twins":
        from nli_sets import stdlib_docstring_texts

        from hcat_pipeline.metrics.nli.qa_pairs import documents_from_texts, qa_pairs

        pairs = qa_pairs(documents_from_texts(stdlib_docstring_texts()), n_pairs=1000, seed=1)
        return [([p.hypothesis], list(p.premise), int(p.label)) for p in pairs]
    from hcat_pipeline.metrics.nli.sets import load_sets

    items = load_sets(sets=(name,), split="test")
    if limit and len(items) > limit:
        items = random.Random(seed).sample(items, limit)
    return [(_sents(it.answer), _sents(it.context), int(it.label)) for it in items]


def score(rows, model, task: str) -> tuple[np.ndarray, float]:
    t0 = time.perf_counter()
    out = groundedness_nli_batch([(a, c) for a, c, _ in rows], model, task)
    rate = sum(len(a) for a, _, _ in rows) / (time.perf_counter() - t0)
    return np.array([r["groundedness_nli"] if r["groundedness_nli"] == r["groundedness_nli"] else 0.5 for r in out]), rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="qa,dialogue,summary")
    ap.add_argument("--limit", type=int, default=800)
    args = ap.parse_args()
    from hcat_pipeline.resources.nli import NLIModel

    model, ok = NLIModel(), True
    print(f"{'task / dev set':26s} {'n':>5s}  general (lm)    task head (lm)   task-general [95 % CI]   verdict   sentences/s general, task")
    for task in args.tasks.split(","):
        for name in DEV_SETS[task]:
            rows = load(name, args.limit)
            y = np.array([lab for _, _, lab in rows])
            words = np.array([sum(len(s.split()) for s in a) for a, _, _ in rows])
            before, r0 = score(rows, model, "all")
            after, r1 = score(rows, model, task)
            lo, hi = paired_auroc_difference_ci(y, before, after)
            worse = hi < 0
            ok &= not worse
            lm = [length_matched_auroc(y, s, words)["auroc"] for s in (before, after)]
            print(f"{task + ' / ' + name:26s} {len(y):5d}  {auroc(y, before):.3f} ({lm[0]:.3f})   {auroc(y, after):.3f} ({lm[1]:.3f})    "
                  f"{auroc(y, after) - auroc(y, before):+.3f} [{lo:+.3f}, {hi:+.3f}]   {'WORSE' if worse else 'better' if lo > 0 else 'same':7s}   "
                  f"{r0:.0f}, {r1:.0f}", flush=True)
    print(f"\nno-regression rule: {'PASS' if ok else 'FAIL'}")


if __name__ == "__main__":
    main()
