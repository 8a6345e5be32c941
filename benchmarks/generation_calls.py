"""Where the golden set's generation spends its LLM calls (issue 66 item 2), read from the tables a generation stored.

    bash scripts/campaign.sh --generate-only     # or any night that generated
    python benchmarks/generation_calls.py [--warehouse data/warehouse]

Per generation round: the requests asked, how many of them were kept, and the prompt / reply tokens they spent; then
the calls by kind (question writing, the generator's round trip on a kept question) with their tokens, the calls per
kept case, and the rejections by reason — split into those a rule could have decided **before** the question was
asked (they depend only on the source sentence, its chunk or the options, never on the question the LLM wrote: a call
that decides nothing) and those that needed the question. ``input_tokens`` is the whole prompt; with the generator's
saved few-shot prefix (``reuse_prompt_prefix``) only its last message is evaluated per call. Reads nothing but Parquet.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
# reasons decided by the source sentence / chunk / options alone (golden/selection.py, golden/case_signals.py): the
# question the LLM wrote is not read by them
BEFORE_THE_QUESTION = ("too_long", "reference_contradicts_source", "mc_key_contradicts_evidence", "no_partner")
REFERENCE_ONLY_VALIDITY = ("reference_defers", "reference_context_lost")  # case_invalid for the reference alone


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", default=str(ROOT / "data" / "warehouse"))
    args = ap.parse_args()
    wh = Path(args.warehouse)
    if not (wh / "generated_queries.parquet").exists():
        sys.exit(f"{wh}/generated_queries.parquet missing: generate first (bash scripts/campaign.sh --generate-only)")
    gen = pl.read_parquet(wh / "generated_queries.parquet")
    kept = set(pl.read_parquet(wh / "selected_queries.parquet")["query_id"])
    rej = pl.read_parquet(wh / "query_rejections.parquet")
    asked = gen.filter(pl.col("input_tokens").fill_null(0) > 0)  # rows the LLM wrote (rule-made rows spend no call)
    print(f"{gen.height} rows: {asked.height} questions written by the LLM, {gen.height - asked.height} rule-made; kept {len(kept)}")
    print("\nround | requests | kept | prompt tokens | reply tokens | LLM seconds")
    for (rnd,), g in sorted(gen.group_by("generation_round"), key=lambda kv: kv[0][0] if kv[0][0] is not None else -1):
        w = g.filter(pl.col("input_tokens").fill_null(0) > 0)
        print(f"{rnd!s:>5} | {g.height:8d} | {g.filter(pl.col('query_id').is_in(kept)).height:4d} | {int(w['input_tokens'].sum()):13,d} | "
              f"{int(w['output_tokens'].sum()):12,d} | {float(w['latency_s'].sum()):11.0f}")  # fmt: skip
    roundtrips = gen.filter(pl.col("roundtrip_agrees").is_not_null()).height
    calls = asked.height + roundtrips
    print(f"\ncalls by kind: question writing {asked.height} ({float(asked['latency_s'].sum()):.0f} s, mean "
          f"{float(asked['input_tokens'].mean() or 0):.0f} prompt / {float(asked['output_tokens'].mean() or 0):.0f} reply tokens), "
          f"round trip {roundtrips} (tokens not stored); {calls} calls for {len(kept)} kept cases = {calls / max(len(kept), 1):.2f} a case")  # fmt: skip
    llm_rej = rej.join(asked.select("query_id"), on="query_id", how="semi")
    before = llm_rej.filter(pl.col("reason").is_in(BEFORE_THE_QUESTION) | ((pl.col("reason") == "case_invalid")
                            & pl.col("detail").fill_null("").str.contains("|".join(REFERENCE_ONLY_VALIDITY))))
    print(f"\nrejections of LLM-written questions: {llm_rej.height}; decidable before the question was asked: {before.height} "
          f"({before.height / max(asked.height, 1):.0%} of the question calls)")  # fmt: skip
    print(llm_rej.group_by("stage", "reason").len().sort("len", descending=True).to_pandas().to_string(index=False)
          if llm_rej.height else "(none)")  # fmt: skip


if __name__ == "__main__":
    main()
