"""Reviewer minutes from a generated golden set to a signed one: by sample where a kind is sound, by case where not (issue 68).

    python benchmarks/review_to_signed.py --cases FILE.jsonl [--tolerance 0.1] [--confidence 0.95] [--acceptance 0] [--seeds 200]

Each line of FILE: {case_id, kind, query_type, query, reference_answer, source_text, label} — ``label`` sound / unsound
(or 1 / 0) as a strict reader judged the case; ``kind`` may be left out (then ``golden.sample_review.case_kind`` of the
row's category / variant_kind / query_type). A scripted reviewer answers from ``label``: a sound case is accepted
(10 s), an unsound one edited (40 s: the edit applies, the case stays). Per kind, the plan the curate page follows
(``golden.sample_review``): a seeded sample of the size the tolerance needs; the kind is accepted by sample when the
exact upper bound of its unsound share is within the tolerance, else every case of it is reviewed.

Prints, for seed 0: per kind the cases, the sample, the unsound found, the bound, the state, the decisions and minutes;
the totals against reviewing every case; then over ``--seeds`` seeded samples: per kind how often it was accepted by
sample and how often an acceptance was wrong (the kind's true unsound share above the tolerance) — an acceptance must
be right in at least 95 % of the seeds; and the sound share of the generated set per kind (Wilson 95 % CI, n), weakest
first: the generator kinds to cut or re-form. Seconds per decision are the issue's assumptions, not measurements.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import polars as pl  # noqa: E402

from hcat_pipeline.common.stats import wilson_interval  # noqa: E402
from hcat_pipeline.golden.sample_review import bases_of, case_kind, kind_status, plan_kinds, with_base_gone  # noqa: E402

ACCEPT_S, EDIT_S = 10, 40


def _sound(label) -> bool:
    if isinstance(label, str):
        return label.strip().lower() in ("sound", "1", "true", "yes")
    return bool(label)


def load(path: Path) -> pl.DataFrame:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    missing = [r.get("case_id") for r in rows if r.get("label") in (None, "")]
    if missing:
        raise SystemExit(f"{path}: {len(missing)} case(s) without a label (first: {missing[:3]})")
    return pl.DataFrame([{"case_id": r["case_id"], "kind": r.get("kind") or case_kind(r), "sound": _sound(r["label"]),
                          "base_case_id": r.get("base_case_id")} for r in rows], schema_overrides={"base_case_id": pl.String})  # fmt: skip


def review(cases: pl.DataFrame, tolerance: float, confidence: float, acceptance: int, seed: int, bases_first: bool = True,
           leave_out: tuple[str, ...] = ()) -> dict:  # fmt: skip
    """The scripted reviewer: the bases first, case by case (an unsound base rejected, 10 s: its variants leave with it),
    then every kind's plan over the cases that remain; per kind its status, decisions, seconds and what left."""
    sound = dict(zip(cases["case_id"].to_list(), cases["sound"].to_list()))
    frame = cases.rename({"kind": "review_kind"})
    first = bases_of(frame) if bases_first else []
    rejected = {c for c in first if not sound[c]}
    gone = with_base_gone(frame, rejected)
    out: dict = {"(bases, by case)": {"status": None, "decisions": len(first), "seconds": ACCEPT_S * len(first), "n": len(first),
                                      "left": len(gone), "true_unsound": len(rejected) / max(len(first), 1)}} if first else {}  # fmt: skip
    plans = plan_kinds(frame, tolerance, confidence, acceptance, seed, exclude=set(first) | gone)
    for kind in leave_out:  # the reviewer leaves a kind out of the signed set: one decision, its cases rejected
        if kind in plans:
            n = plans.pop(kind).n_cases
            out[f"{kind} (left out)"] = {"status": None, "decisions": 1, "seconds": ACCEPT_S, "n": n, "left": n, "true_unsound": 0.0}
    for kind, plan in plans.items():
        ids = [c for c in cases.filter(pl.col("kind") == kind)["case_id"].to_list() if c not in gone and c not in first]
        actions: dict[str, str] = {}
        status = kind_status(plan, ids, actions)
        while status.to_review:  # the sample first, then (a failed sample) every other case
            for c in status.to_review:
                actions[c] = "accept" if sound[c] else "edit"
            status = kind_status(plan, ids, actions)
        seconds = sum(ACCEPT_S if a == "accept" else EDIT_S for a in actions.values())
        out[kind] = {"status": status, "decisions": len(actions), "seconds": seconds, "n": len(ids), "left": 0,
                     "true_unsound": sum(not sound[c] for c in ids) / len(ids)}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", required=True, type=Path)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--acceptance", type=int, default=0, help="unsound cases a sample may hold and still accept its kind")
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--no-bases-first", action="store_true", help="sample every kind as generated (variants of unsound bases included)")
    ap.add_argument("--leave-out", nargs="*", default=[], metavar="KIND", help="kinds the reviewer leaves out of the signed set (one decision each)")
    args = ap.parse_args(argv)
    cases = load(args.cases)
    first = not args.no_bases_first
    run = review(cases, args.tolerance, args.confidence, args.acceptance, 0, first, tuple(args.leave_out))
    print(f"{args.cases}: {cases.height} cases, {cases['kind'].n_unique()} kinds; tolerance {args.tolerance:.0%} at {args.confidence:.0%}, "
          f"acceptance {args.acceptance}; {ACCEPT_S} s a decision, {EDIT_S} s an edit (assumed)\n")  # fmt: skip
    print(f"{'kind':32} {'cases':>5} {'sample':>6} {'unsound':>7} {'bound':>6} {'state':>19} {'decided':>7} {'min':>6}")
    for kind, r in sorted(run.items()):
        s = r["status"]
        if s is None:  # the bases, reviewed by case first; a kind left out
            print(f"{kind:32} {r['n']:5d} {'all' if 'bases' in kind else '–':>6} {round(r['true_unsound'] * r['n']):7d} {'–':>6} "
                  f"{str(r['left']) + ' left the set':>19} {r['decisions']:7d} {r['seconds'] / 60:6.1f}")  # fmt: skip
            continue
        bound = f"{s.bound:.3f}" if s.bound is not None else "–"
        print(f"{kind:32} {r['n']:5d} {s.n_sample:6d} {s.n_unsound:7d} {bound:>6} {s.state:>19} {r['decisions']:7d} {r['seconds'] / 60:6.1f}")
    decided, minutes = sum(r["decisions"] for r in run.values()), sum(r["seconds"] for r in run.values()) / 60
    every = (cases.height * ACCEPT_S + int((~cases["sound"]).sum()) * (EDIT_S - ACCEPT_S)) / 60
    left = sum(r["left"] for r in run.values() if r["status"] is None)
    signed = cases.height - left  # an unsound base is rejected with its variants; other unsound cases are edited in place
    print(f"\nto a signed set of {signed} cases: {decided} decisions, {minutes:.1f} reviewer minutes "
          f"(every case reviewed: {cases.height} decisions, {every:.1f} minutes)")  # fmt: skip
    accepted, wrong = defaultdict(int), defaultdict(int)
    mins = []
    for seed in range(args.seeds):
        r = review(cases, args.tolerance, args.confidence, args.acceptance, seed, first, tuple(args.leave_out))
        mins.append(sum(x["seconds"] for x in r.values()) / 60)
        for kind, x in r.items():
            if x["status"] is not None and x["status"].state == "accepted_by_sample":
                accepted[kind] += 1
                wrong[kind] += x["true_unsound"] > args.tolerance
    print(f"\nover {args.seeds} seeded samples: reviewer minutes median {sorted(mins)[len(mins) // 2]:.1f} "
          f"(min {min(mins):.1f}, max {max(mins):.1f})")  # fmt: skip
    print(f"{'kind':32} {'true unsound':>12} {'accepted':>9} {'wrongly':>8} {'right when accepted':>20}")
    run = {k: v for k, v in run.items() if v["status"] is not None}
    ok = True
    for kind in sorted(k for k in run if run[k]["status"] is not None):
        a, w = accepted[kind], wrong[kind]
        right = 1 - w / args.seeds  # an acceptance of a kind over tolerance is wrong; every other seed is right
        ok &= right >= 0.95
        print(f"{kind:32} {run[kind]['true_unsound']:12.3f} {a:9d} {w:8d} {right:20.3f}")
    print(f"every kind accepted by sample within tolerance in >= 95 % of the seeds: {'yes' if ok else 'NO'}")
    print("\nsound share of the generated set by kind (Wilson 95 % CI, n), weakest first:")
    shares = cases.group_by("kind").agg(pl.col("sound").sum().alias("k"), pl.len().alias("n")).with_columns(
        (pl.col("k") / pl.col("n")).alias("share")).sort("share")  # fmt: skip
    for r in shares.iter_rows(named=True):
        lo, hi = wilson_interval(r["k"], r["n"])
        flag = "  < 50 %: costs more review than it gives" if r["share"] < 0.5 else ""
        print(f"  {r['kind']:32} {r['share']:.2f} [{lo:.2f}, {hi:.2f}] (n={r['n']}){flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
