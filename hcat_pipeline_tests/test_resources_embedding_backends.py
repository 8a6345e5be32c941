"""The int8 ONNX backend (default) against the torch one: agreement, cache separation, config."""

import random

import dagster as dg
import numpy as np
import pytest

from hcat_pipeline.corpus.chunking import split_sentences
from hcat_pipeline.resources.embedding import LAYERS, LAYERS_SUFFIX, EmbeddingModel


@pytest.fixture(scope="module")
def corpus_sentences() -> list[str]:
    """200 seeded sentences of the pydoc_data topics corpus (ships with CPython)."""
    from pydoc_data.topics import topics

    sents = list(dict.fromkeys(s for k in sorted(topics) for s in split_sentences(topics[k]) if len(s.split()) >= 3))
    return random.Random(0).sample(sents, 200)


@pytest.fixture(scope="module")
def both(corpus_sentences):
    onnx = EmbeddingModel(backend="onnx_int8", use_cache=False).encode_uncached(corpus_sentences)
    torch = EmbeddingModel(backend="torch", use_cache=False).encode_uncached(corpus_sentences)
    return onnx, torch


def test_onnx_vectors_agree_with_torch_on_corpus_sentences(both):
    onnx, torch = both
    assert onnx.shape == torch.shape == (200, 384) and onnx.dtype == np.float32
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    cos = (onnx * torch).sum(axis=1)
    # measured over all 6,106 corpus sentences: mean 0.99954, min 0.99778 (short fragments, ASCII tables)
    assert cos.mean() >= 0.999, cos.mean()
    assert cos.min() >= 0.997, cos.min()
    # what the metrics read: sentence-to-sentence similarities, and who is whose nearest neighbour
    s_onnx, s_torch = onnx @ onnx.T, torch @ torch.T
    assert np.abs(s_onnx - s_torch).max() <= 0.02  # measured 0.014
    np.fill_diagonal(s_onnx, -1)
    np.fill_diagonal(s_torch, -1)
    assert (s_onnx.argmax(1) == s_torch.argmax(1)).mean() >= 0.95


def test_pooling_and_truncation_match_sentence_transformers():
    long_text = " ".join(f"The interest rate number {i} rose again." for i in range(80))  # > 256 tokens
    texts = ["Short one.", long_text, "A medium sentence about banks and loans.", "Interest rates went up at the bank."]
    onnx = EmbeddingModel(backend="onnx_int8", use_cache=False)
    torch = EmbeddingModel(backend="torch", use_cache=False)
    a, b = onnx.encode_uncached(texts), torch.encode_uncached(texts)
    assert ((a * b).sum(1) >= 0.997).all()  # the long text too: both cut it at 256 tokens
    # truncation: what follows token 256 changes nothing
    assert np.allclose(onnx.encode_uncached([long_text + " Completely different tail about cats."])[0], a[1], atol=1e-6)
    # length-sorted batching keeps the caller's order and the vectors of each text
    alone = np.vstack([onnx.encode_uncached([t]) for t in texts])
    assert np.allclose(a, alone, atol=1e-5)
    assert onnx.encode_uncached([]).shape == (0, 384)
    assert np.isclose(np.linalg.norm(onnx.encode_uncached([""])), 1.0)  # [CLS][SEP] only: still a unit vector


def test_cache_keeps_the_backends_apart(tmp_path):
    texts = ["The bank raised its interest rate.", "A cat sleeps on the sofa."]
    onnx, torch = EmbeddingModel(cache_dir=str(tmp_path)), EmbeddingModel(backend="torch", cache_dir=str(tmp_path))
    assert onnx.backend == "onnx_int8"  # the default
    assert torch.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert onnx.model_id == "sentence-transformers/all-MiniLM-L6-v2@onnx-int8"
    a = onnx.embed(texts)
    b = torch.embed(texts)
    assert torch.last_stats.computed == 2 and torch.last_stats.cache_hits == 0  # nothing taken from the ONNX vectors
    assert np.allclose(b, torch.encode_uncached(texts), atol=1e-5) and not np.allclose(a, b, atol=1e-4)
    again_onnx = EmbeddingModel(cache_dir=str(tmp_path))
    again_torch = EmbeddingModel(backend="torch", cache_dir=str(tmp_path))
    assert np.array_equal(again_onnx.embed(texts), a) and again_onnx.last_stats.cache_hits == 2
    assert np.array_equal(again_torch.embed(texts), b) and again_torch.last_stats.cache_hits == 2
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 2


def test_backend_is_a_dagster_config_literal(tmp_path):
    seen = {}

    @dg.asset
    def probe(embedding_model: EmbeddingModel) -> None:
        seen["id"] = embedding_model.model_id
        seen["dim"] = embedding_model.embed(["hello world"]).shape

    resources = {"embedding_model": EmbeddingModel.configure_at_launch()}
    cfg = {"resources": {"embedding_model": {"config": {"backend": "torch", "cache_dir": str(tmp_path)}}}}
    assert dg.materialize([probe], resources=resources, run_config=cfg).success
    assert seen == {"id": "sentence-transformers/all-MiniLM-L6-v2", "dim": (1, 384)}
    cfg["resources"]["embedding_model"]["config"]["backend"] = "tensorflow"
    with pytest.raises(dg.DagsterInvalidConfigError, match="backend"):
        dg.materialize([probe], resources=resources, run_config=cfg)


def test_custom_model_path_needs_a_name(tmp_path):
    with pytest.raises(ValueError, match="model_name"):
        _ = EmbeddingModel(model_path=str(tmp_path / "m.onnx")).model_id
    named = EmbeddingModel(backend="torch", model_path=str(tmp_path), model_name="my-org/minilm-ft")
    assert named.model_id == "my-org/minilm-ft"


def test_layer_features_agree_across_backends_end_with_the_sentence_vector_and_are_cached(corpus_sentences, tmp_path):
    """Layer features (toxicity head input): 7 mean-pooled, unit-norm hidden states per text. The
    int8 graph's LayerNormalization outputs are the same hidden states torch returns."""
    texts = corpus_sentences[:40]
    onnx = EmbeddingModel(backend="onnx_int8", cache_dir=str(tmp_path))
    torch = EmbeddingModel(backend="torch", use_cache=False)
    a, b = onnx.layer_features(texts), torch.layer_features(texts)
    assert a.shape == b.shape == (40, 384 * LAYERS) and a.dtype == np.float32
    per_layer = [((a[:, k * 384:(k + 1) * 384] * b[:, k * 384:(k + 1) * 384]).sum(1) * LAYERS) for k in range(LAYERS)]
    assert min(float(c.min()) for c in per_layer) >= 0.995  # each layer, each text
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    # the last layer's block is the sentence vector, scaled by 1/√7
    assert np.allclose(a[:, -384:] * np.sqrt(LAYERS), onnx.embed(texts), atol=1e-5)
    # through the cache under their own model id; a second model object reads them back, none recomputed
    again = EmbeddingModel(backend="onnx_int8", cache_dir=str(tmp_path))
    assert np.array_equal(again.layer_features(texts[::-1]), a[::-1]) and again.last_stats.computed == 0
    assert len(list(tmp_path.iterdir())) == 2 and (onnx._get_layer_cache().model_id == onnx.model_id + LAYERS_SUFFIX)
    # garbage-collected with the sentence vectors: unreachable entries go once older than the limit
    gc = again.cache_gc(0.0, keep_texts=texts[:10])
    assert gc["layers_entries_after"] == 10 and gc["layers_dropped"] == 30
