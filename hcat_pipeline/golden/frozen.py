"""Frozen, content-addressed, immutable tables: the one write-aside-and-rename and verify used by golden-set
versions (``golden.cases``) and exam versions (``exam.freeze``).

A version is a directory ``<root>/<version>/`` holding one Parquet file and ``manifest.json`` with the SHA-256
of the file (``content_sha256``) and of the canonical rows (``table_sha256``, independent of the Parquet
writer) plus the caller's fields. The directory is written aside and renamed into place, manifest last; a
frozen version is never rewritten: identical rows return the stored (verified) manifest, different rows raise
the kind's conflict error. No dagster import.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from hcat_pipeline.common.ids import canonical_json
from hcat_pipeline.corpus.content_hash import file_sha256

MANIFEST_NAME = "manifest.json"


def table_sha256(frame: pl.DataFrame) -> str:
    """SHA-256 of the canonical JSON of the rows (column order as given, rows as stored)."""
    h = hashlib.sha256()
    h.update(canonical_json(frame.columns, compact=True, ascii_only=False).encode())
    for row in frame.iter_rows():
        h.update(canonical_json(list(row), compact=True, ascii_only=False).encode())
        h.update(b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class FrozenKind:
    """What is frozen, for messages and errors: e.g. ("golden-set version", "cases.parquet", GoldenSetError, ...)."""

    noun: str
    table_name: str
    error: type[Exception]
    integrity_error: type[Exception]
    conflict_error: type[Exception]
    conflict_hint: str


def read_manifest(vdir: Path, version: str, kind: FrozenKind) -> dict:
    path = vdir / MANIFEST_NAME
    if not path.exists():
        raise kind.error(f"{kind.noun} {version!r} is not frozen: no {path}")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise kind.integrity_error(f"{path}: not valid JSON ({e})") from e
    for key in ("content_sha256", "file"):
        if key not in manifest:
            raise kind.integrity_error(f"{path}: manifest has no {key!r}")
    return manifest


def verify_frozen(vdir: Path, version: str, kind: FrozenKind) -> dict:
    """Check the version's file against its manifest (SHA-256 of the bytes, version name); return the manifest
    (with ``table_sha256`` computed when an older manifest lacks it)."""
    manifest = read_manifest(vdir, version, kind)
    table = vdir / manifest["file"]
    if not table.exists():
        raise kind.integrity_error(f"{kind.noun} {version!r}: {table} is missing")
    got = file_sha256(table)
    if got != manifest["content_sha256"]:
        raise kind.integrity_error(
            f"{kind.noun} {version!r}: {table} has SHA-256 {got[:12]}… but the manifest says "
            f"{manifest['content_sha256'][:12]}…; the frozen file was modified"
        )
    if manifest.get("version", version) != version:
        raise kind.integrity_error(f"{vdir / MANIFEST_NAME}: manifest is for version {manifest['version']!r}, not {version!r}")
    if "table_sha256" not in manifest:
        manifest = {**manifest, "table_sha256": table_sha256(pl.read_parquet(table))}
    return manifest


def freeze_table(frame: pl.DataFrame, version: str, vdir: Path, kind: FrozenKind, fields: Callable[[], dict], fmt: str) -> dict:
    """Freeze ``frame`` (already in its canonical order) as ``version`` at ``vdir``; return the manifest.

    ``fields()`` gives the caller's manifest entries (called once, only when a new version is written)."""
    t_hash = table_sha256(frame)
    if (vdir / MANIFEST_NAME).exists():
        stored = verify_frozen(vdir, version, kind)
        if stored["table_sha256"] != t_hash:
            raise kind.conflict_error(
                f"{kind.noun} {version!r} is already frozen at {vdir} with different content (stored table_sha256 "
                f"{stored['table_sha256'][:12]}…, offered {t_hash[:12]}…); {kind.conflict_hint}"
            )
        return stored
    if vdir.exists() and any(vdir.iterdir()):
        raise kind.error(f"{vdir} exists without a {MANIFEST_NAME}: remove it or choose another version")
    vdir.parent.mkdir(parents=True, exist_ok=True)
    tmp = vdir.parent / f".{version}.{uuid.uuid4().hex}.tmp"
    tmp.mkdir()
    try:
        frame.write_parquet(tmp / kind.table_name, compression="zstd", statistics=True)
        manifest = {
            "format": fmt, "version": version, "file": kind.table_name, "content_sha256": file_sha256(tmp / kind.table_name),
            "table_sha256": t_hash, "columns": {c: str(t) for c, t in frame.schema.items()}, **fields(),
        }  # fmt: skip
        (tmp / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
        if vdir.exists():  # an empty directory left by a person: replace it
            vdir.rmdir()
        try:
            os.rename(tmp, vdir)
        except OSError:  # frozen concurrently by someone else: the stored version decides
            if (vdir / MANIFEST_NAME).exists():
                return freeze_table(frame, version, vdir, kind, fields, fmt)
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return manifest
