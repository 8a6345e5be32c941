"""Small helpers that turn frames into Dagster metadata (previews, counts)."""

from __future__ import annotations

import dagster as dg
import polars as pl


def preview(frame: pl.DataFrame, n: int = 10, max_chars: int = 80) -> dg.MetadataValue:
    """A Markdown table of the first ``n`` rows, long cells shortened."""
    head = frame.head(n)
    cols = head.columns

    def cell(v) -> str:
        s = "" if v is None else str(v)
        s = s.replace("\n", " ").replace("|", "\\|")
        return s if len(s) <= max_chars else s[: max_chars - 1] + "…"

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in head.iter_rows():
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return dg.MetadataValue.md("\n".join(lines))


def frame_metadata(frame: pl.DataFrame, n_preview: int = 10) -> dict:
    return {
        "dagster/row_count": frame.height,
        "size_bytes": int(frame.estimated_size()),
        "preview": preview(frame, n_preview),
    }
