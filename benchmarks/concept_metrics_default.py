"""What the concept-level chapter's opt-in metrics read on a stored night (default: the newest night of the default
campaign in data/warehouse): hierarchical consistency (§14.3) and long-document faithfulness (§14.5) per system — how
many answers they apply to, the mean with its 95 % CI and n — scored exactly as ``metric_tables`` scores them.

    python benchmarks/concept_metrics_default.py [--warehouse data/warehouse] [--run gs-…/2026-11-27] [--min-chunks 10]

Needs a materialized night (``bash scripts/campaign.sh``). Run it alone.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402

from hcat_pipeline.golden.coverage import mean_ci  # noqa: E402
from hcat_pipeline.metrics.long_document import long_source_documents  # noqa: E402
from hcat_pipeline.metrics.scoring import score_frame  # noqa: E402
from hcat_pipeline.resources.embedding import EmbeddingModel  # noqa: E402
from hcat_pipeline.resources.nli import NLIModel  # noqa: E402
from hcat_pipeline.responses.retrieval import without_planted  # noqa: E402

METRICS = ("hierarchical_consistency", "long_document_faithfulness")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warehouse", default=str(ROOT / "data" / "warehouse"))
    ap.add_argument("--run", default=None, help="<version>/<night> (default: the newest stored rag_responses)")
    ap.add_argument("--min-chunks", type=int, default=10)
    args = ap.parse_args()
    wh = Path(args.warehouse)
    path = wh / "rag_responses" / f"{args.run}.parquet" if args.run else max((wh / "rag_responses").glob("*/*.parquet"), key=os.path.getmtime)
    version = path.parent.name
    responses = without_planted(pl.read_parquet(path)).filter(~pl.col("system_id").str.starts_with("canary"))
    golden = pl.read_parquet(wh / "golden_set" / f"{version}.parquet")
    docs = long_source_documents(golden, pl.read_parquet(wh / "chunks.parquet"), pl.read_parquet(wh / "corpus.parquet"), args.min_chunks)
    frame = responses.join(docs, on="case_id", how="left")
    out, _ = score_frame(frame, list(METRICS), embed=EmbeddingModel().embed, nli=NLIModel())
    print(f"{path.relative_to(wh)}: {responses.height} answers, {docs.filter(pl.col('source_documents').list.len() > 0).height} "
          f"of {docs.height} cases with a long source document (≥ {args.min_chunks} chunks); load {os.getloadavg()[0]:.2f}")  # fmt: skip
    for (system,), g in sorted(out.group_by("system_id"), key=lambda kv: kv[0]):
        parts = []
        for m in METRICS:
            ci = mean_ci(g[m], bounds=(0.0, 1.0))
            shown = "—" if ci["mean"] is None else f"{ci['mean']:.3f} [{ci['ci_low']:.3f}, {ci['ci_high']:.3f}]"
            parts.append(f"{m} {shown} (n = {ci['n']})")
        structured = int((g["hierarchy_structure"] != "none").sum())
        print(f"  {system:>12}: {' · '.join(parts)}; structured answers {structured}/{g.height}")
    worst = out.filter(pl.col("long_document_faithfulness").is_not_null()).sort("long_document_faithfulness").head(3)
    for r in worst.iter_rows(named=True):
        u = r["long_document_unfaithful"][0] if r["long_document_unfaithful"] else None
        print(f"  lowest: {r['system_id']} {r['case_id']} {r['long_document_faithfulness']:.2f} — e.g. {u}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
