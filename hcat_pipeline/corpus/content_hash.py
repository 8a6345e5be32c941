"""Content hashes of the inputs automation watches (corpus folder + embedded default, a file, a folder).

Hashes depend on content only: touching a file, renaming it or re-copying identical bytes gives the
same hash, so an unchanged corpus triggers nothing. No dagster import here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def folder_hashes(root: Path | None, skip_prefixes: tuple[str, ...] = (".",)) -> dict[str, str]:
    """``{relative path: sha256}`` of the files under ``root`` (recursive; files and folders whose name
    starts with one of ``skip_prefixes`` are skipped, as ingest skips hidden ones). A missing folder is empty."""
    if root is None or not Path(root).is_dir():
        return {}
    root = Path(root)
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root)
        if any(part.startswith(skip_prefixes) for part in rel.parts):
            continue
        out[rel.as_posix()] = file_sha256(path)
    return out


def embedded_corpus_sha256() -> str:
    """SHA-256 of the embedded default corpus (pydoc_data.topics of this Python)."""
    from pydoc_data.topics import topics

    h = hashlib.sha256()
    for key in sorted(topics):
        h.update(key.encode() + b"\0" + topics[key].encode() + b"\0")
    return h.hexdigest()


def content_sha256(file_hashes: dict[str, str], *extra: str) -> str:
    """One hash over the *contents* (the sorted set of file hashes, names ignored) plus ``extra`` parts."""
    h = hashlib.sha256()
    for part in (*sorted(set(file_hashes.values())), "|", *extra):
        h.update(part.encode() + b"\n")
    return h.hexdigest()


def corpus_sha256(drop_folder: Path | None, include_embedded: bool = True, paths=(), base: Path | None = None) -> tuple[str, int]:
    """(content hash, number of files) of the corpus the ``corpus`` asset would ingest: the drop folder, the campaign
    file's ``paths`` (``corpus.ingest.expand_paths``) and the embedded reference when included."""
    from hcat_pipeline.corpus.ingest import expand_paths

    files = folder_hashes(drop_folder)  # every non-hidden file: an unsupported one changes ingest_errors
    found, _ = expand_paths(paths, base)
    files |= {f.as_posix(): file_sha256(f) for f, _ in found}
    return content_sha256(files, embedded_corpus_sha256() if include_embedded else "no-embedded"), len(files)
