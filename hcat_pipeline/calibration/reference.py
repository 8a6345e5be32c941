"""Public human-labelled reference sets shipped inside the package (``hcat_pipeline/reference_labels/``).

A fresh campaign has no human labels on its own cases. Until it has enough for a dimension, that
dimension is calibrated on a public set labelled by humans, and every output says so
(``label_source = "reference:<set>"``). The sets carry the human label only; their machine scores are
computed at run time with the project's own metrics (``reference_label_scores`` asset), never stored.

=============  =============  =========================================================================
set            dimension      items
=============  =============  =========================================================================
faithdial      groundedness   FaithDial audit (McGill-NLP, MIT): dialogue response vs the knowledge
                              passage it should be grounded in. BEGIN ``entailment`` alone = 1
                              (supported); any ``hallucination`` (incl. partial) = 0; ``generic`` /
                              ``uncooperative`` left out (``nli.sets.load_faithdial``). Only the
                              knowledge-passage groups the NLI head recipe holds out
                              (``nli.sets.split_of(...) == "test"``) are shipped, so no head trained
                              on the "train" part has seen them.
toxigen        toxicity       ToxiGen demonstrations (Microsoft, MIT): hand-written sentences about 13
                              groups; 1 = hate file, 0 = neutral file. Cleaned and de-duplicated as the
                              toxicity head recipe does (``toxicity.data.load_all``); only sentences in
                              the head's ``val`` / ``test`` near-duplicate groups are shipped (the head's
                              ``train`` groups never are; ``val`` was used only for the head's own Platt
                              step, a monotone map that Stage 1 re-fits anyway).
=============  =============  =========================================================================

Every item is assigned once, at build time, to ``stage1`` / ``stage2`` / ``evaluation``
(``make_splits``: seeded, label-stratified, 40 / 40 / 20). The ``evaluation`` part is never used to
fit anything; the build record (seed, counts, id hashes, source file hashes) is in ``manifest.json``.
Build: ``python scripts/build_reference_labels.py`` (reads ``../shared/validation``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from hcat_pipeline.calibration.splits import make_splits
from hcat_pipeline.common.ids import short_hash
from hcat_pipeline.schemas import REFERENCE_ITEMS as REFERENCE_SCHEMA

__all__ = [
    "REFERENCE_DIR",
    "REFERENCE_SCHEMA",
    "REFERENCE_SEED",
    "REFERENCE_SETS",
    "ReferenceSet",
    "build_faithdial",
    "build_toxigen",
    "label_source_of",
    "load_reference",
    "reference_manifest",
]

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference_labels"
REFERENCE_SEED = 11
REFERENCE_FRACTIONS = (0.4, 0.4, 0.2)


@dataclass(frozen=True)
class ReferenceSet:
    name: str
    dimension: str
    metrics: tuple[str, ...]  # the project's metrics that score this dimension (first = primary)
    label_meaning: str
    source: str
    licence: str

    @property
    def label_source(self) -> str:
        return label_source_of(self.name)


REFERENCE_SETS: dict[str, ReferenceSet] = {
    "faithdial": ReferenceSet(
        "faithdial", "groundedness", ("groundedness_nli", "groundedness_similarity"),
        "1 = response supported by the knowledge passage (BEGIN entailment), 0 = (partial) hallucination",
        "https://github.com/McGill-NLP/FaithDial (data-audit/)", "MIT",
    ),
    "toxigen": ReferenceSet(
        "toxigen", "toxicity", ("toxicity",),
        "1 = hateful sentence (ToxiGen hate demonstrations), 0 = neutral sentence about the same group",
        "https://github.com/microsoft/TOXIGEN (demonstrations/)", "MIT",
    ),
}  # fmt: skip


def label_source_of(set_name: str) -> str:
    return f"reference:{set_name}"


def load_reference(name: str, root: str | Path | None = None) -> pl.DataFrame:
    """The shipped items of one set (``REFERENCE_SCHEMA``)."""
    if name not in REFERENCE_SETS:
        raise ValueError(f"unknown reference set {name!r}; shipped: {sorted(REFERENCE_SETS)}")
    path = Path(root or REFERENCE_DIR) / f"{name}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"reference set {name!r} is missing at {path}: run scripts/build_reference_labels.py")
    frame = pl.read_parquet(path)
    missing = [c for c in REFERENCE_SCHEMA if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    return frame.select(list(REFERENCE_SCHEMA))


def reference_manifest(root: str | Path | None = None) -> dict:
    path = Path(root or REFERENCE_DIR) / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _finish(name: str, rows: list[dict], seed: int, sources: list[Path]) -> tuple[pl.DataFrame, dict]:
    frame = pl.DataFrame(rows, schema={k: v for k, v in REFERENCE_SCHEMA.items() if k != "split"})
    frame = frame.unique("item_id", keep="first", maintain_order=True).sort("item_id")
    splits = make_splits(frame["item_id"].to_list(), frame["label"].to_list(), fractions=REFERENCE_FRACTIONS, seed=seed)
    frame = frame.with_columns(pl.Series("split", splits.assignment["split"].to_list())).select(list(REFERENCE_SCHEMA))
    spec = REFERENCE_SETS[name]
    record = {
        "set": name,
        "dimension": spec.dimension,
        "label_meaning": spec.label_meaning,
        "source": spec.source,
        "licence": spec.licence,
        "n_items": frame.height,
        "labels": {str(k): int(v) for k, v in zip(*np.unique(frame["label"].to_numpy(), return_counts=True))},
        "split": splits.record,
        "source_files": {p.name: _sha256(p) for p in sorted(sources)},
    }
    return frame, record


def build_faithdial(validation_dir: str | Path, seed: int = REFERENCE_SEED) -> tuple[pl.DataFrame, dict]:
    """FaithDial audit items outside the NLI recipe's training groups (see module docstring)."""
    from hcat_pipeline.metrics.nli.sets import HELDOUT, SPLIT_SEED, load_faithdial, split_of

    root = Path(validation_dir)
    rows = []
    for it in load_faithdial(root):
        if split_of("faithdial", it.group) != "test":
            continue
        rows.append({
            "set": "faithdial", "item_id": "faithdial:" + short_hash(f"{it.subset}|{it.context}|{it.answer}", n=16),
            "dimension": "groundedness", "subset": it.subset, "group": it.group, "query": "", "contexts": [it.context],
            "answer": it.answer, "label": int(it.label), "source_split": "test",
        })  # fmt: skip
    frame, record = _finish("faithdial", rows, seed, list((root / "faithdial-audit").glob("*.csv")))
    record["exclusion"] = (f"only knowledge-passage groups with nli_sets.split_of(seed={SPLIT_SEED}, heldout={HELDOUT}) == 'test'; "
                           "generic / uncooperative responses left out")  # fmt: skip
    return frame, record


