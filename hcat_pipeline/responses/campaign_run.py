"""A campaign run (golden-eval §4): the systems of a campaign answer the cases of one frozen
golden-set version on one night.

* ``build_systems`` — retrieval-augmented systems, each on its own LLM, or a user's service over
  HTTP (made by a factory the caller passes, so no resource is imported here); each knows whether
  it may reuse earlier answers.
* ``CheckpointHistory`` — this run's checkpoint plus the checkpoints of the earlier nights of the
  same version: a re-run of the night resumes; a reusable system (local, deterministic, whole
  configuration unchanged — the config hash covers the model file hash, prompt hash, parameters and
  retriever index hash) takes its earlier answer, recorded as ``reused_from``.
* ``answer_cases`` — runs every system and returns the responses frame and per-system figures.
* ``merge_imports`` — responses imported with ``hcat import-responses`` as further systems.
* ``run_summary`` — the figures the asset records as metadata.

No dagster import.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from hcat_pipeline.responses.rag import (
    CheckpointStore,
    RagPipeline,
    SystemConfig,
    failure_rates,
    responses_frame,
    run_responses,
)
from hcat_pipeline.responses.rerank import llm_relevance
from hcat_pipeline.responses.response_import import read_imported_responses
from hcat_pipeline.responses.retrieval import build_retriever
from hcat_pipeline.schemas import RAG_RESPONSES, RUN_COLUMNS, conform

_DESCRIBE = ("llm", "retriever", "top_k", "icl_examples", "prompt_hash")


def index_fingerprint(chunk_ids: Sequence[str], texts: Sequence[str], embedder_id: str) -> str:
    """Hash of what a retriever searches: every chunk id and text, and the embedding model."""
    h = hashlib.sha256(embedder_id.encode())
    for cid, text in sorted(zip(chunk_ids, texts)):
        h.update(b"\0" + cid.encode() + b"\0" + text.encode())
    return h.hexdigest()[:16]


@dataclass
class BuiltSystem:
    system: object  # .system_id .config_hash .respond(case) [.prefetch(cases)]
    kind: str  # rag | http
    concurrency: int
    describe: dict
    reusable: bool


@dataclass
class LLMInfo:
    """What the harness needs to know of the LLM resource."""

    client: object  # .generate(...)
    llm_id: str  # provider/model
    fingerprint: str  # model file hash (local) or provider/model (API)
    is_deterministic: Callable[[float], bool]
    concurrency: int = 1


def build_systems(
    specs: Sequence[dict],
    llms: Mapping[str, LLMInfo],
    chunks: pl.DataFrame,
    embed: Callable[[list[str]], np.ndarray],
    embedder_id: str,
    icl_pool: Sequence[dict],
    http_factory: Callable[[dict], object],
    reuse_mode: str = "deterministic_local",
    second_dense: Callable[[list[str]], tuple[np.ndarray, Callable, str]] | None = None,
) -> list[BuiltSystem]:
    """One ``BuiltSystem`` per spec (dicts in the campaign schema), a retrieval-augmented one on ``llms[system_id]``.
    ``chunks`` has chunk_id, text and embedding (the dense index). Retriever indexes are shared between systems.
    ``second_dense(texts) -> (vectors, embed, model id)`` builds the USE-M3 index, called only when a system uses
    ``dense_use`` (its index fingerprint names that model, so a changed encoder never reuses an answer)."""
    chunk_ids, texts = chunks["chunk_id"].to_list(), chunks["text"].to_list()
    matrix = chunks["embedding"].to_numpy() if "embedding" in chunks.columns else None
    index = index_fingerprint(chunk_ids, texts, embedder_id)
    use_index, use_id = None, None
    if any(s.get("retriever") == "dense_use" and not s.get("http") for s in specs):
        if second_dense is None:
            raise ValueError("a system uses retriever 'dense_use' but no multilingual encoder was given (second_dense)")
        vectors, use_embed, use_model = second_dense(texts)
        use_index, use_id = (vectors, use_embed), index_fingerprint(chunk_ids, texts, use_model)
    cache: dict = {}
    built = []
    for s in specs:
        if s.get("http"):
            http = {k: v for k, v in s["http"].items()}
            system = http_factory({"system_id": s["system_id"], **http})
            built.append(BuiltSystem(system, "http", int(http.get("max_concurrency", 4)),
                                     {"llm": None, "retriever": "external", "top_k": None, "icl_examples": None, "prompt_hash": None},
                                     reusable=False))  # fmt: skip
            continue
        llm = llms[s["system_id"]]
        rerank = llm_relevance(llm.client) if s["retriever"] == "hybrid_rerank" else None
        retriever = build_retriever(s["retriever"], chunk_ids, texts, matrix, embed, cache, use_index, rerank)
        cfg = SystemConfig(
            system_id=s["system_id"], retriever=s["retriever"], top_k=s["top_k"], icl_examples=s["icl_examples"],
            prompt=s["prompt"], max_tokens=s["max_tokens"], temperature=s["temperature"], seed=s["seed"],
            inject_distractors=s["inject_distractors"],
            extra={"model_sha": llm.fingerprint,
                   "index": {"closed_book": None, "dense_use": use_id,
                             "hybrid_rerank": f"{index}+{getattr(rerank, 'prompt_hash', '')}"}.get(s["retriever"], index)},
        )
        system = RagPipeline(cfg, retriever, llm.client, llm.llm_id, icl_pool=icl_pool)
        reusable = reuse_mode == "deterministic_local" and llm.is_deterministic(cfg.temperature)
        built.append(BuiltSystem(system, "rag", max(1, llm.concurrency),
                                 {"llm": llm.llm_id, "retriever": cfg.retriever, "top_k": cfg.top_k,
                                  "icl_examples": cfg.icl_examples, "prompt_hash": system.prompt_sha},
                                 reusable))  # fmt: skip
    return built


class CheckpointHistory:
    """Checkpoints of one golden-set version, one directory per night: ``<root>/<version>/<night>/``."""

    def __init__(self, root: str | Path, version: str, night: str):
        self.root, self.version, self.night = Path(root), version, night
        self.current = CheckpointStore(self.root / version / night)
        self._earlier: list[tuple[str, CheckpointStore]] | None = None

    def earlier_nights(self) -> list[str]:
        vdir = self.root / self.version
        return sorted((d.name for d in vdir.iterdir() if d.is_dir() and d.name < self.night), reverse=True) if vdir.is_dir() else []

    def lookup(self, case_id: str, system_id: str, cfg_hash: str) -> tuple[dict, str] | None:
        """The latest earlier night's successful record of this case × system × configuration."""
        if self._earlier is None:
            self._earlier = [(n, CheckpointStore(self.root / self.version / n)) for n in self.earlier_nights()]
        for night, store in self._earlier:
            rec = store.get(case_id, system_id, cfg_hash)
            if rec is not None and rec.get("error") is None:
                return rec, f"{self.version}|{night}"
        return None


