"""A night's evidence copied into a folder that verifies on its own (issue 67 items 5-6): the dossier's ``evidence/``.

Each file of the bundle is copied to ``evidence/<its path under the data dir>`` (a file outside it, such as the gates
file at the project root, to ``evidence/external/<its absolute path>``); the bundle is rewritten with those paths — its
root does not change, since the root hashes names, contents and sizes, never paths — beside the night's plans, gate
settings and the sign-off log, in the data dir's own layout. ``hcat verify FOLDER`` then reads the folder as it reads
``data/``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hcat_pipeline.release.bundle import BUNDLE_FILE, write_bundle
from hcat_pipeline.release.night import release_dir, signoff_log
from hcat_pipeline.release.plan import PLAN_FILE

EVIDENCE = "evidence"


def _local(path: Path) -> Path:
    """A bundle path (relative to the data dir, or absolute outside it) as a path inside ``evidence/``."""
    return path if not path.is_absolute() else Path("external") / path.relative_to(path.anchor)


def copy_evidence(data_dir: Path, version: str, night: str, out: Path) -> Path:
    """Copy the night's bundle, its files, plans and the sign-off log under ``<out>/evidence``; the folder's night dir."""
    data_dir, evidence = Path(data_dir), Path(out) / EVIDENCE
    if evidence.exists():
        shutil.rmtree(evidence)  # a folder written before: nothing of an earlier export left to be mistaken for evidence
    source = release_dir(data_dir, version, night)
    bundle = json.loads((source / BUNDLE_FILE).read_text())
    files = []
    for e in bundle["files"]:
        rel = _local(Path(e["path"]))
        target = evidence / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        src = data_dir / e["path"]
        if src.is_file():  # a file gone since the night is not invented: the folder fails to verify, naming it
            shutil.copy2(src, target)
        files.append({**e, "path": rel.as_posix()})
    copied = {"files": files, "root": bundle["root"]}  # paths are not hashed (bundle_root): the copy names the same evidence
    # no "live" stores in a folder: it holds the night's share as sealed (release.inputs), checked by hash
    night_dir = release_dir(evidence, version, night)
    night_dir.mkdir(parents=True, exist_ok=True)
    for p in [*source.glob("plan*.json"), *source.glob("gate_settings.json")]:
        shutil.copy2(p, night_dir / p.name)
    if (source / "inputs").is_dir():
        shutil.copytree(source / "inputs", night_dir / "inputs", dirs_exist_ok=True)
    write_bundle(copied, night_dir / BUNDLE_FILE)
    log = signoff_log(data_dir)
    if log.is_file():
        signoff_log(evidence).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(log, signoff_log(evidence))
    return night_dir


def folder_night(folder: Path) -> tuple[Path, Path, Path] | None:
    """(night dir, data dir, gates file) of an exported folder; None when ``folder`` is not one."""
    evidence = Path(folder) / EVIDENCE
    nights = sorted((evidence / "release").glob(f"*/*/{PLAN_FILE}")) if evidence.is_dir() else []
    if len(nights) != 1:
        return None
    night_dir = nights[0].parent
    bundle = json.loads((night_dir / BUNDLE_FILE).read_text()) if (night_dir / BUNDLE_FILE).is_file() else {"files": []}
    gates = next((evidence / e["path"] for e in bundle["files"] if e["name"] == "gates_file"), evidence / "gates.yaml")
    return night_dir, evidence, gates
