"""Exam generation on the default corpus: survival rate, rejections by reason, baselines, time.

Reads the stored ``topic_strata`` and ``chunks`` tables (data/warehouse/), draws the exam's own
stratified sample (the exam_candidates defaults), generates with the packaged local LLM and the
a-priori filters, and prints the figures. Every candidate is appended to ``--out`` (JSONL) as it is
made, so a long run can be read while it goes and resumed (``--resume`` skips chunks already done).

    nice -n 19 python benchmarks/exam_generation.py --out /tmp/exam_gen.jsonl [--sample-size 64] [--max-chunks N]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import polars as pl

from hcat_pipeline.core.exam import filter_candidate, generate_candidate, reason_counts, select_per_chunk, survival
from hcat_pipeline.core.exam_filters import FilterConfig, baselines
from hcat_pipeline.core.sampling import stratified_sample
from hcat_pipeline.paths import WAREHOUSE_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM, LLMCallFailed


def main() -> None:
    from hcat_pipeline.assets.exam import ExamGenerationConfig

    defaults = ExamGenerationConfig()
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/exam_generation.jsonl")
    ap.add_argument("--sample-size", type=int, default=defaults.sample_size)
    ap.add_argument("--candidates-per-chunk", type=int, default=defaults.candidates_per_chunk)
    ap.add_argument("--max-chunks", type=int, default=0)
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()

    strata = pl.read_parquet(WAREHOUSE_DIR / "topic_strata.parquet")
    chunks = pl.read_parquet(WAREHOUSE_DIR / "chunks.parquet")
    sample, _ = stratified_sample(strata.select("chunk_id", "stratum", "stratum_label"), args.sample_size, defaults.allocation,
                                  None, defaults.min_per_stratum, defaults.sample_seed)  # fmt: skip
    sample = sample.join(chunks.select("chunk_id", "text"), on="chunk_id").sort("sample_rank")
    if args.max_chunks:
        sample = sample.head(args.max_chunks)
    cfg = FilterConfig(**{f.name: getattr(defaults, f.name) for f in dataclasses.fields(FilterConfig)})
    llm, emb = LLM(provider="local"), EmbeddingModel()
    out = Path(args.out)
    done: dict[str, list[dict]] = {}
    if args.resume and out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.setdefault(r["chunk_id"], []).append(r)
    elif out.exists():
        out.unlink()
    texts = dict(zip(sample["chunk_id"], sample["text"], strict=True))
    t0 = time.perf_counter()
    rows: list[dict] = [r for rs in done.values() for r in rs]
    for chunk in sample.to_dicts():
        if chunk["chunk_id"] in done:
            continue
        for k in range(args.candidates_per_chunk):
            raw = generate_candidate(chunk, k, llm, defaults.seed, defaults.sample_temperature, defaults.max_passage_chars, (LLMCallFailed,))
            row = filter_candidate(raw, chunk["text"], emb.embed, cfg, defaults.seed)
            rows.append(row)
            with out.open("a") as f:
                f.write(json.dumps(row, default=str) + "\n")
            print(f"[{time.perf_counter() - t0:7.0f}s] {chunk['chunk_id']} #{k}: {'PASS' if row['passed'] else row['reasons']} "
                  f"| {row['question']} -> {row['answer']} | {row['distractors']}", flush=True)  # fmt: skip
            if row["passed"]:
                break
    seconds = time.perf_counter() - t0
    for r in rows:  # filter again with the current thresholds (a resumed file may predate a change)
        r.update(filter_candidate(r, texts[r["chunk_id"]], emb.embed, cfg, defaults.seed))
    rows = select_per_chunk(rows, emb.embed, cfg)
    sel = [r for r in rows if r["selected"]]
    s = survival(rows)
    print(json.dumps({**s, "seconds_this_run": round(seconds, 1), "rejections_by_reason": reason_counts(rows),
                      "baselines": baselines([r["options"] for r in sel], [r["correct_index"] for r in sel]) if sel else None,
                      "strata_covered": len({r["stratum"] for r in sel}), "n_strata": strata["stratum"].n_unique()},
                     indent=1, default=str))  # fmt: skip


if __name__ == "__main__":
    main()