@dataclass
class AnswerStats:
    called: int = 0
    resumed: int = 0
    reused: int = 0
    failed: int = 0
    per_system: dict = field(default_factory=dict)


def answer_cases(
    built: Sequence[BuiltSystem],
    cases: Sequence[dict],
    history: CheckpointHistory,
    retry_failed: bool = True,
    on_record: Callable[[dict], None] | None = None,
    on_system: Callable[[str, dict], None] | None = None,
) -> tuple[pl.DataFrame, AnswerStats]:
    """Every system answers every case (resume / reuse / call); the responses frame in the
    RAG_RESPONSES contract (+ the describing columns) and the per-system figures."""
    frames, total = [], AnswerStats()
    for b in built:
        records, st = run_responses([b.system], cases, history.current, b.concurrency, retry_failed, on_record=on_record,
                                    reuse=history.lookup, reusable=lambda s, b=b: b.reusable)  # fmt: skip
        per = st.per_system.get(b.system.system_id, {})
        fig = {
            "kind": b.kind, "config_hash": b.system.config_hash, "reusable": b.reusable, "called": st.called,
            "resumed": st.resumed, "reused": st.reused, "failed_now": st.failed, "seconds": round(st.seconds, 1),
            "call_seconds": round(per.get("call_seconds") or 0.0, 3),
            "responses_per_minute": round(60 * st.called / per["call_seconds"], 2) if per.get("call_seconds") else None,
        }
        total.per_system[b.system.system_id] = fig
        total.called += st.called
        total.resumed += st.resumed
        total.reused += st.reused
        total.failed += st.failed
        frames.append(responses_frame(records).with_columns(*[pl.lit(b.describe[k]).alias(k) for k in _DESCRIBE]))
        if on_system:
            on_system(b.system.system_id, fig)
    out = pl.concat(frames, how="diagonal_relaxed") if frames else responses_frame([])
    return out, total


_SUMMED = ("called", "resumed", "reused", "failed_now", "seconds", "call_seconds")


