"""Content-addressed embedding cache: key = model id + SHA-256 of the text, stored as Parquet shards.

The model id names the cache directory and is written into every shard's metadata; a shard whose
recorded model id is another one (two ids that sanitise to the same directory name) is skipped and
never touched, so vectors of two models (or two backends of one model) never mix.

Each ``put`` writes one new immutable shard (temp file + rename), so concurrent writers never
damage each other and a crash never leaves a half-written file; ``compact`` merges shards.

Long-lived instances: every entry carries the time it was written (``written_at``; shards written
before that column existed count from their file time). ``gc(max_age_s, keep)`` rewrites the cache as
one shard holding only the entries written within ``max_age_s`` or whose key is in ``keep`` (the texts
still reachable, e.g. today's chunks), so nightly answer sentences do not grow it without bound;
``size()`` reports entries, shards and bytes. Shards another process writes meanwhile are left alone.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
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
        self._written = np.zeros(0, dtype=np.float64)  # per row of _vectors: when it was written (epoch s)
        self._shards_seen: set[str] = set()
        self._shards_foreign: set[str] = set()  # written for another model id: skipped, never compacted

    def _shards(self) -> list[Path]:
        return sorted(self.dir.glob("shard-*.parquet")) if self.dir.is_dir() else []

    def refresh(self) -> None:
        """Load shards written since the last look (by this or another process)."""
        new = [p for p in self._shards() if p.name not in self._shards_seen and p.name not in self._shards_foreign]
        if not new:
            return
        keys, mats, times = [], [], []
        for p in new:
            try:
                t = pq.read_table(p)
                mtime = p.stat().st_mtime
            except Exception:  # unreadable shard (foreign file, or removed by a concurrent gc): recomputed if needed
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
            written = t.column("written_at").to_numpy() if "written_at" in t.column_names else np.full(len(ks), mtime)
            times.append(np.asarray(written, dtype=np.float64))
            self._shards_seen.add(p.name)
        if not keys:
            return
        base = len(self._vectors)
        self._vectors = np.concatenate([self._vectors, *mats]) if mats else self._vectors
        self._written = np.concatenate([self._written, *times])
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

    def put(self, keys: list[str], vectors: np.ndarray, written_at: np.ndarray | None = None) -> None:
        if not keys:
            return
        vectors = np.asarray(vectors, dtype=np.float32)
        written = np.full(len(keys), time.time()) if written_at is None else np.asarray(written_at, dtype=np.float64)
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"shard-{uuid.uuid4().hex}.parquet"
        table = pa.table(
            {
                "key": pa.array(keys, pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), pa.float32()), self.dim),
                "written_at": pa.array(written, pa.float64()),
            },
            metadata={"model_id": self.model_id},
        )
        tmp = self.dir / f".{name}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, self.dir / name)
        base = len(self._vectors)
        self._vectors = np.concatenate([self._vectors, vectors])
        self._written = np.concatenate([self._written, written])
        for i, k in enumerate(keys):
            self._index.setdefault(k, base + i)
        self._shards_seen.add(name)

    def size(self) -> dict:
        """Entries, shards and bytes on disk of this model's cache (other models' directories not counted)."""
        self.refresh()
        shards = self._shards()
        return {"entries": len(self._index), "shards": len(shards), "bytes": sum(p.stat().st_size for p in shards if p.exists())}

    def gc(self, max_age_s: float | None = None, keep: set[str] | None = None, now: float | None = None) -> dict:
        """Keep the entries written within ``max_age_s`` (None: all) or whose key is in ``keep``; merge what is
        kept into one shard and delete the shards read. Returns before / after sizes and the entries dropped."""
        before = self.size()
        shards = [p for p in self._shards() if p.name in self._shards_seen]
        now = time.time() if now is None else now
        keep = keep or set()
        keys = [k for k, j in self._index.items() if max_age_s is None or now - self._written[j] <= max_age_s or k in keep]
        rows = [self._index[k] for k in keys]
        vectors, written = self._vectors[rows], self._written[rows]
        dropped = len(self._index) - len(keys)
        if dropped == 0 and len(shards) <= 1:
            return {**{f"{k}_before": v for k, v in before.items()}, **{f"{k}_after": v for k, v in before.items()}, "dropped": 0}
        self._index.clear()
        self._vectors = np.zeros((0, self.dim), dtype=np.float32)
        self._written = np.zeros(0, dtype=np.float64)
        old = set(self._shards_seen)
        self._shards_seen.clear()
        self.put(keys, vectors, written)
        for p in shards:
            if p.name in old:
                p.unlink(missing_ok=True)
        after = self.size()
        return {**{f"{k}_before": v for k, v in before.items()}, **{f"{k}_after": v for k, v in after.items()}, "dropped": dropped}

    def compact(self) -> int:
        """Merge all shards into one; returns the number of shards merged."""
        self.refresh()
        shards = [p for p in self._shards() if p.name in self._shards_seen]
        if len(shards) <= 1:
            return 0
        keys = list(self._index)
        rows = [self._index[k] for k in keys]
        vectors, written = self._vectors[rows], self._written[rows]
        old = set(self._shards_seen)
        self._index.clear()
        self._vectors = np.zeros((0, self.dim), dtype=np.float32)
        self._written = np.zeros(0, dtype=np.float64)
        self._shards_seen.clear()
        self.put(keys, vectors, written)
        for p in shards:
            if p.name in old:
                p.unlink(missing_ok=True)
        return len(shards)
