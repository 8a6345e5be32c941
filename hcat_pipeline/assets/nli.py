"""The NLI groundedness head (HCAT paper §3.2.2), retrained on the project's own corpus.

Calls the one recipe, ``metrics.nli.train.train_nli_head`` (as ``hcat train-nli`` and the
build of the shipped head do), on the sentences of the ``chunks``: perturbation pairs and QA twins
from the corpus plus the "train" part of the public validation sets. The Dagster config *is*
``TrainConfig`` (one field list, one set of defaults) + where to save: with the default corpus
and configs the saved head equals the shipped ``metrics/nli/nli_head.json`` byte for byte. Point
``NLIModel(weights_path=...)`` at the saved file to score with it. One row per training-pair kind.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

import time
from pathlib import Path

import dagster as dg
import polars as pl

from hcat_pipeline.assets._metadata import preview
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.metrics.nli.evaluation import kind_stats
from hcat_pipeline.metrics.nli.qa_pairs import documents_from_chunks
from hcat_pipeline.metrics.nli.train import TrainConfig
from hcat_pipeline.paths import WAREHOUSE_DIR
from hcat_pipeline.resources.nli import NLIModel, train_and_save

NLIHeadConfig = config_from(TrainConfig, "NLIHeadConfig", out_path=(str, str(WAREHOUSE_DIR / "nli_head.json")))


@dg.asset(
    group_name="metrics",
    description="Retrains the NLI groundedness head (train_nli_head: corpus perturbation pairs + public sets' train "
    "split); weights saved as JSON under data/warehouse/; one row per training-pair kind.",
)
def nli_head(context: dg.AssetExecutionContext, config: NLIHeadConfig, nli_model: NLIModel, chunks: pl.DataFrame) -> pl.DataFrame:
    t0 = time.perf_counter()
    docs = documents_from_chunks(chunks["doc_id"].to_list(), chunks["chunk_index"].to_list(), chunks["text"].to_list())
    cfg = to_core(TrainConfig, config)
    try:
        head, pairs, raw = train_and_save(docs, Path(config.out_path), cfg, model=nli_model, corpus_name="chunks")
    except (ValueError, FileNotFoundError) as e:
        raise dg.Failure(f"cannot train the NLI head from {len(docs)} document(s): {e}") from e
    out = pl.DataFrame(kind_stats(pairs, head.decision(raw)["sigma"]))
    context.add_output_metadata(
        {
            "dagster/row_count": out.height,
            "weights_path": dg.MetadataValue.path(str(config.out_path)),
            "pairs": len(pairs),
            "pairs_by_source": dg.MetadataValue.json(head.info["pairs_by_source"]),
            "documents": len(docs),
            "C": head.info["C"],
            "cv_auroc_by_C": dg.MetadataValue.json(head.info["cv_auroc_by_C"]),
            "train_auroc": head.info["train_auroc"],
            "w_norm": head.w_norm,
            "weights": dg.MetadataValue.json(dict(zip(head.feature_names, [round(float(v), 4) for v in head.w]))),
            "bias": head.b,
            "per_kind": preview(out, 40),
            "seconds": round(time.perf_counter() - t0, 1),
        }
    )
    return out
