"""The night's own share of the evidence that other nights go on writing (issue 67 items 3 and 5): the human labels on
this night's answers, the calibrators the night read, its labelling design, and the people's reviews of this night's
flags. The stored tables and folders they come from (``human_labels.parquet``, ``calibrators.parquet``, the labels
folder) are rewritten by every later night and label import, so sealing them whole would break every earlier night's
bundle; ``snapshot`` copies this night's share into ``<release dir>/inputs/`` when the night is sealed (bundled, read
by the re-derivation), and ``live_digests`` recomputes the same share from the live stores — a label added to this
night's answers or a flag of this night reviewed afterwards changes it, so ``hcat verify`` names it and every signature
on the sealed evidence is stale; another night's labels and reviews change nothing here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl

from hcat_pipeline.calibration.design import design_file
from hcat_pipeline.common.ids import canonical_json, sha256_hex
from hcat_pipeline.gates.flags import read_flag_reviews
from hcat_pipeline.golden.frozen import table_sha256

INPUTS = "inputs"
DIGESTS = "live_digests.json"
FLAG_SNAPSHOT = "flag-reviews_sealed.jsonl"  # read_flag_reviews reads flag-reviews_*.jsonl


def _keys(warehouse: Path, version: str, night: str) -> pl.DataFrame | None:
    """(case_id, system_id) of the night's answers: the labels that can speak of them."""
    path = warehouse / "rag_responses" / version / f"{night}.parquet"
    return pl.read_parquet(path, columns=["case_id", "system_id"]).unique() if path.is_file() else None


def night_labels(warehouse: Path, version: str, night: str) -> pl.DataFrame | None:
    """The human labels on this night's answers (by case and system), in a stable order; None without a label table."""
    path, keys = warehouse / "human_labels.parquet", _keys(warehouse, version, night)
    if not path.is_file() or keys is None:
        return None
    labels = pl.read_parquet(path).join(keys, on=["case_id", "system_id"], how="semi")
    return labels.sort(labels.columns)


def night_flags(warehouse: Path, version: str, night: str) -> set[str]:
    path = warehouse / "gate_verdicts" / version / f"{night}.parquet"
    if not path.is_file():
        return set()
    table = pl.read_parquet(path)
    if "flagged" not in table.columns:  # gate rows of a night before flags were listed: none to look up
        return set()
    flagged = table["flagged"].drop_nulls().to_list()
    return {f["flag_id"] for cell in flagged for f in json.loads(cell)}


def night_reviews(labels_dir: Path, flags: set[str]) -> list[dict]:
    """The latest review of each of this night's flags, canonical (sorted by flag id)."""
    return [r.as_dict() for k, r in sorted(read_flag_reviews(labels_dir).items()) if k in flags]


def live_digests(warehouse: Path, labels_dir: Path, version: str, night: str) -> dict[str, str]:
    """Digests of the night's labels and flag reviews as the live stores hold them now."""
    labels = night_labels(warehouse, version, night)
    return {"human_labels": table_sha256(labels) if labels is not None else "",
            "flag_reviews": sha256_hex(canonical_json(night_reviews(labels_dir, night_flags(warehouse, version, night)), compact=True))}  # fmt: skip


def snapshot(directory: Path, warehouse: Path, labels_dir: Path, version: str, night: str) -> dict[str, Path]:
    """Write the night's share under ``<directory>/inputs/``; name → file for the bundle."""
    out_dir = Path(directory) / INPUTS
    if out_dir.exists():
        shutil.rmtree(out_dir)  # a re-sealed night: its share as it stands now, nothing left over
    (out_dir / "labels").mkdir(parents=True)
    files: dict[str, Path] = {}
    if (labels := night_labels(warehouse, version, night)) is not None:
        labels.write_parquet(out_dir / "human_labels.parquet")
        files["human_labels"] = out_dir / "human_labels.parquet"
    if (warehouse / "calibrators.parquet").is_file():
        shutil.copy2(warehouse / "calibrators.parquet", out_dir / "calibrators.parquet")
        files["calibrators"] = out_dir / "calibrators.parquet"
    design = design_file(labels_dir, version, night)
    if design.is_file():
        target = design_file(out_dir / "labels", version, night)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(design, target)
        files[f"labels/{target.relative_to(out_dir / 'labels').as_posix()}"] = target
    reviews = night_reviews(labels_dir, night_flags(warehouse, version, night))
    (out_dir / "labels" / FLAG_SNAPSHOT).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in reviews), encoding="utf-8")
    files[f"labels/{FLAG_SNAPSHOT}"] = out_dir / "labels" / FLAG_SNAPSHOT
    (out_dir / DIGESTS).write_text(json.dumps(live_digests(warehouse, labels_dir, version, night), indent=1, sort_keys=True))
    files["live_digests"] = out_dir / DIGESTS
    return files


def changed_since_sealed(directory: Path, warehouse: Path, labels_dir: Path, version: str, night: str) -> list[str]:
    """What of the night's share changed in the live stores since it was sealed (empty: nothing, or no snapshot)."""
    path = Path(directory) / INPUTS / DIGESTS
    if not path.is_file() or not Path(warehouse).is_dir():
        return []
    sealed, now = json.loads(path.read_text()), live_digests(warehouse, labels_dir, version, night)
    why = {"human_labels": "a human label on this night's answers was added or changed after the night was sealed",
           "flag_reviews": "a flag of this night was reviewed (confirmed or overturned) after the night was sealed"}
    return [why[k] for k in why if sealed.get(k) != now.get(k)]