def merge_stats(per_shard: Sequence[Mapping[str, dict]]) -> dict[str, dict]:
    """Per-system figures of several shards (``answer_cases``' ``per_system``, in plan order) as one: counts and
    seconds summed (step seconds, not wall time), the rate recomputed from the summed call time."""
    out: dict[str, dict] = {}
    for stats in per_shard:
        for sid, fig in stats.items():
            if sid not in out:
                out[sid] = dict(fig)
                continue
            for k in _SUMMED:
                out[sid][k] = round((out[sid].get(k) or 0) + (fig.get(k) or 0), 3)
    for fig in out.values():
        fig["responses_per_minute"] = round(60 * fig["called"] / fig["call_seconds"], 2) if fig.get("call_seconds") else None
    return out


def merge_imports(import_dir: str | Path, golden_set: pl.DataFrame, configured: set[str]) -> tuple[list[pl.DataFrame], dict, pl.DataFrame]:
    """Responses imported for this version (``<import_dir>/<system_id>.{parquet,jsonl}``): frames,
    per-system figures and the bad rows (file, line, reason). A file named like a configured system
    is refused (ValueError)."""
    errors = pl.DataFrame(schema={"file": pl.String, "line": pl.Int64, "reason": pl.String})
    frames, meta = [], {}
    imp_dir = Path(import_dir)
    if not imp_dir.is_dir():
        return frames, meta, errors
    known = set(golden_set["case_id"].to_list())
    queries = dict(zip(golden_set["case_id"], golden_set["query"]))
    for f in sorted([*imp_dir.glob("*.parquet"), *imp_dir.glob("*.jsonl")]):
        sid = f.stem
        if sid in configured:
            raise ValueError(f"imported responses {f} use system id {sid!r}, already a configured system")
        good, bad = read_imported_responses(f, sid, known, queries)
        errors = pl.concat([errors, bad])
        frames.append(good.with_columns(pl.lit(None, pl.String).alias("llm"), pl.lit("external").alias("retriever"),
                                        pl.lit(None, pl.Int32).alias("top_k"), pl.lit(None, pl.Int32).alias("icl_examples"),
                                        pl.lit(None, pl.String).alias("prompt_hash")))  # fmt: skip
        meta[sid] = {"kind": "import", "file": str(f), "rows": good.height, "bad_rows": bad.height,
                     "config_hash": good["config_hash"][0] if good.height else None}  # fmt: skip
    return frames, meta, errors


def finish_frame(frames: Sequence[pl.DataFrame], version: str, night: str, campaign_sha: str) -> pl.DataFrame:
    """Concatenate, stamp the run identity on every row, check the contract."""
    out = pl.concat(list(frames), how="diagonal_relaxed") if frames else responses_frame([])
    for col in ("llm", "retriever", "prompt_hash"):
        if col not in out.columns:
            out = out.with_columns(pl.lit(None, pl.String).alias(col))
    out = out.with_columns(
        pl.col("top_k").cast(pl.Int32) if "top_k" in out.columns else pl.lit(None, pl.Int32).alias("top_k"),
        pl.col("icl_examples").cast(pl.Int32) if "icl_examples" in out.columns else pl.lit(None, pl.Int32).alias("icl_examples"),
        pl.col("reused_from").cast(pl.String) if "reused_from" in out.columns else pl.lit(None, pl.String).alias("reused_from"),
        pl.lit(version).alias("golden_set_version"), pl.lit(night).alias("night"), pl.lit(campaign_sha).alias("campaign_sha256"),
    )
    conform(out, {**RAG_RESPONSES, **RUN_COLUMNS})
    return out


def run_summary(out: pl.DataFrame) -> dict:
    """Per-system figures of a finished run (plain values; the asset turns them into metadata)."""
    by_sys = out.group_by("system_id", maintain_order=True).agg(
        pl.len().alias("responses"),
        pl.col("error").is_not_null().sum().alias("failed"),
        pl.col("reused_from").is_not_null().sum().alias("reused"),
        pl.col("latency_s").mean().round(3).alias("mean_latency_s"),
        pl.col("output_tokens").sum().alias("output_tokens"),
        pl.col("cost_usd").sum().alias("cost_usd"),
    )
    rates = failure_rates(out.select("system_id", "error").to_dicts())
    return {"by_system": by_sys, "failure_rates": {k: round(v, 4) for k, v in rates.items()},
            "failed_total": int(out["error"].is_not_null().sum())}  # fmt: skip


def over_failure_budget(rates: dict[str, float], max_rate: float) -> dict[str, float]:
    return {s: r for s, r in rates.items() if r > max_rate}
