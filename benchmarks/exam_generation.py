"""Exam generation on the default corpus: survival rate, rejections by reason, baselines, time.

Reads the stored ``topic_strata`` and ``chunks`` tables (data/warehouse/), draws the exam's own
stratified sample (the exam_candidates defaults), generates with the packaged local LLM and the
a-priori filters exactly as the ``exam_candidates`` asset does (``generate_exam_candidates``), and
prints the figures. Every raw candidate is appended to ``--out`` (JSONL) as it is made, so a long run
can be read while it goes and resumed (``--resume``: raw candidates in the file are filtered again,
not asked again).

    nice -n 19 python benchmarks/exam_generation.py --out /tmp/exam_gen.jsonl [--sample-size 64] [--max-chunks N]
    [--question-form llm_first]  # the model's question first, the cloze only where it fails (the method before issue 47)
    [--free-only]   # the previous method: the model chooses the fact and writes the key (no answer targets)
    [--asset-checkpoint]  # read / append the exam_candidates asset's own checkpoint instead of --out, so that
                          # `hcat exam` afterwards reuses every candidate generated here
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import polars as pl

from hcat_pipeline.corpus.sampling import stratified_sample
from hcat_pipeline.exam.filters import baselines
from hcat_pipeline.exam.generation import generate_exam_candidates, reason_counts, survival
from hcat_pipeline.exam.spans import TermIndex
from hcat_pipeline.paths import WAREHOUSE_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM, LLMCallFailed


def main() -> None:
    from hcat_pipeline.assets.exam import ExamGenerationConfig, filter_config

    defaults = ExamGenerationConfig()
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/exam_generation.jsonl")
    ap.add_argument("--sample-size", type=int, default=defaults.sample_size)
    ap.add_argument("--candidates-per-chunk", type=int, default=defaults.candidates_per_chunk)
    ap.add_argument("--max-chunks", type=int, default=0)
    ap.add_argument("--free-only", action="store_true", help="no answer targets, no mined distractors (the previous method)")
    ap.add_argument("--question-form", choices=("cloze_first", "cloze_only", "llm_first"), default=defaults.question_form,
                    help="a span candidate's form (llm_first: the earlier method; with --resume re-filters the same candidates)")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--asset-checkpoint", action="store_true", help="use the exam_candidates asset's checkpoint file (implies --resume)")
    args = ap.parse_args()

    strata = pl.read_parquet(WAREHOUSE_DIR / "topic_strata.parquet")
    chunks = pl.read_parquet(WAREHOUSE_DIR / "chunks.parquet")
    sample, _ = stratified_sample(strata.select("chunk_id", "stratum", "stratum_label"), args.sample_size, defaults.allocation,
                                  None, defaults.min_per_stratum, defaults.sample_seed)  # fmt: skip
    sample = sample.join(chunks.select("chunk_id", "text"), on="chunk_id").sort("sample_rank")
    if args.max_chunks:
        sample = sample.head(args.max_chunks)
    cfg = dataclasses.replace(filter_config(defaults), question_form=args.question_form)
    if args.free_only:
        cfg = dataclasses.replace(cfg, mined_distractors=0)
    llm, emb = LLM(provider="local"), EmbeddingModel()
    out = Path(args.out)
    if args.asset_checkpoint:
        from hcat_pipeline.assets.exam import candidates_checkpoint

        out, args.resume = candidates_checkpoint(defaults, llm), True
        out.parent.mkdir(parents=True, exist_ok=True)
    done: dict[tuple[str, int], dict] = {}
    if args.resume and out.exists():
        for line in out.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[(r["chunk_id"], r["candidate_no"])] = r
    elif out.exists():
        out.unlink()
    t0 = time.perf_counter()

    def on_raw(r: dict) -> None:
        with out.open("a") as f:
            f.write(json.dumps(r, default=str) + "\n")

    def on_row(r: dict) -> None:
        print(f"[{time.perf_counter() - t0:7.0f}s] {r['chunk_id']} #{r['candidate_no']} {r.get('target_kind')}: "
              f"{'PASS' if r['passed'] else r['reasons']} | {r['question']} -> {r['answer']} | {r['distractors']} "
              f"{r.get('distractor_sources')}", flush=True)  # fmt: skip

    rows = generate_exam_candidates(
        sample.to_dicts(), llm, emb.embed, args.candidates_per_chunk, defaults.seed, cfg, defaults.sample_temperature,
        defaults.max_passage_chars, (LLMCallFailed,), on_row=on_row, done=done, on_raw=on_raw,
        answer_targets_first=not args.free_only, term_index=TermIndex(chunks["text"].to_list()),
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    sel = [r for r in rows if r["selected"]]
    new = [r for r in rows if (r["chunk_id"], r["candidate_no"]) not in done]
    print(json.dumps({**survival(rows), "seconds_this_run": round(seconds, 1), "new_candidates_this_run": len(new),
                      "llm_seconds_new": round(sum(r.get("latency_s") or 0 for r in new), 1),
                      "rejections_by_reason": reason_counts(rows),
                      "baselines": baselines([r["options"] for r in sel], [r["correct_index"] for r in sel]) if sel else None,
                      "strata_covered": len({r["stratum"] for r in sel}), "n_strata": strata["stratum"].n_unique()},
                     indent=1, default=str))  # fmt: skip


if __name__ == "__main__":
    main()
