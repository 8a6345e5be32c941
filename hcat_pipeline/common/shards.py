"""Shards of a night's work: the steps a campaign run's expensive stages split into (one per system × run of cases).

A shard is one system's consecutive slice of the run's cases, in the run's own case order, so concatenating the
shards in ``position`` order gives exactly the rows the unsharded stage would produce. Cases that must be judged
together (a base case and its variants, a counterfactual pair) are one *family* and never split over shards.
The plan is a pure function of (systems, cases, families, shard size): the same night plans the same shards, so a
re-run resumes the same steps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from hcat_pipeline.common.canary_ids import is_canary

DEFAULT_SHARD_CASES = 500  # cases per shard: a 48-case night is one step per system, a 10,000-case night 20


@dataclass(frozen=True)
class Shard:
    """One step's work: ``system_id``'s cases ``case_ids`` (None: every system of the run)."""

    system_id: str | None
    system_position: int
    index: int  # of this system's shards
    count: int  # this system's shards
    case_ids: tuple[str, ...]

    @property
    def key(self) -> str:
        """The step's mapping key (Dagster allows [A-Za-z0-9_]): readable, unique by position."""
        name = re.sub(r"[^A-Za-z0-9_]+", "_", self.system_id or "all")[:40]
        return f"{name}_{self.system_position}_{self.index}"

    @property
    def position(self) -> tuple[int, int]:
        return (self.system_position, self.index)


def case_families(cases: pl.DataFrame) -> dict[str, str]:
    """case_id → family id: cases linked by ``base_case_id`` or a shared ``pair_id`` (union-find), named by the
    family's first case in the frame's order. A case without links is its own family."""
    ids = cases["case_id"].to_list()
    parent = {c: c for c in ids}

    def find(c: str) -> str:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            first, second = sorted((ra, rb), key=order.__getitem__)
            parent[second] = first

    order = {c: i for i, c in enumerate(ids)}
    if "base_case_id" in cases.columns:
        for c, base in cases.select("case_id", "base_case_id").iter_rows():
            if base is not None and base in parent:
                union(c, base)
    if "pair_id" in cases.columns:
        first_of: dict[str, str] = {}
        for c, pair in cases.select("case_id", "pair_id").iter_rows():
            if pair is not None:
                union(c, first_of.setdefault(pair, c))
    return {c: find(c) for c in ids}


def _slices(case_ids: Sequence[str], shard_cases: int, families: Mapping[str, str] | None) -> list[list[str]]:
    """Consecutive runs of ``case_ids`` of about ``shard_cases`` cases; a family is never cut (its cases go with the
    run where its first case falls, so a family's later cases may move up)."""
    if shard_cases <= 0 or len(case_ids) <= shard_cases:
        return [list(case_ids)] if case_ids else []
    members: dict[str, list[str]] = {}
    for c in case_ids:
        members.setdefault(families.get(c, c) if families else c, []).append(c)
    out: list[list[str]] = [[]]
    for fam in members.values():
        if len(out[-1]) >= shard_cases:
            out.append([])
        out[-1].extend(fam)
    return out


def plan_shards(system_ids: Iterable[str | None], case_ids: Sequence[str], shard_cases: int = DEFAULT_SHARD_CASES,
                families: Mapping[str, str] | None = None) -> list[Shard]:
    """Every system's cases cut into shards of about ``shard_cases`` (0: one shard per system)."""
    if shard_cases < 0:
        raise ValueError(f"shard_cases must be ≥ 0 (0 = one shard per system), got {shard_cases}")
    slices = _slices(case_ids, shard_cases, families)
    plan = []
    for pos, sid in enumerate(system_ids):
        plan += [Shard(sid, pos, i, len(slices), tuple(s)) for i, s in enumerate(slices)]
    return plan


def in_shard(frame: pl.DataFrame | pl.LazyFrame, shard: Shard):
    """The rows of ``frame`` (case_id, system_id) that are ``shard``'s work, in the shard's case order (lazy for lazy)."""
    rows = frame.filter(pl.col("case_id").is_in(list(shard.case_ids)))
    if shard.system_id is not None:
        rows = rows.filter(pl.col("system_id") == shard.system_id)
    return rows


def split_frame(frame: pl.DataFrame | pl.LazyFrame, shard_cases: int,
                families: Mapping[str, str] | None = None) -> list[tuple[Shard, pl.DataFrame | pl.LazyFrame]]:
    """A stored table (case_id, system_id) as its shards' rows: each system's cases in the table's order, canary systems
    last (scored apart from the user's, so the user's batches do not depend on them), empty shards left out. Never
    empty: a table without rows is one empty shard. Given a LazyFrame (a scan), only its two id columns are read here
    and each shard's rows stay a lazy filter: whoever writes a shard reads just that shard."""
    ids = frame.select("case_id", "system_id")
    ids = ids.collect() if isinstance(ids, pl.LazyFrame) else ids
    systems = ids["system_id"].unique(maintain_order=True).to_list()
    systems = [s for s in systems if not is_canary(s)] + [s for s in systems if is_canary(s)]
    plan = plan_shards(systems, ids["case_id"].unique(maintain_order=True).to_list(), shard_cases, families)
    work = [(shard, in_shard(frame, shard)) for shard in plan if in_shard(ids, shard).height]
    return work or [(Shard(None, 0, 0, 1, ()), frame)]


def merge_shards(parts: Iterable[tuple[Shard, pl.DataFrame | pl.LazyFrame]]):
    """The shards' frames in plan order (system, then slice): the unsharded stage's row order. Lazy if any part is
    (``pl.concat`` of scans: nothing is read until the result is collected or streamed to its file)."""
    ordered = [f for _, f in sorted(parts, key=lambda p: p[0].position)]
    if not ordered:
        return pl.DataFrame()
    if any(isinstance(f, pl.LazyFrame) for f in ordered):
        return pl.concat([f.lazy() for f in ordered], how="diagonal_relaxed")
    return pl.concat(ordered, how="diagonal_relaxed")
