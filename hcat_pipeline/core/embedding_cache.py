"""Content-addressed embedding cache: key = model id + SHA-256 of the text, stored as Parquet shards.

The model id names the cache directory and is written into every shard's metadata; a shard whose
recorded model id is another one (two ids that sanitise to the same directory name) is skipped and
never touched, so vectors of two models (or two backends of one model) never mix.

Each ``put`` writes one new immutable shard (temp file + rename), so concurrent writers never
damage each other and a crash never leaves a half-written file; ``compact`` merges shards.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    def __init__(self, root: Path, model_id: str, dim: int):
        self.dir = Path(root) / re.sub(r"[^A-Za-z0-9_.-]+", "__", model_id)
        self.model_id = model_id
        self.dim = dim
        self._index: dict[str, int] = {}
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._shards_seen: set[str] = set()
        self._shards_foreign: set[str] = set()  # written for another model id: skipped, never compacted

    def _shards(self) -> list[Path]:
        return sorted(self.dir.glob("shard-*.parquet")) if self.dir.is_dir() else []

    def refresh(self) -> None:
        """Load shards written since the last look (by this or another process)."""
        new = [p for p in self._shards() if p.name not in self._shards_seen and p.name not in self._shards_foreign]
        if not new:
            return
        keys, mats = [], []
        for p in new:
            try:
                t = pq.read_table(p)
            except Exception:  # unreadable shard (foreign file): ignore, it will be recomputed
                continue
            written_by = (t.schema.metadata or {}).get(b"model_id")
            if written_by is not None and written_by.decode("utf-8") != self.model_id:
                self._shards_foreign.add(p.name)  # another model's vectors in a directory of the same name
                continue
            ks = t.column("key").to_pylist()
            vec = t.column("vector").combine_chunks()
            flat = np.asarray(vec.values.to_numpy(zero_copy_only=False), dtype=np.float32)
            if flat.size != len(ks) * self.dim:
                continue
            keys.extend(ks)
            mats.append(flat.reshape(len(ks), self.dim))
            self._shards_seen.add(p.name)
        if not keys:
            return
        base = len(self._vectors)
        self._vectors = np.concatenate([self._vectors, *mats]) if mats else self._vectors
        for i, k in enumerate(keys):
            self._index.setdefault(k, base + i)

    def __len__(self) -> int:
        return len(self._index)

    def get_many(self, keys: list[str]) -> tuple[np.ndarray, list[int]]:
        """Vectors for ``keys`` (zeros where missing) and the positions that were missing."""
        self.refresh()
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        missing = []
        for i, k in enumerate(keys):
            j = self._index.get(k)
            if j is None:
                missing.append(i)
            else:
                out[i] = self._vectors[j]
        return out, missing

    def put(self, keys: list[str], vectors: np.ndarray) -> None:
        if not keys:
            return
        vectors = np.asarray(vectors, dtype=np.float32)
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"shard-{uuid.uuid4().hex}.parquet"
        table = pa.table(
            {
                "key": pa.array(keys, pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), self.dim),
            },
            metadata={"model_id": self.model_id},
        )
        tmp = self.dir / f".{name}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, self.dir / name)
        base = len(self._vectors)
        self._vectors = np.concatenate([self._vectors, vectors])
        for i, k in enumerate(keys):
            self._index.setdefault(k, base + i)
        self._shards_seen.add(name)

    def compact(self) -> int:
        """Merge all shards into one; returns the number of shards merged."""
        self.refresh()
        shards = [p for p in self._shards() if p.name in self._shards_seen]
        if len(shards) <= 1:
            return 0
        keys = list(self._index)
        vectors = self._vectors[[self._index[k] for k in keys]]
        old = set(self._shards_seen)
        self._index.clear()
        self._vectors = np.zeros((0, self.dim), dtype=np.float32)
        self._shards_seen.clear()
        self.put(keys, vectors)
        for p in shards:
            if p.name in old:
                p.unlink(missing_ok=True)
        return len(shards)
