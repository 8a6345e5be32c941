"""The evidence bundle (issue 67 item 3): a manifest of the files a night's decision rests on — each file's SHA-256 and
size under a name — and one root hash over the sorted list, so one hash names the whole night. ``verify_bundle`` finds
a changed, missing or added file by name."""

from __future__ import annotations

import json
from pathlib import Path

from hcat_pipeline.common.ids import canonical_json, sha256_hex
from hcat_pipeline.corpus.content_hash import file_sha256  # the project's one file hash

BUNDLE_FILE = "bundle.json"


def bundle_root(entries: list[dict]) -> str:
    """The root hash: SHA-256 over the entries sorted by name (name, sha256, bytes)."""
    return sha256_hex(canonical_json(sorted(({k: e[k] for k in ("name", "sha256", "bytes")} for e in entries),
                                            key=lambda e: e["name"]), compact=True))  # fmt: skip


def rel_path(path: str | Path, base: str | Path) -> Path:
    """``path`` relative to ``base`` when inside it, else absolute (both resolved)."""
    p, b = Path(path).resolve(), Path(base).resolve()
    return p.relative_to(b) if p.is_relative_to(b) else p


def make_bundle(files: dict[str, str | Path], base: str | Path) -> dict:
    """{"files": [{name, path (relative to ``base``, else absolute), sha256, bytes}], "root": …} for ``files`` (name → path)."""
    base = Path(base)
    entries = []
    for name, path in sorted(files.items()):
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"evidence {name!r}: {p} does not exist")
        rel = rel_path(p, base)
        entries.append({"name": name, "path": str(rel), "sha256": file_sha256(p), "bytes": p.stat().st_size})
    return {"files": entries, "root": bundle_root(entries)}


def write_bundle(bundle: dict, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(bundle, indent=1, sort_keys=True))
    return p


def verify_bundle(bundle: dict, base: str | Path) -> list[str]:
    """What broke, one line each (empty: every file is as hashed and the root is theirs)."""
    problems = []
    if bundle_root(bundle["files"]) != bundle["root"]:
        problems.append(f"the bundle's root {bundle['root'][:12]} is not the hash of its file list (the manifest was edited)")
    for e in bundle["files"]:
        p = Path(base) / e["path"]
        if not p.is_file():
            problems.append(f"{e['name']}: {e['path']} is missing")
        elif (digest := file_sha256(p)) != e["sha256"]:
            problems.append(f"{e['name']}: {e['path']} changed (sha256 {digest[:12]}, the bundle says {e['sha256'][:12]})")
    return problems


def current_root(bundle: dict, base: str | Path, extra: list[dict] | None = None) -> str:
    """The root the bundle's files hash to now (a missing file counts as changed; ``extra``: entries for evidence the
    files do not show, such as the night's share of a live store changed since): equal to ``bundle["root"]`` only while
    nothing it rests on has changed — a signature on the sealed root is stale otherwise."""
    entries = []
    for e in bundle["files"]:
        p = Path(base) / e["path"]
        entries.append({**e, "sha256": file_sha256(p) if p.is_file() else "missing", "bytes": p.stat().st_size if p.is_file() else 0})
    return bundle_root(entries + list(extra or []))
