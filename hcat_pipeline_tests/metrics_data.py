"""A two-row frame and a deterministic stand-in embedding for the scorer's tests (fast, no model)."""

import hashlib

import numpy as np
import polars as pl

FRAME = pl.DataFrame({
    "query": ["Where is the tower?", "Where is the tower?"],
    "contexts": [["The tower is in Paris. It is tall."], ["The tower is in Paris."]],
    "answer": ["The tower is in Paris.", None],
    "error": [None, "timeout"],
})  # fmt: skip


def fake_embed(texts):
    """Unit vectors seeded by the text: equal texts → cosine 1, different texts → near 0."""
    out = []
    for t in texts:
        rng = np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:8], 16))
        v = rng.normal(size=64)
        out.append(v / np.linalg.norm(v))
    return np.asarray(out, dtype=np.float32)
