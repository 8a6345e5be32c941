"""What the review established about the cases each gate read (issue 68 item 2), pure core.

Per gate row (gate × system × scope group): how many of the cases it read a person reviewed (accept / edit), how many
were accepted by sample (unread; their kind's sample bounded its unsound share: ``golden.sample_review``), how many
nobody reviewed — and ``unsound_bound``, the share of the cases read that may be unsound: the case-weighted mean of the
sample bounds of the cases accepted by sample (each kind's bound at its own confidence; reviewed cases count 0; the
unreviewed are counted apart, not bounded).

A PASS is re-read with that share (``review_margin``): an unsound case may hide a failure, so the bound the PASS rests
on is widened by it — a rate gate's one-sided bound (``ci_high`` for a rate that must stay low, ``ci_low`` for one that
must stay high) moved by the share; a zero-tolerance count gate's exact upper bound of the failure rate moved by the
share against its ``certify_below``. A PASS whose widened bound crosses the bar is **not certified**: the verdict stays
as measured, the certificate says the review cannot carry it.
"""

from __future__ import annotations

import polars as pl

from hcat_pipeline.gates.apply import scoped_rows
from hcat_pipeline.gates.spec import GatesFile
from hcat_pipeline.golden.review import REVIEW_VERDICTS, SAMPLE_VERDICT, with_review_columns
from hcat_pipeline.golden.sample_review import unsound_bound

COLUMNS = {"n_reviewed_by_case": pl.Int64, "n_accepted_by_sample": pl.Int64, "n_not_reviewed": pl.Int64, "unsound_bound": pl.Float64,
           "review_margin": pl.String}  # fmt: skip


def _read(gate, tables: dict, cases: pl.DataFrame) -> pl.DataFrame | None:
    """The gate's table as it reads it: its ``where`` rows, with the scope group (None: the table or a column is missing)."""
    frame = tables.get(gate.table)
    if frame is None or "case_id" not in frame.columns:
        return None
    try:
        return scoped_rows(frame, gate, cases)
    except KeyError:
        return None


def margin(row: dict, share: float) -> str | None:
    """Whether a PASS holds once ``share`` of its cases may be unsound (None: nothing to re-read)."""
    if row["verdict"] != "PASS" or not share:
        return None
    n, bar = int(row["n"] or 0), row.get("certify_below")
    if bar is not None:  # a zero-tolerance gate: its exact failure-rate bound against the level it certifies
        k = int(round(row["estimate"] or 0))
        bound = unsound_bound(k, n, row.get("confidence") or 0.95)
        widened, crosses, vs = bound + share, bound + share >= bar, f"certify_below {bar:g}"
    elif row["statistic"] in ("count", "any"):
        return None  # a count's scale is not a share: nothing to widen
    elif row["direction"] in ("<=", "<") and row["ci_high"] is not None:
        bound, widened = row["ci_high"], row["ci_high"] + share
        crosses, vs = widened > row["threshold"], f"threshold {row['threshold']:g}"
    elif row["direction"] in (">=", ">") and row["ci_low"] is not None:
        bound, widened = row["ci_low"], row["ci_low"] - share
        crosses, vs = widened < row["threshold"], f"threshold {row['threshold']:g}"
    else:
        return None
    said = f"the bound {bound:.3f} widened by the unsound share's bound {share:.3f} to {widened:.3f}"
    return f"NOT CERTIFIED: {said} crosses {vs} — a plausible share of unsound cases could erase this PASS" if crosses else f"holds: {said} stays within {vs}"


def with_review_status(gates: GatesFile, tables: dict[str, pl.DataFrame | None], cases: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    """``verdicts`` with ``COLUMNS``; a NOT CERTIFIED margin is appended to the row's certificate."""
    review = with_review_columns(cases).select("case_id", "review_verdict", "sample_bound").unique("case_id")
    by_name = {g.name: g for g in gates.gates}
    read = {g.name: _read(g, tables, cases) for g in gates.gates}
    rows = []
    for r in verdicts.iter_rows(named=True):
        frame = read.get(r["gate"])
        if frame is None or r["gate"] not in by_name:
            rows.append({**r, **dict.fromkeys(COLUMNS)})
            continue
        part = frame if r["system_id"] == "*" or "system_id" not in frame.columns else frame.filter(pl.col("system_id") == r["system_id"])
        part = part.filter(pl.col("_group") == r["group"]) if r["group"] != "all" else part
        ids = part.select("case_id").unique().join(review, on="case_id", how="left")
        by_case = int(ids["review_verdict"].is_in(REVIEW_VERDICTS).sum())
        sampled = ids.filter(pl.col("review_verdict") == SAMPLE_VERDICT)
        share = float(sampled["sample_bound"].fill_null(1.0).sum()) / ids.height if ids.height else 0.0
        unread = ids.height - by_case - sampled.height
        note = margin(r, share) if not unread else (f"not re-read: {unread} of its {ids.height} cases were not reviewed — the review "
                                                     "establishes nothing of them" if r["verdict"] == "PASS" and sampled.height else None)  # fmt: skip
        cert = r.get("certificate")
        if note and note.startswith("NOT CERTIFIED"):
            cert = f"{cert}; {note}" if cert else note
        rows.append({**r, "certificate": cert, "n_reviewed_by_case": by_case, "n_accepted_by_sample": sampled.height,
                     "n_not_reviewed": ids.height - by_case - sampled.height, "unsound_bound": share if sampled.height else None,
                     "review_margin": note})  # fmt: skip
    schema = {**verdicts.schema, **COLUMNS}
    return pl.DataFrame(rows, schema=schema) if rows else verdicts.with_columns(*[pl.lit(None, t).alias(c) for c, t in COLUMNS.items()])
