"""Generate a golden set's happy-path cases on another corpus, the way a new user would (the campaign file's ``corpus:``),
and write them with their source text for reading and labelling.

Runs ``test_generation_job`` in a scratch data folder (nothing of the project's own data is touched; no variants or
attack suites: only the grounded happy path is wanted), then writes ``<out>`` (JSONL): per happy-path candidate the
question, the reference, the query type, the stratum, the source chunk's text and the validator's verdict, score and
reasons as the generation loop saw them — plus ``label`` / ``reason`` left empty for the reader.

    python benchmarks/generate_on_corpus.py benchmarks/data/case_validity_corpora/law --out /tmp/law_cases.jsonl

With ``--all-kinds`` the generation is the default campaign file's (every suite and variant, sized by the level in force)
on the corpus instead, and every candidate is written with its kind (``golden.sample_review.case_kind``), category,
variant kind, expected behaviour and its base case: the input of ``benchmarks/review_to_signed.py`` once labelled.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

NO_VARIANTS = {k: 0 for k in ("typo", "colloquial", "misleading_premise", "distractor", "injection", "ood", "ambiguous", "edge_case",
                              "partially_answerable", "jailbreak", "pii_elicitation", "boundary_probe", "follow_up", "correction",
                              "long_history", "format_constraint")}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", help="folder of documents (txt md html jsonl pdf); 'embedded': the project's default corpus")
    ap.add_argument("--out", required=True, help="JSONL of the happy-path candidates to read and label")
    ap.add_argument("--cases-per-stratum", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--all-kinds", action="store_true", help="the default campaign's generation (every suite); every candidate written")
    args = ap.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="hcat-gen-"))
    os.environ.update(HCAT_DATA_DIR=str(scratch / "data"), DAGSTER_HOME=str(scratch / "dagster"))
    (scratch / "dagster").mkdir()
    import polars as pl
    import yaml

    from hcat_pipeline.campaign import job_by_name
    from hcat_pipeline.campaign_spec import generation_run_config, load_campaign
    from hcat_pipeline.paths import WAREHOUSE_DIR

    spec_path = scratch / "campaign.yaml"
    generation = {"cases_per_stratum": args.cases_per_stratum, "seed": args.seed, "robustness": NO_VARIANTS, "pairs_per_attribute": 0}
    if args.all_kinds:  # the default campaign's own generation block, as a user with this corpus would get it
        generation = yaml.safe_load((Path(__file__).resolve().parents[1] / "campaign.yaml").read_text()).get("generation", {})
    spec_path.write_text(yaml.safe_dump({
        "name": "generate-on-corpus", "corpus": {"paths": [] if args.corpus == "embedded" else [str(Path(args.corpus).resolve())]},
        "generation": generation, "systems": [{"system_id": "none", "retriever": "closed_book"}],
    }))  # fmt: skip
    spec = load_campaign(spec_path)
    import dagster as dg

    t0 = time.perf_counter()
    with dg.instance_for_test(temp_dir=str(scratch / "dagster")) as instance:
        result = job_by_name("test_generation_job").execute_in_process(run_config=generation_run_config(spec), instance=instance,
                                                                        raise_on_error=False)
    took = time.perf_counter() - t0
    if not result.success:
        print(f"generation failed after {took:.0f} s; see {scratch}", file=sys.stderr)
        return 1
    cands = pl.read_parquet(WAREHOUSE_DIR / "golden_candidates.parquet")
    if not args.all_kinds:
        cands = cands.filter(pl.col("category") == "happy_path")
    from hcat_pipeline.golden.sample_review import case_kind

    bases = {r["case_id"]: r for r in cands.iter_rows(named=True)}
    chunks = dict(pl.read_parquet(WAREHOUSE_DIR / "chunks.parquet", columns=["chunk_id", "text"]).iter_rows())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for r in cands.sort("case_id").iter_rows(named=True):
            base = bases.get(r.get("base_case_id") or "") or {}
            f.write(json.dumps({
                "case_id": r["case_id"], "kind": case_kind(r), "category": r["category"], "variant_kind": r["variant_kind"],
                "expected_behavior": r["expected_behavior"], "options": r["options"], "base_case_id": r["base_case_id"],
                "base_query": base.get("query"), "base_reference": base.get("reference_answer"),
                "distractor_passage": r.get("distractor_passage"), "history": r.get("history"), "constraints": r.get("constraints"),
                "query_type": r["query_type"], "stratum_label": r["stratum_label"], "query": r["query"],
                "reference_answer": r["reference_answer"], "source_chunk_ids": r["source_chunk_ids"],
                "source_text": "\n\n".join(chunks.get(c, "") for c in r["source_chunk_ids"] or []),
                "validity_verdict": r["validity_verdict"], "validity_score": r["validity_score"], "validity_reasons": r["validity_reasons"],
                "label": None, "reason": None,
            }, ensure_ascii=False) + "\n")  # fmt: skip
    print(f"{cands.height} {'' if args.all_kinds else 'happy-path '}case(s) from {args.corpus} in {took:.0f} s → {out}  (scratch data: {scratch})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
