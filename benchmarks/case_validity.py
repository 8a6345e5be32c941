"""The case validator on hand-labelled cases over a corpus other than the default one.

Two hand-labelled sets, each a ``corpus/*.md`` folder and a ``cases.jsonl`` of sound and unsound cases of every kind
the golden set makes (labelled ``sound`` / ``unsound`` by hand, with the reason), neither over the default corpus:

- ``dev`` (``benchmarks/data/case_validity/``): five retail-banking documents (savings, card disputes, mortgage
  overpayments, international payments, personal data), 74 cases. The validator was developed on it: its figures
  are optimistic.
- ``heldout`` (``benchmarks/data/case_validity/heldout/``): three other documents (home insurance, staff travel
  expenses, IT access rules), 50 cases written before the validator scored them and read once for the note.

Nothing is fitted: the weights and thresholds are ``ValidityConfig``'s.

Prints: AUROC of ``validity_score`` for sound vs unsound (with a bootstrap 95 % CI and n), the verdict table per
kind (sound cases judged invalid / unsure, unsound cases judged valid / unsure), and every error with its reasons.

    python benchmarks/case_validity.py [--cases FILE] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent / "data" / "case_validity"


def auroc(scores: np.ndarray, positive: np.ndarray) -> float:
    pos, neg = scores[positive], scores[~positive]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def bootstrap_auroc(scores: np.ndarray, positive: np.ndarray, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n_boot):
        i = rng.integers(0, len(scores), len(scores))
        if positive[i].any() and (~positive[i]).any():
            vals.append(auroc(scores[i], positive[i]))
    return float(np.quantile(vals, 0.025)), float(np.quantile(vals, 0.975))


def load(cases_path: Path, corpus_dir: Path) -> tuple[list[dict], dict[str, str]]:
    docs = {p.stem: p.read_text(encoding="utf-8") for p in sorted(corpus_dir.glob("*.md"))}
    cases = [json.loads(line) for line in cases_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    sources = {c["case_id"]: "\n\n".join(docs[d] for d in c.get("source_docs", [])) for c in cases}
    return cases, sources


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("dev", "heldout"), default="dev",
                    help="dev: the cases the validator was developed on; heldout: written before it was scored, read once")
    ap.add_argument("--cases", default="", help="another labelled file (default: the --set's cases.jsonl)")
    ap.add_argument("--corpus", default="", help="its corpus folder of .md documents")
    args = ap.parse_args(argv)
    base = HERE if args.set == "dev" else HERE / "heldout"
    args.cases, args.corpus = args.cases or str(base / "cases.jsonl"), args.corpus or str(base / "corpus")
    from hcat_pipeline.golden.case_checks import validate_cases
    from hcat_pipeline.resources.embedding import EmbeddingModel

    cases, sources = load(Path(args.cases), Path(args.corpus))
    t0 = time.perf_counter()
    res = validate_cases(cases, sources, EmbeddingModel().embed)
    seconds = time.perf_counter() - t0
    scores = np.array([v.score for v in res])
    sound = np.array([c["label"] == "sound" for c in cases])
    lo, hi = bootstrap_auroc(scores, sound)
    print(f"case validity on {len(cases)} hand-labelled cases ({int(sound.sum())} sound, {int((~sound).sum())} unsound), "
          f"{seconds:.1f} s ({len(cases) / seconds:.0f} cases/s)")
    print(f"AUROC validity_score, sound vs unsound: {auroc(scores, sound):.3f} (bootstrap 95% CI {lo:.3f}-{hi:.3f}, n = {len(cases)})")
    table: dict[str, Counter] = {}
    for c, v in zip(cases, res, strict=True):
        table.setdefault(c["kind"], Counter())[f"{c['label']}->{v.verdict}"] += 1
    print(f"\n{'kind':<20}{'n':>4}  sound: valid/unsure/invalid   unsound: invalid/unsure/valid")
    for kind, cnt in table.items():
        n = sum(cnt.values())
        print(f"{kind:<20}{n:>4}  {cnt['sound->valid']:>7}/{cnt['sound->unsure']}/{cnt['sound->invalid']:<18}"
              f"{cnt['unsound->invalid']:>7}/{cnt['unsound->unsure']}/{cnt['unsound->valid']}")
    tot = Counter()
    for cnt in table.values():
        tot.update(cnt)
    n_sound, n_unsound = int(sound.sum()), int((~sound).sum())
    print(f"\nsound judged valid {tot['sound->valid']}/{n_sound}, unsure {tot['sound->unsure']}, invalid {tot['sound->invalid']}; "
          f"unsound judged invalid {tot['unsound->invalid']}/{n_unsound}, unsure {tot['unsound->unsure']}, valid {tot['unsound->valid']}")
    print("\nerrors (sound not valid / unsound not invalid):")
    for c, v in zip(cases, res, strict=True):
        wrong = (c["label"] == "sound" and v.verdict != "valid") or (c["label"] == "unsound" and v.verdict != "invalid")
        if wrong:
            print(f"  {c['case_id']:<5} {c['kind']:<18} {c['label']:<7} -> {v.verdict:<7} {v.score:.2f}  {c.get('why', '')!s:<40} "
                  f"{'; '.join(v.reasons)[:150]} {v.checks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
