"""Polars ⇄ Parquet IO manager: one file per asset (partition), written atomically.

Layout: ``<base_dir>/<asset/key/path>.parquet`` for unpartitioned assets and
``<base_dir>/<asset/key/path>/<partition>.parquet`` for partitioned ones; a multi-dimensional
key (a campaign run, ``<version>|<night>``) is one directory level per dimension:
``<asset>/<version>/<night>.parquet``. A write goes to a
temporary file in the same directory and is renamed over the target, so a crash never leaves a
half-written table. Loading several partitions gives a ``dict[partition, DataFrame]`` when the
input is annotated as a dict, otherwise one frame concatenated with a ``partition`` column.

Outputs that are no asset (the steps inside a sharded stage: a shard's plan, a shard's rows) are pickled under
``<base_dir>/_steps/<run id>/<step key>/<output>.pkl`` — written by this project's own steps, read by the next
step of the same run (or its re-execution from failure, which reads the parent run's files). The frames in such an
output (a dict's ``pl.DataFrame`` / ``pl.LazyFrame`` values: a shard's rows, its scores) go to Parquet beside the
pickle and come back as ``pl.LazyFrame`` scans, so a merge step concatenates its shards lazily and streams the result
to the asset's file without holding the night's table (``as_frame`` collects one shard where a step needs it). A
run's folder is removed once it is ``STEP_FILES_MAX_AGE_DAYS`` old (checked by the first step output a process writes).

An asset may return a ``pl.LazyFrame`` (streamed to its file with ``sink_parquet``), and an input annotated
``pl.LazyFrame`` gets a scan of the stored table (one partition) instead of the table: read what you need.
"""

from __future__ import annotations

import os
import pickle
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import polars as pl

from hcat_pipeline.paths import WAREHOUSE_DIR

STEP_FILES_MAX_AGE_DAYS = 7
STREAM_ROW_GROUP_ROWS = 5_000  # a streamed table's row groups: without a bound the sink buffers most of the table
_pruned: set[str] = set()


def prune_step_files(steps_dir: Path, max_age_days: float = STEP_FILES_MAX_AGE_DAYS, now: float | None = None) -> list[str]:
    """Remove the run folders under ``steps_dir`` untouched for ``max_age_days``; the removed run ids."""
    import shutil
    import time

    cutoff = (now or time.time()) - max_age_days * 86400
    old = [d for d in steps_dir.iterdir() if d.is_dir() and d.stat().st_mtime < cutoff] if steps_dir.is_dir() else []
    for d in old:
        shutil.rmtree(d, ignore_errors=True)
    return [d.name for d in old]


