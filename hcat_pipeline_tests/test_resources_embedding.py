import numpy as np

from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.embedding_cache import EmbeddingCache, text_key


def test_real_model_vectors_are_normalised_and_semantic(embedding_model):
    v = embedding_model.embed(
        ["The bank raised its interest rate.", "Interest rates went up at the bank.", "A cat sleeps on the sofa."]
    )
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3


def test_cache_hits_across_instances_and_no_text_embedded_twice(tmp_path):
    texts = ["alpha beta", "gamma delta", "alpha beta", "epsilon"]
    m1 = EmbeddingModel(cache_dir=str(tmp_path))
    a = m1.embed(texts)
    assert m1.last_stats.computed == 3 and m1.last_stats.cache_hits == 0
    assert np.array_equal(a[0], a[2])
    m2 = EmbeddingModel(cache_dir=str(tmp_path))  # a new run: reads the shards from disk
    b = m2.embed(texts + ["zeta"])
    assert m2.last_stats.computed == 1 and m2.last_stats.cache_hits == 3
    assert np.allclose(a, b[:4], atol=1e-6)
    direct = m2.encode_uncached(["gamma delta"])[0]
    assert np.allclose(b[1], direct, atol=1e-5)


def test_cache_compaction_keeps_every_vector(tmp_path):
    cache = EmbeddingCache(tmp_path, "m", 4)
    rng = np.random.default_rng(0)
    v1, v2 = rng.random((3, 4), dtype=np.float32), rng.random((2, 4), dtype=np.float32)
    cache.put([text_key(t) for t in "abc"], v1)
    cache.put([text_key(t) for t in "de"], v2)
    assert cache.compact() == 2
    fresh = EmbeddingCache(tmp_path, "m", 4)
    got, missing = fresh.get_many([text_key(t) for t in "abcdef"])
    assert missing == [5]
    assert np.allclose(got[:5], np.vstack([v1, v2]))
    assert len(list(cache.dir.glob("shard-*.parquet"))) == 1


def test_foreign_or_truncated_shard_is_ignored_not_fatal(tmp_path):
    cache = EmbeddingCache(tmp_path, "m", 2)
    cache.put([text_key("x")], np.ones((1, 2), np.float32))
    (cache.dir / "shard-zzz.parquet").write_bytes(b"PAR1 truncated")
    fresh = EmbeddingCache(tmp_path, "m", 2)
    got, missing = fresh.get_many([text_key("x")])
    assert missing == [] and np.allclose(got, 1.0)


def test_shard_of_another_model_id_in_the_same_directory_is_skipped_and_kept(tmp_path):
    a = EmbeddingCache(tmp_path, "org/model@x", 2)  # both ids sanitise to the directory org__model__x
    b = EmbeddingCache(tmp_path, "org/model:x", 2)
    assert a.dir == b.dir
    a.put([text_key("t")], np.ones((1, 2), np.float32))
    b.put([text_key("u")], np.full((1, 2), 2.0, np.float32))
    b.put([text_key("v")], np.full((1, 2), 3.0, np.float32))
    fresh_b = EmbeddingCache(tmp_path, "org/model:x", 2)
    got, missing = fresh_b.get_many([text_key("t"), text_key("u")])
    assert missing == [0] and np.allclose(got[1], 2.0)  # a's vector is not b's
    assert fresh_b.compact() == 2  # merges b's two shards, leaves a's alone
    fresh_a = EmbeddingCache(tmp_path, "org/model@x", 2)
    got, missing = fresh_a.get_many([text_key("t"), text_key("u")])
    assert missing == [1] and np.allclose(got[0], 1.0)
