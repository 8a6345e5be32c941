"""The concept chapter's §14.4 judge items with the real local judge: on answers whose verdict is known, and on the
default night's answers. Prints the figures; nothing is tuned here, and none of this validates the items (only
human labels do: judge_validation) — it says whether the local judge can tell the known cases apart at all.

    nice -n 19 python benchmarks/judge_rubric_items.py [--warehouse data/warehouse] [--golden-set gs-…] [--night N]
                                                      [--max-cases 15] [--out benchmarks/results/judge_rubric_items.json]

Known answers are built from the golden set's own comparison cases (misleading-premise and distractor variants: a true
claim from the source and the false claim that contradicts it):

* ``global_coherence``: good = the true claim alone; bad = the true claim followed by the false one (self-contradicting
  by construction);
* ``contradiction_detection``: good = the true claim and a sentence naming the false claim as contradicting the
  documents; bad = the false claim asserted as fact;
* ``cross_lingual_accuracy``: no known answers here — the default corpus is English only and nothing offline
  translates; the item is skipped with its reason on every single-language answer.

Then the default night's stored answers of its (non-canary) systems to the same cases: pass rate with Wilson CIs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402

from hcat_pipeline.common.stats import wilson_interval  # noqa: E402
from hcat_pipeline.judge.items import case_claims, judge_items  # noqa: E402
from hcat_pipeline.judge.scoring import CHAPTER_14_4, JudgeConfig, JudgeItem, llm_judge  # noqa: E402
from hcat_pipeline.resources.llm import LLM  # noqa: E402


def known_items(golden: pl.DataFrame, max_cases: int) -> list[tuple[str, bool, JudgeItem]]:
    """(dimension, good?, item) for the comparison cases' constructed answers."""
    out = []
    for r in golden.iter_rows(named=True):
        claims = case_claims(r["constraints"])
        if len(claims) < 2 or len(out) >= 4 * max_cases:
            continue
        true = claims[0].split(":", 1)[1].strip()
        false = claims[1].split(":", 1)[1].strip()
        ctx, cid = [r["reference_answer"] or true], r["case_id"]
        out += [
            ("global_coherence", True, JudgeItem(f"{cid}|coh+", true, r["query"], ctx)),
            ("global_coherence", False, JudgeItem(f"{cid}|coh-", f"{true} {false}", r["query"], ctx)),
            ("contradiction_detection", True, JudgeItem(
                f"{cid}|cd+", f"{true} The statement \"{false}\" contradicts the documents.", r["query"], ctx, claims=claims)),
            ("contradiction_detection", False, JudgeItem(f"{cid}|cd-", false, r["query"], ctx, claims=claims)),
        ]  # fmt: skip
    return out


def _rate(rows: list[dict]) -> dict:
    scored = [r for r in rows if r["score"] is not None]
    k = sum(bool(r["passed"]) for r in scored)
    lo, hi = wilson_interval(k, len(scored)) if scored else (None, None)
    return {"n": len(scored), "passed": k, "pass_rate": round(k / len(scored), 3) if scored else None,
            "ci": [round(lo, 3), round(hi, 3)] if scored else None, "skipped": len(rows) - len(scored),
            "skip_reasons": sorted({r["skipped_reason"] or r["error"] for r in rows if r["score"] is None})}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warehouse", default=str(ROOT / "data" / "warehouse"))
    ap.add_argument("--golden-set", default=None, help="a version (default: the newest with stored responses)")
    ap.add_argument("--night", default=None, help="default: the newest night of that version")
    ap.add_argument("--max-cases", type=int, default=15)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "judge_rubric_items.json"))
    args = ap.parse_args()
    wh = Path(args.warehouse)
    runs = sorted((wh / "rag_responses").glob(f"{args.golden_set or '*'}/{args.night or '*'}.parquet"), key=lambda p: p.stat().st_mtime)
    if not runs:
        print("no stored night (run bash scripts/campaign.sh first)", file=sys.stderr)
        return 2
    run = runs[-1]
    version, night = run.parent.name, run.stem
    golden = pl.read_parquet(wh / "golden_set" / f"{version}.parquet")
    llm, cfg = LLM(provider="local"), JudgeConfig(dimensions=CHAPTER_14_4)
    t0 = time.perf_counter()
    known = known_items(golden, args.max_cases)
    results: dict = {"golden_set": version, "night": night, "judge": llm.fingerprint(), "known": {}, "night_answers": {}}
    for dim in ("global_coherence", "contradiction_detection"):
        mine = [(good, it) for d, good, it in known if d == dim]
        rows = llm_judge([it for _, it in mine], llm, cfg, dimensions=[dim])
        right = [bool(r["passed"]) == good for (good, _), r in zip(mine, rows, strict=True) if r["score"] is not None]
        lo, hi = wilson_interval(sum(right), len(right)) if right else (None, None)
        results["known"][dim] = {"good": _rate([r for (g, _), r in zip(mine, rows, strict=True) if g]),
                                 "bad": _rate([r for (g, _), r in zip(mine, rows, strict=True) if not g]),
                                 "accuracy": round(sum(right) / len(right), 3) if right else None, "accuracy_ci": [round(lo, 3), round(hi, 3)] if right else None}  # fmt: skip
        print(dim, json.dumps(results["known"][dim]), flush=True)
    cases = sorted({it.item_id.split("|")[0] for _, _, it in known})
    resp = pl.read_parquet(run).filter(~pl.col("system_id").str.starts_with("canary:") & pl.col("case_id").is_in(cases) & pl.col("answer").is_not_null())
    frame = resp.join(golden.select("case_id", "reference_answer"), on="case_id", how="left")
    items = judge_items(frame, golden, CHAPTER_14_4)
    rows = llm_judge(items, llm, cfg)
    for sid in sorted(resp["system_id"].unique().to_list()):
        for dim in CHAPTER_14_4:
            mine = [r for r in rows if r["item_id"].endswith(f"|{sid}") and r["dimension"] == dim]
            results["night_answers"][f"{sid}/{dim}"] = _rate(mine)
            print(f"{sid:<12} {dim:<24} {json.dumps(results['night_answers'][f'{sid}/{dim}'])}", flush=True)
    results["judged_night_answers"] = sum(r["score"] is not None for r in rows)
    results["wall_s"] = round(time.perf_counter() - t0, 1)
    print(f"{results['wall_s']} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
