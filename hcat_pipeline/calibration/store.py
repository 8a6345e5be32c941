"""Append-only, versioned Parquet store of human labels.

Layout: ``<root>/parts/v000001.parquet, v000002.parquet, …``: one file per import, holding only the
rows that import added, stamped with ``version``, ``source_sha256`` (of the file's bytes) and
``imported_at``. A part is written to a temporary file and hard-linked to its final name (which
fails rather than overwrite), so a reader sees a whole import or none of it, and nothing already
stored is ever rewritten. Imports are serialised with a lock file (``<root>/.lock``).

``import_file``:
- the file is validated first (``read_label_file``): any bad row → nothing imported, the errors say
  file, line and reason;
- a dimension's scale must match the scale already stored for it;
- a file whose sha256 was imported before, or whose rows are all already stored (same
  ``row_hash``), changes nothing and makes no version; otherwise only the new rows are added;
- several raters on one item, and a rater's later re-label (a new ``labelled_at``), are all kept.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from hcat_pipeline.calibration.labels import ERROR_SCHEMA, read_label_file
from hcat_pipeline.common.locks import file_lock
from hcat_pipeline.schemas import HUMAN_LABELS as STORE_SCHEMA

__all__ = ["LabelStore", "ImportResult", "STORE_SCHEMA"]



@dataclass
class ImportResult:
    status: str  # "imported" | "unchanged" | "rejected" | "pending" (an exported review queue nobody has filled in yet)
    file: str
    sha256: str
    version: str | None = None
    rows_added: int = 0
    rows_skipped: int = 0
    rows_pending: int = 0  # review-queue rows not labelled yet (skipped)
    errors: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=ERROR_SCHEMA))

    @property
    def message(self) -> str:
        if self.status == "rejected":
            return f"{self.file}: {self.errors.height} bad row(s), nothing imported"
        if self.status == "pending":
            return f"{self.file}: review queue with {self.rows_pending} row(s) not labelled yet, nothing to import"
        if self.status == "unchanged":
            return f"{self.file}: already in the store, nothing added"
        return f"{self.file}: {self.rows_added} row(s) added as {self.version} ({self.rows_skipped} already stored)"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class LabelStore:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.parts = self.root / "parts"

    # ----------------------------------------------------------------- read
    def _part_files(self) -> list[Path]:
        return sorted(self.parts.glob("v*.parquet")) if self.parts.is_dir() else []

    def labels(self, version: str | None = None) -> pl.DataFrame:
        """All stored rows (as of ``version`` when given), in import order."""
        files = self._part_files()
        if version is not None:
            files = [f for f in files if f.stem <= version]
        if not files:
            return pl.DataFrame(schema=STORE_SCHEMA)
        return pl.concat([pl.read_parquet(f) for f in files], how="vertical").sort(["version", "source_line"])

    def versions(self) -> pl.DataFrame:
        """One row per import: version, file name, sha256, rows added, time."""
        frame = self.labels()
        return (
            frame.group_by("version", maintain_order=True)
            .agg(
                pl.col("source_file").first(),
                pl.col("source_sha256").first(),
                pl.len().cast(pl.Int64).alias("rows_added"),
                pl.col("imported_at").first(),
            )
            .sort("version")
        )

    def scales(self) -> dict[str, str]:
        """The scale stored for each dimension."""
        frame = self.labels().select("dimension", "scale").unique("dimension")
        return dict(zip(frame["dimension"].to_list(), frame["scale"].to_list()))

    # ---------------------------------------------------------------- write
    def _locked(self):
        return file_lock(self.root / ".lock")

    def import_file(self, path: str | Path) -> ImportResult:
        path = Path(path)
        sha = _sha256_file(path) if path.is_file() else ""
        good, errors, pending = read_label_file(path, return_pending=True)
        result = ImportResult(status="rejected", file=path.name, sha256=sha, errors=errors, rows_pending=pending)
        if errors.height:
            return result
        if good.height == 0:  # only unlabelled review-queue rows
            result.status = "pending"
            return result
        with self._locked():
            stored = self.labels()
            if sha in set(stored["source_sha256"].to_list()):
                result.status = "unchanged"
                return result
            known = self.scales()
            clash = (
                good.filter(pl.col("dimension").is_in(list(known)))
                .filter(pl.col("scale") != pl.col("dimension").replace_strict(known, default=None))
                .unique("dimension", keep="first", maintain_order=True)
            )
            if clash.height:
                result.errors = pl.DataFrame(
                    [
                        {
                            "file": path.name,
                            "line": r["source_line"],
                            "reason": f"dimension {r['dimension']!r} is stored with scale {known[r['dimension']]}, this file says {r['scale']}",
                        }
                        for r in clash.iter_rows(named=True)
                    ],
                    schema=ERROR_SCHEMA,
                )
                return result
            new = good.unique("row_hash", keep="first", maintain_order=True).filter(
                ~pl.col("row_hash").is_in(stored["row_hash"].to_list())
            )
            result.rows_skipped = good.height - new.height
            if new.height == 0:
                result.status = "unchanged"
                return result
            version = f"v{len(self._part_files()) + 1:06d}"
            part = new.with_columns(
                pl.lit(version).alias("version"),
                pl.lit(sha).alias("source_sha256"),
                pl.lit(datetime.now(UTC)).cast(pl.Datetime("us", "UTC")).alias("imported_at"),
            ).select(list(STORE_SCHEMA))
            self._write_part(part, version)
            result.status, result.version, result.rows_added = "imported", version, new.height
            return result

    def _write_part(self, part: pl.DataFrame, version: str) -> None:
        self.parts.mkdir(parents=True, exist_ok=True)
        final = self.parts / f"{version}.parquet"
        tmp = self.parts / f".{version}.{uuid.uuid4().hex}.tmp"
        try:
            part.write_parquet(tmp, compression="zstd", statistics=True)
            with tmp.open("rb") as fh:
                os.fsync(fh.fileno())
            os.link(tmp, final)  # atomic, and refuses to overwrite an existing version
        finally:
            tmp.unlink(missing_ok=True)
