"""``hcat import-responses``: bring responses produced elsewhere into a golden-set version.

Validates a JSONL / Parquet file (case_id, answer, contexts …), prints every bad row with its line
number, and stores the valid rows as ``<import_dir>/<version>/<system_id>.parquet``, where the next
``rag_responses`` materialization of that version picks them up as system ``<system_id>``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hcat_pipeline.commands import command


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="JSONL or Parquet: one record per case (case_id, answer, contexts, …)")
    p.add_argument("--version", required=True, help="golden-set version the responses answer")
    p.add_argument("--system-id", required=True, help="name of the system that produced them")
    p.add_argument("--golden-set", default="", help="golden_set Parquet to check case ids against "
                   "(default: the warehouse's golden_set/<version>.parquet when present)")
    p.add_argument("--import-dir", default="", help="where imports are kept (default: data/imports/rag_responses)")
    p.add_argument("--allow-bad-rows", action="store_true", help="store the valid rows even when some rows are bad")


@command("import-responses", "validate and import a JSONL/Parquet of responses for a golden-set version", _args)
def import_responses(args: argparse.Namespace) -> int:
    import polars as pl

    from hcat_pipeline.assets.responses import IMPORT_DIR
    from hcat_pipeline.io import safe_path_part, write_parquet_atomic
    from hcat_pipeline.paths import WAREHOUSE_DIR
    from hcat_pipeline.responses.response_import import read_imported_responses

    src = Path(args.file)
    if not src.exists():
        print(f"error: {src} does not exist")
        return 2
    gpath = Path(args.golden_set) if args.golden_set else WAREHOUSE_DIR / "golden_set" / f"{safe_path_part(args.version)}.parquet"
    known = queries = None
    if gpath.exists():
        g = pl.read_parquet(gpath, columns=["case_id", "query"])
        known, queries = g["case_id"].to_list(), dict(zip(g["case_id"], g["query"]))
    else:
        print(f"note: no golden set at {gpath}; case ids are checked when rag_responses runs")
    try:
        good, bad = read_imported_responses(src, args.system_id, known, queries)
    except ValueError as e:
        print(f"error: {e}")
        return 2
    for r in bad.iter_rows(named=True):
        print(f"{src}:{r['line']}: {r['reason']}")
    print(f"{good.height} valid row(s), {bad.height} bad row(s)")
    if bad.height and not args.allow_bad_rows:
        print("nothing imported: fix the rows above or pass --allow-bad-rows to import the valid ones")
        return 1
    if good.height == 0:
        print("nothing to import")
        return 1
    out = Path(args.import_dir or IMPORT_DIR) / safe_path_part(args.version) / f"{safe_path_part(args.system_id)}.parquet"
    write_parquet_atomic(good, out)
    print(f"imported → {out} (system {args.system_id!r}; re-materialize rag_responses for version {args.version})")
    return 0
