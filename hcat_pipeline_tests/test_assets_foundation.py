
import dagster as dg
import numpy as np
import polars as pl

from hcat_pipeline.assets.corpus import chunks, corpus
from hcat_pipeline.assets.embeddings import chunk_embeddings
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.resources.embedding import EmbeddingModel


def _run(warehouse, cache, drop, include_embedded=True):
    cfg = {"ops": {"corpus": {"config": {"include_embedded": include_embedded, "drop_folder": str(drop)}}}}
    return dg.materialize(
        [corpus, chunks, chunk_embeddings],
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(warehouse)), "embedding_model": EmbeddingModel(cache_dir=str(cache))},
        run_config=cfg,
    )


def _meta(result, key):
    mats = [e.materialization for e in result.get_asset_materialization_events() if e.materialization.asset_key.to_user_string() == key]
    return {k: v.value for k, v in mats[0].metadata.items()}


def test_three_assets_with_bad_files_and_warm_cache(tmp_path, warehouse):
    drop = tmp_path / "corpus"
    drop.mkdir()
    (drop / "ok.md").write_text("# Deposits\n\nA deposit account holds money. Interest is paid monthly.")
    from pydoc_data.topics import topics

    for key in ("if", "while", "for"):  # a few real documents, long enough to make several chunks
        (drop / f"{key}.txt").write_text(topics[key])
    (drop / "bad.txt").write_bytes(b"\xff\xfe\x00\x00binary")
    (drop / "bad.jsonl").write_text('{"text": "Loans have terms."}\n{broken\n')
    cache = tmp_path / "cache"

    r1 = _run(warehouse, cache, drop, include_embedded=False)
    assert r1.success
    docs = pl.read_parquet(warehouse / "corpus.parquet")
    errors = pl.read_parquet(warehouse / "ingest_errors.parquet")
    ch = pl.read_parquet(warehouse / "chunks.parquet")
    emb = pl.read_parquet(warehouse / "chunk_embeddings.parquet")
    assert docs.height == 1 + 3 + 1
    assert ch.height > docs.height
    assert sorted(zip(errors["file"], errors["line"])) == [("bad.jsonl", 2), ("bad.txt", None)]
    assert _meta(r1, "corpus")["ingest_errors"] == 2
    assert emb["chunk_id"].to_list() == ch["chunk_id"].to_list()
    vecs = emb["embedding"].to_numpy()
    assert vecs.shape == (ch.height, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    m1 = _meta(r1, "chunk_embeddings")
    assert m1["embed_computed"] == ch["text"].n_unique() and m1["embed_cache_hits"] == 0

    r2 = _run(warehouse, cache, drop, include_embedded=False)
    m2 = _meta(r2, "chunk_embeddings")
    assert m2["embed_computed"] == 0 and m2["embed_cache_hits"] == ch["text"].n_unique()
    assert np.allclose(pl.read_parquet(warehouse / "chunk_embeddings.parquet")["embedding"].to_numpy(), vecs, atol=1e-6)


def test_empty_corpus_fails_loudly_without_touching_stored_tables(tmp_path, warehouse):
    (warehouse / "corpus.parquet").write_bytes(pl.DataFrame({"x": [1]}).write_ipc(None).getvalue())
    before = (warehouse / "corpus.parquet").read_bytes()
    empty = tmp_path / "empty"
    empty.mkdir()
    res = dg.materialize(
        [corpus],
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(warehouse))},
        run_config={"ops": {"corpus": {"config": {"include_embedded": False, "drop_folder": str(empty)}}}},
        raise_on_error=False,
    )
    assert not res.success
    assert (warehouse / "corpus.parquet").read_bytes() == before
