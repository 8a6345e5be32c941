"""Canary system ids: ``canary:<fault>:<parent>`` — the one place they are spelled and recognised.

Every stage that must keep canaries apart from the user's systems (rankings, the Pareto frontier, the
release decision, the report's tables, the judge) asks ``is_canary`` or calls ``drop_canaries``; a
campaign file may not name a system with this prefix.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

CANARY_PREFIX = "canary:"


def canary_id(fault: str, parent: str) -> str:
    return f"{CANARY_PREFIX}{fault}:{parent}"


def is_canary(system_id: str | None) -> bool:
    return bool(system_id) and str(system_id).startswith(CANARY_PREFIX)


def parse_canary(system_id: str) -> tuple[str, str]:
    """``(fault, parent)`` of a canary id."""
    if not is_canary(system_id):
        raise ValueError(f"{system_id!r} is not a canary id ({CANARY_PREFIX}<fault>:<parent>)")
    fault, _, parent = system_id[len(CANARY_PREFIX) :].partition(":")
    return fault, parent


def drop_canaries(frame: pl.DataFrame | None, column: str = "system_id") -> pl.DataFrame | None:
    """The rows of the user's systems only (a frame without ``column`` is returned as it is)."""
    if frame is None or column not in frame.columns:
        return frame
    return frame.filter(~pl.col(column).cast(pl.String).fill_null("").str.starts_with(CANARY_PREFIX))


def only_canaries(frame: pl.DataFrame, column: str = "system_id") -> pl.DataFrame:
    return frame.filter(pl.col(column).cast(pl.String).fill_null("").str.starts_with(CANARY_PREFIX))


def apart(fn: Callable[[pl.DataFrame], pl.DataFrame], frame: pl.DataFrame, column: str = "system_id") -> pl.DataFrame:
    """``fn`` on the user's systems' rows, then (when there are any) on the canaries' rows, concatenated: batched models
    (embeddings, classifiers) see exactly the same batches with and without canaries, so the real systems' rows are
    byte-identical either way."""
    out = fn(drop_canaries(frame, column))
    canaries = only_canaries(frame, column)
    return pl.concat([out, fn(canaries)], how="diagonal_relaxed") if canaries.height else out
