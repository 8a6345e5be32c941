"""The local reference systems' answers against llama.cpp's own pace on this machine (issue 66 item 3).

    python benchmarks/answer_floor.py [--cases 12] [--golden data/golden_sets/<version>/golden_set.parquet]

For the default campaign's two systems (``closed_book``, ``hybrid``: the campaign file's prompts, top-k and token caps)
over the same cases of the frozen golden set (the newest under ``data/golden_sets`` unless ``--golden``):

1. **harness** — the night's own path: ``RagPipeline.respond`` with the ``llm`` resource (retrieval, the prompt, the
   chat template, llama.cpp), seconds per answer, wall;
2. **in the model** — the same prompts, replayed on a bare ``llama_cpp.Llama`` with the resource's settings (2 threads,
   n_ctx 4096, greedy), split by llama.cpp's own counters (``llama_perf_context``) into prefill and decode;
3. **the floor** — llama-bench's two figures measured here on the same model: prompt processing (``pp``: tokens a
   second evaluating a fresh prompt of the answers' median prompt length) and text generation (``tg``: tokens a second
   decoding one at a time); an answer's floor = its prompt tokens / pp + its generated tokens / tg.

Prints per system: answers, mean prompt / generated tokens, seconds per answer (harness, in the model: prefill +
decode, the floor) and harness / floor. Run it alone (both cores).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def newest_golden() -> Path:
    from hcat_pipeline.paths import GOLDEN_SETS_DIR

    found = sorted(GOLDEN_SETS_DIR.glob("*/golden_set.parquet"), key=lambda p: p.stat().st_mtime)
    if not found:
        sys.exit(f"no frozen golden set under {GOLDEN_SETS_DIR}: run `bash scripts/campaign.sh` first, or pass --golden")
    return found[-1]


class Recorder:
    """Wraps the llm resource: each call's messages and limits are kept for the replay."""

    def __init__(self, llm):
        self.llm, self.calls = llm, []

    def generate(self, prompt, **kw):
        self.calls.append((prompt, kw))
        return self.llm.generate(prompt, **kw)


def llama_rates(llama, prompt_tokens: int, gen_tokens: int = 64) -> tuple[float, float]:
    """llama-bench's pp and tg on this machine: a fresh prompt of ``prompt_tokens`` tokens; ``gen_tokens`` decoded one by one."""
    ids = (llama.tokenize(b"The bank's policy on overdraft fees and card limits is described below. " * 64))[:prompt_tokens]
    llama.reset()
    t = time.perf_counter()
    llama.eval(ids)
    pp = len(ids) / (time.perf_counter() - t)
    t = time.perf_counter()
    for i in range(gen_tokens):  # decode one token at a time after the prompt, as generation does (sampling not counted)
        llama.eval([ids[i % len(ids)]])
    tg = gen_tokens / (time.perf_counter() - t)
    llama.reset()
    return pp, tg


def replay(llama, calls) -> list[dict]:
    """The recorded prompts on a bare Llama: prefill / decode milliseconds and token counts from llama.cpp's counters."""
    import llama_cpp

    out = []
    for prompt, kw in calls:
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        llama.reset()
        llama_cpp.llama_perf_context_reset(llama.ctx)
        t = time.perf_counter()
        llama.create_chat_completion(messages=messages, temperature=kw.get("temperature", 0.0), seed=kw.get("seed", 0),
                                     max_tokens=kw.get("max_tokens"))  # fmt: skip
        wall = time.perf_counter() - t
        perf = llama_cpp.llama_perf_context(llama.ctx)
        out.append({"wall_s": wall, "prefill_s": perf.t_p_eval_ms / 1000, "decode_s": perf.t_eval_ms / 1000,
                    "prompt_tokens": perf.n_p_eval, "gen_tokens": perf.n_eval})  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=12)
    ap.add_argument("--golden", default="")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from llama_cpp import Llama

    from hcat_pipeline.models import qwen_gguf_path
    from hcat_pipeline.resources.embedding import EmbeddingModel
    from hcat_pipeline.resources.llm import LLM
    from hcat_pipeline.responses.rag import CheckpointStore, RagPipeline, SystemConfig, run_responses
    from hcat_pipeline.responses.retrieval import build_retriever

    golden = pl.read_parquet(args.golden or newest_golden())
    cases = golden.filter(pl.col("category") == "happy_path").sample(min(args.cases, golden.height), seed=args.seed).to_dicts()
    systems = [s for s in yaml.safe_load((ROOT / "campaign.yaml").read_text())["systems"] if "http" not in s]
    from hcat_pipeline.paths import WAREHOUSE_DIR

    chunks = pl.read_parquet(WAREHOUSE_DIR / "chunks.parquet").join(pl.read_parquet(WAREHOUSE_DIR / "chunk_embeddings.parquet"), on="chunk_id")
    emb = EmbeddingModel()
    ids, texts, matrix = chunks["chunk_id"].to_list(), chunks["text"].to_list(), chunks["embedding"].to_numpy()
    llm = LLM(provider="local")
    llm.generate("Say OK.", max_tokens=2)  # the model loads outside the timings
    print(f"{len(cases)} happy-path cases of {golden.height}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    bare = Llama(model_path=str(qwen_gguf_path()), n_ctx=4096, n_threads=2, seed=0, verbose=False)
    rows, cache = [], {}
    for spec in systems:
        cfg = SystemConfig(**{k: v for k, v in spec.items() if k in SystemConfig.__dataclass_fields__})
        retriever = build_retriever(cfg.retriever, ids, texts, matrix, emb.embed, cache)
        rec = Recorder(llm)
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            records, _ = run_responses([RagPipeline(cfg, retriever, rec, "local/qwen")], cases, CheckpointStore(d))
            harness = (time.perf_counter() - t) / len(records)
        model = replay(bare, rec.calls)
        pp, tg = llama_rates(bare, int(statistics.median(m["prompt_tokens"] for m in model)))
        floor = statistics.fmean(m["prompt_tokens"] / pp + m["gen_tokens"] / tg for m in model)
        row = {"system": cfg.system_id, "answers": len(records), "prompt_tokens": statistics.fmean(m["prompt_tokens"] for m in model),
               "gen_tokens": statistics.fmean(m["gen_tokens"] for m in model), "harness_s": harness,
               "prefill_s": statistics.fmean(m["prefill_s"] for m in model), "decode_s": statistics.fmean(m["decode_s"] for m in model),
               "pp_tok_s": pp, "tg_tok_s": tg, "floor_s": floor, "ratio": harness / floor}  # fmt: skip
        rows.append(row)
        print(f"{row['system']:12s} n={row['answers']} prompt {row['prompt_tokens']:.0f} tok, generated {row['gen_tokens']:.0f} tok | "
              f"harness {harness:.2f} s/answer | in the model: prefill {row['prefill_s']:.2f} + decode {row['decode_s']:.2f} s | "
              f"floor {floor:.2f} s (pp {pp:.0f} tok/s, tg {tg:.1f} tok/s) | harness / floor {row['ratio']:.2f}")  # fmt: skip
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