def safe_path_part(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", part)


def write_parquet_atomic(frame: pl.DataFrame | pl.LazyFrame, path: Path) -> None:
    """Write ``frame`` to ``path`` through a temporary file (a LazyFrame is streamed: ``sink_parquet``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        if isinstance(frame, pl.LazyFrame):  # row groups of a bounded size: the streaming engine holds about one
            frame.sink_parquet(tmp, compression="zstd", statistics=True, row_group_size=STREAM_ROW_GROUP_ROWS, engine="streaming")
        else:
            frame.write_parquet(tmp, compression="zstd", statistics=True)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


OPTIONAL = {"optional": True}  # AssetIn metadata: the IO manager gives None when the input was never stored


@dataclass(frozen=True)
class StoredFrame:
    """A frame of a step output, stored as Parquet beside the output's pickle."""

    path: str


def as_frame(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """A step's input frame in memory (a shard's rows: one shard)."""
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def read_columns(frame: pl.DataFrame | pl.LazyFrame, wanted: Sequence[str]) -> pl.DataFrame:
    """The columns of ``wanted`` that ``frame`` has, in memory: from a scan, only those columns are read."""
    names = frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns
    return as_frame(frame.select([c for c in dict.fromkeys(wanted) if c in names]))


def _frames_out(obj, path: Path):
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        if isinstance(v, (pl.DataFrame, pl.LazyFrame)):
            target = path.with_name(f"{path.stem}.{safe_path_part(str(k))}.parquet")
            write_parquet_atomic(v, target)
            v = StoredFrame(str(target))
        out[k] = v
    return out


def _frames_in(obj):
    if not isinstance(obj, dict):
        return obj
    return {k: pl.scan_parquet(v.path) if isinstance(v, StoredFrame) else v for k, v in obj.items()}


class PolarsParquetIOManager(dg.ConfigurableIOManager):
    base_dir: str = str(WAREHOUSE_DIR)

    def _asset_path(self, context, partition_key: str | None) -> Path:
        key = context.asset_key.path
        base = Path(self.base_dir).joinpath(*map(safe_path_part, key))
        if partition_key is None:
            return base.with_suffix(".parquet")
        *dirs, leaf = str(partition_key).split("|")  # MultiPartitionKey: dimensions in name order
        return base.joinpath(*map(safe_path_part, dirs)) / f"{safe_path_part(leaf)}.parquet"

    def _step_path(self, context: dg.OutputContext) -> Path:
        return Path(self.base_dir, "_steps", *map(safe_path_part, context.get_identifier())).with_suffix(".pkl")

    def handle_output(self, context: dg.OutputContext, obj) -> None:
        if not context.has_asset_key:  # a step inside a sharded stage
            steps_dir = Path(self.base_dir, "_steps")
            if str(steps_dir) not in _pruned:
                _pruned.add(str(steps_dir))
                prune_step_files(steps_dir)
            path = self._step_path(context)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
            tmp.write_bytes(pickle.dumps(_frames_out(obj, path), protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, path)
            return
        if obj is None:
            return
        if not isinstance(obj, (pl.DataFrame, pl.LazyFrame)):
            raise TypeError(f"{context.asset_key.to_user_string()}: expected a polars DataFrame, got {type(obj).__name__}")
        pk = context.partition_key if context.has_asset_partitions else None
        path = self._asset_path(context, pk)
        write_parquet_atomic(obj, path)
        rows = obj.height if isinstance(obj, pl.DataFrame) else pl.scan_parquet(path).select(pl.len()).collect().item()
        context.add_output_metadata({"path": str(path), "rows": rows})

    def load_input(self, context: dg.InputContext):
        """The stored table(s) of the input; an input declared ``AssetIn(metadata={"optional": True})`` that was never
        stored (for this partition) is None, so the asset says what is missing instead of failing."""
        if context.upstream_output is not None and not context.upstream_output.has_asset_key:
            return _frames_in(pickle.loads(self._step_path(context.upstream_output).read_bytes()))
        if (context.definition_metadata or {}).get("optional"):
            keys = list(context.asset_partition_keys) if context.has_asset_partitions else [None]
            if len(keys) == 1 and not self._asset_path(context, keys[0]).exists():
                return None
        typ = getattr(context.dagster_type, "typing_type", None)
        keys = list(context.asset_partition_keys) if context.has_asset_partitions else [None]
        if typ is pl.LazyFrame and len(keys) == 1:  # a scan: the asset reads the columns and rows it needs
            return scan_stored_table(self._asset_path(context, keys[0]), context.asset_key.to_user_string(), keys[0])
        if not context.has_asset_partitions:
            return self._read(self._asset_path(context, None), context)
        wants_dict = typ is dict or getattr(typ, "__origin__", None) is dict
        if len(keys) == 1 and not wants_dict:
            return self._read(self._asset_path(context, keys[0]), context, keys[0])
        frames = {k: self._read(self._asset_path(context, k), context, k) for k in keys}
        if wants_dict:
            return frames
        return pl.concat(
            [f.with_columns(pl.lit(k).alias("partition")) for k, f in frames.items()], how="diagonal_relaxed"
        )

    @staticmethod
    def _read(path: Path, context, partition_key: str | None = None) -> pl.DataFrame:
        asset = context.asset_key.to_user_string()
        if not path.exists():
            raise FileNotFoundError(f"{asset}: no stored table at {path}; materialize it first")
        return read_stored_table(path, asset, None if partition_key is None else str(partition_key))


class CorruptTableError(RuntimeError):
    """A stored warehouse table cannot be read (truncated, overwritten, not Parquet)."""

    def __init__(self, path: Path, asset: str, partition: str | None, cause: str):
        where = f" partition {partition}" if partition else ""
        super().__init__(
            f"stored table {path} of asset {asset!r}{where} is unreadable ({cause}); re-materialize {asset}{where} "
            f"to rewrite it (e.g. dagster asset materialize -m hcat_pipeline.definitions --select {asset}"
            + (f" --partition '{partition}')" if partition else ")")
        )
        self.path, self.asset, self.partition = path, asset, partition


def scan_stored_table(path: Path, asset: str, partition: str | None = None) -> pl.LazyFrame:
    """A lazy scan of one stored table; a missing or unreadable file raises here, not at the first ``collect``."""
    if not path.exists():
        raise FileNotFoundError(f"{asset}: no stored table at {path}; materialize it first")
    try:
        pl.read_parquet_schema(path)
    except (pl.exceptions.PolarsError, OSError, ValueError) as e:
        raise CorruptTableError(path, asset, partition, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}") from e
    return pl.scan_parquet(path)


def read_stored_table(path: Path, asset: str, partition: str | None = None) -> pl.DataFrame:
    """Read one stored table; an unreadable file raises ``CorruptTableError`` naming the file and the asset."""
    try:
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError, ValueError) as e:
        raise CorruptTableError(path, asset, partition, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}") from e
