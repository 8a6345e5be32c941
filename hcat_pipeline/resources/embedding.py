"""EmbeddingModel: the one place sentence embeddings are computed (packaged all-MiniLM-L6-v2).

Vectors are L2-normalised float32. Every text goes through the content-addressed cache
(model id + SHA-256 of the text), so no text is embedded twice across runs and campaigns.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import dagster as dg
import numpy as np
from pydantic import PrivateAttr

from hcat_pipeline.core.embedding_cache import EmbeddingCache, text_key
from hcat_pipeline.paths import EMBEDDING_CACHE_DIR

_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()


def _load_sentence_transformer(path: str):
    with _LOCK:
        if path not in _MODELS:
            import torch
            from sentence_transformers import SentenceTransformer

            torch.set_num_threads(max(1, torch.get_num_threads()))
            _MODELS[path] = SentenceTransformer(path, device="cpu")
        return _MODELS[path]


@dataclass
class EmbedStats:
    texts: int = 0
    unique: int = 0
    cache_hits: int = 0
    computed: int = 0
    seconds: float = 0.0

    def as_metadata(self) -> dict:
        return {
            "embed_texts": self.texts,
            "embed_unique_texts": self.unique,
            "embed_cache_hits": self.cache_hits,
            "embed_computed": self.computed,
            "embed_seconds": round(self.seconds, 3),
        }


class EmbeddingModel(dg.ConfigurableResource):
    """Sentence embeddings with a persistent content-addressed cache."""

    model_path: str = ""  # empty: the packaged all-MiniLM-L6-v2
    model_id: str = "sentence-transformers/all-MiniLM-L6-v2"
    batch_size: int = 64
    cache_dir: str = str(EMBEDDING_CACHE_DIR)
    use_cache: bool = True

    _cache: EmbeddingCache | None = PrivateAttr(default=None)
    _last: EmbedStats = PrivateAttr(default_factory=EmbedStats)

    def _model(self):
        from hcat_pipeline.models import minilm_path

        return _load_sentence_transformer(self.model_path or str(minilm_path()))

    @property
    def dim(self) -> int:
        m = self._model()
        get_dim = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get_dim())

    def _get_cache(self) -> EmbeddingCache:
        if self._cache is None:
            self._cache = EmbeddingCache(self.cache_dir, self.model_id, self.dim)
        return self._cache

    def encode_uncached(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model().encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vecs, dtype=np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` (n × dim, normalised); each unique text is computed at most once, ever."""
        t0 = time.perf_counter()
        stats = EmbedStats(texts=len(texts))
        uniq = list(dict.fromkeys(texts))
        stats.unique = len(uniq)
        if self.use_cache:
            cache = self._get_cache()
            keys = [text_key(t) for t in uniq]
            vecs, missing = cache.get_many(keys)
            if missing:
                fresh = self.encode_uncached([uniq[i] for i in missing])
                vecs[missing] = fresh
                cache.put([keys[i] for i in missing], fresh)
        else:
            missing = list(range(len(uniq)))
            vecs = self.encode_uncached(uniq)
        stats.computed = len(missing)
        stats.cache_hits = len(uniq) - len(missing)
        pos = {t: i for i, t in enumerate(uniq)}
        out = vecs[[pos[t] for t in texts]] if texts else vecs
        stats.seconds = time.perf_counter() - t0
        self._last = stats
        return out

    @property
    def last_stats(self) -> EmbedStats:
        return self._last
