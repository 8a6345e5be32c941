"""Stratified sampling: HCAT paper §2, step 4.

Given the strata of step 3, decide how many chunks to draw from every stratum (allocation) and
draw them (seeded, without replacement). Three allocation rules:

* ``proportional``: stratum share of the sample = stratum share of the corpus;
* ``equal``: the same number from every stratum;
* ``weighted``: proportional, with each stratum's share multiplied by a user weight (importance of
  the topic); strata without a weight get 1, weight 0 leaves only the minimum.

Every stratum receives at least ``min_per_stratum`` chunks (or all of it when smaller), so niche
topics are never skipped; when the minimums alone exceed the requested size the sample grows to
honour them (``Allocation.grown_by`` says by how much). No dagster here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np
import polars as pl

AllocationMode = Literal["proportional", "equal", "weighted"]
ALLOCATIONS = get_args(AllocationMode)

SAMPLE_SIZE = 24  # chunks drawn over the topic strata by default (campaign file: generation.sample_size)


@dataclass(frozen=True)
class SamplingParams:
    """HCAT §2 step 4: how many chunks to draw and how to spread them over the strata (``stratified_sample``)."""

    sample_size: int = field(default=SAMPLE_SIZE, metadata={"description": "chunks to draw over the topic strata", "ge": 0})
    allocation: AllocationMode = "proportional"
    weights: dict[str, float] = field(default_factory=dict, metadata={
        "description": "allocation=weighted: weight per stratum label or id (others 1; 0 = only the minimum)"})
    min_per_stratum: int = field(default=1, metadata={"description": "every stratum gets at least this many (or all it has)", "ge": 0})
    seed: int = 0


@dataclass
class Allocation:
    counts: dict[int, int]  # stratum -> number of chunks to draw
    requested: int
    total: int  # sum(counts): requested, capped at the corpus size, grown to the minimums
    grown_by: int = 0  # > 0 when min_per_stratum forced a larger sample than requested
    capped_by: int = 0  # > 0 when the corpus had fewer chunks than requested
    targets: dict[int, float] = field(default_factory=dict)  # unrounded targets after bounds


def resolve_weights(
    weights: Mapping[str | int, float] | None, strata: Mapping[int, str]
) -> dict[int, float]:
    """Map user weights keyed by stratum id (int or numeric string) or stratum label to stratum ids.

    Unknown keys and negative weights raise (a typo must not silently fall back to weight 1).
    """
    out = {s: 1.0 for s in strata}
    if not weights:
        return out
    by_label: dict[str, list[int]] = {}
    for s, label in strata.items():
        by_label.setdefault(str(label).strip().lower(), []).append(s)
    unknown = []
    for key, w in weights.items():
        w = float(w)
        if not math.isfinite(w) or w < 0:
            raise ValueError(f"weight for stratum {key!r} is {w}: weights must be finite and >= 0")
        targets: list[int] = []
        if isinstance(key, (int, np.integer)) or (isinstance(key, str) and key.strip().lstrip("-").isdigit()):
            sid = int(key)
            if sid in strata:
                targets = [sid]
        if not targets:
            targets = by_label.get(str(key).strip().lower(), [])
        if not targets:
            unknown.append(key)
        for sid in targets:
            out[sid] = w
    if unknown:
        known = ", ".join(f"{s}={strata[s]!r}" for s in sorted(strata))
        raise ValueError(f"weights name unknown strata {unknown}; known strata: {known}")
    return out


def allocate(
    sizes: Mapping[int, int],
    n: int,
    method: AllocationMode = "proportional",
    weights: Mapping[int, float] | None = None,
    min_per_stratum: int = 1,
) -> Allocation:
    """How many chunks to draw from each stratum.

    ``sizes``: stratum -> number of chunks. ``weights`` (for ``weighted``): stratum id -> weight
    (use ``resolve_weights`` for label keys). Bounds: ``min(min_per_stratum, size) <= count <=
    size``. Targets are scaled to the remaining total after fixing strata at a bound (iteratively),
    then rounded by largest remainder (ties: smaller stratum id), so the counts sum exactly to the
    total.
    """
    if method not in ALLOCATIONS:
        raise ValueError(f"allocation {method!r}: expected one of {ALLOCATIONS}")
    if n < 0 or min_per_stratum < 0:
        raise ValueError(f"sample size ({n}) and min_per_stratum ({min_per_stratum}) must be >= 0")
    strata = sorted(s for s, size in sizes.items() if size > 0)
    hi = {s: int(sizes[s]) for s in strata}
    lo = {s: min(min_per_stratum, hi[s]) for s in strata}
    population = sum(hi.values())
    total = min(n, population)
    capped_by = n - total
    grown_by = max(0, sum(lo.values()) - total)
    total += grown_by
    if method == "proportional":
        share = {s: float(hi[s]) for s in strata}
    elif method == "equal":
        share = {s: 1.0 for s in strata}
    else:
        w = {s: 1.0 for s in strata} | {int(k): float(v) for k, v in (weights or {}).items() if int(k) in hi}
        share = {s: w[s] * hi[s] for s in strata}

    fixed: dict[int, float] = {}
    targets: dict[int, float] = {}
    for _ in range(2 * len(strata) + 2):
        free = [s for s in strata if s not in fixed]
        remaining = total - sum(fixed.values())
        mass = sum(share[s] for s in free)
        if mass > 0:
            targets = {s: remaining * share[s] / mass for s in free}
        else:  # every free stratum has weight 0: spread what is left evenly
            targets = {s: remaining / len(free) for s in free} if free else {}
        low = [s for s in free if targets[s] < lo[s]]
        high = [s for s in free if targets[s] > hi[s]]
        if not low and not high:
            break
        # fix the lower violations first (fixing them only lowers the others' targets), then the upper
        for s in low or high:
            fixed[s] = lo[s] if low else hi[s]
    targets = {**{s: float(v) for s, v in fixed.items()}, **targets}

    counts = {s: int(math.floor(targets[s] + 1e-9)) for s in strata}
    counts = {s: min(max(c, lo[s]), hi[s]) for s, c in counts.items()}
    left = total - sum(counts.values())
    order = sorted(strata, key=lambda s: (-(targets[s] - math.floor(targets[s] + 1e-9)), s))
    while left > 0:
        progressed = False
        for s in order:
            if left == 0:
                break
            if counts[s] < hi[s]:
                counts[s] += 1
                left -= 1
                progressed = True
        if not progressed:
            break
    while left < 0:  # only reachable through float noise; take back from the largest
        s = max((s for s in strata if counts[s] > lo[s]), key=lambda s: (counts[s] - targets[s], -s))
        counts[s] -= 1
        left += 1
    return Allocation(
        counts=counts, requested=n, total=sum(counts.values()), grown_by=grown_by, capped_by=capped_by,
        targets={s: round(v, 4) for s, v in targets.items()},
    )


def stratified_sample(
    strata: pl.DataFrame,
    n: int,
    method: AllocationMode = "proportional",
    weights: Mapping[str | int, float] | None = None,
    min_per_stratum: int = 1,
    seed: int = 0,
) -> tuple[pl.DataFrame, Allocation]:
    """Draw a stratified sample of chunks from the ``topic_strata`` table.

    ``strata`` needs chunk_id, stratum, stratum_label. Within a stratum, chunks are drawn uniformly
    without replacement with a generator seeded by (seed, stratum) over the chunks sorted by id, so
    the draw does not depend on row order. ``sample_rank`` (0-based) goes round-robin over the
    strata (every stratum's first draw, by stratum id, then every second draw, …), so any prefix of
    the sample covers as many strata as it can.
    Returns (the sampled rows of ``strata`` + sample_rank, the allocation).
    """
    if strata.is_empty():
        raise ValueError("stratified_sample: the strata table is empty")
    labels = dict(strata.group_by("stratum").agg(pl.col("stratum_label").first()).iter_rows())
    sizes = dict(strata.group_by("stratum").len().iter_rows())
    resolved = resolve_weights(weights, labels) if method == "weighted" else None
    if weights and method != "weighted":
        raise ValueError(f"weights were given but allocation is {method!r}; use allocation 'weighted'")
    alloc = allocate(sizes, n, method, resolved, min_per_stratum)

    picks = []
    for s in sorted(alloc.counts):
        k = alloc.counts[s]
        if k == 0:
            continue
        members = strata.filter(pl.col("stratum") == s).sort("chunk_id")
        rng = np.random.default_rng([seed, s + 2**31])  # independent stream per stratum
        chosen = rng.choice(members.height, size=k, replace=False)
        picks.append(
            members[chosen.tolist()].with_columns(pl.int_range(0, k, eager=False).alias("_draw"))
        )
    sample = (
        pl.concat(picks)
        .sort("_draw", "stratum")
        .with_columns(pl.int_range(0, pl.len(), dtype=pl.Int32).alias("sample_rank"))
        .drop("_draw")
    )
    return sample, alloc


def coverage_table(strata: pl.DataFrame, sample: pl.DataFrame) -> pl.DataFrame:
    """Per stratum: share of the corpus vs share of the sampled chunks (and their ratio)."""
    corpus = strata.group_by("stratum", "stratum_label").agg(pl.len().alias("corpus_chunks"))
    drawn = sample.group_by("stratum").agg(pl.len().alias("sampled_chunks"))
    return (
        corpus.join(drawn, on="stratum", how="left")
        .with_columns(pl.col("sampled_chunks").fill_null(0))
        .with_columns(
            (pl.col("corpus_chunks") / pl.col("corpus_chunks").sum()).alias("corpus_share"),
            (pl.col("sampled_chunks") / pl.col("sampled_chunks").sum().clip(lower_bound=1)).alias("sample_share"),
        )
        .with_columns((pl.col("sample_share") / pl.col("corpus_share")).alias("sample_to_corpus"))
        .select("stratum", "stratum_label", "corpus_chunks", "corpus_share", "sampled_chunks", "sample_share", "sample_to_corpus")
        .sort("stratum")
    )


def reserve_chunks(strata: pl.DataFrame, sample: pl.DataFrame, per_stratum: int = 2, seed: int = 0) -> pl.DataFrame:
    """Up to ``per_stratum`` unsampled chunks of every stratum, drawn seeded (a stream independent of
    the sample's), for a second generation round when a stratum's sampled chunks gave no usable query.

    Returns chunk_id, stratum, stratum_label, reserve_rank (0-based within its stratum, draw order);
    independent of row order (chunks sorted by id before drawing).
    """
    taken = set(sample["chunk_id"].to_list()) if sample.height else set()
    parts = []
    for s in sorted(strata["stratum"].unique().to_list()):
        left = strata.filter((pl.col("stratum") == s) & ~pl.col("chunk_id").is_in(list(taken))).sort("chunk_id")
        k = min(per_stratum, left.height)
        if k <= 0:
            continue
        rng = np.random.default_rng([seed, s + 2**31, 1])  # not the sample's stream
        chosen = rng.choice(left.height, size=k, replace=False)
        parts.append(left[chosen.tolist()].select("chunk_id", "stratum", "stratum_label").with_columns(pl.int_range(0, k, dtype=pl.Int32).alias("reserve_rank")))
    schema = {"chunk_id": pl.String, "stratum": strata.schema["stratum"], "stratum_label": pl.String, "reserve_rank": pl.Int32}
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)
