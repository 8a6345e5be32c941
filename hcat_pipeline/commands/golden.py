"""`hcat freeze`, `hcat export-cases`, `hcat import-cases`, `hcat golden-versions`: golden-set versions outside the UI.

A new version directory under the golden-set dir is picked up by the ``golden_set_version_sensor``,
which adds the partition and runs ``golden_set_job`` for it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hcat_pipeline.commands import command
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

    from hcat_pipeline.golden.cases import GoldenSetError, freeze_version

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
    from hcat_pipeline.golden.cases import GoldenSetError, export_cases, load_version

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
    p.add_argument("--keep-invalid", action="store_true", help="keep cases the validity checks find invalid, marked as such (default: refuse the file)")
    p.add_argument("--no-validity", action="store_true", help="skip the case validity checks (format checks still apply)")
    p.add_argument("--chunks", default=str(WAREHOUSE_DIR / "chunks.parquet"), help="chunks table resolving source_chunk_ids for the checks")
    _dir_arg(p)


def validity_check(chunks_path: str, keep_invalid: bool):
    """``golden.case_checks.import_check`` over the chunks table at ``chunks_path`` (empty when there is none)."""
    import polars as pl

    from hcat_pipeline.golden.case_checks import import_check
    from hcat_pipeline.resources.embedding import EmbeddingModel

    text = dict(pl.read_parquet(chunks_path, columns=["chunk_id", "text"]).iter_rows()) if Path(chunks_path).exists() else {}
    return import_check(text, EmbeddingModel().embed, keep_invalid)


@command("import-cases", "validate curated CSV / JSONL cases (format and case validity) and freeze them as a new version (all or nothing)", _import_args)
def _import(args: argparse.Namespace) -> int:
    from hcat_pipeline.golden.cases import CaseImportError, GoldenSetError, import_cases

    try:
        check = None if args.no_validity else validity_check(args.chunks, args.keep_invalid)
        m = import_cases(args.file, args.version, args.golden_dir, created_at=args.created_at or None, check=check)
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
    from hcat_pipeline.golden.cases import GoldenSetError, list_versions, verify_version

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


def _validate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="cases: .jsonl or .csv with case_id, query, query_type, reference_answer and source_text or source_chunk_ids")
    p.add_argument("--out", required=True, help="verdicts: one JSON line per case (case_id, verdict, validity_score, reasons, checks)")
    p.add_argument("--chunks", default=str(WAREHOUSE_DIR / "chunks.parquet"), help="chunks table resolving source_chunk_ids")


@command("validate-cases", "check test cases from anywhere: self-contained, grounded reference that answers the question, sound variants", _validate_args)
def _validate(args: argparse.Namespace) -> int:
    from hcat_pipeline.golden.case_checks import validate_cases, validity_rate
    from hcat_pipeline.golden.case_file import read_case_rows, resolve_sources, verdict_rows, write_jsonl
    from hcat_pipeline.resources.embedding import EmbeddingModel

    try:
        cases, problems = read_case_rows(args.file)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    chunk_text: dict[str, str] = {}
    if any(c.get("source_chunk_ids") and not c.get("source_text") for c in cases):
        import polars as pl

        if not Path(args.chunks).exists():
            print(f"error: cases cite source_chunk_ids but there is no chunks table at {args.chunks} (--chunks)", file=sys.stderr)
            return 2
        chunk_text = dict(pl.read_parquet(args.chunks, columns=["chunk_id", "text"]).iter_rows())
    sources, unresolved = resolve_sources(cases, chunk_text)
    from hcat_pipeline.resources.nli import NLIModel

    rows = verdict_rows(cases, validate_cases(cases, sources, EmbeddingModel().embed, parse=NLIModel().docs), problems + unresolved)
    write_jsonl(rows, args.out)
    rate = validity_rate([r["verdict"] for r in rows])
    print(f"{rate['n']} cases: {rate['by_verdict']}; valid {rate['rate']:.1%} (95% CI {rate['ci_low']:.1%}-{rate['ci_high']:.1%}) -> {args.out}")
    for r in rows:
        if r["verdict"] != "valid":
            print(f"  line {r['line']} {r['case_id']}: {r['verdict']} ({r['validity_score']:.2f}) {'; '.join(r['reasons'])[:200]}")
    return 0
