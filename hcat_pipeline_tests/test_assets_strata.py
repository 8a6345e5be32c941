import dagster as dg
import polars as pl

from hcat_pipeline.assets.corpus import chunks, corpus
from hcat_pipeline.assets.embeddings import chunk_embeddings
from hcat_pipeline.assets.strata import sampled_chunks, topic_strata
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.schemas import SAMPLED_CHUNKS, TOPIC_STRATA, conform

TOPICS = ("if", "while", "for", "try", "with", "strings", "integers", "floating", "dict", "lambda", "import", "class")


def _meta(result, key):
    mats = [e.materialization for e in result.get_asset_materialization_events() if e.materialization.asset_key.to_user_string() == key]
    return {k: v.value for k, v in mats[0].metadata.items()}


def test_topic_strata_and_sampled_chunks_on_a_real_drop_folder(tmp_path, warehouse, embedding_model):
    from pydoc_data.topics import topics

    drop = tmp_path / "corpus"
    drop.mkdir()
    for key in TOPICS:
        (drop / f"{key}.txt").write_text(topics[key])
    plots = tmp_path / "plots"
    run_config = {
        "ops": {
            "corpus": {"config": {"include_embedded": False, "drop_folder": str(drop)}},
            # PCA + K-Means with k by silhouette (UMAP, the default, is covered in test_core_strata:
            # its first call in a process JIT-compiles for tens of seconds); small k range, small corpus
            "topic_strata": {"config": {"plot_dir": str(plots), "reduction": "pca", "n_components": 10, "k_min": 3, "k_max": 6}},
            "sampled_chunks": {"config": {"sample_size": 10, "min_per_stratum": 2}},
        }
    }
    result = dg.materialize(
        [corpus, chunks, chunk_embeddings, topic_strata, sampled_chunks],
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(warehouse)), "embedding_model": embedding_model},
        run_config=run_config,
    )
    assert result.success
    ch = pl.read_parquet(warehouse / "chunks.parquet")
    strata = conform(pl.read_parquet(warehouse / "topic_strata.parquet"), TOPIC_STRATA)
    sample = conform(pl.read_parquet(warehouse / "sampled_chunks.parquet"), SAMPLED_CHUNKS)

    # every chunk is in exactly one stratum, K-Means leaves no noise, labels are words from the corpus
    assert sorted(strata["chunk_id"].to_list()) == sorted(ch["chunk_id"].to_list())
    meta = _meta(result, "topic_strata")
    k = meta["n_strata"]
    assert 3 <= k <= 6 and meta["chosen_k"] == k
    assert set(strata["stratum"].unique().to_list()) == set(range(k))
    assert strata.group_by("stratum").agg(pl.col("stratum_label").n_unique())["stratum_label"].max() == 1
    corpus_text = " ".join(ch["text"].to_list()).lower()
    for label in strata["stratum_label"].unique():
        terms = label.split(", ")
        assert 1 <= len(terms) <= 4 and all(t in corpus_text for t in terms)
    assert set(meta["stratum_sizes"]) == {str(s) for s in range(k)}
    assert sum(meta["stratum_sizes"].values()) == strata.height

    # Figure 1 is saved beside the data and attached to the metadata
    png = plots / "topic_strata.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert meta["plot"] == str(png)
    assert meta["plot_preview"].startswith("![topic strata](data:image/png;base64,iVBOR")

    # the sample: requested size (10 >= 2 * k for k <= 5, else grown), every stratum at least twice
    sizes = dict(strata.group_by("stratum").len().iter_rows())
    expected = max(10, sum(min(2, n) for n in sizes.values()))
    assert sample.height == expected
    assert sample["sample_rank"].to_list() == list(range(sample.height))
    assert sample["chunk_id"].n_unique() == sample.height
    per = dict(sample.group_by("stratum").len().iter_rows())
    assert all(per.get(s, 0) >= min(2, n) for s, n in sizes.items())
    joined = sample.join(ch.select("chunk_id", "doc_id", "text"), on="chunk_id", suffix="_ch")
    assert (joined["text"] == joined["text_ch"]).all() and (joined["doc_id"] == joined["doc_id_ch"]).all()
    joined_s = sample.join(strata, on="chunk_id", suffix="_st")
    assert (joined_s["stratum"] == joined_s["stratum_st"]).all()
    smeta = _meta(result, "sampled_chunks")
    assert smeta["strata_covered"] == k and smeta["sampled"] == sample.height
    assert "corpus_share" in smeta["coverage"] and "sample_share" in smeta["coverage"]

    # seeded: the same inputs and config give the same strata and the same sample
    rerun = dg.materialize(
        [corpus, chunks, chunk_embeddings, topic_strata, sampled_chunks],
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(warehouse)), "embedding_model": embedding_model},
        run_config={"ops": {op: run_config["ops"][op] for op in ("topic_strata", "sampled_chunks")}},
        selection=[topic_strata.key, sampled_chunks.key],
    )
    assert rerun.success
    assert pl.read_parquet(warehouse / "topic_strata.parquet").equals(strata)
    assert pl.read_parquet(warehouse / "sampled_chunks.parquet").equals(sample)


