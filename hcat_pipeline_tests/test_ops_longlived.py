"""Long-lived instances: the embedding cache is garbage-collected by age and reachability (size in the
metadata); a golden set's manifest says when and by which run it was frozen, beside byte-identical
content; duplicate case ids in a curated import are errors, never dropped."""

import datetime
import json
import os
import time
from types import SimpleNamespace

import dagster as dg
import numpy as np
import polars as pl
import pytest

from hcat_pipeline.assets.embeddings import chunk_embeddings
from hcat_pipeline.golden.cases import CaseImportError, cases_frame, export_cases, freeze_version, import_cases
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.embedding_cache import EmbeddingCache, text_key
from hcat_pipeline_tests.golden_data import sample_cases as _cases
from hcat_pipeline_tests.stubs import stub_asset

DAY = 86400.0


def _vec(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, 8)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_cache_gc_drops_old_unreachable_entries_and_merges_shards(tmp_path):
    cache = EmbeddingCache(tmp_path, "m", 8)
    now = time.time()
    old_chunk, old_answer, new_answer = ["chunk a", "chunk b"], ["answer night 1"], ["answer night 40"]
    cache.put([text_key(t) for t in old_chunk], _vec(2, 0), np.full(2, now - 40 * DAY))
    cache.put([text_key(t) for t in old_answer], _vec(1, 1), np.full(1, now - 39 * DAY))
    cache.put([text_key(t) for t in new_answer], _vec(1, 2), np.full(1, now - 1 * DAY))
    kept_vec = cache.get_many([text_key("chunk a")])[0]
    assert cache.size()["entries"] == 4 and cache.size()["shards"] == 3
    stats = cache.gc(max_age_s=30 * DAY, keep={text_key(t) for t in old_chunk}, now=now)
    assert stats["dropped"] == 1 and stats["entries_after"] == 3 and stats["shards_after"] == 1
    assert stats["bytes_after"] < stats["bytes_before"]
    # a fresh reader (another process) sees exactly the kept entries, with their vectors and write times
    fresh = EmbeddingCache(tmp_path, "m", 8)
    _, missing = fresh.get_many([text_key(t) for t in old_chunk + old_answer + new_answer])
    assert missing == [2]
    assert np.array_equal(fresh.get_many([text_key("chunk a")])[0], kept_vec)
    # the kept chunk keeps its old write time: once unreachable it goes too
    assert fresh.gc(max_age_s=30 * DAY, keep=set(), now=now)["dropped"] == 2
    # nothing to drop and one shard: no rewrite
    shard = list((tmp_path / "m").glob("shard-*.parquet"))
    assert fresh.gc(max_age_s=30 * DAY, now=now)["dropped"] == 0 and list((tmp_path / "m").glob("shard-*.parquet")) == shard


def test_nightly_growth_is_bounded(tmp_path):
    """Thirty nights of new answer sentences with a 7-day age limit: the cache stays at 7 nights + the chunks."""
    cache = EmbeddingCache(tmp_path, "m", 8)
    chunks = [f"chunk {i}" for i in range(20)]
    t0 = time.time() - 30 * DAY
    cache.put([text_key(t) for t in chunks], _vec(20, 0), np.full(20, t0))
    sizes = []
    for night in range(30):
        now = t0 + night * DAY
        answers = [f"night {night} answer {i}" for i in range(10)]
        cache.put([text_key(t) for t in answers], _vec(10, night + 1), np.full(10, now))
        sizes.append(cache.gc(max_age_s=7 * DAY, keep={text_key(t) for t in chunks}, now=now)["entries_after"])
    assert sizes[-1] == 20 + 8 * 10 and max(sizes[10:]) == sizes[-1]  # flat after a week, never growing


def test_chunk_embeddings_records_cache_size_after_gc(tmp_path):
    model = EmbeddingModel(cache_dir=str(tmp_path / "cache"))
    model.embed(["an answer sentence from an old night"])  # an entry no chunk reaches
    old = time.time() - 90 * DAY
    for shard in (tmp_path / "cache").rglob("shard-*.parquet"):
        os.utime(shard, (old, old))
        pl.read_parquet(shard).with_columns(pl.lit(old).alias("written_at")).write_parquet(shard)

    def chunks_stub_table() -> pl.DataFrame:
        return pl.DataFrame({"chunk_id": ["a", "b"], "text": ["Tuples are immutable.", "Lists are mutable."]})

    chunks_stub = stub_asset("chunks", chunks_stub_table)

    res = dg.materialize([chunks_stub, chunk_embeddings], resources={
        "embedding_model": model, "io_manager": PolarsParquetIOManager(base_dir=str(tmp_path / "wh"))})  # fmt: skip
    meta = res.asset_materializations_for_node("chunk_embeddings")[0].metadata
    assert meta["embedding_cache_dropped"].value == 1 and meta["embedding_cache_entries_after"].value == 2
    assert meta["embedding_cache_shards_after"].value == 1 and meta["embedding_cache_bytes_after"].value > 0


class _Clock(datetime.datetime):
    """A wall clock that reads 12:00:00, then 12:00:07, …: two freezes are seconds apart without waiting for it."""

    ticks = iter(range(0, 3600, 7))

    @classmethod
    def now(cls, tz=None):
        return datetime.datetime(2026, 12, 7, 12, 0, 0, tzinfo=tz) + datetime.timedelta(seconds=next(cls.ticks))


def test_manifest_records_when_and_by_which_run_beside_identical_content(tmp_path, monkeypatch):
    from hcat_pipeline.golden.cases import frozen_by

    monkeypatch.setattr("hcat_pipeline.golden.cases.dt", SimpleNamespace(datetime=_Clock, date=datetime.date, UTC=datetime.UTC))
    frame = cases_frame(_cases())
    a = freeze_version(frame, "v1", tmp_path / "a", created_at="2025-01-02", provenance={"run_id": "run-1"})
    b = freeze_version(frame, "v1", tmp_path / "b", created_at="2025-01-02", provenance={"run_id": "run-2"})
    assert (tmp_path / "a" / "v1" / "golden_set.parquet").read_bytes() == (tmp_path / "b" / "v1" / "golden_set.parquet").read_bytes()
    assert a["content_sha256"] == b["content_sha256"] and a["table_sha256"] == b["table_sha256"]
    assert (a["frozen_by"], b["frozen_by"]) == ("run:run-1", "run:run-2") and a["frozen_at"] < b["frozen_at"]
    on_disk = json.loads((tmp_path / "a" / "v1" / "manifest.json").read_text())
    assert on_disk["frozen_by"] == "run:run-1" and on_disk["frozen_at"] == a["frozen_at"]
    assert frozen_by({"frozen_by": "hcat freeze"}, "generated") == "hcat freeze" and frozen_by({}, "curated") == "hcat import-cases"


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_duplicate_case_ids_in_a_curated_import_are_errors(tmp_path, suffix):
    path = export_cases(cases_frame(_cases()), tmp_path / f"cases{suffix}")
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[-1]]) + "\n")  # the last case pasted twice
    with pytest.raises(CaseImportError) as e:
        import_cases(path, "dup", tmp_path / "gs")
    last, again = len(lines), len(lines) + 1  # editor rows: a CSV's header is row 1, a JSONL has none
    assert [r for r, _ in e.value.errors] == [again]
    assert f"repeats row {last}" in str(e.value) and str(path) in str(e.value)
    assert not (tmp_path / "gs" / "dup").exists()
