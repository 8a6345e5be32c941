"""Peak memory of a sharded stage's merge: the night's shard files concatenated in memory and written (how the merge
steps worked before) vs scanned lazily and streamed to the table (``merge_metric_tables`` now: ``merge_shards`` of
scans → ``write_parquet_atomic`` of a LazyFrame, ``sink_parquet``).

    python benchmarks/merge_memory.py [--rows 20000 200000] [--shard-rows 500] [--out benchmarks/results/merge_memory.json]

The shards are synthetic metric-table rows shaped like a real night's (ids, 20 scores, a list of per-sentence scores,
30 explanation strings of 60-240 characters: about 3.5 kB a row in memory, a real 10,000 × 2 night's table is
70 MB for 20,000 rows), written as the IO manager writes a shard step's frame. Each way runs in a fresh process;
its peak RSS (``ru_maxrss``) minus the process's RSS before the merge is the merge's own memory. Run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def make_shards(folder: Path, rows: int, shard_rows: int, seed: int = 0) -> list[Path]:
    import numpy as np
    import polars as pl

    from hcat_pipeline.io import write_parquet_atomic

    rng = np.random.default_rng(seed)
    words = np.array("the account holder may redeem the deposit within thirty days of the statement date fee".split())
    paths = []
    for k, start in enumerate(range(0, rows, shard_rows)):
        n = min(shard_rows, rows - start)
        frame = {"case_id": [f"case-{i:07d}" for i in range(start, start + n)], "system_id": ["sys-a"] * n}
        frame |= {f"metric_{j}": rng.random(n) for j in range(20)}
        frame["per_sentence"] = [list(rng.random(int(rng.integers(1, 8)))) for _ in range(n)]
        for j in range(30):
            frame[f"explain_{j}"] = [" ".join(rng.choice(words, int(rng.integers(10, 40)))) for _ in range(n)]
        path = folder / f"shard-{k:04d}.frame.parquet"
        write_parquet_atomic(pl.DataFrame(frame), path)
        paths.append(path)
    return paths


def merge_once(way: str, shards: list[str], target: str) -> dict:
    import polars as pl

    from hcat_pipeline.common.shards import Shard, merge_shards
    from hcat_pipeline.io import write_parquet_atomic

    before = _rss_kb()
    t0 = time.perf_counter()
    parts = [(Shard("sys-a", 0, i, len(shards), ()), pl.scan_parquet(p)) for i, p in enumerate(shards)]
    merged = merge_shards(parts)
    write_parquet_atomic(merged.collect() if way == "in_memory" else merged, Path(target))
    return {"way": way, "seconds": round(time.perf_counter() - t0, 2), "rss_before_mb": round(before / 1024, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}  # fmt: skip


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[20_000, 200_000])
    ap.add_argument("--shard-rows", type=int, default=500)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "merge_memory.json"))
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:  # way, shard list file, target
        print(json.dumps(merge_once(args.child[0], Path(args.child[1]).read_text().split("\n"), args.child[2])))
        return 0
    import polars as pl

    results = {"load_avg_at_start": os.getloadavg(), "cpus": os.cpu_count(), "polars": pl.__version__, "sizes": []}
    for rows in args.rows:
        with tempfile.TemporaryDirectory(prefix="hcat-merge-") as tmp:
            shards = make_shards(Path(tmp), rows, args.shard_rows)
            listing = Path(tmp, "shards.txt")
            listing.write_text("\n".join(map(str, shards)))
            size = {"rows": rows, "shards": len(shards), "shard_files_mb": round(sum(p.stat().st_size for p in shards) / 2**20, 1)}
            for way in ("in_memory", "streamed"):
                out = subprocess.run([sys.executable, __file__, "--child", way, str(listing), str(Path(tmp, f"{way}.parquet"))],
                                     check=True, capture_output=True, text=True).stdout  # fmt: skip
                fig = json.loads(out.strip().splitlines()[-1])
                fig["merge_mb"] = round(fig["peak_rss_mb"] - fig["rss_before_mb"], 1)
                size[way] = fig
            same = pl.read_parquet(Path(tmp, "in_memory.parquet")).equals(pl.read_parquet(Path(tmp, "streamed.parquet")))
            size["same_table"] = same
            size["table_in_memory_mb"] = round(pl.read_parquet(Path(tmp, "streamed.parquet")).estimated_size("mb"), 1)
            results["sizes"].append(size)
            print(f"{rows:>8} rows in {len(shards)} shards (files {size['shard_files_mb']} MB, table {size['table_in_memory_mb']} MB "
                  f"in memory): in memory +{size['in_memory']['merge_mb']} MB {size['in_memory']['seconds']} s · streamed "
                  f"+{size['streamed']['merge_mb']} MB {size['streamed']['seconds']} s · same table: {same}")  # fmt: skip
    results["load_avg_at_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"load average {results['load_avg_at_start']} → {results['load_avg_at_end']}; written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
