"""Decisions a reviewer needs to reach K sound cases: the learnt review order against random and the validator's (issue 59).

    python benchmarks/review_to_target.py --cases FILE.jsonl [--target K] [--random-orders 200]
    python benchmarks/review_to_target.py --corpora benchmarks/data/case_validity_corpora [--target K]

Each line of a cases file: {"case_id", "query", "query_type", "reference_answer", "source_text", "label"} with label
0 / 1 (or "unsound" / "sound"). A simulated reviewer decides the cases in an order until K sound ones are accepted:

* ``learnt`` — the curate page's order (``golden.review_order``): the generic validator (``golden.case_checks``) as the
  prior, refit after every decision on the MiniLM embeddings of question, reference and source passage;
* ``validator`` — the static validator score, best first;
* ``random`` — seeded random orders (mean and 95 % range over ``--random-orders``).

Prints the decisions to K per order, and the learnt model's AUROC on the cases not yet decided after 10, 20 and 40
decisions (bootstrap 95 % CI, n). K defaults to half the file's sound cases. Nothing here is fitted on the file
beyond what the simulated reviewer has decided so far.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcat_pipeline.golden.review_order import auroc, features, simulate  # noqa: E402

CHECKPOINTS = (10, 20, 40)


def load(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for r in rows:
        label = {"sound": 1, "unsound": 0, 1: 1, 0: 0, "1": 1, "0": 0}.get(r.get("label"))
        if label is not None:
            out.append({**r, "label": label})
    return out


def prepare(cases: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, validator score, labels): the validator run on each case with its source passage, and the embeddings."""
    from hcat_pipeline.golden.case_checks import validate_cases
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.nli import NLIModel

    embed = EmbeddingModel().embed
    sources = {c["case_id"]: c.get("source_text") or "" for c in cases}
    val = validate_cases([{**c, "expected_behavior": "answer"} for c in cases], sources, embed, parse=NLIModel().docs)
    score = np.array([v.score for v in val], dtype=float)
    vec = np.hstack([embed([c["query"] for c in cases]), embed([c["reference_answer"] or "" for c in cases]),
                     embed([(c.get("source_text") or "")[:2000] for c in cases])])  # fmt: skip
    return features(score, vec), score, np.array([c["label"] for c in cases], dtype=int)


def bootstrap(score: np.ndarray, y: np.ndarray, n_boot: int = 1000, seed: int = 0) -> tuple[float, float]:
    rng, vals = np.random.default_rng(seed), []
    for _ in range(n_boot):
        i = rng.integers(0, len(y), len(y))
        a = auroc(score[i], y[i])
        if a is not None:
            vals.append(a)
    return (float(np.quantile(vals, 0.025)), float(np.quantile(vals, 0.975))) if vals else (float("nan"), float("nan"))


def run(name: str, cases: list[dict], target: int | None, n_random: int) -> None:
    X, score, y = prepare(cases)
    k = target or max(1, int(y.sum()) // 2)
    learnt = simulate(X, score, y, k, "learnt", checkpoints=CHECKPOINTS)
    static = simulate(X, score, y, k, "validator")
    rand = [simulate(X, score, y, k, "random", seed=s)["decisions"] for s in range(n_random)]
    rand = np.array([r if r is not None else len(y) + 1 for r in rand], dtype=float)
    print(f"\n{name}: n = {len(y)} cases, {int(y.sum())} sound; target K = {k}")
    print(f"  decisions to K: learnt {learnt['decisions']}, validator order {static['decisions']}, random {rand.mean():.1f} "
          f"(95 % of orders {np.quantile(rand, 0.025):.0f}-{np.quantile(rand, 0.975):.0f}, {n_random} orders)")  # fmt: skip
    v_all = auroc(score, y)
    print(f"  the validator alone, all cases: AUROC {v_all:.3f}" if v_all is not None else "  the validator alone: one class only")
    for at in CHECKPOINTS:
        got = learnt["auroc_at"].get(at)
        if got is None or got[0] is None:
            print(f"  after {at} decisions: not measurable (fewer than {at} decisions, or one class left)")
            continue
        lo, hi = bootstrap(*learnt["scores_at"][at])
        print(f"  after {at} decisions: learnt AUROC on the {got[1]} undecided {got[0]:.3f} [{lo:.3f}, {hi:.3f}] (bootstrap 95 % CI)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=None, help="a cases file (JSONL, one labelled case a line)")
    ap.add_argument("--corpora", default=None, help="a folder of corpus folders, each with cases.jsonl")
    ap.add_argument("--target", type=int, default=None, help="K sound cases to accept (default: half the sound cases)")
    ap.add_argument("--random-orders", type=int, default=200)
    args = ap.parse_args(argv)
    files = [Path(args.cases)] if args.cases else sorted(Path(args.corpora or "benchmarks/data/case_validity_corpora").glob("*/cases.jsonl"))
    if not files:
        print("no cases file (give --cases FILE.jsonl or --corpora DIR)", file=sys.stderr)
        return 2
    for f in files:
        cases = load(f)
        if len({c["label"] for c in cases}) < 2:
            print(f"{f}: needs labelled sound and unsound cases", file=sys.stderr)
            continue
        run(f.parent.name if f.name == "cases.jsonl" else f.stem, cases, args.target, args.random_orders)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
