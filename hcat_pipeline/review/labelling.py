"""Labels given on the review page: saved to the label store, never overwriting anyone's; progress and sufficiency.

A label is appended to the rater's label file ``<labels_dir>/review-page_<rater>.jsonl`` (the label-file
format of ``calibration.labels``: a person can read, diff and re-import it) and imported into the label
store at once (``LabelStore.import_file`` adds only the new row, as a new store version). The changed file
is what the ``label_file_sensor`` sees: it runs ``labels_job``, which refits the calibrators, the same
automation a dropped-in CSV triggers.

Two tabs (or two people under one rater name): every save names the label it replaces (``seen``: the
``row_hash`` of the rater's latest label of that item and dimension when the page showed it, empty for
none). When the store holds a different latest label by then, nothing is written and the save is a
``conflict`` carrying the other label: the page shows both and the reviewer chooses. A re-label is a new
row (the store is append-only); the latest counts (``agreement.latest_per_rater``).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from hcat_pipeline.calibration.agreement import consensus_labels, latest_per_rater
from hcat_pipeline.calibration.fitting import DEFAULT_ALPHA
from hcat_pipeline.calibration.labels import validate_label
from hcat_pipeline.calibration.store import LabelStore
from hcat_pipeline.calibration.sufficiency import label_sufficiency
from hcat_pipeline.common.locks import file_lock

__all__ = ["PAGE_FILE_PREFIX", "PageLabels", "SaveResult", "progress", "stratum_coverage", "RATER_RE"]

PAGE_FILE_PREFIX = "review-page_"  # the raters' label files: <labels_dir>/review-page_<rater>.jsonl
RATER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
KEY = ["case_id", "system_id", "dimension"]


@dataclass
class SaveResult:
    status: str  # saved | conflict | rejected
    message: str
    row_hash: str | None = None
    version: str | None = None
    current: dict | None = None  # the label that is there now (conflict)


class PageLabels:
    """The review page's side of the label store: ``labels_dir`` holds the raters' files, ``store`` the store."""

    def __init__(self, labels_dir: str | Path, store_dir: str | Path | None = None):
        self.labels_dir = Path(labels_dir)
        self.store = LabelStore(store_dir or self.labels_dir / "_store")

    def file_for(self, rater: str) -> Path:
        return self.labels_dir / f"{PAGE_FILE_PREFIX}{rater}.jsonl"

    def _locked(self):
        return file_lock(self.labels_dir / ".review-page.lock")

    def latest(self, rater: str | None = None) -> pl.DataFrame:
        """Each rater's latest label per item and dimension (one rater's when given)."""
        labels = self.store.labels()
        if rater is not None:
            labels = labels.filter(pl.col("rater") == rater)
        return latest_per_rater(labels) if labels.height else labels

    def save(self, rater: str, case_id: str, system_id: str, dimension: str, label, scale: str, comment: str | None = None,
             seen: str | None = None) -> SaveResult:  # fmt: skip
        """Append one judgement and import it; ``conflict`` when the rater's latest label is no longer ``seen``."""
        if not RATER_RE.match(rater or ""):
            return SaveResult("rejected", f"rater {rater!r}: use letters, digits and . _ @ - (at most 64), e.g. 'alice'")
        raw = {"case_id": case_id, "system_id": system_id, "dimension": dimension, "label": label, "scale": scale,
               "rater": rater, "labelled_at": datetime.now(UTC).isoformat(timespec="microseconds"), "comment": comment or None}  # fmt: skip
        try:
            row = validate_label(raw)
        except ValueError as e:
            return SaveResult("rejected", f"{case_id} / {system_id} / {dimension}: {e}")
        with self._locked():
            stored = self.store.labels()  # read once: the dimension's scale and the rater's latest label on this item
            same_dim = stored.filter(pl.col("dimension") == row["dimension"])
            stored_scale = same_dim["scale"][0] if same_dim.height else None
            if stored_scale is not None and stored_scale != row["scale"]:
                return SaveResult("rejected", f"dimension {dimension!r} is stored with scale {stored_scale}, this label says {row['scale']}")
            mine = latest_per_rater(same_dim.filter(
                (pl.col("rater") == rater) & (pl.col("case_id") == case_id) & (pl.col("system_id") == system_id)))
            current = mine.row(0, named=True) if mine.height else None
            if (current["row_hash"] if current else "") != (seen or ""):
                return SaveResult("conflict", f"{rater} labelled this {current['label']} at {current['labelled_at']:%H:%M:%S} in another tab "
                                  "or window since this page showed it: keep that label or save yours over it",
                                  current={"label": current["label"], "row_hash": current["row_hash"], "comment": current["comment"],
                                           "labelled_at": current["labelled_at"].isoformat()})  # fmt: skip
            path = self.file_for(rater)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(raw, ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            result = self.store.import_file(path)
        if result.status != "imported":  # the line is in the file; the next import (labels_job) retries it
            detail = "; ".join(f"line {e['line']}: {e['reason']}" for e in result.errors.head(3).iter_rows(named=True))
            return SaveResult("rejected", f"saved to {path.name} but the label store did not take it ({result.message}) {detail}".strip())
        return SaveResult("saved", f"saved as {result.version}", row_hash=row["row_hash"], version=result.version)


def _stratum_of(queue: pl.DataFrame) -> dict[str, str]:
    if "stratum" not in queue.columns:
        return {}
    return {c: ("?" if s is None else str(s)) for c, s in queue.select("case_id", "stratum").unique("case_id").iter_rows()}


def progress(queue: pl.DataFrame, labels: pl.DataFrame, rater: str) -> dict:
    """Labelled / queued: overall, per dimension and per stratum, for ``rater`` and for any rater."""
    q = queue.select(*KEY, pl.col("stratum").cast(pl.String).fill_null("?") if "stratum" in queue.columns else pl.lit("?").alias("stratum"))
    done_any = labels.select(KEY).unique() if labels.height else pl.DataFrame(schema=dict.fromkeys(KEY, pl.String))
    done_me = labels.filter(pl.col("rater") == rater).select(KEY).unique() if labels.height else done_any
    q = q.with_columns(
        pl.struct(KEY).is_in(done_me.select(pl.struct(KEY)).to_series().implode()).alias("mine"),
        pl.struct(KEY).is_in(done_any.select(pl.struct(KEY)).to_series().implode()).alias("anyone"),
    )

    def table(by: str) -> list[dict]:
        g = q.group_by(by).agg(pl.len().alias("queued"), pl.col("mine").sum().alias("mine"), pl.col("anyone").sum().alias("anyone"))
        return g.sort(by).to_dicts()

    return {"queued": q.height, "mine": int(q["mine"].sum()), "anyone": int(q["anyone"].sum()),
            "by_dimension": table("dimension"), "by_stratum": table("stratum")}  # fmt: skip


def stratum_coverage(queue: pl.DataFrame, labels: pl.DataFrame, alpha: float = DEFAULT_ALPHA) -> list[dict]:
    """Per dimension of the queue: the calibration's label sufficiency (``label_sufficiency`` on the consensus labels)
    and what it asks of each stratum: the labels a sufficient fit needs, spread evenly over the queue's strata (so every
    stratum is represented), minus those a stratum has. Rows: dimension, sufficient, message, stratum, have, target, more."""
    strata = _stratum_of(queue)
    cons = consensus_labels(labels) if labels.height else None
    out = []
    for dim in sorted(set(queue["dimension"].to_list())):
        mine = cons.filter(pl.col("dimension") == dim) if cons is not None else None
        y = mine["label_index"].to_list() if mine is not None and mine.height else []
        k = int(mine["n_levels"][0]) if mine is not None and mine.height else 2
        suff = label_sufficiency(y, alpha, n_classes=k)
        needed = len(y) + suff.more_total
        in_queue = sorted({strata.get(c, "?") for c in queue.filter(pl.col("dimension") == dim)["case_id"].to_list()})
        have = Counter(strata.get(c, "other") for c in (mine["case_id"].to_list() if mine is not None else []))
        target = math.ceil(needed / max(1, len(in_queue)))
        for s in in_queue:
            out.append({"dimension": dim, "sufficient": suff.sufficient, "message": suff.message, "stratum": s,
                        "have": have.get(s, 0), "target": target, "more": max(0, target - have.get(s, 0))})  # fmt: skip
    return out
