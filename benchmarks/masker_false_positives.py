"""The monitoring masker's false positives on a clean day, before and after the PII gate's fixes (issue 60 item 5).

    python benchmarks/masker_false_positives.py [--warehouse data/warehouse] [--rows 300] [--seed 0]

Writes one day of synthetic traffic over the stored corpus (``monitoring.synthetic``) with **no personal data planted**
(``pii_rate = 0``), reads it back as ``hcat monitor`` does, and masks every question, answer and retrieved passage with
the PII detector twice: as before issue 57 (``person_checks=False``: a title or a letter option read as a name) and as
shipped. Every span masked on such a day is a false positive unless the corpus itself names a person; the script prints
the spans per type, the masked spans per 100 rows, and every distinct span so a reader can judge each one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hcat_pipeline.paths import WAREHOUSE_DIR  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", default=str(WAREHOUSE_DIR))
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", default="", help="a folder of plain-text documents instead of the stored corpus (a stratum a file)")
    args = ap.parse_args(argv)
    import polars as pl

    from hcat_pipeline.monitoring.logs import read_day
    from hcat_pipeline.monitoring.synthetic import FIELDS, TrafficPlan, sentence_pools, write_traffic
    from hcat_pipeline.resources.pii import PIIDetector

    if args.corpus:  # paragraphs of each file, the file its stratum
        paras = [(i, p) for i, f in enumerate(sorted(Path(args.corpus).glob("*.txt"))) for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()]
        pools = sentence_pools([p for _, p in paras], [i for i, _ in paras])
    else:
        wh = Path(args.warehouse)
        strata = pl.read_parquet(wh / "topic_strata.parquet").join(pl.read_parquet(wh / "chunks.parquet").select("chunk_id", "text"), on="chunk_id")
        pools = sentence_pools(strata["text"].to_list(), strata["stratum"].to_list())
    plan = TrafficPlan(days=1, rows_per_day=args.rows, pii_rate=0.0, broken_lines=0, seed=args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        write_traffic(Path(tmp), plan, pools)
        rows = read_day([tmp], plan.day(1), FIELDS).rows
    texts = rows["question"].to_list() + rows["answer"].to_list() + [p for ctx in rows["contexts"].to_list() for p in (ctx or [])]
    print(f"clean day: {rows.height} rows, {len(texts)} texts (questions, answers, passages), no personal data planted")
    for label, checks in (("before (no person checks)", False), ("shipped (person checks)", True)):
        found = [s for spans in PIIDetector(person_checks=checks).entities(texts) for s in spans]
        by_type = Counter(s["type"] for s in found)
        print(f"\n{label}: {len(found)} spans masked ({100 * len(found) / max(rows.height, 1):.1f} per 100 rows): "
              + ", ".join(f"{t} {n}" for t, n in by_type.most_common()))  # fmt: skip
        for (t, text), n in Counter((s["type"], s["text"]) for s in found).most_common():
            print(f"  {t:<16} {n:>3} × {text!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