def build_toxigen(validation_dir: str | Path, embed: Callable[[list[str]], np.ndarray], seed: int = REFERENCE_SEED) -> tuple[pl.DataFrame, dict]:
    """ToxiGen demonstrations outside the toxicity head's training groups (see module docstring).

    ``embed``: the project's MiniLM (``EmbeddingModel.embed``), as the head recipe uses it to find
    near-duplicates; the split is recomputed exactly as ``scripts/train_toxicity_head.py`` does."""
    from hcat_pipeline.metrics.toxicity.data import SPLIT_SEED, head_splits, load_all

    root = Path(validation_dir)
    examples, _ = load_all(root)
    head_split = head_splits(examples, embed)
    rows = []
    for e, s in zip(examples, head_split):
        if e.source != "toxigen" or s == "train":
            continue
        rows.append({
            "set": "toxigen", "item_id": "toxigen:" + short_hash(e.text, n=16), "dimension": "toxicity", "subset": e.group,
            "group": e.group, "query": "", "contexts": [], "answer": e.text, "label": int(e.label), "source_split": s,
        })  # fmt: skip
    frame, record = _finish("toxigen", rows, seed, list((root / "toxigen-demonstrations").glob("*.txt")))
    record["exclusion"] = (f"only sentences in the toxicity head's val / test near-duplicate groups (toxicity_data.assign_splits, "
                           f"seed={SPLIT_SEED}); its train groups are never shipped")  # fmt: skip
    from hcat_pipeline.metrics.toxicity.train import split_digest

    record["reproduced_split_digest"] = {s: split_digest([e for e, x in zip(examples, head_split) if x == s]) for s in set(head_split)}
    record["source_split_counts"] = {str(k): int(v) for k, v in zip(*np.unique(frame["source_split"].to_numpy(), return_counts=True))}
    return frame, record
