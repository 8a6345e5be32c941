"""Chunk size as a design variable (exam-generation paper App. B.1): one exam, two chunkings of the corpus.

The paper's hierarchical model extends to a new design choice by adding its latent variable (§3.3), here
θ_taker = θ_llm + θ_retriever + θ_icl + θ_chunking. The same takers answer the same frozen exam over each chunking's
index; one joint IRT fit over both (taker ids ``<taker>|<chunking>``) puts every ability on one scale, and

    Δ = θ_chunking[B] − θ_chunking[A]

says which chunking retrieves better for this corpus. Its 95 % interval is a percentile bootstrap over the exam's
questions (refits on questions drawn with replacement): the fit's own standard errors are conditional on the item
parameters, a lower bound too narrow for a verdict. Verdict: B better when the interval lies above 0, A when below,
otherwise "no difference resolved". Per taker, θ under each chunking with its (conditional) interval is listed beside.

The oracle takes its passages from a question's source chunks; under another chunking those ids do not exist, so
``source_map`` maps each source chunk to the other chunking's chunks of the same document overlapping its span (most
characters first) and ``remap_sources`` rewrites the exam's ``source_chunk_ids`` for that chunking.

No dagster import.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from hcat_pipeline.exam.taking import response_matrix
from hcat_pipeline.irt.model import fit_irt

Z95 = 1.959964


def source_map(base: pl.DataFrame, other: pl.DataFrame) -> dict[str, list[str]]:
    """base chunk_id → the ``other`` chunks of the same document overlapping its [start, end) span, most shared
    characters first (ties: earlier start)."""
    pairs = base.select("chunk_id", "doc_id", "start", "end").join(
        other.select(pl.col("chunk_id").alias("other_id"), "doc_id", pl.col("start").alias("o_start"), pl.col("end").alias("o_end")),
        on="doc_id", how="inner",
    ).with_columns((pl.min_horizontal("end", "o_end") - pl.max_horizontal("start", "o_start")).alias("shared"))  # fmt: skip
    pairs = pairs.filter(pl.col("shared") > 0).sort("chunk_id", "shared", "o_start", descending=[False, True, False])
    return {cid: g["other_id"].to_list() for (cid,), g in pairs.group_by("chunk_id", maintain_order=True)}


def remap_sources(exam: pl.DataFrame, mapping: Mapping[str, list[str]]) -> pl.DataFrame:
    """The exam with ``source_chunk_ids``: each question's source chunk (``chunk_id``) mapped to the other chunking's
    chunks (most shared characters first); the takers' oracle reads them (``exam.taking``)."""
    mapped = [list(mapping.get(c, [])) for c in exam["chunk_id"].to_list()]
    return exam.with_columns(pl.Series("source_chunk_ids", mapped, pl.List(pl.String)))


def joint_matrix(responses: Mapping[str, pl.DataFrame]) -> tuple[np.ndarray, list[str], list[str], dict[str, list]]:
    """One response matrix over every chunking: taker ids ``<taker>|<chunking>``, components llm / retriever / icl /
    chunking (``exam.taking.response_matrix`` per chunking, questions aligned)."""
    frames = [r.with_columns(pl.concat_str([pl.col("system_id"), pl.lit(f"|{name}")]).alias("system_id")) for name, r in responses.items()]
    y, takers, questions, comps = response_matrix(pl.concat(frames, how="vertical_relaxed"))
    comps["chunking"] = [t.rsplit("|", 1)[1] for t in takers]
    return y, takers, questions, comps


def _delta(y: np.ndarray, comps: dict[str, list], a: str, b: str, model: str, seed: int) -> tuple[float, object]:
    fit = fit_irt(y, model, comps, seed)
    lat = fit.components["chunking"]
    pos = {lvl: i for i, lvl in enumerate(lat.levels)}
    return float(lat.values[pos[b]] - lat.values[pos[a]]), fit


def compare_chunkings(responses: Mapping[str, pl.DataFrame], model: str = "2pl", seed: int = 0, n_boot: int = 200,
                      confidence: float = 0.95) -> tuple[pl.DataFrame, dict]:
    """(per taker: θ and its interval under each chunking; the verdict {a, b, delta, ci_low, ci_high, verdict, …}).
    The interval of Δ is the percentile bootstrap over the exam's questions (``n_boot`` refits on questions drawn
    with replacement, seeded): the fit's own standard errors are conditional on the item parameters and too narrow
    for a verdict (on simulated answers without any effect they called one in 2 of 10 exams)."""
    if len(responses) != 2:
        raise ValueError(f"compare_chunkings: two chunkings to compare, got {list(responses)}")
    (a, b) = list(responses)
    y, takers, questions, comps = joint_matrix(responses)
    row = {t: i for i, t in enumerate(takers)}
    paired = [(row[f"{t}|{a}"], row[f"{t}|{b}"]) for t in dict.fromkeys(x.rsplit("|", 1)[0] for x in takers)
              if f"{t}|{a}" in row and f"{t}|{b}" in row]  # fmt: skip
    ya, yb = y[[i for i, _ in paired]], y[[j for _, j in paired]]
    differing = int((np.isfinite(ya) & np.isfinite(yb) & (ya != yb)).sum())  # answers that changed with the chunking
    delta, fit = _delta(y, comps, a, b, model, seed)
    if differing == 0:  # the same answers under both chunkings: nothing to tell them apart (the latent is not identified)
        delta, lo, hi, verdict = 0.0, 0.0, 0.0, "no difference: every taker gave the same answers under both chunkings"
    else:
        rng = np.random.default_rng(seed)
        boots = [_delta(y[:, rng.integers(0, y.shape[1], y.shape[1])], comps, a, b, model, seed)[0] for _ in range(n_boot)]
        tail = 100 * (1 - confidence) / 2
        lo, hi = (float(x) for x in np.percentile(boots, [tail, 100 - tail]))
        verdict = (f"{b} retrieves better" if lo > 0 else f"{a} retrieves better" if hi < 0
                   else "no difference resolved (the interval contains 0)")  # fmt: skip
    rows = []
    for i, t in enumerate(takers):
        taker, chunking = t.rsplit("|", 1)
        rows.append({"taker": taker, "chunking": chunking, "theta": float(fit.theta[i]), "se": float(fit.theta_se[i]),
                     "n": int(np.isfinite(y[i]).sum()), "accuracy": float(np.nanmean(y[i])) if np.isfinite(y[i]).any() else None})  # fmt: skip
    table = pl.DataFrame(rows).with_columns((pl.col("theta") - Z95 * pl.col("se")).alias("ci_low"),
                                            (pl.col("theta") + Z95 * pl.col("se")).alias("ci_high")).sort("taker", "chunking")  # fmt: skip
    return table, {"a": a, "b": b, "delta": delta, "ci_low": lo, "ci_high": hi, "verdict": verdict, "model": model, "n_boot": n_boot,
                   "answers_differing": differing,
                   "takers": len(takers) // 2, "questions": len(questions), "converged": bool(fit.converged)}  # fmt: skip