def test_weighted_sampling_with_an_unknown_label_fails_clearly(tmp_path, warehouse):
    strata = pl.DataFrame(
        {
            "chunk_id": [f"c{i}" for i in range(6)],
            "stratum": pl.Series([0, 0, 0, 1, 1, 2], dtype=pl.Int32),
            "stratum_label": ["loop, while", "loop, while", "loop, while", "string, format", "string, format", "class, self"],
            "x": pl.Series([0.0] * 6, dtype=pl.Float32),
            "y": pl.Series([0.0] * 6, dtype=pl.Float32),
        }
    )
    ch = pl.DataFrame({"chunk_id": [f"c{i}" for i in range(6)], "doc_id": ["d"] * 6, "text": [f"t{i}" for i in range(6)]})
    io = PolarsParquetIOManager(base_dir=str(warehouse))
    strata.write_parquet(warehouse / "topic_strata.parquet")
    ch.write_parquet(warehouse / "chunks.parquet")
    src = [dg.AssetSpec("topic_strata"), dg.AssetSpec("chunks")]
    bad = dg.materialize(
        [sampled_chunks, *src],
        resources={"io_manager": io},
        run_config={"ops": {"sampled_chunks": {"config": {"allocation": "weighted", "weights": {"no such topic": 2.0}}}}},
        raise_on_error=False,
    )
    assert not bad.success
    failure = [e for e in bad.all_events if e.event_type_value == "STEP_FAILURE"][0]
    assert "unknown strata" in str(failure.event_specific_data.error)

    ok = dg.materialize(
        [sampled_chunks, *src],
        resources={"io_manager": io},
        run_config={
            "ops": {"sampled_chunks": {"config": {"allocation": "weighted", "sample_size": 4, "weights": {"string, format": 10.0, "2": 0.0}}}}
        },
    )
    assert ok.success
    out = pl.read_parquet(warehouse / "sampled_chunks.parquet")
    assert dict(out.group_by("stratum").len().iter_rows()) == {0: 1, 1: 2, 2: 1}


def test_the_campaign_files_allocation_reaches_the_sample(warehouse):
    """generation: allocation / weights / min_per_stratum in the campaign file → sampled_chunks (HCAT §2 step 4): equal
    gives each stratum the same count whatever its size; weighted follows the weights (a 0 weight: only the minimum)."""
    from hcat_pipeline.campaign_spec import generation_run_config, parse_campaign
    from hcat_pipeline_tests.stubs import stub_asset

    sizes = {0: 30, 1: 6, 2: 12}  # stratum → chunks
    ids = [(f"s{s}-{i}", s) for s, n in sizes.items() for i in range(n)]
    strata = pl.DataFrame({"chunk_id": [c for c, _ in ids], "stratum": pl.Series([s for _, s in ids], dtype=pl.Int32),
                           "stratum_label": [f"topic {s}" for _, s in ids], "x": [0.0] * len(ids), "y": [0.0] * len(ids)})  # fmt: skip
    chunk_table = pl.DataFrame({"chunk_id": [c for c, _ in ids], "doc_id": ["d"] * len(ids), "text": ["t"] * len(ids)})
    upstream = [stub_asset("topic_strata", lambda: strata), stub_asset("chunks", lambda: chunk_table)]
    base = "name: t\nsystems:\n  - system_id: s\n    retriever: bm25\ngeneration:\n  sample_size: 9\n"

    def counts(generation: str) -> dict:
        config = {"sampled_chunks": generation_run_config(parse_campaign(base + generation))["ops"]["sampled_chunks"]}
        r = dg.materialize([*upstream, sampled_chunks], run_config={"ops": config},
                           resources={"io_manager": PolarsParquetIOManager(base_dir=str(warehouse))})  # fmt: skip
        assert r.success
        out = r.output_for_node("sampled_chunks")
        return dict(out.group_by("stratum").len().sort("stratum").iter_rows())

    assert counts("  allocation: equal\n") == {0: 3, 1: 3, 2: 3}
    prop = counts("  allocation: proportional\n")
    assert prop[0] > prop[2] > prop[1] >= 1 and sum(prop.values()) == 9
    weighted = counts("  allocation: weighted\n  weights: {'topic 0': 0}\n  min_per_stratum: 1\n")
    assert weighted[0] == 1 and weighted[2] > weighted[1]
