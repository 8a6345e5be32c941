"""`hcat freeze`, `hcat export-cases`, `hcat import-cases`, `hcat golden-versions`: golden-set versions outside the UI.

A new version directory under the golden-set dir is picked up by the ``golden_set_version_sensor``,
which adds the partition and runs ``golden_set_job`` for it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hcat_pipeline.cli import command
from hcat_pipeline.paths import GOLDEN_SETS_DIR, WAREHOUSE_DIR


def _dir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--golden-dir", default=str(GOLDEN_SETS_DIR), help=f"golden-set versions directory (default {GOLDEN_SETS_DIR})")


def _summary(manifest: dict) -> str:
    counts = manifest.get("counts", {}).get("category", {})
    return (
        f"version {manifest.get('version')}: {manifest.get('n_cases')} cases {counts} "
        f"content_sha256={manifest['content_sha256'][:16]}… source={manifest.get('source')}"
    )


def _freeze_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("version", help="the new version name, e.g. v2")
    p.add_argument("--candidates", default=str(WAREHOUSE_DIR / "golden_candidates.parquet"), help="golden_candidates table to freeze")
    p.add_argument("--created-at", default="", help="ISO date recorded on the cases (default: from the candidates / SOURCE_DATE_EPOCH)")
    _dir_arg(p)


@command("freeze", "freeze the current golden_candidates as a new immutable golden-set version", _freeze_args)
def _freeze(args: argparse.Namespace) -> int:
    import polars as pl

    from hcat_pipeline.core.golden import GoldenSetError, freeze_version

    path = Path(args.candidates)
    if not path.exists():
        print(f"no candidates at {path}: materialize golden_candidates first (test_generation_job)", file=sys.stderr)
        return 2
    try:
        m = freeze_version(pl.read_parquet(path), args.version, args.golden_dir, created_at=args.created_at or None, provenance={"frozen_by": "hcat freeze"})
    except (GoldenSetError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(_summary(m))
    return 0


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("version", help="frozen version to export")
    p.add_argument("out", help="output file: .csv (list columns as JSON arrays) or .jsonl")
    _dir_arg(p)


@command("export-cases", "export a frozen golden-set version as CSV / JSONL for curation", _export_args)
def _export(args: argparse.Namespace) -> int:
    from hcat_pipeline.core.golden import GoldenSetError, export_cases, load_version

    try:
        frame, _ = load_version(args.version, args.golden_dir)
        path = export_cases(frame, args.out)
    except (GoldenSetError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{frame.height} cases of version {args.version} written to {path}")
    return 0


def _import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="curated cases (.csv or .jsonl, as written by export-cases)")
    p.add_argument("version", help="the new version name")
    p.add_argument("--created-at", default="", help="ISO date for cases without one")
    _dir_arg(p)


@command("import-cases", "validate curated CSV / JSONL cases and freeze them as a new version (all or nothing)", _import_args)
def _import(args: argparse.Namespace) -> int:
    from hcat_pipeline.core.golden import CaseImportError, GoldenSetError, import_cases

    try:
        m = import_cases(args.file, args.version, args.golden_dir, created_at=args.created_at or None)
    except CaseImportError as e:
        print(str(e), file=sys.stderr)
        return 1
    except (GoldenSetError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(_summary(m))
    return 0


def _versions_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the manifests as JSON")
    _dir_arg(p)


@command("golden-versions", "list the frozen golden-set versions and verify their SHA-256", _versions_args)
def _versions(args: argparse.Namespace) -> int:
    from hcat_pipeline.core.golden import GoldenSetError, list_versions, verify_version

    status = 0
    out = []
    for v in list_versions(args.golden_dir):
        try:
            m = verify_version(v, args.golden_dir)
            out.append(m)
            if not args.json:
                print("ok   " + _summary(m))
        except GoldenSetError as e:
            status = 1
            print(f"BAD  {v}: {e}")
    if args.json:
        print(json.dumps(out, indent=2))
    return status
