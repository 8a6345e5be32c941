"""The no-regression rule for the toxicity score (CONTRIBUTING, "No regression"): score every
development set with the checked-out scorer, write one JSON, and compare two such files.

    nice -n 19 python benchmarks/toxicity_regression.py --out /tmp/after.json
    python benchmarks/toxicity_regression.py --compare /tmp/before.json /tmp/after.json

"Before" is the shipped code's own output: run the same script from a worktree of the shipped
commit (``git worktree add /tmp/before <rev>``; ``python benchmarks/toxicity_regression.py --root
/tmp/before --out before.json`` imports the scorer from that tree).

Dev sets (all of other registers than the head's training rows, none used in training):
* ``short_posts``: hand-written short posts per category (``benchmarks/data/toxicity_dev/``);
  ``--heldout`` scores the held-out file instead (read once per shipped change);
* ``ethos``: ``../shared/validation/ethos`` (validation only, GPL): its ``dev`` half by a hash of
  the text, or the ``heldout`` half with ``--heldout``;
* ``implicit`` / ``explicit`` / ``toxigen``: the val split of the head's own data (toxicity_data);
* ``functional``: the hand-written table of ``hcat_pipeline_tests/toxicity_functional.py``;
* ``operational`` / ``reclaimed``: the held-out templates (clean prose with violent words,
  in-group reclaimed slurs), all expected below 0.5.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "benchmarks" / "data" / "toxicity_dev"
HIGH = {"slur_bare", "slur_post", "identity_attack", "threat_group", "negative_emotion_hate", "insult_person", "threat_person",
        "implicit", "explicit"}  # fmt: skip
NO_SIDE = {"profanity_only"}  # offensive but not an attack: its side of 0.5 is not part of the rule (PROFANITY is)
AUROC_SETS = (  # (name, set, positive test, negative test) over rows
    ("short posts: hate vs neither", "short_posts", lambda r: r["hate"] == 1, lambda r: r["offensive"] == 0),
    ("short posts: hate or offensive vs neither", "short_posts", lambda r: r["offensive"] == 1, lambda r: r["offensive"] == 0),
    ("ethos: hate vs not", "ethos", lambda r: r["y"] == 1, lambda r: r["y"] == 0),
    ("implicit-hate val: implicit vs not_hate", "implicit", lambda r: r["y"] == 1, lambda r: r["y"] == 0),
    ("implicit-hate val: explicit vs not_hate", "explicit", lambda r: r["y"] == 1, lambda r: r["y"] == 0),
    ("toxigen val: hate vs neutral", "toxigen", lambda r: r["y"] == 1, lambda r: r["y"] == 0),
    ("functional table: hate vs not", "functional", lambda r: r["y"] == 1, lambda r: r["y"] == 0),
)


def ethos_half(text: str) -> str:
    return "dev" if int(hashlib.sha1(text.encode()).hexdigest(), 16) % 2 == 0 else "heldout"


def load_rows(data: Path, heldout: bool) -> list[dict]:
    """Every row to score: ``set``, ``category``, ``text``, ``y`` (and ``hate`` / ``offensive`` for short posts)."""
    from hcat_pipeline.metrics.toxicity.data import head_splits, load_all
    from hcat_pipeline.resources.embedding import EmbeddingModel

    rows = []
    for line in (DEV / f"short_posts_{'heldout' if heldout else 'dev'}.jsonl").read_text().splitlines():
        r = json.loads(line)
        rows.append({"set": "short_posts", "category": r["category"], "text": r["text"], "y": r["offensive"], "hate": r["hate"], "offensive": r["offensive"]})
    with open(data / "ethos" / "Ethos_Dataset_Binary.csv", encoding="utf-8") as f:
        for r in csv.DictReader(f, delimiter=";"):
            if ethos_half(r["comment"]) == ("heldout" if heldout else "dev"):
                rows.append({"set": "ethos", "category": "ethos", "text": r["comment"], "y": int(float(r["isHate"]) >= 0.5)})
    examples, _ = load_all(data)
    splits = head_splits(examples, EmbeddingModel().embed)
    for e, s in zip(examples, splits, strict=True):
        if s != "val":
            continue
        if e.source == "toxigen":
            rows.append({"set": "toxigen", "category": e.group.split(":")[0], "text": e.text, "y": e.label})
        else:
            name = "explicit" if e.kind == "explicit_hate" else "implicit" if e.kind == "implicit_hate" else None
            for n in [name] if name else ["implicit", "explicit"]:
                rows.append({"set": n, "category": e.implicit_class or e.kind, "text": e.text, "y": e.label})
    sys.path.insert(0, str(ROOT))
    from hcat_pipeline_tests.toxicity_functional import FUNCTIONAL, HATE

    rows += [{"set": "functional", "category": c, "text": t, "y": int(c in HATE)} for c, ts in FUNCTIONAL.items() for t in ts]
    from hcat_pipeline.metrics.toxicity.operational import operational_templates
    from hcat_pipeline.metrics.toxicity.reclaimed import reclaimed_templates

    rows += [{"set": "operational", "category": tid, "text": t, "y": 0} for tid, t in operational_templates(seed=0, split="heldout", with_ids=True)]
    rows += [{"set": "reclaimed", "category": tid, "text": t, "y": 0} for tid, t in reclaimed_templates(seed=0, split="heldout", with_ids=True)]
    return rows


def score(rows: list[dict]) -> None:
    """Adds ``score`` (the registered metric's per-sentence ``toxicity``) and, when the scorer has them,
    ``attributes`` to each row; one batch."""
    from hcat_pipeline.metrics.toxicity.model import sentence_toxicity
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.multilingual import MultilingualEncoder

    texts = sorted({r["text"] for r in rows})
    out = sentence_toxicity(texts, EmbeddingModel().layer_features, embed_aux=MultilingualEncoder().encode)
    by = dict(zip(texts, out, strict=True))
    for r in rows:
        s = by[r["text"]]
        r["score"] = float(s["toxicity"])
        if "attributes" in s:
            r["attributes"] = {k: round(float(v), 4) for k, v in s["attributes"].items()}


def _pairs(before: list[dict], after: list[dict], set_name: str, pos, neg) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    b = {(r["set"], r["text"]): r for r in before if r["set"] == set_name}
    a = [r for r in after if r["set"] == set_name and (r["set"], r["text"]) in b and (pos(r) or neg(r))]
    y = np.array([int(pos(r)) for r in a])
    return y, np.array([b[(r["set"], r["text"])]["score"] for r in a]), np.array([r["score"] for r in a])


def compare(before: list[dict], after: list[dict], resamples: int = 1000, seed: int = 0) -> bool:
    """Prints AUROC per dev set (before, after, paired-bootstrap 95 % interval of the difference) and the
    share on the right side of 0.5 per category (Wilson interval of before); returns True when nothing
    is worse by more than its interval. (hcat_pipeline is imported inside the functions: ``--root``
    chooses which checkout's scorer a scoring run imports.)"""
    from hcat_pipeline.common.stats import wilson_interval
    from hcat_pipeline.metrics.nli.evaluation import auroc, paired_auroc_difference_ci

    ok = True
    print(f"{'dev set':44s} {'n':>5s}  before  after   after-before [95 % CI]   verdict")
    for name, set_name, pos, neg in AUROC_SETS:
        y, sb, sa = _pairs(before, after, set_name, pos, neg)
        if len(set(y.tolist())) < 2:
            continue
        lo, hi = paired_auroc_difference_ci(y, sb, sa, resamples, seed)
        worse = hi < 0
        ok &= not worse
        print(f"{name:44s} {len(y):5d}  {auroc(y, sb):.3f}   {auroc(y, sa):.3f}   {auroc(y, sa) - auroc(y, sb):+.3f} [{lo:+.3f}, {hi:+.3f}]   "
              f"{'WORSE' if worse else 'better' if lo > 0 else 'same'}")
    print(f"\n{'category (expected side of 0.5)':44s} {'n':>5s}  before [95 % CI]        after   verdict")
    b = {(r["set"], r["text"]): r for r in before}
    cats = sorted({(r["set"], r["category"]) for r in after if r["set"] not in ("ethos", "implicit", "explicit", "toxigen")})
    for s, c in cats:
        rows = [r for r in after if r["set"] == s and r["category"] == c and (s, r["text"]) in b]
        high = c in HIGH
        side = "—" if c in NO_SIDE else "high" if high else "low"
        right = (lambda v: v >= 0.5) if high else (lambda v: v < 0.5)
        kb, ka = sum(right(b[(s, r["text"])]["score"]) for r in rows), sum(right(r["score"]) for r in rows)
        lo, hi = wilson_interval(kb, len(rows))
        worse = c not in NO_SIDE and ka / len(rows) < lo - 1e-9
        ok &= not worse
        mean_b, mean_a = np.mean([b[(s, r["text"])]["score"] for r in rows]), np.mean([r["score"] for r in rows])
        verdict = "WORSE" if worse else "better" if ka / len(rows) > hi + 1e-9 else "same"
        shares = f"{kb / len(rows):.2f} [{lo:.2f}, {hi:.2f}]   {ka / len(rows):.2f}" if c not in NO_SIDE else f"mean {mean_b:.2f}              mean {mean_a:.2f}"
        print(f"{s + ': ' + c + ' (' + side + ')':44s} {len(rows):5d}  {shares}   {verdict if c not in NO_SIDE else ''}")
    print(f"\nno-regression rule: {'PASS' if ok else 'FAIL'}")
    return ok


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "validation")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose scorer is imported (a worktree of the shipped commit for 'before')")
    ap.add_argument("--heldout", action="store_true", help="the held-out short posts and ethos half (read once per shipped change)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        sys.exit(0 if compare(before, after) else 1)
    sys.path.insert(0, str(args.root))
    t0 = time.perf_counter()
    rows = load_rows(args.data, args.heldout)
    t1 = time.perf_counter()
    score(rows)
    t2 = time.perf_counter()
    args.out.write_text(json.dumps(rows))
    print(f"{len(rows)} rows ({len({r['text'] for r in rows})} unique) from {args.root}: loaded in {t1 - t0:.0f} s, scored in {t2 - t1:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
